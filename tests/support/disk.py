"""The suite's disk: what a module's fixtures made is removed when the module ends.

A passing test's ``tmp_path`` goes at once and a passing run's whole temporary folder at its end
(``tmp_path_retention_policy = "failed"`` in pyproject.toml), but the folders module-scoped fixtures make
with ``tmp_path_factory`` (a fresh clone with its environment, an upgrade's two environments: gigabytes
each) would stay until the run ends, and the run's peak would be the sum of every module's. These hooks
(conftest.py imports them) note the folders a module-scoped fixture makes under the run's temporary
folder while it is set up, and remove them when it is torn down, at the end of its module, unless a test
of that module failed: then they are kept for reading, as a failed test's ``tmp_path`` is.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

_made: dict[object, list[Path]] = {}  # fixture definition -> the folders its set-up made
_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    if fixturedef.scope != "module":
        return (yield)
    base = request.config._tmp_path_factory.getbasetemp()
    before = set(base.iterdir())
    try:
        return (yield)
    finally:
        made = sorted(set(base.iterdir()) - before)
        if made:
            _made.setdefault(fixturedef, []).extend(made)


def pytest_fixture_post_finalizer(fixturedef, request):
    made = _made.pop(fixturedef, [])
    module = request.node.getparent(pytest.Module) if made else None
    if module is not None and module.stash.get(_FAILED, False):
        return
    for folder in made:
        if folder.is_symlink():  # tmp_path_factory's "<name>current" link to the newest of a name
            folder.unlink(missing_ok=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        module = item.getparent(pytest.Module)
        if module is not None:
            module.stash[_FAILED] = True
    return report
