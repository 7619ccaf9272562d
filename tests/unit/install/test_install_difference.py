"""Installing the difference, in this process: a real virtual environment built from a lock of small local
wheels, then locks that add, change and remove wheels, move one to another address, and a package the user
installed by hand. Each install's summary names exactly what changed, and the environment holds exactly
that; with ``exact`` what was installed or changed by hand goes back to the lock, each one named."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from support import projects
from support.channel_factory import write_wheel

from resolver.core.fs import sha256_of
from resolver.core.platforms import host_subdir
from resolver.install import install_environment
from resolver.install.environment import ready_record
from resolver.lock.lockfile import LockedEnv, LockedPlatform, PypiArtifact
from resolver.project.paths import ProjectPaths
from resolver.tools import uv

HOST = LockedPlatform(host_subdir(), host_subdir(), ())
HERE_PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def _wheel(folder: Path, name: str, version: str) -> PypiArtifact:
    path = write_wheel(folder, name, version, {f"{name}/__init__.py": f"VERSION = {version!r}\n"})
    return PypiArtifact(name, version, path.as_uri(), sha256_of(path))


def _lock(root: Path, *wheels: PypiArtifact) -> ProjectPaths:
    """A lock of ``wheels`` alone: a virtual environment of this Python (no conda python: a fallback), the
    folders that hold them declared in pixi.toml."""
    env = LockedEnv("cpu", HOST, (), (), tuple(wheels), fallback=True, python=HERE_PY)
    folders = sorted({str(Path(w.location.removeprefix("file://")).parent) for w in wheels})
    manifest = (f'[workspace]\nname = "difference"\nchannels = ["conda-forge"]\nplatforms = ["{HOST.subdir}"]\n\n'
                f"[tool.resolver]\nfind-links = {json.dumps(folders)}\n")
    return ProjectPaths(projects.project(root, manifest, lock=[env]))


def _installed(project: ProjectPaths) -> dict[str, str]:
    """name → version of every distribution in the environment's site-packages."""
    found = {}
    for meta in project.env("cpu").glob("lib/python*/site-packages/*.dist-info/METADATA"):
        fields = dict(line.split(": ", 1) for line in meta.read_text().splitlines() if ": " in line)
        found[fields["Name"]] = fields["Version"]
    return found


def _said(lines: list[str]):
    return lines.append


@pytest.fixture
def wheels(tmp_path: Path) -> dict[str, PypiArtifact]:
    folder = tmp_path / "wheels"
    return {f"{name}=={version}": _wheel(folder, name, version)
            for name, version in [("alpha", "1"), ("beta", "1"), ("beta", "2"), ("gamma", "1"), ("delta", "1"),
                                  ("handmade", "1")]}


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX layout of a virtual environment")
def test_a_changed_lock_installs_and_removes_only_what_changed_and_keeps_what_the_user_added(tmp_path, wheels):
    root = tmp_path / "project"
    project = _lock(root, wheels["alpha==1"], wheels["beta==1"], wheels["gamma==1"])
    first = install_environment(project, "cpu", bytecode="none")
    assert (first.status, first.built_from, first.kind) == ("installed", "lock", "venv")
    python = project.env("cpu") / "bin" / "python"
    done = uv.install_wheels(python, [Path(wheels["handmade==1"].location.removeprefix("file://"))],
                             compile_bytecode=False)
    assert done.ok, done.tail()
    assert {"alpha", "beta", "gamma", "handmade"} <= set(_installed(project))

    project = _lock(root, wheels["alpha==1"], wheels["beta==2"], wheels["delta==1"])
    said: list[str] = []
    second = install_environment(project, "cpu", bytecode="none", info=_said(said))
    assert (second.status, second.built_from) == ("installed", "difference")
    assert (second.added, second.changed, second.removed) == (("delta==1",), ("beta==2",), ("gamma==1",))
    assert (second.kept, second.removed_by_hand) == (("handmade==1",), ())
    assert said == ["checking 2 changed locked artefacts", "uninstalling 2 packages", "installing 2 wheels with uv"]
    assert second.change_lines() == ["+ delta==1", "~ beta==2", "- gamma==1", "kept, installed by hand (not in "
                                     "pixi.lock): handmade==1; `--exact` removes them"]
    installed = _installed(project)
    assert (installed["alpha"], installed["beta"], installed["delta"], installed["handmade"]) == ("1", "2", "1", "1")
    assert "gamma" not in installed
    assert ready_record(project.env("cpu"))["lock_digest"] == second.digest

    moved = tmp_path / "moved"
    moved.mkdir()
    alpha = wheels["alpha==1"]
    copy = shutil.copy(alpha.location.removeprefix("file://"), moved)
    project = _lock(root, PypiArtifact("alpha", "1", Path(copy).as_uri(), alpha.sha256), wheels["beta==2"],
                    wheels["delta==1"])
    said.clear()
    third = install_environment(project, "cpu", bytecode="none", info=_said(said))
    assert (third.status, third.kept, said) == ("up-to-date", ("handmade==1",), [])  # the same sha256: no change
    assert ready_record(project.env("cpu"))["lock_digest"] == third.digest != second.digest
    again = install_environment(project, "cpu", bytecode="none")
    assert (again.status, again.kept) == ("up-to-date", ("handmade==1",))

    done = uv.install_wheels(python, [Path(wheels["beta==1"].location.removeprefix("file://"))],
                             compile_bytecode=False)  # a locked package changed by hand
    assert done.ok, done.tail()
    said.clear()
    exact = install_environment(project, "cpu", bytecode="all", exact=True, info=_said(said))
    assert (exact.status, exact.built_from, exact.bytecode) == ("installed", "difference", "all")
    assert (exact.added, exact.changed, exact.removed) == (("beta==2",), (), ("handmade==1",))
    assert (exact.kept, exact.removed_by_hand) == ((), ("handmade==1",))
    assert said == ["checking 1 changed locked artefacts", "uninstalling 2 packages",
                    "installing 1 wheels with uv, byte-compiling them"]
    assert exact.change_lines() == ["+ beta==2", "- handmade==1 (installed by hand)"]
    assert third.change_lines() == ["kept, installed by hand (not in pixi.lock): handmade==1; `--exact` removes them"]
    seeded = dict(item.split("==") for item in ready_record(project.env("cpu")).get("seeded", []))  # the venv's pip
    assert _installed(project) == {"alpha": "1", "beta": "2", "delta": "1", **seeded}

    done = uv.install_wheels(python, [Path(wheels["handmade==1"].location.removeprefix("file://"))],
                             compile_bytecode=False)
    assert done.ok, done.tail()
    said.clear()
    rebuilt = install_environment(project, "cpu", bytecode="none", force=True, info=_said(said))
    assert (rebuilt.status, rebuilt.built_from, rebuilt.removed, rebuilt.removed_by_hand) == \
        ("installed", "lock", ("handmade==1",), ("handmade==1",))
    assert said[0] == ("the environment is built again from pixi.lock; installed by hand, not kept: handmade==1 "
                       "(`python -m resolver add -e cpu --pypi NAME` keeps a package for good)")
    assert "handmade" not in _installed(project)
