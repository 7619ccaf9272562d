"""pixi.lock is a function of pixi.toml and the sources' contents, byte for byte: the first lock and a
relock, a cold and a warm cache (uv's, the resolver's), two users' HOMEs, two checkouts of the project
all give the same bytes. A wheel whose METADATA spells its requirements its own way
(``importlib_metadata>=2.0; extra == "test"``, ``Requires-Python: >= 3.8``) is recorded as rattler
spells them when it reads a lock back, from the first lock on: an environment carried over by a later
lock (kept as text) and one locked again agree.

Real pieces only: the toolchain channel's conda python (tests/support/toolchain_channel.py) as conda-forge's,
uv resolving from a wheelhouse inside the project, pip's own configuration switched off.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from support import channel_factory as cf
from support import toolchain_channel as tc

from resolver import lock
from resolver.core.model import KernelChoice, Plan, TorchChoice, TorchSource
from resolver.project.paths import ProjectPaths

PY = tc.PYTHON_SERIES

pytestmark = pytest.mark.skipif(f"{sys.version_info.major}.{sys.version_info.minor}" != PY,
                                reason=f"the toolchain channel's python is {PY}; uv resolves for it")

MANIFEST = """\
[workspace]
name = "determinism"
channels = ["conda-forge"]
platforms = [{platform}]

[dependencies]
python = "{py}.*"

[pypi-dependencies]
rtmeta = "*"

[feature.cpu]
platforms = ["{platform_name}"]
pypi-dependencies = {{ rtpy = "*" }}

[environments]
cpu = {{ features = ["cpu"], solve-group = "cpu", no-default-feature = true }}

[tool.resolver]
find-links = ["./wheels"]
"""


def cpu_plan() -> Plan:
    return Plan(backend="cpu", backend_version=None, python=PY, platform="linux-64", target="cpu",
                torch=TorchChoice("2.13.0", "cpu", TorchSource("pypi-index", "https://download.pytorch.org/whl/cpu"),
                                  local_version="cpu"),
                kernels=KernelChoice("none"), glibc="2.36", conda_packages=(("python", f"{PY}.*"),))


def checkout(root: Path, toolchain: Path) -> ProjectPaths:
    """A checkout of the project: pixi.toml and its wheelhouse, nothing of any earlier run."""
    root.mkdir(parents=True)
    (root / "pixi.toml").write_text(MANIFEST.format(platform=tc.platform_entry(toolchain), py=PY,
                                                   platform_name=tc.platform_name(toolchain)))
    cf.build_wheelhouse(root / "wheels")
    cf.write_wheel(root / "wheels", "rtmeta", "1.0", {"rtmeta/__init__.py": "VALUE = 1\n"},
                   requires=['importlib_metadata>=2.0; extra == "test"', "rtpy (>=1.0)"], requires_python=">= 3.8")
    return ProjectPaths(root)


def lock_with(project: ProjectPaths, home: Path, mp: pytest.MonkeyPatch) -> bytes:
    """``lock --target cpu`` as a user whose caches are under ``home``."""
    mp.setenv("XDG_CACHE_HOME", str(home / "cache"))
    mp.setenv("UV_CACHE_DIR", str(home / "uv"))
    lock.lock_plans(project, [cpu_plan()])
    return project.lockfile.read_bytes()


@pytest.fixture
def isolated(monkeypatch, conda_channel):
    for key in [k for k in os.environ if k.startswith(("PIP_", "RESOLVER_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("RESOLVER_CONDA_CHANNELS", str(conda_channel))
    return conda_channel


def test_the_lock_is_the_same_bytes_whatever_ran_before(isolated, tmp_path, monkeypatch):
    toolchain = isolated
    first_checkout = checkout(tmp_path / "alice" / "project", toolchain)
    first = lock_with(first_checkout, tmp_path / "alice", monkeypatch)  # cold: nothing cached anywhere
    text = first.decode()
    # requirements as rattler reads them back, never as the wheel's METADATA spells them
    assert "- importlib-metadata>=2.0 ; extra == 'test'" in text and "- rtpy>=1.0" in text
    assert 'importlib_metadata' not in text and '"' not in text.split("\npackages:\n")[1]
    assert "  requires_python: '>=3.8'" in text and ">= 3.8" not in text
    # a relock in the same checkout: caches warm, the default environment carried over as text, cpu locked again
    assert lock_with(first_checkout, tmp_path / "alice", monkeypatch) == first
    # a teammate: another checkout, another HOME, cold caches, no pixi.lock
    second_checkout = checkout(tmp_path / "bob" / "elsewhere" / "project", toolchain)
    assert lock_with(second_checkout, tmp_path / "bob", monkeypatch) == first
    # the teammate relocks the shared lock (their caches warm now)
    shutil.copy(first_checkout.lockfile, second_checkout.lockfile)
    assert lock_with(second_checkout, tmp_path / "bob", monkeypatch) == first
    # the first user again, after every cache of theirs is gone
    shutil.rmtree(tmp_path / "alice" / "cache")
    shutil.rmtree(tmp_path / "alice" / "uv")
    shutil.rmtree(first_checkout.root / ".resolver")
    assert lock_with(first_checkout, tmp_path / "alice", monkeypatch) == first


def test_a_wheels_metadata_is_spelled_as_a_later_read_spells_it(isolated, tmp_path, monkeypatch):
    """The environment kept as text by a relock and the same environment locked again are equal: the
    first lock wrote what rattler reads back."""
    from resolver.lock.lockfile import RawLock

    project = checkout(tmp_path / "p", isolated)
    first = lock_with(project, tmp_path / "home", monkeypatch)
    summary = lock.lock_plans(project, [cpu_plan()])
    assert "default" in summary.carried_over and project.lockfile.read_bytes() == first
    # the default environment gone from pixi.lock: locked again, its entries come out the same
    raw = RawLock.parse(first.decode())
    del raw.envs["default"]
    project.lockfile.write_text(raw.text())
    again = lock.lock_plans(project, [cpu_plan()])
    assert "default" in {e.name for e in again.locked}
    assert project.lockfile.read_bytes() == first
