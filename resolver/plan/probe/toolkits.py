"""The device compilers of a machine, found one way for the probe and the kernel build alike.

nvcc: ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, PATH, ``/usr/local/cuda/bin``; hipcc: ``$ROCM_HOME/bin``,
``$ROCM_PATH/bin``, PATH, then the detected ROCm root's ``bin/``. That is the order
torch.utils.cpp_extension looks in, so the compiler the probe reports is the one a build would use.

>>> parse_nvcc_version("Cuda compilation tools, release 13.0, V13.0.88")
'13.0.88'
>>> parse_nvcc_version("Cuda compilation tools, release 11.3")
'11.3'
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from resolver.core.versions import major_minor
from resolver.plan.probe.amd_parse import parse_hipcc_version
from resolver.plan.probe.findings import Findings
from resolver.plan.probe.system import System

CUDA_HOME_VARS = ("CUDA_HOME", "CUDA_PATH")
ROCM_HOME_VARS = ("ROCM_HOME", "ROCM_PATH")  # torch.utils.cpp_extension's order (ROCM_HOME wins)
_NVCC_FULL = re.compile(r"V(\d+\.\d+\.\d+)")
_NVCC_RELEASE = re.compile(r"release\s+(\d+\.\d+)")


def parse_nvcc_version(text: str) -> str | None:
    """``nvcc --version`` → its full version (``13.0.88``), else the ``release X.Y`` it prints."""
    match = _NVCC_FULL.search(text) or _NVCC_RELEASE.search(text)
    return match.group(1) if match else None


@dataclass(frozen=True)
class Toolkit:
    """A device compiler: where it is, its version, and the toolkit root a build hands to torch."""

    backend: str  # "cuda" | "rocm"
    compiler: str  # the path (or PATH name) that answered
    version: str  # "13.0.88" / "6.0.32830"
    home: str  # CUDA_HOME / ROCM_PATH for the build

    @property
    def major_minor(self) -> str:
        return major_minor(self.version)

    def to_json(self) -> dict:
        return {"backend": self.backend, "compiler": self.compiler, "version": self.version, "home": self.home}


def _homes(system: System, names: tuple[str, ...]) -> list[str]:
    return [system.environ.get(k, "").rstrip("/") for k in names if system.environ.get(k, "").strip()]


def _first_answer(system: System, candidates: list[str], args: list[str]):
    for tool in dict.fromkeys(candidates):
        result = system.run([tool, *args])
        if result is not None:
            return result, tool
    return None, None


def find_cuda(system: System, findings: Findings | None = None) -> Toolkit | None:
    """The nvcc an extension build would use, or None (with a note saying why)."""
    findings = findings or Findings()
    candidates = [f"{h}/bin/nvcc" for h in _homes(system, CUDA_HOME_VARS)] + ["nvcc", "/usr/local/cuda/bin/nvcc"]
    result, tool = _first_answer(system, candidates, ["--version"])
    if result is None:
        findings.note("CUDA toolkit: no nvcc on PATH, under CUDA_HOME/CUDA_PATH or in /usr/local/cuda")
        return None
    version = parse_nvcc_version(result.stdout) if result.ok else None
    if version is None:
        findings.note(f"CUDA toolkit: {result.describe() if not result.ok else 'nvcc printed no release'}")
        return None
    findings.source(f"cuda_toolkit: {tool} --version")
    return Toolkit("cuda", tool, version, _cuda_home(system, tool))


def find_rocm(system: System, findings: Findings | None = None, rocm_root: str | None = None) -> Toolkit | None:
    """The hipcc an extension build would use, or None."""
    findings = findings or Findings()
    homes = _homes(system, ROCM_HOME_VARS)
    candidates = [f"{h}/bin/hipcc" for h in homes] + ["hipcc"] + ([f"{rocm_root}/bin/hipcc"] if rocm_root else [])
    result, tool = _first_answer(system, candidates, ["--version"])
    if result is None:
        return None
    version = parse_hipcc_version(result.stdout) if result.ok else None
    if version is None:
        findings.note(f"ROCm toolkit: {result.describe() if not result.ok else 'hipcc printed no HIP version'}")
        return None
    findings.source(f"rocm_toolkit: {tool} --version")
    home = tool.rsplit("/bin/hipcc", 1)[0] if tool.endswith("/bin/hipcc") else (rocm_root or (homes[0] if homes else ""))
    return Toolkit("rocm", tool, version, home)


def cuda_toolkit(system: System, findings: Findings) -> str | None:
    """The probe's ``cuda_toolkit``: the found nvcc's ``major.minor``."""
    found = find_cuda(system, findings)
    return found.major_minor if found else None


def rocm_toolkit(system: System, findings: Findings, rocm_root: str | None) -> str | None:
    """The probe's ``rocm_toolkit``: hipcc's HIP version."""
    found = find_rocm(system, findings, rocm_root)
    return found.version if found else None


def _cuda_home(system: System, tool: str) -> str:
    """The toolkit root. ``/usr/local/bin/nvcc`` may be a wrapper script around the real one, so when
    the folder above has no CUDA headers, nvcc's own ``--dryrun`` output names its root (``TOP=``)."""
    home = tool.rsplit("/bin/", 1)[0] if "/bin/" in tool else ""  # a bare name (found on PATH): ask nvcc
    if _has_cuda_headers(system, home):
        return home
    result = system.run([tool, "--dryrun", "-c", "-x", "cu", "/dev/null", "-o", "/dev/null"])
    match = re.search(r"^#\$ TOP=(.+)$", result.stderr if result else "", re.MULTILINE)
    top = posixpath.normpath(match.group(1).strip()) if match else ""
    if top and _has_cuda_headers(system, top):
        return top
    return home


def _has_cuda_headers(system: System, home: str) -> bool:
    return bool(home) and (system.exists(f"{home}/include/cuda_runtime_api.h")
                           or bool(system.glob(f"{home}/targets/*/include/cuda_runtime_api.h")))
