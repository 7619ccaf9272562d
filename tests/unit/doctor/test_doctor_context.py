"""doctor's fixes run where they are printed: each signature's fix, for its own log, on a machine double
of the kind the signature is about, names an installed GPU environment (not the CPU one), the double's
architecture, the package, no placeholder, no pip, and parses as the resolver's own command line; a log
from a Python outside the project says so and what to run there; the ROCm bf16 diagnosis depends on the
ROCm version; an unknown architecture is never printed as a placeholder."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from support import DATA, cli, projects, records

from resolver.doctor.signatures import load_signatures

LOGS = DATA / "logs"
SIGNATURES = load_signatures()
NVIDIA_DOUBLE = DATA / "doubles" / "h100-1x-driver580"  # 1x H100, compute capability 9.0
ROCM_DOUBLE = DATA / "machines" / "mi210-k8s-rocm6.2"  # 1x MI210, gfx90a, ROCm 6.2
ROCM60_DOUBLE = DATA / "machines" / "gfx1100-rocm6.0.2-kfd"  # gfx1100, ROCm 6.0.2
CASES = [(s.id, s.logs[0]) for s in SIGNATURES]


def _env(root: Path, name: str, torch: str) -> None:
    """An installed environment as doctor sees it without running it: a conda prefix and install's marker."""
    prefix = root / ".resolver" / "envs" / name
    (prefix / "conda-meta").mkdir(parents=True)
    (prefix / "bin").mkdir()
    (prefix / "bin" / "python").symlink_to(sys.executable)
    records.plant(prefix / "resolver-ready.json", {
        "environment": name, "kind": "conda", "python": "3.12", "platform": "linux-64", "lock_digest": "0" * 64,
        "conda": [], "pypi": [f"torch=={torch}"]})


@pytest.fixture()
def project(tmp_path):
    projects.project(tmp_path, "[workspace]\nname = 't'\nchannels = []\nplatforms = ['linux-64']\n")
    _env(tmp_path, "cpu", "2.13.0+cpu")
    _env(tmp_path, "cu130", "2.14.1+cu130")
    _env(tmp_path, "rocm62", "2.9.1+rocm6.2.4")
    return tmp_path


def _doctor(project: Path, log: Path, double: Path, *extra: str) -> tuple[int, dict]:
    done = cli.run("doctor", "--log", str(log), "--json", *extra, project=project,
                   env={"RESOLVER_SYSROOT": str(double)},
                   timeout=300)
    return done.returncode, json.loads(done.stdout)


def _double_for(sig) -> tuple[Path, str]:
    if sig.id == "rocm60-bf16-multiple-definition":
        return ROCM60_DOUBLE, "gfx1100"
    if sig.category == "rocm" or sig.id in ("hip-no-binary-for-gpu", "rocm-build-got-cuda-torch"):
        return ROCM_DOUBLE, "gfx90a"
    return NVIDIA_DOUBLE, "9.0"


@pytest.mark.parametrize("sig_id,log", CASES, ids=[c[0] for c in CASES])
def test_each_fix_runs_in_its_context(project, sig_id, log):
    from resolver.cli import build_parser

    sig = next(s for s in SIGNATURES if s.id == sig_id)
    double, arch = _double_for(sig)
    code, doc = _doctor(project, LOGS / log, double)
    match = next((m for m in doc["log"]["matches"] if m["id"] == sig_id), None)
    assert code == 1 and match is not None, (code, [m["id"] for m in doc["log"].get("matches", [])])
    fix = match["fix"]
    assert not re.search(r"\{\w+\}|\bNAME\b|\bARCH\b|X\.Y", fix), fix
    assert "pip install" not in fix and "gpus.toml" not in fix
    gpu_env = "rocm62" if double != NVIDIA_DOUBLE else "cu130"
    for command in fix.split("&&"):
        argv = shlex.split(command.split("(")[0])
        if argv[:3] != ["python", "-m", "resolver"]:
            assert argv[0] == "export", command  # an environment variable for the next command
            continue
        parsed = build_parser().parse_args(argv[3:])  # exits 2 on an unknown flag or value
        env = getattr(parsed, "env", None)
        if env is not None:
            assert (project / ".resolver" / "envs" / env).is_dir(), f"{fix}: no environment '{env}'"
            if argv[3] in ("build", "verify"):
                assert env == gpu_env, f"{fix}: a GPU fix names '{env}'"
        if getattr(parsed, "arch", None):
            assert parsed.arch == arch, fix
        if argv[3] == "build" and parsed.package != "all":
            assert parsed.package in ("causal-conv1d", "mamba-ssm"), fix


