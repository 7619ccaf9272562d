"""doctor: every error signature against the real log excerpt of the thread it cites; the CLI on
logs (also non-UTF-8 and unknown ones); the environment checks on a real installed CPU environment."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support import DATA, REPO, cli

from resolver.doctor.checks import cuda_vs_driver, hip_vs_rocm
from resolver.doctor.context import FixContext, target_of
from resolver.doctor.signatures import decode_log, load_signatures, match_log

LOGS = DATA / "logs"
SIGNATURES = load_signatures()
CASES = [(s.id, log) for s in SIGNATURES for log in s.logs]


def _source_of(log: Path) -> str:
    first = log.read_text(encoding="utf-8").splitlines()[0]
    m = re.match(r"# source: (https://github\.com/\S+)", first)
    assert m, f"{log.name} does not start with '# source: URL'"
    return m.group(1)


def test_at_least_fifteen_signatures_each_with_a_log_and_sources():
    assert len(SIGNATURES) >= 15
    for sig in SIGNATURES:
        assert sig.logs, f"{sig.id} has no log excerpt"
        assert all(s.startswith("https://github.com/") for s in sig.sources), sig.id


def test_the_seed_documents_five_errors_are_covered():
    seed = {"RuntimeError: CUDA error: no kernel image is available for execution on the device": "no-kernel-image",
            "AttributeError: module 'torch' has no attribute 'compile'": "torch-missing-attribute",
            "ImportError: version `CXXABI_1.3.11' not found": "cxxabi-not-found",
            "hipErrorNoBinaryForGpu: Unable to find code object for all current devices": "hip-no-binary-for-gpu",
            "TypeError: Input type (c10::Half) and bias type (float) should be the same": "half-bias-type-mismatch"}
    for line, expected in seed.items():
        assert [m.signature.id for m in match_log(line, SIGNATURES)][:1] == [expected], line


@pytest.mark.parametrize("sig_id,log", CASES, ids=[f"{s}:{l}" for s, l in CASES])
def test_signature_matches_the_log_of_the_issue_it_cites(sig_id, log):
    path = LOGS / log
    sig = next(s for s in SIGNATURES if s.id == sig_id)
    assert _source_of(path) in sig.sources, f"{log} cites a thread that {sig_id} does not list"
    from dataclasses import replace

    from resolver.doctor.context import applies
    from resolver.doctor.signatures import rocm_in_log

    text = decode_log(path.read_bytes())
    rocm = rocm_in_log(text)
    matches = [m for m in match_log(text, SIGNATURES)
               if applies(replace(m, groups={**m.groups, **({"log_rocm": rocm} if rocm else {})}), FixContext())]
    assert matches, f"nothing matched {log}"
    assert matches[0].signature.id == sig_id, f"{log}: first match {matches[0].signature.id}, expected {sig_id}"


def test_every_log_file_belongs_to_a_signature():
    cited = {log for s in SIGNATURES for log in s.logs}
    assert {p.name for p in LOGS.glob("*.log")} == cited


def test_a_clean_log_matches_nothing():
    clean = "Collecting torch\nSuccessfully installed torch-2.13.0\n>>> import mamba_ssm\n>>> print('ok')\nok\n"
    assert match_log(clean, SIGNATURES) == []


def test_named_groups_and_the_fix_are_filled_for_this_environment():
    text = (LOGS / "hhhhpaaa-mamba-ssm-2-cuda-mismatch.log").read_text()
    m = match_log(text, SIGNATURES)[0]
    assert m.groups == {"nvcc": "11.8", "torch_cuda": "12.1"}
    ctx = FixContext(env="cuda13", arch="9.0", torch="2.14.1+cu130", cuda="13.0", target="cuda13.0")
    assert ctx.render(m.signature.fix, m.groups) == "export CUDA_HOME=/usr/local/cuda-12.1 && python -m resolver build --env cuda13"
    oom = match_log((LOGS / "nvdiffrast-183-killed.log").read_text(), SIGNATURES)[0]
    assert ctx.render(oom.signature.fix, oom.groups) == "python -m resolver build --env cuda13 --arch 9.0 --jobs 1"


def test_build_stuck_only_when_the_log_ends_there():
    stuck = "Building wheel for mamba-ssm (setup.py) ...\n"
    finished = stuck + "  Building wheel for mamba-ssm (setup.py) ... done\n" + "\n".join(f"line {i}" for i in range(8)) + "\n"
    assert [m.signature.id for m in match_log(stuck, SIGNATURES)] == ["build-seems-stuck"]
    assert match_log(finished, SIGNATURES) == []


def test_version_and_driver_checks():
    assert cuda_vs_driver("13.0", "12.8").status == "fail"
    assert cuda_vs_driver("12.8", "12.2").status == "warn"
    assert cuda_vs_driver("12.6", "13.0").status == "ok"
    assert cuda_vs_driver(None, "13.0").status == "skip"
    assert hip_vs_rocm("6.0.32830", "6.1.2").status == "warn"
    assert hip_vs_rocm("6.1.4", "6.1.2").status == "ok"
    assert target_of({"cuda": "13.0"}) == "cuda13.0" and target_of({"hip": "6.0.1"}) == "rocm6.0"


def test_cli_log_from_stdin_with_bad_bytes(tmp_path):
    data = "构建失败\n".encode("gbk") + b"\xff\xfe\x00 junk\r\nImportError: x.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\r\n"
    done = cli.run("doctor", "--log", "-", "--json", project=tmp_path, stdin=data, text=False)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    first = doc["log"]["matches"][0]
    assert first["id"] == "undefined-c10-symbol" and first["details"]["symbol"] == "_ZN3c104cuda9SetDeviceEi"
    # no environment in this project yet: setup first, then the rebuild
    assert first["fix"] == "python -m resolver setup" and "python -m resolver build --no-prebuilt" in first["fix_note"]


def test_cli_unknown_log_is_its_own_answer(tmp_path):
    """A log with no known error: one sentence with the next step, exit 8, `recognised: false`; never a
    promise of fix lines (the log: a clean install transcript, nothing failed in it)."""
    log = tmp_path / "weird.log"
    log.write_bytes(b"Collecting torch\nSuccessfully installed torch-2.13.0\nstep 2 hangs here\n")
    done = cli.run("doctor", "--log", str(log), project=tmp_path, text=False)
    assert done.returncode == 8, done.stderr
    out = done.stdout.decode()
    assert "no error doctor knows is in it" in out and "python -m resolver setup" in out and "step 2 hangs" in out
    assert "fix lines" not in out and "problems found" not in out
    doc = json.loads(cli.run("doctor", "--log", str(log), "--json", project=tmp_path, text=False).stdout)
    assert doc["recognised"] is False and doc["verdict"] == "unrecognised" and doc["log"]["matches"] == []
    assert "setup" in doc["log"]["next_step"]


def test_cli_missing_log_is_one_line(tmp_path):
    done = cli.run("doctor", "--log", str(tmp_path / "nope.log"), project=tmp_path, text=False)
    assert done.returncode == 3 and "Traceback" not in done.stderr.decode() and len(done.stderr.decode().strip().splitlines()) == 1


def test_doctor_on_the_installed_cpu_environment(cpu_project):
    done = cli.run("doctor", "--env", "cpu", "--json", project=cpu_project, text=False)
    doc = json.loads(done.stdout)
    status = {f["name"]: f["status"] for f in doc["findings"]}
    assert status["torch"] == "ok" and status["cuda-vs-driver"] == "skip"
    assert status["torch-vs-install"] == "ok" and status["lock"] == "ok", doc["findings"]
    assert doc["context"]["target"] == "cpu" and doc["context"]["env"] == "cpu"
    assert done.returncode == (0 if doc["ok"] else 1)
    # torch's bytecode: a warning exactly when none is cached (installed with --no-compile and unwritable)
    site = next((cpu_project / ".resolver" / "envs" / "cpu" / "lib").glob("python3*/site-packages"))
    cached = any((site / "torch" / "__pycache__").glob("__init__.cpython-*.pyc"))
    assert status["bytecode"] == ("ok" if cached else "warn")


def test_doctor_sees_a_lock_that_changed_after_install(tmp_path, cpu_project):
    project = tmp_path / "p"
    (project / ".resolver" / "envs").mkdir(parents=True)
    shutil.copy(cpu_project / "pixi.toml", project / "pixi.toml")
    lock = (cpu_project / "pixi.lock").read_text()
    m = re.search(r"sha256: ([0-9a-f]{64})", lock)
    assert m, "pixi.lock has no sha256 entries"
    (project / "pixi.lock").write_text(lock.replace(m.group(1), "0" * 64, 1))
    (project / ".resolver" / "envs" / "cpu").symlink_to(cpu_project / ".resolver" / "envs" / "cpu", target_is_directory=True)
    done = cli.run("doctor", "--env", "cpu", "--json", project=project, text=False)
    doc = json.loads(done.stdout)
    lock_finding = next(f for f in doc["findings"] if f["name"] == "lock")
    assert lock_finding["status"] == "fail" and "install --env cpu" in lock_finding["fix"]
    assert done.returncode == 1


def test_isolated_build_is_not_blamed_when_the_build_saw_the_environments_torch():
    from resolver.doctor.context import applies

    log = (LOGS / "mamba-720-isolated-build.log").read_text()
    m = next(m for m in match_log(log, SIGNATURES) if m.signature.id == "isolated-build-other-torch")
    assert m.groups["build_torch"] == "2.7.0+cu126"
    assert applies(m, FixContext(torch="2.13.0+cpu"))
    assert not applies(m, FixContext(torch="2.7.0+cu126"))
    assert applies(m, FixContext())  # torch unknown: keep the diagnosis


def test_rocm_60_header_check_asks_the_patch_stage(tmp_path):
    """ROCm 6.0.x with the shipped amd_hip_bf16.h (the patch stage's fixture tree): fail, fix `resolver patch`."""
    from resolver.core.versions import DottedVersion
    from resolver.doctor.checks import rocm_header_finding
    from resolver.plan.probe.profile import AmdInfo, HardwareProfile
    from resolver.project.paths import ProjectPaths

    root = tmp_path / "rocm"
    shutil.copytree(DATA / "fixtures" / "rocm" / "root-6.0", root)
    project = ProjectPaths(tmp_path / "project")

    def profile(version):
        amd = AmdInfo(rocm_version=DottedVersion.parse(version), rocm_root=str(root)) if version else None
        return HardwareProfile(platform="linux-64", python=DottedVersion.parse("3.11"), amd=amd)

    finding = rocm_header_finding(project, profile("6.0.2"))
    assert finding.status == "fail" and finding.fix == "python -m resolver patch"
    assert rocm_header_finding(project, profile("6.1.2")).status == "ok"
    assert rocm_header_finding(project, profile(None)).status == "skip"
    assert sorted(p.name for p in root.rglob("*")) == sorted(p.name for p in (REPO / "tests/data/fixtures/rocm/root-6.0").rglob("*"))


@pytest.mark.slow
def test_doctor_judges_an_environment_against_a_captured_machine(tmp_path, other_torch_env):
    """torch 2.14.1+cu130 on the captured GTX 1080 Ti / driver 460 machine: CUDA 13 cannot start on that
    driver, and torch carries no sm_61 code; on the captured H100 the architecture is fine."""
    project = tmp_path
    (project / "pixi.toml").write_text("[workspace]\nname = 't'\nchannels = []\nplatforms = ['linux-64']\n")
    (project / ".resolver" / "envs").mkdir(parents=True)
    (project / ".resolver" / "envs" / "cu").symlink_to(other_torch_env, target_is_directory=True)
    machines = DATA / "machines"
    pascal = json.loads(cli.run("doctor", "--sysroot", str(machines / "gtx1080ti-driver460-ubuntu2004"), "--json",
                                project=project, text=False).stdout)
    status = {f["name"]: f for f in pascal["findings"]}
    assert status["cuda-vs-driver"]["status"] == "fail" and "13.0" in status["cuda-vs-driver"]["detail"]
    assert status["gpu-arch:torch:sm_61"]["status"] == "fail" and "sm_75" in status["gpu-arch:torch:sm_61"]["detail"]
    assert pascal["context"]["arch"] == "6.1"
    hopper = json.loads(cli.run("doctor", "--sysroot", str(machines / "h100-8x-ubuntu2204"), "--json",
                                project=project, text=False).stdout)
    arch = [f for f in hopper["findings"] if f["name"].startswith("gpu-arch:torch")]
    assert len(arch) == 1 and arch[0]["status"] == "ok" and arch[0]["detail"].startswith("8 x ")


def test_doctor_refuses_a_missing_sysroot(tmp_path):
    done = cli.run("doctor", "--sysroot", str(tmp_path / "nope"), project=tmp_path, text=False)
    assert done.returncode == 3 and len(done.stderr.decode().strip().splitlines()) == 1
