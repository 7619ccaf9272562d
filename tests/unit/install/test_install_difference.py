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


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX layout of a virtual environment")
def test_a_lock_that_only_adds_or_only_removes_does_just_that(tmp_path, wheels):
    root = tmp_path / "project"
    install_environment(_lock(root, wheels["alpha==1"]), "cpu", bytecode="none")
    said: list[str] = []
    added = install_environment(_lock(root, wheels["alpha==1"], wheels["gamma==1"]), "cpu", bytecode="none",
                                info=_said(said))
    assert (added.status, added.built_from, added.added, added.changed, added.removed) == \
        ("installed", "difference", ("gamma==1",), (), ())
    assert said == ["checking 1 changed locked artefacts", "installing 1 wheels with uv"]
    assert {"alpha", "gamma"} <= set(_installed(ProjectPaths(root)))
    said.clear()
    removed = install_environment(_lock(root, wheels["alpha==1"]), "cpu", bytecode="none", info=_said(said))
    assert (removed.status, removed.built_from, removed.added, removed.removed) == \
        ("installed", "difference", (), ("gamma==1",))
    assert said == ["uninstalling 1 packages"]
    assert "gamma" not in _installed(ProjectPaths(root))


def _edit_ready_record(project: ProjectPaths, how: str) -> None:
    from resolver.core.records import write_record
    from resolver.install.environment import READY_MARKER

    final = project.env("cpu")
    if how == "no python":
        (final / "bin" / "python").unlink()
        return
    record = dict(ready_record(final))
    if how == "no artefact record":  # an environment installed before artefacts were recorded
        del record["artifacts"]
    else:
        record.update({"another kind": {"kind": "conda"}, "another platform": {"platform": "osx-arm64"}}[how])
    write_record(final / READY_MARKER, record, label="ready-marker", strict=True)


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX layout of a virtual environment")
@pytest.mark.parametrize("how", ["no artefact record", "another kind", "another platform", "no python"])
def test_an_environment_whose_difference_cannot_be_known_is_built_again(tmp_path, wheels, how):
    root = tmp_path / "project"
    project = _lock(root, wheels["alpha==1"])
    install_environment(project, "cpu", bytecode="none")
    _edit_ready_record(project, how)
    again = install_environment(_lock(root, wheels["alpha==1"], wheels["gamma==1"]), "cpu", bytecode="none")
    assert (again.status, again.built_from) == ("installed", "lock")
    assert ready_record(project.env("cpu"))["platform"] == HOST.subdir
    assert {"alpha", "gamma"} <= set(_installed(project))


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX layout of a virtual environment")
def test_a_locked_package_changed_by_hand_stays_unless_exact_and_exact_never_restores_what_the_lock_drops(
        tmp_path, wheels):
    root = tmp_path / "project"
    project = _lock(root, wheels["alpha==1"], wheels["beta==2"])
    install_environment(project, "cpu", bytecode="none")
    done = uv.install_wheels(project.env("cpu") / "bin" / "python",
                             [Path(wheels["beta==1"].location.removeprefix("file://"))], compile_bytecode=False)
    assert done.ok, done.tail()
    plain = install_environment(_lock(root, wheels["alpha==1"], wheels["beta==2"], wheels["gamma==1"]), "cpu",
                                bytecode="none")
    assert (plain.added, plain.changed, plain.removed) == (("gamma==1",), (), ())
    assert _installed(project)["beta"] == "1"  # what the user did to it is theirs until --exact

    exact = install_environment(_lock(root, wheels["alpha==1"], wheels["gamma==1"]), "cpu", bytecode="none",
                                exact=True)
    assert (exact.added, exact.changed, exact.removed) == ((), (), ("beta==2",))
    assert "beta" not in _installed(project)


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX layout of a virtual environment")
def test_an_uninstall_that_fails_is_one_sentence_with_the_rebuild(tmp_path, wheels):
    from resolver.core.errors import BuildFailed

    root = tmp_path / "project"
    project = _lock(root, wheels["alpha==1"], wheels["gamma==1"])
    install_environment(project, "cpu", bytecode="none")
    for record in project.env("cpu").glob("lib/python*/site-packages/gamma-1.dist-info/RECORD"):
        record.unlink()  # what a package some other tool installed can lack: uv cannot uninstall it
    with pytest.raises(BuildFailed) as error:
        install_environment(_lock(root, wheels["alpha==1"]), "cpu", bytecode="none")
    assert error.value.message.startswith("uninstalling gamma failed (")
    assert error.value.fix == "run `python -m resolver install --env cpu --force` to rebuild it"
    assert ready_record(project.env("cpu"))["pypi"] == ["alpha==1", "gamma==1"]  # still the lock it holds


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX layout of a virtual environment")
def test_an_install_that_fails_is_one_sentence_with_the_rebuild(tmp_path, wheels):
    from resolver.core.errors import BuildFailed

    root = tmp_path / "project"
    project = _lock(root, wheels["alpha==1"])
    install_environment(project, "cpu", bytecode="none")
    elsewhere = tmp_path / "other-platform"
    elsewhere.mkdir()
    gamma = wheels["gamma==1"]
    foreign = Path(shutil.copy(gamma.location.removeprefix("file://"), elsewhere / "gamma-1-cp27-cp27m-win32.whl"))
    with pytest.raises(BuildFailed) as error:
        install_environment(_lock(root, wheels["alpha==1"], PypiArtifact("gamma", "1", foreign.as_uri(), gamma.sha256)),
                            "cpu", bytecode="none")
    assert error.value.message.startswith("installing the locked wheels failed (")
    assert error.value.fix == "run `python -m resolver install --env cpu --force` to rebuild it"
    assert ready_record(project.env("cpu"))["pypi"] == ["alpha==1"]


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX layout of a virtual environment")
def test_what_verify_checks_changes_with_torch_and_not_with_a_package_the_user_added(tmp_path, wheels):
    root = tmp_path / "project"
    torch = {v: _wheel(tmp_path / "torch", "torch", v) for v in ("2.13.0", "2.13.1")}
    project = _lock(root, torch["2.13.0"], wheels["alpha==1"])
    install_environment(project, "cpu", bytecode="none")
    first = ready_record(project.env("cpu"))["verify_inputs"]
    install_environment(_lock(root, torch["2.13.0"], wheels["alpha==1"], wheels["gamma==1"]), "cpu", bytecode="none")
    assert ready_record(project.env("cpu"))["verify_inputs"] == first
    install_environment(_lock(root, torch["2.13.1"], wheels["alpha==1"], wheels["gamma==1"]), "cpu", bytecode="none")
    assert ready_record(project.env("cpu"))["verify_inputs"] != first


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX layout of a virtual environment")
def test_the_folders_pixi_toml_declares_for_the_environment_are_where_its_wheels_are_found(tmp_path):
    folder = tmp_path / "declared"
    own = [PypiArtifact(name, "1", path.as_uri(), sha256_of(path)) for name, path in  # bytes no other test has
           ((n, write_wheel(folder, n, "1", {f"{n}/__init__.py": f"WHERE = {str(tmp_path)!r}\n"}))
            for n in ("declared", "declared-too"))]
    root = tmp_path / "project"
    project = _lock(root, own[0])
    (root / "pixi.toml").write_text(  # pixi's own find-links, for the cpu environment's feature only
        f'[workspace]\nname = "difference"\nchannels = ["conda-forge"]\nplatforms = ["{HOST.subdir}"]\n\n'
        f'[feature.cpu.pypi-options]\nfind-links = [{{path = "{folder}"}}]\n\n[environments]\ncpu = ["cpu"]\n')
    installed = install_environment(project, "cpu", bytecode="none")
    assert (installed.status, installed.built_from) == ("installed", "lock")
    installed = install_environment(_lock_keeping_manifest(root, *own), "cpu", bytecode="none")
    assert (installed.built_from, installed.added) == ("difference", ("declared-too==1",))