def test_the_failing_package_is_named(project):
    code, doc = _doctor(project, LOGS / "cao-ronet-2-causal-conv1d-no-kernel-image.log", NVIDIA_DOUBLE)
    assert doc["log"]["matches"][0]["fix"] == "python -m resolver build --env cu130 --arch 9.0 --package causal-conv1d"


def test_a_log_from_a_python_outside_the_project(project):
    """mamba#706's traceback runs in /home/bounty/miniconda3/envs/umamba: not this project's environment."""
    code, doc = _doctor(project, LOGS / "mamba-706-libcudart-12.log", NVIDIA_DOUBLE)
    first = doc["log"]["matches"][0]
    assert doc["log"]["python"] == "/home/bounty/miniconda3/envs/umamba"
    assert first["fix"] == "python -m resolver setup" and "--no-prebuilt" in first["fix_note"]


def test_no_gpu_environment_says_what_to_do_first(tmp_path):
    (tmp_path / "pixi.toml").write_text("[workspace]\nname = 't'\nchannels = []\nplatforms = ['linux-64']\n")
    _env(tmp_path, "cpu", "2.13.0+cpu")
    code, doc = _doctor(tmp_path, LOGS / "mamba-267-no-kernel-image.log", NVIDIA_DOUBLE, "--env", "cpu")
    first = doc["log"]["matches"][0]
    assert "CPU-only torch" in first["fix_note"] and "lock --target auto" in first["fix_note"]


def test_an_unknown_architecture_is_left_to_the_build_with_how_to_get_it(tmp_path):
    (tmp_path / "pixi.toml").write_text("[workspace]\nname = 't'\nchannels = []\nplatforms = ['linux-64']\n")
    cpu_machine = DATA / "machines" / "cpu-only-ubuntu2410"
    code, doc = _doctor(tmp_path, LOGS / "nvdiffrast-183-killed.log", cpu_machine)
    first = doc["log"]["matches"][0]
    assert "--arch" not in first["fix"] and "ARCH" not in first["fix"]
    assert "nvidia-smi --query-gpu=name,compute_cap --format=csv" in first["fix_note"]


def test_the_rocm_bf16_diagnosis_depends_on_the_rocm_version(project, tmp_path):
    log60 = LOGS / "ctranslate2-rocm-2-bf16-multiple-definition.log"
    log7 = LOGS / "koboldcpp-1767-rocm7-bf16-duplicate.log"  # the log says ROCm 7.0.1
    ids = lambda doc: [m["id"] for m in doc["log"]["matches"]]  # noqa: E731
    assert ids(_doctor(project, log60, ROCM60_DOUBLE)[1])[0] == "rocm60-bf16-multiple-definition"
    on_62 = _doctor(project, log60, ROCM_DOUBLE)[1]  # the machine's ROCm is 6.2: the header is not the cause
    assert "rocm60-bf16-multiple-definition" not in ids(on_62) and ids(on_62)[0] == "rocm-bf16-duplicate-other-header"
    assert "ROCm 6.2" in on_62["log"]["matches"][0]["cause"]
    on_7 = _doctor(project, log7, ROCM60_DOUBLE)[1]  # the log's own ROCm (7.0.1) wins over the probe's
    assert ids(on_7)[0] == "rocm-bf16-duplicate-other-header" and "patch" not in on_7["log"]["matches"][0]["fix"]
