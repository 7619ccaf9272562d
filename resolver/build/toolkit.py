"""The device compiler a build uses: nvcc (CUDA_HOME or PATH) or hipcc (ROCM_PATH or PATH).

>>> parse_nvcc_version("Cuda compilation tools, release 13.0, V13.0.88")
'13.0.88'
>>> parse_hipcc_version("HIP version: 6.0.32830-d62f6a171")
'6.0.32830'
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from resolver.errors import EnvironmentProblem


@dataclass(frozen=True)
class Toolkit:
    backend: str  # "cuda" | "rocm"
    compiler: Path
    version: str  # "13.0.88" / "6.0.32830"
    home: Path  # CUDA_HOME / ROCM_PATH to hand to the build

    @property
    def major_minor(self) -> str:
        return ".".join(self.version.split(".")[:2])

    def to_json(self) -> dict:
        return {"backend": self.backend, "compiler": str(self.compiler), "version": self.version, "home": str(self.home)}


def parse_nvcc_version(text: str) -> str | None:
    match = re.search(r"V(\d+\.\d+\.\d+)", text) or re.search(r"release (\d+\.\d+)", text)
    return match.group(1) if match else None


def parse_hipcc_version(text: str) -> str | None:
    match = re.search(r"HIP version:\s*(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else None


def find_toolkit(backend: str, environ: dict[str, str] | None = None) -> Toolkit:
    """The compiler for ``backend``; one clear error naming CUDA_HOME/ROCM_PATH when there is none."""
    environ = dict(os.environ if environ is None else environ)
    if backend == "rocm":
        name, homes, parse, flag = "hipcc", ("ROCM_PATH", "ROCM_HOME", "HIP_PATH"), parse_hipcc_version, "--version"
        fix = "install ROCm's HIP SDK or set ROCM_PATH to the ROCm root (the folder with bin/hipcc)"
    else:
        name, homes, parse, flag = "nvcc", ("CUDA_HOME", "CUDA_PATH"), parse_nvcc_version, "--version"
        fix = "install the CUDA toolkit or set CUDA_HOME to it (the folder with bin/nvcc)"
    compiler: Path | None = None
    for var in homes:
        if environ.get(var) and (Path(environ[var]) / "bin" / name).exists():
            compiler = Path(environ[var]) / "bin" / name
            break
    if compiler is None:
        found = shutil.which(name, path=environ.get("PATH"))
        compiler = Path(found) if found else None
    if compiler is None:
        raise EnvironmentProblem(f"{name} was not found ({' / '.join(homes)} unset and {name} not on PATH)", fix=fix)
    try:
        text = subprocess.run([str(compiler), flag], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentProblem(f"{compiler} does not run ({exc})", fix=fix) from None
    version = parse(text)
    if not version:
        raise EnvironmentProblem(f"could not read the version from `{compiler} {flag}`", fix=fix)
    return Toolkit(backend, compiler, version, _home_of(compiler, backend))


def _home_of(compiler: Path, backend: str) -> Path:
    """The toolkit root. ``/usr/local/bin/nvcc`` may be a wrapper script around the real one, so when
    the folder above has no CUDA headers, nvcc's own ``--dryrun`` output names its root (``TOP=``)."""
    home = compiler.resolve().parent.parent
    if backend != "cuda" or _has_cuda_headers(home):
        return home
    try:
        text = subprocess.run([str(compiler), "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull],
                              capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired):
        return home
    match = re.search(r"^#\$ TOP=(.+)$", text, re.MULTILINE)
    if match:
        top = Path(match.group(1).strip()).resolve()
        if _has_cuda_headers(top):
            return top
    return home


def _has_cuda_headers(home: Path) -> bool:
    return (home / "include" / "cuda_runtime_api.h").is_file() or any(home.glob("targets/*/include/cuda_runtime_api.h"))
