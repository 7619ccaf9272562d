"""`python -m resolver probe --json` on the machine running the tests, checked against what the
machine says through other means (on the project's machine: no GPU, nvcc 13.0, glibc 2.36, Python 3.11)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from support import cli

from resolver.plan.probe.findings import Findings
from resolver.plan.probe.nvml import read_nvml


def _probe_json() -> dict:
    out = cli.run("probe", "--json", timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _nvcc_release() -> str | None:
    nvcc = shutil.which("nvcc") or next((p for p in (os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                                                                  "bin", "nvcc"),) if os.access(p, os.X_OK)), None)
    if nvcc is None:
        return None
    text = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    return re.search(r"release (\d+\.\d+)", text).group(1)


def test_live_probe_matches_this_machine() -> None:
    data = _probe_json()
    assert data["python"] == ".".join(map(str, sys.version_info[:3]))
    ldd = subprocess.run(["ldd", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    assert data["glibc"] == ldd.rsplit(" ", 1)[1]
    assert data["cuda_toolkit"] == _nvcc_release()
    assert data["platform"] == {"x86_64": "linux-64", "aarch64": "linux-aarch64"}[os.uname().machine]
    has_nvidia = os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/dxg")
    assert (data["nvidia"] is not None) == has_nvidia
    if not os.path.exists("/dev/kfd") and not os.path.exists("/opt/rocm"):
        assert data["amd"] is None
    assert data["cpu_count"] == len(os.sched_getaffinity(0))


def test_nvml_without_a_driver_is_a_note_not_a_crash() -> None:
    if os.path.exists("/proc/driver/nvidia/version"):
        pytest.skip("a real NVIDIA driver is present: NVML answers instead")
    findings = Findings()
    assert read_nvml(findings) is None
    assert findings.notes and findings.notes[0].startswith("NVML:")
