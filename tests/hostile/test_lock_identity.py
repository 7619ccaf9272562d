"""A lock entry is what it says. pixi.lock's sha256 proves only that a file is the one the lock's author
pointed at; an entry whose location and sha256 are another package's (another wheel, a renamed wheel,
another release, another conda package) is refused by ``install``: one sentence, exit 4, nothing
installed. Real wheels and conda packages built here; the real CLI."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from support import cli, projects
from support.channel_factory import write_wheel
from support.package_factory import index_json, write_conda

from resolver.core.platforms import host_subdir
from resolver.lock.lockfile import LockedEnv, LockedPlatform, PypiArtifact
from resolver.project.paths import ProjectPaths
from resolver.tools.conda import CondaRecord

FORGE = "http://127.0.0.1:9/conda-forge/"  # refuses at once: nothing is fetched
HOST = LockedPlatform(host_subdir(), host_subdir(), ())


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def conda_record(name: str, version: str, build: str, package: Path) -> CondaRecord:
    fields = {"build": build, "build_number": 0, "depends": [], "name": name, "subdir": HOST.subdir,
              "version": version, "sha256": sha(package)}
    return CondaRecord(name, version, build, HOST.subdir, f"{FORGE}{HOST.subdir}/{name}-{version}-{build}.conda",
                       FORGE, sha(package), None, json.dumps(fields, sort_keys=True))


def wheel_entry(name: str, version: str, wheel: Path, file_name: str | None = None) -> PypiArtifact:
    return PypiArtifact(name, version, f"https://files.example.org/{file_name or wheel.name}", sha(wheel))


def install(tmp_path: Path, conda: tuple[CondaRecord, ...], wheels: tuple[tuple[PypiArtifact, Path], ...],
            packages: tuple[Path, ...]):
    """A project locking ``conda`` and ``wheels``, every file already in this machine's verified store under
    the name and sha256 its entry gives; ``install --env cpu`` run on it."""
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache)}
    project = ProjectPaths(projects.project(tmp_path / "p", "", lock=[
        LockedEnv("cpu", HOST, (FORGE,), conda, tuple(a for a, _ in wheels), python="3.11")]))
    import os

    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    try:
        store = project.verified_store
        for record, package in zip(conda, packages):
            store.copy_in(package, record.sha256, record.file_name)
        for artifact, wheel in wheels:
            store.copy_in(wheel, artifact.sha256, artifact.file_name)
    finally:
        os.environ["XDG_CACHE_HOME"] = before or ""
    return project, cli.run("install", "--env", "cpu", project=project.root, env=env)


@pytest.fixture()
def python(tmp_path) -> tuple[CondaRecord, Path]:
    package = write_conda(tmp_path / "chan", index_json("python", "3.11.7", subdir=HOST.subdir), [])
    return conda_record("python", "3.11.7", "h0_0", package), package


def refused(project: ProjectPaths, done, *words: str) -> None:
    assert done.returncode == 4, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "is not the file it points at" in done.stderr and all(w in done.stderr for w in words), done.stderr
    assert not project.env("cpu").exists() and not list(project.envs.glob(".cpu*"))  # nothing installed


def test_an_entry_whose_location_and_sha256_are_another_wheel_is_refused(tmp_path, python):
    other = write_wheel(tmp_path / "wheels", "other", "2.0", {"other.py": "print('other')\n"})
    project, done = install(tmp_path, (python[0],), ((wheel_entry("tiny", "1.0", other), other),), (python[1],))
    refused(project, done, "tiny 1.0", "other 2.0")


def test_a_wheel_renamed_to_the_entrys_name_is_refused_by_its_metadata(tmp_path, python):
    other = write_wheel(tmp_path / "wheels", "other", "2.0", {"other.py": ""})
    entry = wheel_entry("tiny", "1.0", other, "tiny-1.0-py3-none-any.whl")
    project, done = install(tmp_path, (python[0],), ((entry, other),), (python[1],))
    refused(project, done, "tiny 1.0", "METADATA", "other 2.0")


def test_another_release_of_the_same_package_is_refused(tmp_path, python):
    newer = write_wheel(tmp_path / "wheels", "tiny", "1.1", {"tiny.py": ""})
    project, done = install(tmp_path, (python[0],), ((wheel_entry("tiny", "1.0", newer, "tiny-1.0-py3-none-any.whl"),
                                                      newer),), (python[1],))
    refused(project, done, "tiny 1.0", "1.1")


def test_an_entry_whose_file_is_another_conda_package_is_refused(tmp_path, python):
    evil = write_conda(tmp_path / "chan", index_json("evil", "6.6.6", subdir=HOST.subdir), [])
    project, done = install(tmp_path, (python[0], conda_record("zlib", "1.3.1", "h0_0", evil)), (),
                            (python[1], evil))
    refused(project, done, "zlib 1.3.1 h0_0", "name evil", "version 6.6.6")


def test_names_and_versions_are_compared_in_their_normal_forms(tmp_path, python):
    """``Typing_Extensions`` 4.12.2.0 is typing-extensions 4.12.2: not refused for its spelling (the
    install goes on past the check, to building the environment)."""
    wheel = write_wheel(tmp_path / "wheels", "Typing_Extensions", "4.12.2", {"typing_extensions.py": ""})
    from resolver.install.identity import check_wheel

    check_wheel(wheel, "typing-extensions", "4.12.2.0", wheel.name)
    check_wheel(wheel, "typing.extensions", "4.12.2", wheel.name)


def test_a_requirement_the_lock_claims_and_the_wheel_does_not_have_is_refused(tmp_path, python):
    """pixi.lock says ``tiny`` requires ``evil`` (so evil, locked beside it, looks required): the wheel's
    own METADATA does not say so, and the install is refused before anything is linked."""
    tiny = write_wheel(tmp_path / "wheels", "tiny", "1.0", {"tiny.py": ""}, requires=["numpy ; extra == \"opt\""])
    evil = write_wheel(tmp_path / "wheels", "evil", "1.0", {"evil.py": ""})
    honest = wheel_entry("tiny", "1.0", tiny)
    lying = PypiArtifact(honest.name, honest.version, honest.location, honest.sha256,
                         ("NumPy; extra == 'opt'", "evil"))  # the first: the same requirement, spelled otherwise
    project, done = install(tmp_path, (python[0],), ((lying, tiny), (wheel_entry("evil", "1.0", evil), evil)),
                            (python[1],))
    refused(project, done, "tiny 1.0", "requires evil")
    from resolver.install.identity import check_wheel

    check_wheel(tiny, "tiny", "1.0", tiny.name, ("NumPy; extra == 'opt'",))  # a claim it does have: taken
