"""`upgrade`, `upgrade --promote` and `rollback` end to end, and their parts.

The journey runs on this machine for real: the current environment is cpu_project's (torch 2.13.0+cpu, a
conda prefix from the toolchain channel), linked into a project of the test's own; the upgrade plans torch
2.14.1 (the only 2.14 this machine's pip mirrors serve: PyPI's CUDA 13.0 build, which runs on the CPU),
locks it beside, installs it, proves it against the current environment on the reference path and
reports. The GPU journey does the same on the H100 machine double with `--target cuda13.0`: the kernels
(the tests' tiny CUDA extension standing in for the real packages, as in tests/journeys/test_gpu_journey.py) are
built with the environment's own nvcc for the double's architecture and checked by architecture.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import DATA, cli, shipped_manifest
from support.schemas import validate

from resolver.workflows.upgrade.lockdiff import environment_entries

DOUBLES = DATA / "doubles"
MACHINES = DATA / "machines"
TINY_RECIPE = DATA / "fixtures" / "tiny-ext" / "recipe"
QUICK = ("--prompt-len", "8", "--new-tokens", "4", "--repeat", "2")  # the proof's inputs, small: a CPU here


def project_beside(cpu_project: Path, root: Path) -> Path:
    """A project holding cpu_project's pixi.toml, pixi.lock and stored plan, its environment `cpu` linked (never
    copied: a conda prefix has its path baked in)."""
    (root / ".resolver" / "state" / "plans").mkdir(parents=True)
    (root / ".resolver" / "envs").mkdir()
    for name in ("pixi.toml", "pixi.lock"):
        shutil.copy(cpu_project / name, root / name)
    state = cpu_project / ".resolver" / "state"
    shutil.copy(state / "plans" / "cpu.json", root / ".resolver" / "state" / "plans" / "cpu.json")
    if (state / "sources.json").is_file():
        shutil.copy(state / "sources.json", root / ".resolver" / "state" / "sources.json")
    (root / ".resolver" / "envs" / "cpu").symlink_to(cpu_project / ".resolver" / "envs" / "cpu", target_is_directory=True)
    return root


def folder_state(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and mtime: a write anywhere in it changes this. Python's own
    bytecode cache is left out: running the environment (the proof does) may add it, as any run does."""
    found = {}
    for dirpath, _, files in os.walk(folder):
        if "__pycache__" in Path(dirpath).parts:
            continue
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink():
                info = path.stat()
                found[str(path.relative_to(folder))] = (info.st_size, info.st_mtime_ns)
    return found


def lock_entries(text: str, name: str) -> tuple[dict, list]:
    """Environment ``name`` of a pixi.lock as data: its block and the package entries it names."""
    doc = yaml.safe_load(text)
    env = doc["environments"][name]
    names = {next(iter(item.values())) for items in env["packages"].values() for item in items}
    return env, [p for p in doc["packages"] if (p.get("conda") or p.get("pypi")) in names]


