"""Compilers on the machine: the CUDA toolkit (``nvcc``) and the ROCm toolkit (``hipcc``).

>>> parse_nvcc_version("Cuda compilation tools, release 13.0, V13.0.88")
'13.0'
"""

from __future__ import annotations

import re

from resolver.probe.amd_parse import parse_hipcc_version
from resolver.probe.findings import Findings
from resolver.probe.system import System

_NVCC = re.compile(r"release\s+(\d+\.\d+)")


def parse_nvcc_version(text: str) -> str | None:
    """``nvcc --version`` → ``"13.0"`` (the toolkit's major.minor, as ``release X.Y`` prints it)."""
    match = _NVCC.search(text)
    return match.group(1) if match else None


def _first_answer(system: System, candidates: list[str], args: list[str]):
    for tool in dict.fromkeys(candidates):
        result = system.run([tool, *args])
        if result is not None:
            return result, tool
    return None, None


def cuda_toolkit(system: System, findings: Findings) -> str | None:
    """The nvcc an extension build would use, found in the order torch.utils.cpp_extension looks:
    ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, PATH, ``/usr/local/cuda/bin``."""
    homes = [system.environ.get(k, "").rstrip("/") for k in ("CUDA_HOME", "CUDA_PATH")]
    candidates = [f"{h}/bin/nvcc" for h in homes if h] + ["nvcc", "/usr/local/cuda/bin/nvcc"]
    result, tool = _first_answer(system, candidates, ["--version"])
    if result is None:
        findings.note("CUDA toolkit: no nvcc on PATH, under CUDA_HOME/CUDA_PATH or in /usr/local/cuda")
        return None
    version = parse_nvcc_version(result.stdout) if result.ok else None
    if version is None:
        findings.note(f"CUDA toolkit: {result.describe() if not result.ok else 'nvcc printed no release'}")
        return None
    findings.source(f"cuda_toolkit: {tool} --version")
    return version


def rocm_toolkit(system: System, findings: Findings, rocm_root: str | None) -> str | None:
    """``hipcc --version``'s HIP version, found as torch.utils.cpp_extension looks for ROCm:
    ``$ROCM_HOME/bin``, ``$ROCM_PATH/bin``, PATH, then the detected ROCm root's ``bin/``."""
    homes = [system.environ.get(k, "").rstrip("/") for k in ("ROCM_HOME", "ROCM_PATH")]
    candidates = [f"{h}/bin/hipcc" for h in homes if h] + ["hipcc"] + ([f"{rocm_root}/bin/hipcc"] if rocm_root else [])
    result, tool = _first_answer(system, candidates, ["--version"])
    if result is None:
        return None
    version = parse_hipcc_version(result.stdout) if result.ok else None
    if version is None:
        findings.note(f"ROCm toolkit: {result.describe() if not result.ok else 'hipcc printed no HIP version'}")
        return None
    findings.source(f"rocm_toolkit: {tool} --version")
    return version
