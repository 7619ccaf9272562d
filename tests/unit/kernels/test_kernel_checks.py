"""The op-level kernel checks and the kernel gate (issue 18).

The gate is pure (no torch): which extensions may be called on which GPU. The comparison runs in a real
torch environment (``other_torch_env``, torch 2.14.1 on the CPU) through tests/support/kernel_cases.py, with
stand-ins of known behaviour for the kernels, which cannot run without a GPU.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from support import REPO, TESTS

from resolver.verify.inenv.kernel_checks import (
    KERNEL_TOLERANCE,
    NO_KERNEL_IMAGE,
    build_arch_fix,
    kernel_gate,
)


def _ext(archs, installed=True, loaded=True, error=None):
    return {"installed": installed, "loaded": loaded, "built_for_archs": archs, "error": error}


def test_gate_blocks_an_extension_built_for_another_architecture_only():
    gate = kernel_gate(True, "sm_90", {"causal_conv1d_cuda": _ext(["sm_80"]), "selective_scan_cuda": _ext(["sm_90"])})
    assert not gate.all_callable and gate.callable("selective_scan_cuda") and not gate.callable("causal_conv1d_cuda")
    why = gate.reason("causal_conv1d_cuda")
    assert "sm_80" in why and "sm_90" in why and NO_KERNEL_IMAGE in why


@pytest.mark.parametrize("archs, expected", [
    (["sm_80", "sm_90"], True),            # SASS for the device
    (["sm_80", "compute_80"], True),       # PTX at or below sm_90: the driver JIT-compiles it
    (["sm_90", "compute_90"], True),
    (["sm_100", "compute_100"], False),    # PTX above the device does not run on it
    (["sm_70", "sm_75", "sm_80", "sm_86"], False),
    ([], True),                            # nothing recorded: not blocked, the call decides
])
def test_gate_follows_sass_and_ptx_rules(archs, expected):
    gate = kernel_gate(True, "sm_90", {"causal_conv1d_cuda": _ext(archs), "selective_scan_cuda": _ext(["sm_90"])})
    assert gate.callable("causal_conv1d_cuda") is expected


def test_gate_without_gpu_or_kernels_blocks_with_the_reason():
    no_gpu = kernel_gate(False, None, {"causal_conv1d_cuda": _ext(["sm_90"]), "selective_scan_cuda": _ext(["sm_90"])})
    assert all("no GPU" in no_gpu.reason(n) for n in ("causal_conv1d_cuda", "selective_scan_cuda"))
    missing = kernel_gate(True, "sm_90", {"causal_conv1d_cuda": _ext([], installed=False, loaded=False),
                                          "selective_scan_cuda": _ext(["sm_90"], loaded=False, error="undefined symbol: _ZN3c10x")})
    assert "not installed" in missing.reason("causal_conv1d_cuda")
    assert "does not load" in missing.reason("selective_scan_cuda") and "_ZN3c10x" in missing.reason("selective_scan_cuda")
    amd = kernel_gate(True, "gfx942", {"causal_conv1d_cuda": _ext(["gfx90a"]), "selective_scan_cuda": _ext(["gfx942"])})
    assert not amd.callable("causal_conv1d_cuda") and amd.callable("selective_scan_cuda")


def test_the_fix_names_the_device_arch_as_build_takes_it():
    assert build_arch_fix("sm_90", "cuda13") == "python -m resolver build --env cuda13 --arch 9.0"
    assert build_arch_fix("sm_120") == "python -m resolver build --arch 12.0"
    assert build_arch_fix("sm_90a") == "python -m resolver build --arch 9.0"


@pytest.fixture(scope="module")
def cases(other_torch_env) -> dict:
    done = subprocess.run([str(other_torch_env / "bin" / "python"), str(TESTS / "support" / "kernel_cases.py")],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("op", ["conv", "scan"])
def test_a_kernel_computing_like_the_real_one_passes(cases, op, dtype):
    result = cases[f"{op}_like_kernel:{dtype}"]
    assert result["ok"] and result["finite"] and result["tolerance"] == KERNEL_TOLERANCE[dtype]
    if dtype == "float32":
        assert result["rel_err"] <= 1e-6
    else:  # one rounding of the output to bfloat16: the bound the tolerance is derived from
        assert 0 < result["rel_err"] <= 2 ** -8
    assert result["shapes"] >= 2
    if op == "scan":
        assert result["outputs"] == ["last_state", "out"]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("control", ["conv_anticausal", "scan_without_D"])
def test_semantic_mistakes_fail_by_far_more_than_the_tolerance(cases, control, dtype):
    result = cases[f"{control}:{dtype}"]
    assert not result["ok"] and result["finite"] and result["rel_err"] > 10 * result["tolerance"]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_kernel_returning_nan_or_inf_fails(cases, dtype):
    result = cases[f"scan_without_softplus:{dtype}"]  # exp(-dt * A) with dt < 0 overflows
    assert not result["ok"] and not result["finite"] and result["rel_err"] is None


def test_without_a_gpu_every_kernel_check_is_skipped_with_the_reason(cases):
    checks = cases["checks_without_gpu"]
    assert [c["name"] for c in checks] == ["kernel:causal_conv1d:float32", "kernel:causal_conv1d:bfloat16",
                                           "kernel:selective_scan:float32", "kernel:selective_scan:bfloat16"]
    assert all(c["status"] == "skip" and "no GPU" in c["detail"] for c in checks)


def test_doctor_names_the_same_fix_for_kernels_built_for_another_gpu():
    """doctor's arch findings (pure: the facts an environment reports) for causal-conv1d built for sm_80 on an H200."""
    from resolver.doctor.checks import arch_findings
    from resolver.doctor.context import build_context

    facts = {"torch": {"version": "2.11.0+cu130", "cuda": "13.0", "arch_list": ["sm_80", "sm_90", "sm_100"]},
             "device": {"kind": "cuda", "devices": [{"name": "NVIDIA H200", "arch": "sm_90", "capability": "9.0"}]},
             "extensions": {"causal_conv1d_cuda": _ext(["sm_80"]), "selective_scan_cuda": _ext(["sm_90"])}}
    findings = {f.name: f for f in arch_findings(facts, None, build_context("guard", facts, None))}
    assert findings["gpu-arch:torch:sm_90"].status == "ok"
    assert findings["gpu-arch:selective_scan_cuda:sm_90"].status == "ok"
    bad = findings["gpu-arch:causal_conv1d_cuda:sm_90"]
    assert bad.status == "fail" and "sm_80" in bad.detail
    assert bad.fix == build_arch_fix("sm_90", "guard") == "python -m resolver build --env guard --arch 9.0"


def test_verify_arch_failure_arrives_with_the_no_kernel_image_diagnosis_and_fix():
    """The failed arch check verify writes (instead of calling the kernel) runs through doctor's signatures."""
    from resolver.doctor.verify_diagnoses import diagnoses
    from resolver.verify.inenv.kernel_checks import arch_mismatch

    detail, fix = arch_mismatch("causal_conv1d_cuda", ["sm_80"], "sm_90", "guard")
    assert fix == "python -m resolver build --env guard --arch 9.0" and fix in detail and "sm_80" in detail
    facts = {"torch": {"version": "2.11.0+cu130", "cuda": "13.0"},
             "device": {"kind": "cuda", "devices": [{"name": "NVIDIA H200", "arch": "sm_90", "capability": "9.0"}]}}
    report = {"checks": [{"name": "arch:causal_conv1d_cuda", "status": "fail", "detail": detail, "fix": fix}],
              "errors": [], "facts": facts}
    (diagnosis,) = diagnoses(report, "guard")
    assert diagnosis["id"] == "no-kernel-image" and diagnosis["fix"] == fix