def one_error(done: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr[-3000:]
    return errors[0]


# --------------------------------------------------------------------------------------------- refusals
def _gtx1080ti() -> Path:
    return MACHINES / "gtx1080ti-driver460-ubuntu2004"


@pytest.mark.parametrize("double, target, words", [
    (MACHINES / "cpu-only-ubuntu2410", "cuda13.0", "no NVIDIA GPU here"),
    (_gtx1080ti(), "cuda13.0", "460"),
])
def test_a_target_the_hardware_cannot_run_is_refused_with_the_fact_and_nothing_is_written(tmp_path, cpu_project, double,
                                                                                        target, words):
    project = project_beside(cpu_project, tmp_path / "p")
    before = {p: p.read_bytes() for p in (project / "pixi.toml", project / "pixi.lock")}
    state = sorted(str(p.relative_to(project)) for p in project.rglob("*"))
    done = cli.run("upgrade", "--target", target, "--torch", "2.14", "--sysroot", str(double), "--json",
                   project=project, timeout=1800)
    assert done.returncode == 2, done.stdout + done.stderr
    error = one_error(done)
    assert words in error and "Fix:" in error
    assert json.loads(done.stdout)["id"] == "refused"
    assert {p: p.read_bytes() for p in before} == before
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == state  # no state, no report, no env


def test_plan_only_says_what_changes_and_the_sourced_risks_and_writes_nothing(tmp_path, cpu_project):
    project = project_beside(cpu_project, tmp_path / "p")
    before = sorted((str(p), p.stat().st_mtime_ns) for p in project.rglob("*") if p.is_file())
    done = cli.run("upgrade", "--torch", "2.14", "--plan-only", "--json", project=project,
                   env={"RESOLVER_SYSROOT": str(MACHINES / "cpu-only-ubuntu2410")}, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    step = result["step"]
    assert result["stage"] == "planned" and step["current"]["environment"] == "cpu"
    assert step["new"]["environment"] == "cpu-torch2-14"
    changed = {c["what"]: (c["before"], c["after"]) for c in step["changes"] if c["changed"]}
    assert changed["torch"][0].startswith("2.13.0+cpu") and changed["torch"][1].startswith("2.14.1 (cu130")
    assert step["risks"] and all(r["source"] for r in step["risks"])
    assert any("PyPI's torch 2.14.1" in r["text"] and "pypi" in r["source"].lower() for r in step["risks"])
    assert sorted((str(p), p.stat().st_mtime_ns) for p in project.rglob("*") if p.is_file()) == before


def test_an_unknown_release_and_a_bad_flag_are_one_sentence(tmp_path, cpu_project):
    project = project_beside(cpu_project, tmp_path / "p")
    done = cli.run("upgrade", "--torch", "9.1", "--plan-only", project=project, timeout=1800)
    assert done.returncode == 2 and "torch 9.1 is not in the knowledge base" in one_error(done)
    done = cli.run("upgrade", "--torch", "two", "--plan-only", project=project, timeout=1800)
    assert done.returncode == 2 and "--torch 'two' is not a release" in one_error(done)
    done = cli.run("upgrade", "--tolerance", "float64=1", "--plan-only", project=project, timeout=1800)
    assert done.returncode == 2 and "unknown dtype float64" in one_error(done)
    done = cli.run("rollback", project=project, timeout=1800)  # nothing promoted: nothing to roll back, not an error
    assert done.returncode == 0 and done.stdout.strip() == "nothing to roll back: no upgrade was promoted in this project"
    done = cli.run("rollback", "--to", "nosuch", project=project, timeout=1800)
    assert done.returncode == 2 and "no environment 'nosuch'; pixi.toml has: cpu" in one_error(done)
    done = cli.run("upgrade", "--promote", project=project, timeout=1800)
    assert done.returncode == 2 and "no pending upgrade to promote" in one_error(done)


def test_an_upgrade_for_another_machine_is_planned_and_locked_here_and_lists_what_remains(tmp_path, cpu_project,
                                                                                          conda_channel):
    project = project_beside(cpu_project, tmp_path / "p")
    node = tmp_path / "h100.json"
    _node(node, "NVIDIA H100 80GB HBM3", "9.0")
    before = (project / "pixi.lock").read_text()
    done = cli.run("upgrade", "--target", "cuda13.0", "--profile", str(node), "--json", project=project,
                   env={"RESOLVER_CONDA_CHANNELS": str(conda_channel)}, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["stage"] == "locked" and result["proof"] is None and result["install"] is None
    assert result["step"]["new"]["environment"] == "cuda13" and result["step"]["here"] is False
    assert result["step"]["new"]["plan"]["kernels"]["arch_list"] == ["9.0"]
    assert any("upgrade --env cpu --target cuda13.0" in item for item in result["remaining"])
    lock = (project / "pixi.lock").read_text()
    assert environment_entries(lock, "cpu") == environment_entries(before, "cpu") and "cuda13:" in lock
    assert not (project / ".resolver" / "envs" / "cuda13").exists()
    assert "the proof runs on the machine the plan is for" in Path(result["report"]["markdown"]).read_text()


# ------------------------------------------------------------------------------------- the CPU journey
# The user's own dependencies, added under [feature.cpu.pypi-dependencies] as the README says: tomli-w (a small
# wheel of the local index) comes along into the new environment; old-torch-only (a wheel of the project's
# wheelhouse that requires torch<2.14) cannot.
USER_DEPS = '[feature.cpu.pypi-dependencies]\ntomli-w = "*"\nold-torch-only = "*"\n'
BLOCKER = "old-torch-only"


def project_with_user_dependencies(cpu_project: Path, root: Path, conda_channel: Path) -> Path:
    """cpu_project's pixi.toml with the user's dependencies added, locked and installed (its own `cpu`)."""
    from support import channel_factory

    (root / ".resolver" / "state" / "plans").mkdir(parents=True)
    text = (cpu_project / "pixi.toml").read_text()
    assert "[feature.cpu.pypi-dependencies]\n" in text and "find-links = []" in text
    text = text.replace("[feature.cpu.pypi-dependencies]\n", USER_DEPS, 1).replace(
        "find-links = []", 'find-links = ["./wheels"]', 1)
    (root / "pixi.toml").write_text(text)
    channel_factory.write_wheel(root / "wheels", BLOCKER, "1.0.0", {"old_torch_only/__init__.py": "OK = True\n"},
                                requires=["torch<2.14"])
    state = cpu_project / ".resolver" / "state"
    shutil.copy(state / "plans" / "cpu.json", root / ".resolver" / "state" / "plans" / "cpu.json")
    if (state / "sources.json").is_file():
        shutil.copy(state / "sources.json", root / ".resolver" / "state" / "sources.json")
    done = cli.run("lock", "--target", "cpu", "--channel", str(conda_channel), "--json", project=root, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    done = cli.run("install", "--env", "cpu", "--json", project=root, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return root


@pytest.fixture(scope="module")
def cpu_journey(tmp_path_factory, cpu_project, conda_channel):
    """cpu (torch 2.13.0+cpu, with the user's dependencies) → cpu-torch2-14 (torch 2.14.1): interrupted after the
    lock, then run again."""
    project = project_with_user_dependencies(cpu_project, tmp_path_factory.mktemp("upgrade-cpu"), conda_channel)
    no_gpu = {"RESOLVER_SYSROOT": str(MACHINES / "cpu-only-ubuntu2410"), "RESOLVER_CONDA_CHANNELS": str(conda_channel)}
    old_env = project / ".resolver" / "envs" / "cpu"
    snapshots = {"lock": (project / "pixi.lock").read_text(), "folder": folder_state(old_env),
                 "toml": (project / "pixi.toml").read_text()}
    crashed = cli.run("upgrade", "--torch", "2.14", *QUICK, "--json", project=project,
                      env={**no_gpu, "RESOLVER_CRASH_AT": "upgrade-locked:after-replace"}, timeout=1800)
    after_crash = {"lock": (project / "pixi.lock").read_text(), "envs": sorted(p.name for p in (project / ".resolver" /
                                                                                              "envs").iterdir())}
    resumed = cli.run("upgrade", "--torch", "2.14", *QUICK, "--json", project=project, env=no_gpu, timeout=1800)
    snapshots["toml_after"] = (project / "pixi.toml").read_text()
    reports = {}
    if resumed.returncode == 0:  # read now: a later run of the same step writes the same files
        files = json.loads(resumed.stdout)["report"]
        reports = {kind: Path(path).read_text() for kind, path in files.items()}
    yield {"project": project, "old_env": old_env, "before": snapshots, "crashed": crashed, "after_crash": after_crash,
           "resumed": resumed, "env": no_gpu, "reports": reports}
    shutil.rmtree(project / ".resolver", ignore_errors=True)  # both environments: GBs (links mostly)


@pytest.mark.slow
def test_an_interrupted_upgrade_leaves_the_current_environment_as_it_was_and_resumes(cpu_journey):
    crashed = cpu_journey["crashed"]
    assert crashed.returncode == 137, crashed.stderr[-3000:]
    lock = cpu_journey["after_crash"]["lock"]
    assert "cpu-torch2-14:" in lock and "torch-2.14.1-" in lock  # locked beside, not installed yet
    assert cpu_journey["after_crash"]["envs"] == ["cpu"]
    before = cpu_journey["before"]["lock"]
    assert environment_entries(lock, "cpu") == environment_entries(before, "cpu")  # byte for byte
    assert lock_entries(lock, "cpu") == lock_entries(before, "cpu")
    resumed = cpu_journey["resumed"]
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    result = json.loads(resumed.stdout)
    assert result["lock"]["status"] == "current"  # the interrupted run's lock is taken, not redone
    assert result["stage"] == "proven" and result["ok"] is True and result["promoted"] is False


@pytest.mark.slow
def test_the_new_environment_is_built_beside_and_proven_against_the_current_one(cpu_journey):
    project, result = cpu_journey["project"], json.loads(cpu_journey["resumed"].stdout)
    new = project / ".resolver" / "envs" / "cpu-torch2-14"
    assert (new / "resolver-ready.json").is_file() and (new / "conda-meta").is_dir()
    assert result["install"]["environment"] == "cpu-torch2-14"
    checks = {c["name"]: c for c in result["proof"]["checks"]}
    assert checks["verify"]["status"] == "pass"
    assert checks["logits:float32"]["status"] == "pass"
    assert checks["logits:float32"]["rel_err"] <= checks["logits:float32"]["tolerance"] == 1e-3
    assert checks["generate:float32"]["status"] == "pass"
    prompt = checks["speed:prompt"]  # a ratio, or "too noisy" on a loaded machine: never noise as a ratio
    assert (prompt["status"], prompt["ratio"] > 0) == ("info", True) if prompt["ratio"] is not None else \
        (prompt["status"] == "skip" and "too noisy" in prompt["detail"])
    assert checks["warnings"]["status"] == "info" and "new_deprecations" in checks["warnings"]
    runs = result["proof"]["runs"]
    assert runs["old"]["torch"].startswith("2.13.0") and runs["new"]["torch"].startswith("2.14.1")
    assert runs["old"]["device"] == runs["new"]["device"] == "cpu"
    # the current environment: its entries and its folder untouched, still the default
    lock = (project / "pixi.lock").read_text()
    assert lock_entries(lock, "cpu") == lock_entries(cpu_journey["before"]["lock"], "cpu")
    assert environment_entries(lock, "cpu") == environment_entries(cpu_journey["before"]["lock"], "cpu")
    assert folder_state(cpu_journey["old_env"]) == cpu_journey["before"]["folder"]
    assert result["record"]["default"] == "cpu" and result["record"]["candidate"] == "cpu-torch2-14"
    # one change a reviewer reads: pixi.toml only gains lines (the new environment, the record)
    import difflib

    toml = [line for line in difflib.ndiff(cpu_journey["before"]["toml"].splitlines(),
                                           cpu_journey["before"]["toml_after"].splitlines()) if line[:1] in "+-"]
    assert toml and all(line.startswith("+") for line in toml), toml
    assert any("cpu-torch2-14" in line for line in toml) and any("[tool.resolver.upgrade]" in line for line in toml)
    diff = result["lock"]["diff"]
    assert any(m["name"] == "torch" and m["before"] == "2.13.0+cpu" and m["after"] == "2.14.1" for m in diff["changed"])
    assert "torch moves from 2.13.0+cpu to 2.14.1" in diff["words"]


@pytest.mark.slow
def test_the_users_dependencies_come_along_and_the_proof_imports_them(cpu_journey):
    """tomli-w, the user's, is declared for the new environment, installed there and imported by the proof in both;
    old-torch-only (torch<2.14) cannot come along: a risk, named in the verdict, and --promote needs
    --allow-removal for it."""
    from resolver.core.toml import parse_toml

    project, result = cpu_journey["project"], json.loads(cpu_journey["resumed"].stdout)
    declared = parse_toml((project / "pixi.toml").read_text(), what="pixi.toml", fix="")["feature"]["cpu-torch2-14"]["pypi-dependencies"]
    assert declared["tomli-w"] == "*" and BLOCKER not in declared
    assert declared["torch"]["version"] == "==2.14.1"
    carried = {d["name"] for d in result["dependencies"]["carried"]}
    assert carried == {"tomli-w"}  # the resolver's own (numpy, transformers ...) are not counted as the user's
    assert [r["name"] for r in result["dependencies"]["removed"]] == [BLOCKER]
    assert "torch<2.14" in result["dependencies"]["removed"][0]["why"] or "torch" in \
        result["dependencies"]["removed"][0]["why"]
    (removal,) = [r for r in result["step"]["risks"] if r["kind"] == "removal"]
    assert removal["level"] == "warning" and BLOCKER in removal["text"] and "--allow-removal" in removal["text"]
    assert BLOCKER in result["verdict"] and "--allow-removal " + BLOCKER in result["verdict"]
    checks = {c["name"]: c for c in result["proof"]["checks"]}
    assert checks["import:tomli-w"]["status"] == "pass" and checks["import:tomli-w"]["modules"] == ["tomli_w"]
    assert result["proof"]["runs"]["imports"]["old"]["tomli-w"]["modules"] == {"tomli_w": None}
    assert "import:" + BLOCKER not in checks
    text = cpu_journey["reports"]["markdown"]
    assert "## Your dependencies" in text and f"cannot come along: {BLOCKER}" in text and "tomli-w *" in text


@pytest.mark.slow
def test_the_report_is_complete_in_markdown_and_json(cpu_journey):
    assert cpu_journey["resumed"].returncode == 0, cpu_journey["resumed"].stderr[-3000:]
    text, doc = cpu_journey["reports"]["markdown"], json.loads(cpu_journey["reports"]["json"])
    for heading in ("## What changes", "## Risks the knowledge base knows for this step", "## pixi.toml and pixi.lock",
                    "## Proof: the same checkpoint and inputs", "## Next"):
        assert heading in text
    assert "**PASSED" in text and "torch moves from 2.13.0+cpu to 2.14.1" in text
    assert "| logits:float32 | pass |" in text and "| float32 |" in text and "Source:" in text
    assert doc["verdict"].startswith("PASSED") and doc["proof"]["ok"] is True
    assert doc["proof_options"]["tolerance"]["float32"] == 1e-3 and doc["step"]["risks"]
    assert doc["lock"]["diff"]["words"] in text
    assert doc["report"]["markdown"] == ".resolver/reports/upgrade-cpu-to-cpu-torch2-14.md"
    # committed and read elsewhere: no path of this machine, and the JSON is upgrade --json's own document
    project = cpu_journey["project"]
    for written in (text, cpu_journey["reports"]["json"]):
        assert str(project) not in written and os.path.realpath(project) not in written
        assert os.path.expanduser("~") + "/" not in written
    assert "`.resolver/envs/cpu-torch2-14`" in text
    validate("upgrade", doc)


# A test double of a new environment whose torch computes differently: every F.linear 1 % high (both the
# library and our reference go through it, so verify in it still passes; only the comparison with the current
# environment can tell). Installed as a startup hook (.pth) into the new environment's site-packages.
NUMERICS_DOUBLE = """
import importlib.util
import sys


class _LinearOnePercentHigh:
    def find_spec(self, name, path=None, target=None):
        if name != "torch.nn.functional":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            linear = module.linear
            module.linear = lambda *args, **kwargs: linear(*args, **kwargs) * 1.01

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _LinearOnePercentHigh())
"""


@pytest.mark.slow
def test_a_failing_proof_blocks_the_promotion_and_says_which_check_and_by_how_much(cpu_journey):
    from resolver.project.paths import ProjectPaths
    from resolver.project.pixi_toml import read_upgrade_record

    project = cpu_journey["project"]
    (site,) = (project / ".resolver" / "envs" / "cpu-torch2-14").glob("lib/python3*/site-packages")
    (site / "upgrade_test_double.py").write_text(NUMERICS_DOUBLE)
    (site / "upgrade_test_double.pth").write_text("import upgrade_test_double\n")
    try:
        done = cli.run("upgrade", "--torch", "2.14", *QUICK, "--promote", "--json", project=project,
                       env=cpu_journey["env"], timeout=1800)
    finally:
        for name in ("upgrade_test_double.py", "upgrade_test_double.pth"):
            (site / name).unlink()
    assert done.returncode == 1, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["stage"] == "failed" and result["promoted"] is False and result["ok"] is False
    assert result["proof_reused"] is False  # the environment changed since the passed proof: proven again
    checks = {c["name"]: c for c in result["proof"]["checks"]}
    assert checks["verify"]["status"] == "pass"  # the double agrees with itself ...
    failed = [c for c in result["proof"]["checks"] if c["status"] == "fail"]
    assert [c["name"] for c in failed] == ["logits:float32"]  # ... not with the current environment
    assert 5e-3 < failed[0]["rel_err"] < 2e-2 and "above the tolerance 0.001 by a factor of" in failed[0]["detail"]
    assert "not promoted" in result["verdict"] and "logits:float32" in result["verdict"]
    assert "error: FAILED, not promoted" in done.stderr
    assert read_upgrade_record(ProjectPaths(project)).default == "cpu"
    report = Path(result["report"]["markdown"]).read_text()
    assert "| logits:float32 | FAIL |" in report and "FAILED, not promoted" in report


@pytest.mark.slow
def test_promote_switches_the_default_and_rollback_restores_it(cpu_journey):
    from resolver.install.environment import Environment
    from resolver.project.paths import ProjectPaths

    project = cpu_journey["project"]
    lock = (project / "pixi.lock").read_bytes()
    # a dependency of the user's cannot come along: --promote alone does not switch, and says what would
    done = cli.run("upgrade", "--promote", *QUICK, "--json", project=project, env=cpu_journey["env"], timeout=1800)
    assert done.returncode == 1, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["promoted"] is False and result["dependencies"]["blocked"] == [BLOCKER]
    assert result["record"]["default"] == "cpu" and Environment.find(ProjectPaths(project)).name == "cpu"
    assert "not promoted" in result["verdict"] and f"--allow-removal {BLOCKER}" in result["verdict"]
    assert one_error(done).startswith("error: PASSED but not promoted")
    done = cli.run("upgrade", "--promote", "--allow-removal", BLOCKER, *QUICK, "--json", project=project,
                   env=cpu_journey["env"], timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["promoted"] is True and result["record"]["default"] == "cpu-torch2-14"
    assert BLOCKER in result["verdict"]
    # doctor agrees with what install put there (torch 2.14.1 from PyPI reports 2.14.1+cu130): no FAIL, exit 0
    doctor = cli.run("doctor", "--json", project=project, env=cpu_journey["env"], timeout=1800)
    assert doctor.returncode == 0, doctor.stdout[-3000:] + doctor.stderr[-2000:]
    assert result["record"]["previous"] == "cpu" and result["record"]["candidate"] is None
    assert (project / "pixi.lock").read_bytes() == lock  # promotion names the default; the lock stays
    assert Environment.find(ProjectPaths(project)).name == "cpu-torch2-14"
    # setup plans the default as the upgrade did: the lock is current, nothing to redo
    dry = cli.run("setup", "--dry-run", "--json", project=project, env=cpu_journey["env"], timeout=1800)
    assert dry.returncode == 0, dry.stderr[-3000:]
    setup = json.loads(dry.stdout)
    assert setup["plan"]["environment"] == "cpu-torch2-14" and setup["plan"]["torch"]["requirement"] == "torch==2.14.1"
    assert {s["name"]: s["status"] for s in setup["steps"]}["lock"] == "skipped"
    # rollback: the old default again, its entries and folder as they were
    back = cli.run("rollback", "--json", project=project, timeout=1800)
    assert back.returncode == 0, back.stderr
    said = json.loads(back.stdout)
    assert said["default"] == "cpu" and said["previous"] == "cpu-torch2-14" and said["rolled_back"] is True
    assert "default before the last promotion" in said["message"]
    again = cli.run("rollback", project=project, timeout=1800)  # a retried CI step: never forward again
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().startswith("nothing to roll back: 'cpu' is the default environment")
    assert Environment.find(ProjectPaths(project)).name == "cpu"
    assert (project / "pixi.lock").read_bytes() == lock
    assert lock_entries(lock.decode(), "cpu") == lock_entries(cpu_journey["before"]["lock"], "cpu")
    assert folder_state(cpu_journey["old_env"]) == cpu_journey["before"]["folder"]
    verify = cli.run("verify", "--json", project=project,
                     timeout=1800)  # no --env: the default, the old environment again
    assert verify.returncode == 0, verify.stderr[-3000:]
    assert json.loads(verify.stdout)["env"] == "cpu" and json.loads(verify.stdout)["versions"]["torch"].startswith("2.13")
    # rollback --to names the environment
    to = cli.run("rollback", "--to", "cpu-torch2-14", "--json", project=project, timeout=1800)
    assert to.returncode == 0 and json.loads(to.stdout)["default"] == "cpu-torch2-14", to.stderr
    assert "the one you named" in json.loads(to.stdout)["message"]
    assert Environment.find(ProjectPaths(project)).name == "cpu-torch2-14"
    to = cli.run("rollback", "--to", "cpu", project=project, timeout=1800)
    assert to.returncode == 0 and Environment.find(ProjectPaths(project)).name == "cpu"


# -------------------------------------------------------------------------------------- the GPU double
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="the kernels compile C++/CUDA code: needs g++")
def test_the_upgrade_on_the_h100_double_builds_for_its_architecture_and_proves_on_the_reference_path(
        tmp_path, cpu_project, conda_channel):
    from support.gpu_double import without_system_cuda

    from resolver.verify.inenv.fatbin import archs_of_library

    project = project_beside(cpu_project, tmp_path / "p")
    before = (project / "pixi.lock").read_text()
    env = without_system_cuda(dict(os.environ))
    env.update(RESOLVER_KERNEL_RECIPES=str(TINY_RECIPE), RESOLVER_CONDA_CHANNELS=str(conda_channel))
    try:
        done = cli.run("upgrade", "--target", "cuda13.0", "--sysroot", str(DOUBLES / "h100-1x-driver580"), *QUICK,
                       "--json", project=project, env=env, timeout=1800)
        assert done.returncode == 0, done.stderr[-4000:]
        result = json.loads(done.stdout)
        step = result["step"]
        assert step["new"]["environment"] == "cuda13"  # the family's name: free in this project
        plan = step["new"]["plan"]
        assert plan["backend"] == "cuda" and plan["torch"]["requirement"] == "torch==2.14.1"
        assert plan["kernels"]["arch_list"] == ["9.0"] and plan["kernels"]["toolkit_source"] == "environment"
        changed = {c["what"]: c for c in step["changes"] if c["changed"]}
        assert changed["backend"]["after"] == "CUDA 13.0" and changed["kernel architectures"]["after"] == "9.0"
        assert changed["NVIDIA driver floor"]["after"] == ">= 580.65.06"
        kinds = {r["kind"] for r in step["risks"]}
        assert {"driver", "known-bad"} <= kinds and all(r["source"] for r in step["risks"])
        # lock beside: cpu's entries byte for byte; the new one with its own nvcc
        lock = (project / "pixi.lock").read_text()
        assert environment_entries(lock, "cpu") == environment_entries(before, "cpu")
        # its own nvcc; on the workspace's linux-64 platform, since default (locked, naming no platform) would
        # take a new CUDA platform too (pixi.lock then declares no __cuda: the lock's note says so)
        assert "/cuda-nvcc-13.0" in lock
        # kernels built for the double's architecture, checked by architecture in the proof's verify
        (package,) = result["kernels"]["packages"]
        assert package["status"] == "built" and package["archs"] == ["9.0"]
        (so,) = (project / ".resolver" / "envs" / "cuda13").glob("lib/python3*/site-packages/tiny_ext_cuda*.so")
        assert archs_of_library(str(so)) == ["sm_90"]
        checks = {c["name"]: c for c in result["proof"]["checks"]}
        assert checks["verify"]["status"] == "pass" and "carries sm_90" in checks["verify"]["detail"]
        assert checks["logits:float32"]["status"] == "pass" and checks["generate:float32"]["status"] == "pass"
        assert result["proof"]["runs"]["new"]["device"] == "cpu"  # a double has no GPU to run on: the reference path
        # promote reuses the passed proof; rollback restores
        promoted = cli.run("upgrade", "--promote", "--sysroot", str(DOUBLES / "h100-1x-driver580"), *QUICK, "--json",
                           project=project, env=env, timeout=1800)
        assert promoted.returncode == 0, promoted.stderr[-3000:]
        assert json.loads(promoted.stdout)["proof_reused"] is True
        assert json.loads(promoted.stdout)["record"]["default"] == "cuda13"
        back = cli.run("rollback", "--json", project=project, timeout=1800)
        assert back.returncode == 0 and json.loads(back.stdout)["default"] == "cpu"
    finally:
        shutil.rmtree(project / ".resolver" / "envs" / "cuda13", ignore_errors=True)
        shutil.rmtree(project / ".resolver" / "cache", ignore_errors=True)


# ---------------------------------------------------------------------------------------------- fleet
def _node(path: Path, name: str, cc: str, driver: str = "580.65.06") -> None:
    path.write_text(json.dumps({"platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "amd": None,
                                "cuda_toolkit": None, "nvidia": {"driver_version": driver, "cuda_driver_version": "13.0",
                                                                 "gpus": [{"name": name, "compute_capability": cc}]}}))


def test_a_fleet_step_plans_every_class_lists_the_ci_variants_and_refuses_to_leave_nodes_out(tmp_path):
    fleet = tmp_path / "nodes"
    fleet.mkdir()
    _node(fleet / "h100.json", "NVIDIA H100 80GB HBM3", "9.0")
    _node(fleet / "a100.json", "NVIDIA A100-SXM4-80GB", "8.0")
    _node(fleet / "v100.json", "Tesla V100-SXM2-32GB", "7.0")
    project = tmp_path / "p"
    project.mkdir()
    done = cli.run("upgrade", "--fleet", str(fleet), "--torch", "2.13", "--json", project=project, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    plan = json.loads(done.stdout)
    assert plan["new_request"]["torch"] == "2.13"
    served = sorted(n for c in plan["classes"] for n in c["nodes"])
    assert served == ["a100", "h100", "v100"]
    for cls in plan["classes"]:
        torch = next(c for c in cls["changes"] if c["what"] == "torch")
        assert torch["before"].startswith("2.14.1") and torch["after"].startswith("2.13.0")
        assert cls["was"]
    assert plan["ci_variants"] and all(v["command"].startswith("python -m resolver build --variant ")
                                       for v in plan["ci_variants"])
    assert Path(plan["report"]["markdown"]).is_file()
    # CUDA 13 has no sm_70: the V100 node, served today, would be left out
    before = sorted(p.name for p in project.rglob("*"))
    done = cli.run("upgrade", "--fleet", str(fleet), "--target", "cuda13.0", "--json", project=project, timeout=1800)
    assert done.returncode == 2
    error = one_error(done)
    assert "leave 1 node(s) of the fleet without an environment" in error and "v100" in error and "sm_70" in error
    assert sorted(p.name for p in project.rglob("*")) == before


# ------------------------------------------------------------------------------------------------ parts
def test_the_record_in_pixi_toml_is_read_strictly_and_written_back_as_read(tmp_path):
    from resolver.core.errors import BadInput
    from resolver.project.manifest import Manifest
    from resolver.project.upgrade_record import Choice, UpgradeRecord

    text = shipped_manifest()
    manifest = Manifest.parse(text)
    record = UpgradeRecord(default="cpu", candidate="cpu-torch2-14").with_choice(Choice("cpu", "cpu", "2.13", "3.11"))
    record.write(manifest)
    again = Manifest.parse(manifest.dumps())
    assert again.tool.upgrade == record
    assert manifest.dumps().startswith(text.split("[tool.resolver]")[0])  # the rest of the file is kept
    for bad in ('default = "../x"', 'default = 5', 'environments = { cpu = { target = 3 } }',
                'environments = { cpu = { colour = "red" } }'):
        with pytest.raises(BadInput):
            _ = Manifest.parse(text + f"\n[tool.resolver.upgrade]\n{bad}\n").tool.upgrade
    # what every command without --env asks: tolerant of a pixi.toml that is not TOML, strict about the record
    from resolver.project.paths import ProjectPaths
    from resolver.project.pixi_toml import default_environment

    project = ProjectPaths(tmp_path)
    (tmp_path / "pixi.toml").write_text(manifest.dumps())
    assert default_environment(project) == "cpu"
    (tmp_path / "pixi.toml").write_text("[workspace\n")
    assert default_environment(project) is None
    (tmp_path / "pixi.toml").write_text(text + '\n[tool.resolver.upgrade]\ndefault = "a/b"\n')
    with pytest.raises(BadInput):
        default_environment(project)


def test_the_lock_diff_in_words_and_the_entries_of_one_environment(cpu_project):
    from resolver.lock.lockfile import read_lock
    from resolver.workflows.upgrade.lockdiff import lock_diff

    text = (cpu_project / "pixi.lock").read_text()
    block, packages = environment_entries(text, "cpu")
    assert block.startswith("  cpu:\n") and any("torch-2.13.0" in p for p in packages)
    assert environment_entries(text, "nowhere") == ("", {})
    envs = read_lock(cpu_project / "pixi.lock", cpu_project)
    cpu, default = envs["cpu"][0], envs["default"][0]
    diff = lock_diff(cpu, default)
    assert any(m.name == "torch" for m in diff.removed) and "torch 2.13.0+cpu" in diff.words()
    assert diff.words().endswith(f"{diff.unchanged} package{'s stay as they are' if diff.unchanged != 1 else ' stays as it is'}.")
    assert lock_diff(cpu, cpu).moved == ()


def test_the_proof_compares_per_dtype_against_its_tolerance(tmp_path):
    import array

    from resolver.verify.inenv.answers import VerifyReport
    from resolver.workflows.upgrade.proof import ProofOptions, _numerics

    for label, values, tokens in (("old", [1.0, -2.0, 0.5], [[3, 4]]), ("new", [1.0, -2.0002, 0.5], [[3, 4]])):
        (tmp_path / label).mkdir()
        for dtype in ("float32", "bfloat16"):
            (tmp_path / label / f"{dtype}.f32").write_bytes(array.array("f", values).tobytes())
            (tmp_path / label / f"{dtype}.json").write_text(json.dumps({"shape": [1, 3], "tokens": tokens}))
    checks: list = []
    empty = {"old": VerifyReport(), "new": VerifyReport()}
    _numerics(tmp_path, empty, ProofOptions(), checks)
    assert [(c.name, c.status) for c in checks] == [("logits:float32", "pass"), ("generate:float32", "pass"),
                                                    ("logits:bfloat16", "pass"), ("generate:bfloat16", "pass")]
    checks = []
    _numerics(tmp_path, empty, ProofOptions(tolerance={"float32": 1e-5}), checks)
    assert checks[0].status == "fail" and "above the tolerance 1e-05 by a factor of 10" in checks[0].detail


def test_the_warnings_only_the_new_torch_raises_are_counted_and_named_from_the_tables():
    from resolver.plan.knowledge import Knowledge
    from resolver.verify.inenv.answers import VerifyReport
    from resolver.workflows.upgrade.proof import _warnings

    amp = {"category": "FutureWarning", "package": "mamba_ssm", "count": 3, "deprecation": True, "file": "x.py",
           "line": 164, "message": "`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use `torch.amp.custom_fwd`"}
    both = {"category": "UserWarning", "package": "transformers", "count": 1, "deprecation": False, "message": "m"}
    checks: list = []
    found = _warnings({"old": VerifyReport(warnings=(both,)), "new": VerifyReport(warnings=(both, amp))},
                      Knowledge.load(), checks)
    assert found["by_package"] == {"mamba_ssm": 3} and found["new_deprecations"][0]["api_change"] == "amp-custom-fwd"
    assert "state-spaces/mamba#496" in found["new_deprecations"][0]["source"]
    assert checks[0].status == "info" and checks[0].detail.startswith("3 deprecation warning(s) only the new torch")


def test_the_proof_is_stale_when_site_packages_changes_and_not_when_bytecode_is_written(tmp_path):
    """A package added (its .dist-info) or a startup hook (.pth) makes a passed proof stale; the bytecode
    the proof itself writes when it first imports a package (``__pycache__`` in site-packages and in the
    package's folder) does not."""
    import subprocess as sp

    from resolver.workflows.upgrade.journey import _site_listing

    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("X = 1\n")
    (site / "single.py").write_text("Y = 2\n")
    before = _site_listing(tmp_path / "env")
    sp.run([sys.executable, "-c", "import pkg, single"], cwd=tmp_path, check=True,
           env={"PYTHONPATH": str(site), "PATH": os.environ.get("PATH", "")})
    assert (site / "__pycache__").is_dir() and (site / "pkg" / "__pycache__").is_dir()
    assert _site_listing(tmp_path / "env") == before
    (site / "other-1.0.dist-info").mkdir()
    added = _site_listing(tmp_path / "env")
    assert added != before
    (site / "hook.pth").write_text("import os\n")
    assert _site_listing(tmp_path / "env") != added


def test_the_proof_says_too_noisy_where_bench_compare_does_and_never_prints_noise_as_a_ratio():
    """The speed lines of the proof and of `bench --compare` come from one noise guard: the same pair of runs
    gives the same answer in both, and a decode time smaller than the spread of the repeats is "too noisy"."""
    from resolver.verify.bench import _compare
    from resolver.verify.bench_text import render
    from resolver.verify.inenv.answers import VerifyReport
    from resolver.workflows.upgrade.proof import ProofOptions, _speed

    steady = {"prefill_tokens_per_s": 1000.0, "prefill_latency_ms": 64.0, "prefill_all_ms": [63.0, 64.0, 66.0],
              "per_token_latency_ms": 10.0, "decode_tokens_per_s": 100.0, "generate_all_ms": [300.0, 305.0, 310.0]}
    noisy = dict(steady, per_token_latency_ms=45.0, decode_tokens_per_s=22.0, generate_all_ms=[88.0, 329.0, 579.0])

    def report(side: dict) -> VerifyReport:
        return VerifyReport(results={"float32": {"bench": {"library": side}}})

    checks: list = []
    speed = _speed({"old": report(steady), "new": report(noisy)}, ProofOptions(new_tokens=16), checks)
    lines = {c.name: c for c in checks}
    assert speed["decode_ratio"] is None and lines["speed:decode"].status == "skip"
    assert "too noisy" in lines["speed:decode"].detail and "x0.22" not in lines["speed:decode"].detail
    assert speed["prompt_ratio"] == 1.0 and lines["speed:prompt"].status == "info"
    runs = [{"env": e, "dtype": "float32", "bench": {"library": side}} for e, side in (("a", steady), ("b", noisy))]
    compared = _compare("a", "b", runs, (Path("/nonexistent/a"), Path("/nonexistent/b")), 16)
    assert compared["speed_ratio_other_over_env"] == {"prefill": speed["prompt_ratio"], "decode": None}
    text = "\n".join(render({"runs": [], "compare": compared, "ok": False}))
    assert "decode: not compared (too noisy)" in text
    # a steady pair gives the ratio in both
    checks = []
    faster = dict(steady, decode_tokens_per_s=200.0, per_token_latency_ms=5.0, generate_all_ms=[150.0, 152.0, 155.0])
    assert _speed({"old": report(steady), "new": report(faster)}, ProofOptions(new_tokens=16), checks)["decode_ratio"] == 2.0
    assert "x2.00 (faster)" in checks[1].detail
