"""The suite's disk (tests/support/disk.py): a passing module's fixture folders are removed when the module
ends, a failing module's are kept, a session's stay for the session."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from support import TESTS

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import pytest
from support.disk import pytest_fixture_post_finalizer, pytest_fixture_setup, pytest_runtest_makereport


@pytest.fixture(scope="session")
def shared(tmp_path_factory):
    return tmp_path_factory.mktemp("shared")


@pytest.fixture(scope="module")
def big(tmp_path_factory, shared):
    folder = tmp_path_factory.mktemp("big")
    (folder / "data").write_bytes(b"x" * 1000)
    return folder
"""


def test_a_passing_modules_folders_go_at_its_end_a_failing_ones_stay(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "test_a_passes.py").write_text("def test_one(big):\n    assert (big / 'data').is_file()\n")
    (suite / "test_b_fails.py").write_text("def test_two(big):\n    assert False\n")
    (suite / "test_c_looks.py").write_text(textwrap.dedent("""
        def test_three(tmp_path_factory, shared):
            names = sorted(p.name for p in tmp_path_factory.getbasetemp().iterdir() if not p.is_symlink())
            assert names == ["big1", "shared0"], names  # big0 (the passing module's) is gone
    """))
    base = tmp_path / "base"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist", "-p",
                           "no:cacheprovider", "--basetemp", str(base), str(suite)], capture_output=True, text=True,
                          cwd=suite, timeout=300)
    assert "1 failed, 2 passed" in done.stdout, done.stdout[-3000:]
    assert sorted(p.name for p in base.iterdir() if not p.is_symlink()) == ["big1", "shared0"]
