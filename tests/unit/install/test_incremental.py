"""What a changed lock installs over an environment: the wheels whose sha256 changed, were added or were
removed (never one whose URL alone moved); the conda part changing is a rebuild; what verify checks is keyed
on torch and what it loads a model with, not on a package the user added."""

from __future__ import annotations

import dataclasses

from resolver.core.platforms import host_subdir
from resolver.install.incremental import artifact_lines, diff, verify_inputs
from resolver.lock.lockfile import LockedEnv, LockedPlatform, PypiArtifact
from resolver.tools.conda import CondaRecord

PLATFORM = LockedPlatform("linux-64", "linux-64", ())


def wheel(name: str, version: str = "1", sha: str = "aa", url: str = "https://files.example.org",
          requires: tuple[str, ...] = ()) -> PypiArtifact:
    return PypiArtifact(name, version, f"{url}/{name}-{version}-py3-none-any.whl", sha * 32, requires)


def conda(name: str, sha: str = "11") -> CondaRecord:
    return CondaRecord(name, "1.0", "h0_0", "linux-64", f"https://conda.example.org/{name}-1.0-h0_0.conda", None,
                       sha * 32, None, "{}")


def env(*wheels: PypiArtifact, records: tuple[CondaRecord, ...] = (conda("python"),)) -> LockedEnv:
    return LockedEnv("cpu", PLATFORM, (), records, wheels)


TORCH = wheel("torch", "2.13.0", "10", requires=("numpy", "filelock>=3", "sympy ; python_version >= '3.9'"))
BASE = env(TORCH, wheel("numpy", sha="20"), wheel("filelock", sha="30"), wheel("sympy", sha="40"),
           wheel("Typing_Extensions", sha="50"))


def test_a_wheel_added_removed_or_of_another_sha256_is_all_that_changes():
    new = env(*[w for w in BASE.pypi if w.name != "sympy"], wheel("tabulate", sha="60"),
              records=BASE.conda)
    new = dataclasses.replace(new, pypi=tuple(wheel("numpy", "2", "21") if w.name == "numpy" else w for w in new.pypi))
    d = diff(artifact_lines(BASE), artifact_lines(new))
    assert (d.added, d.changed, d.removed, d.conda_changed) == (("tabulate",), ("numpy",), ("sympy",), False)
    assert not d.empty and diff(artifact_lines(BASE), artifact_lines(BASE)).empty


def test_the_same_sha256_at_another_url_is_no_change():
    moved = env(*[dataclasses.replace(w, location=w.location.replace("files.example.org", "mirror.example.net"))
                  for w in BASE.pypi], records=BASE.conda)
    assert artifact_lines(moved) == artifact_lines(BASE)
    assert diff(artifact_lines(BASE), artifact_lines(moved)).empty


def test_the_same_version_of_another_sha256_is_a_change():
    rebuilt = env(*[wheel("torch", "2.13.0", "19") if w.name == "torch" else w for w in BASE.pypi], records=BASE.conda)
    assert diff(artifact_lines(BASE), artifact_lines(rebuilt)).changed == ("torch",)


def test_any_conda_package_changing_is_a_rebuild():
    for records in ((conda("python", "12"),), (conda("python"), conda("zlib"))):
        assert diff(artifact_lines(BASE), artifact_lines(env(*BASE.pypi, records=records))).conda_changed


def test_names_are_compared_as_pep_503_normalises_them():
    renamed = env(*[wheel("typing-extensions", sha="50") if w.name == "Typing_Extensions" else w for w in BASE.pypi],
                  records=BASE.conda)
    assert diff(artifact_lines(BASE), artifact_lines(renamed)).empty


def test_what_verify_checks_follows_torch_and_its_requirements_not_a_package_the_user_added():
    roots = ("torch",)
    key = verify_inputs(BASE, roots)
    assert verify_inputs(env(*BASE.pypi, wheel("tabulate", sha="60"), records=BASE.conda), roots) == key
    assert verify_inputs(env(*BASE.pypi[1:], records=BASE.conda), roots) != key  # torch itself changed
    newer_sympy = env(*[wheel("sympy", "2", "41") if w.name == "sympy" else w for w in BASE.pypi], records=BASE.conda)
    assert verify_inputs(newer_sympy, roots) != key  # a requirement of torch (behind a marker) changed
    newer_typing = env(*[wheel("Typing_Extensions", "2", "51") if w.name == "Typing_Extensions" else w
                         for w in BASE.pypi], records=BASE.conda)
    assert verify_inputs(newer_typing, roots) == key  # nothing torch needs
    assert verify_inputs(env(*BASE.pypi, records=(conda("python", "12"),)), roots) != key  # the conda part


def test_the_verify_stamp_is_keyed_on_what_verify_checks_as_install_recorded_it(tmp_path):
    """install writes verify_inputs into the ready marker; the chain's verify stamp reads it: a package the user
    added gives the same key, torch changing another."""
    from resolver.core.records import write_record
    from resolver.install import _target
    from resolver.install.environment import READY_MARKER
    from resolver.project.paths import ProjectPaths
    from resolver.workflows.chain import verified_inputs

    project = ProjectPaths(tmp_path)

    def key(locked: LockedEnv) -> str:
        folder = project.env("cpu")
        folder.mkdir(parents=True, exist_ok=True)
        write_record(folder / READY_MARKER, _target(project, locked).marker(folder), strict=True)
        found = verified_inputs(folder)
        assert isinstance(found, str)  # install's record was read, not the marker file as a whole
        return found

    host = dataclasses.replace(BASE, platform=LockedPlatform("here", host_subdir(), ()))
    base = key(host)
    assert key(dataclasses.replace(host, pypi=(*host.pypi, wheel("tabulate", sha="60")))) == base
    assert key(dataclasses.replace(host, pypi=(wheel("torch", "2.14.0", "12"), *host.pypi[1:]))) != base