def _lock_keeping_manifest(root: Path, *wheels: PypiArtifact) -> ProjectPaths:
    manifest = (root / "pixi.toml").read_text()
    project = _lock(root, *wheels)
    (root / "pixi.toml").write_text(manifest)
    return project


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX layout of a virtual environment")
def test_every_install_leaves_the_launcher_of_this_project(tmp_path, wheels):
    from resolver.install.launcher import NAME, launcher_text

    root = tmp_path / "project"
    project = _lock(root, wheels["alpha==1"])
    launcher = project.env("cpu") / "bin" / NAME
    install_environment(project, "cpu", bytecode="none")
    assert launcher.read_text() == launcher_text(root)
    launcher.unlink()  # an environment installed before launchers were written, or the project moved
    assert install_environment(project, "cpu", bytecode="none").status == "up-to-date"
    assert launcher.read_text() == launcher_text(root)
    launcher.unlink()
    install_environment(_lock(root, wheels["alpha==1"], wheels["gamma==1"]), "cpu", bytecode="none")
    assert launcher.read_text() == launcher_text(root)


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX layout of a virtual environment")
@pytest.mark.parametrize("planted", ["link", "file"])
def test_something_planted_at_the_temporary_name_is_removed_as_such_never_built_through(tmp_path, wheels, planted):
    import os

    root = tmp_path / "project"
    project = _lock(root, wheels["alpha==1"])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.txt").write_text("theirs")
    project.envs.mkdir(parents=True)
    tmp = project.envs / f".cpu.tmp-{os.getpid()}"
    if planted == "link":
        tmp.symlink_to(outside, target_is_directory=True)
    else:
        tmp.write_text("not a folder")
    installed = install_environment(project, "cpu", bytecode="none")
    assert installed.status == "installed" and "alpha" in _installed(project)
    assert sorted(p.name for p in outside.iterdir()) == ["theirs.txt"]
    assert not os.path.lexists(tmp)
