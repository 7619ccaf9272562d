"""benchmarks/gpu_acceptance.py (issue 18): its rehearsal here, its pure judgements, and its phases on the CPU."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys

import pytest
from support import REPO

SCRIPT = REPO / "benchmarks" / "gpu_acceptance.py"
NO_GPU_LINE = ("gpu_acceptance: no GPU here (probe found no NVIDIA GPU; nvidia-smi is not installed): nothing to measure; "
               "run it on a machine with an NVIDIA GPU (exit 69)")

spec = importlib.util.spec_from_file_location("gpu_acceptance", SCRIPT)
ga = importlib.util.module_from_spec(spec)
sys.modules["gpu_acceptance"] = ga  # dataclasses look their module up there
spec.loader.exec_module(ga)


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has an NVIDIA driver: the rehearsal would measure")
def test_the_rehearsal_here_ends_with_one_no_gpu_line(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == ga.NO_GPU_EXIT == 69
    assert done.stdout == "" and done.stderr.splitlines() == [NO_GPU_LINE]
    report = json.loads((tmp_path / "out" / "gpu-acceptance.json").read_text())
    assert report["status"] == "no-gpu" and report["exit_code"] == 69 and report["summary"] == NO_GPU_LINE
    assert [p["name"] for p in report["phases"]] == ["preflight"] and report["machine"]["gpus"] == []
    assert report["machine"]["probe"]["nvidia"] is None  # the probe was asked
    markdown = (tmp_path / "out" / "gpu-acceptance.md").read_text()
    assert markdown.startswith("# GPU acceptance: no GPU") and "**no-gpu** (exit 69)" in markdown


def test_bad_arguments_are_one_line(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--budget-s", "5", "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 3 and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_no_gpu_reason_reads_the_probe():
    assert ga.no_gpu_reason({"nvidia": None}, "/usr/bin/nvidia-smi") == "probe found no NVIDIA GPU"
    assert ga.no_gpu_reason({"nvidia": {"driver_version": "580.1", "gpus": []}}, None) == \
        "probe found no NVIDIA GPU; nvidia-smi is not installed"
    assert ga.no_gpu_reason(None, None) == "the probe did not run; nvidia-smi is not installed"
    assert ga.no_gpu_reason({"nvidia": {"gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0"}]}}, None) is None
    assert ga.arch_of_capability("9.0") == "sm_90" and ga.arch_of_capability("12.0") == "sm_120"


def _guard_docs(*, arch_status="fail", fix="python -m resolver build --env guard --arch 9.0", conv_status="skip",
                doctor_status="fail", doctor_fix="python -m resolver build --env guard --arch 9.0", errors=()):
    verify = {"checks": [{"name": "arch:causal_conv1d_cuda", "status": arch_status, "detail": "built for sm_80", "fix": fix},
                         {"name": "kernel:causal_conv1d:float32", "status": conv_status, "detail": "..."},
                         {"name": "kernel:causal_conv1d:bfloat16", "status": "skip", "detail": "..."}],
              "errors": list(errors), "diagnoses": [{"title": "no kernel image", "fix": fix}]}
    doctor = {"findings": [{"name": "gpu-arch:causal_conv1d_cuda:sm_90", "status": doctor_status, "detail": "...",
                            "fix": doctor_fix}]}
    return verify, doctor


def test_the_guard_passes_only_when_caught_with_the_fix_and_no_kernel_called():
    verify, doctor = _guard_docs()
    assert ga.judge_guard(verify, "", doctor, "", "sm_90")["ok"]
    cases = {
        "verify passed the arch check": _guard_docs(arch_status="pass"),
        "verify's fix rebuilds for another GPU": _guard_docs(fix="python -m resolver build --arch 8.0"),
        "verify called the kernel": _guard_docs(conv_status="fail"),
        "doctor saw nothing": _guard_docs(doctor_status="ok"),
        "doctor's fix lacks the arch": _guard_docs(doctor_fix="python -m resolver build --env guard"),
        "the kernel crashed": _guard_docs(errors=[{"where": "library:float32", "error": "CUDA error: no kernel image is "
                                                   "available for execution on the device"}]),
    }
    for what, (v, d) in cases.items():
        verdict = ga.judge_guard(v, "", d, "", "sm_90")
        assert not verdict["ok"] and verdict["findings"], what
    assert not ga.judge_guard(verify, "Traceback (most recent call last):\n", doctor, "", "sm_90")["ok"]
    assert not ga.judge_guard(None, "", doctor, "", "sm_90")["ok"]


def test_the_markdown_report_carries_every_figure():
    report = {"status": "passed", "exit_code": 0, "summary": "every phase ran and passed", "started": "2027-01-01T00:00:00+00:00",
              "finished": "2027-01-01T00:09:00+00:00", "elapsed_s": 540, "budget_s": 560,
              "machine": {"host": "h", "cpu_count": 16, "kernel": "Linux", "driver": "580.159.04", "cuda_driver": "13.0",
                          "gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0", "memory_mib": 143771}],
                          "nvcc": "nvcc 13.0", "torch": "2.11.0+cu130", "torch_python": "/opt/torch/.venv/bin/python3"},
              "phases": [{"name": "verify", "status": "pass", "seconds": 50.0, "summary": "ok"}],
              "kernels": [{"op": "selective_scan", "dtype": "bfloat16", "status": "pass", "max_abs_err": 0.0123,
                           "rel_err": 0.00291, "tolerance": 0.01}],
              "model_rows": [{"phase": "verify", "library": "mamba_ssm.MambaLMHeadModel", "uses_kernels": True,
                              "dtype": "float32", "max_abs_err": 1.5e-5, "rel_err": 2.5e-6, "tolerance": 0.001,
                              "logits": "pass", "tokens_equal": True, "generate": "pass", "speedup_forward": 41.0}],
              "bench": [{"prompt_len": 8192, "dtype": "bfloat16", "library": "mamba_ssm.MambaLMHeadModel",
                         "library_prompt_tok_s": 2.5e6, "library_decode_tok_s": 900.0, "reference_prompt_tok_s": 4000.0,
                         "reference_decode_tok_s": 300.0, "speedup_prompt": 625.0, "speedup_decode": 3.0}],
              "guard": {"ok": True, "verify_arch_check": {"name": "arch:causal_conv1d_cuda", "status": "fail", "detail": "d"},
                        "doctor_findings": [{"name": "gpu-arch:causal_conv1d_cuda:sm_90", "status": "fail", "detail": "d",
                                             "fix": "python -m resolver build --env guard --arch 9.0"}],
                        "diagnoses": [], "findings": []}}
    md = ga.render_markdown(report)
    for figure in ("NVIDIA H200 (sm_90, 143771 MiB)", "580.159.04", "0.0123", "0.00291", "2.5e-06", "2,500,000", "625.0",
                   "| 8192 |", "**caught**", "--arch 9.0", "2.11.0+cu130"):
        assert figure in md, figure


def test_rows_are_read_from_the_commands_json():
    verify = {"library": {"name": "mamba_ssm.MambaLMHeadModel", "uses_kernels": True},
              "checks": [{"name": "kernel:causal_conv1d:float32", "status": "pass", "max_abs_err": 1e-6, "rel_err": 2e-7,
                          "tolerance": 1e-3, "detail": "d"}, {"name": "logits:float32", "status": "pass"},
                         {"name": "generate:float32", "status": "pass"}, {"name": "arch:torch", "status": "pass"}],
              "results": {"float32": {"logits": {"max_abs_err": 1e-5, "rel_err": 1e-6, "tolerance": 1e-3},
                                      "generation": {"tokens_equal": True}, "speedup_forward": 12.0}}}
    assert ga.kernel_rows(verify) == [{"op": "causal_conv1d", "dtype": "float32", "status": "pass", "max_abs_err": 1e-6,
                                       "rel_err": 2e-7, "tolerance": 1e-3, "detail": "d"}]
    (row,) = ga.model_rows(verify)
    assert (row["logits"], row["generate"], row["tokens_equal"], row["speedup_forward"]) == ("pass", "pass", True, 12.0)


@pytest.mark.slow
def test_the_phases_without_a_gpu_in_a_real_torch_environment(tmp_path, other_torch_env):
    """--cpu-ok: the layered environments over torch 2.14.1, verify (both libraries), bench at two lengths and
    doctor run for real; build and guard say they need a GPU; a second run keeps what the first finished."""
    argv = [sys.executable, str(SCRIPT), "--cpu-ok", "--torch-python", str(other_torch_env / "bin" / "python"),
            "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work"), "--bench-lens", "8,24", "--bench-repeat", "2",
            "--budget-s", "400"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "gpu-acceptance.json").read_text())
    status = {p["name"]: p["status"] for p in report["phases"]}
    assert status == {"preflight": "skip", "tools": "pass", "envs": "pass", "build": "skip", "verify": "pass",
                      "bench": "pass", "guard": "skip", "transformers": "pass", "doctor": "pass"}
    assert report["status"] == "rehearsed-without-gpu" and report["machine"]["torch"].startswith("2.14.1")
    assert {(r["op"], r["dtype"], r["status"]) for r in report["kernels"]} == {
        ("causal_conv1d", "float32", "skip"), ("selective_scan", "float32", "skip")}
    assert [r["prompt_len"] for r in report["bench"]] == [8, 24]
    assert all(r["library_prompt_tok_s"] > 0 and r["reference_prompt_tok_s"] > 0 for r in report["bench"])
    assert {r["phase"] for r in report["model_rows"]} == {"verify", "transformers"}
    assert all(r["logits"] == "pass" and r["rel_err"] <= r["tolerance"] for r in report["model_rows"])
    pth = list((tmp_path / "work" / "project" / ".resolver" / "envs" / "main").glob("lib/python*/site-packages/*.pth"))
    assert pth and str(other_torch_env) in pth[0].read_text()
    again = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "verify: pass" in again.stdout and "(earlier run)" in again.stdout
