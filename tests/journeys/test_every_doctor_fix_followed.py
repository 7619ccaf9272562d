"""Every FAIL doctor can print for a CPU environment here names a fix that, when followed as printed, clears it.

The environment is a real one (cpu_project's pixi.lock installed into a project of the test's own: torch
2.13.0+cpu); each case breaks it the way it breaks in the field, runs `doctor`, follows every FAIL's printed
fix with tests/support/fixes.py (the resolver commands it names, in order) and runs `doctor` again: no FAIL,
exit 0. Files are replaced, never written in place: an installed file may be a link into the shared store.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import cli, fixes, projects, records


def _replace(path: Path, text: str) -> None:
    path.unlink()
    path.write_text(text)


def _site(env: Path) -> Path:
    (site,) = env.glob("lib/python3*/site-packages")
    return site


def _torch_reports_another_build(env: Path) -> None:
    """What `pip install torch` from another index leaves: another build of the same release on top."""
    version = _site(env) / "torch" / "version.py"
    _replace(version, version.read_text().replace("2.13.0+cpu", "2.13.0+cu126"))


def _torch_does_not_import(env: Path) -> None:
    init = _site(env) / "torch" / "__init__.py"
    _replace(init, 'raise ImportError("libtorch_cpu.so: cannot open shared object file")\n')


def _python_does_not_start(env: Path) -> None:
    """An interpreter that is there but does not run (a library it links went missing)."""
    binary = (env / "bin" / "python").resolve()
    _replace(binary, "#!/bin/sh\necho 'error while loading shared libraries: libpython3.so' >&2\nexit 127\n")
    binary.chmod(0o755)


def _marker_is_not_installs(env: Path) -> None:
    _replace(env / "resolver-ready.json", "{not json")


def _lock_changed_since_install(env: Path) -> None:
    """The marker install wrote (sealed, as install seals it) names another pixi.lock than the one here."""
    marker = env / "resolver-ready.json"
    record = records.read(marker)
    record["lock_digest"] = "0" * 64
    marker.unlink()
    records.plant(marker, record)


BREAKAGES = {"torch-vs-install": _torch_reports_another_build, "torch": _torch_does_not_import,
             "python": _python_does_not_start, "ready-marker": _marker_is_not_installs,
             "lock": _lock_changed_since_install}


@pytest.fixture(scope="module")
def installed(tmp_path_factory, cpu_project):
    """A project of its own holding cpu_project's pixi.toml and pixi.lock, `cpu` installed into it."""
    root = projects.project(tmp_path_factory.mktemp("doctor-fixes"), (cpu_project / "pixi.toml").read_text())
    shutil.copy(cpu_project / "pixi.lock", root / "pixi.lock")
    shutil.copytree(cpu_project / ".resolver" / "state", root / ".resolver" / "state",
                    ignore=shutil.ignore_patterns("*.lock"))  # the stored plans, the sources it was locked with
    done = cli.run("install", "--env", "cpu", "--json", project=root, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    yield root
    shutil.rmtree(root / ".resolver", ignore_errors=True)


def _doctor(project: Path) -> tuple[int, dict]:
    done = cli.run("doctor", "--env", "cpu", "--json", project=project, timeout=1800)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert "findings" in doc, f"doctor did not check the environment (exit {done.returncode}): {doc}"
    return done.returncode, doc


def test_a_healthy_environment_has_no_fail(installed):
    code, doc = _doctor(installed)
    assert code == 0 and not [f for f in doc["findings"] if f["status"] == "fail"], doc["findings"]
    assert {f["name"]: f["status"] for f in doc["findings"]}["torch-vs-install"] == "ok"


@pytest.mark.slow
@pytest.mark.parametrize("check", sorted(BREAKAGES))
def test_every_fail_is_cleared_by_following_its_printed_fix(installed, check):
    BREAKAGES[check](installed / ".resolver" / "envs" / "cpu")
    code, doc = _doctor(installed)
    failed = [f for f in doc["findings"] if f["status"] == "fail"]
    assert code == 1 and check in [f["name"] for f in failed], doc["findings"]
    for finding in failed:
        assert finding["fix"], finding
        fixes.follow(finding["fix"], installed)
    code, doc = _doctor(installed)
    assert code == 0 and not [f for f in doc["findings"] if f["status"] == "fail"], doc["findings"]


def test_the_class_of_fail_doctor_prints_is_covered():
    """Every FAIL lock_findings and environment_findings can print for a CPU environment has a breakage here: a
    new one without a case fails this test."""
    import re

    from resolver.doctor import checks

    source = Path(checks.__file__).read_text()
    named = set(re.findall(r'Finding\("([a-z-]+)", "fail"', source))
    gpu_only = {"cuda-vs-driver", "rocm-header"}
    assert named - gpu_only <= set(BREAKAGES), named - gpu_only - set(BREAKAGES)
