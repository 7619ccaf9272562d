"""The device compiler a kernel build uses: the environment's own nvcc when the environment has one
(a conda prefix whose CUDA toolkit came with the lock), else the one :mod:`resolver.plan.probe.toolkits`
finds on this machine.

>>> find_toolkit("rocm", environ={"PATH": "/nonexistent"})
Traceback (most recent call last):
...
resolver.core.errors.EnvironmentProblem: hipcc was not found (ROCM_HOME / ROCM_PATH unset and hipcc not on PATH). Fix: install ROCm's HIP SDK or set ROCM_PATH to the ROCm root (the folder with bin/hipcc).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from resolver.core.errors import EnvironmentProblem
from resolver.plan.probe.amd_parse import parse_hipcc_version  # noqa: F401  (re-exported for the build's users)
from resolver.plan.probe.system import LiveSystem
from resolver.plan.probe.toolkits import (  # noqa: F401
    CUDA_HOME_VARS,
    ROCM_HOME_VARS,
    Toolkit,
    find_cuda,
    find_rocm,
    parse_nvcc_version,
)


def environment_toolkit(prefix: Path, environ: Mapping[str, str] | None = None) -> Toolkit | None:
    """The CUDA toolkit installed in the environment at ``prefix`` (conda-forge's ``cuda-nvcc``: ``bin/nvcc``),
    asked as if it were the only one: CUDA_HOME is the prefix and its ``bin`` is first on PATH."""
    if not (prefix / "bin" / "nvcc").is_file():
        return None
    base = dict(os.environ if environ is None else environ)
    base.update(CUDA_HOME=str(prefix), PATH=f"{prefix / 'bin'}{os.pathsep}{base.get('PATH', '')}")
    base.pop("CUDA_PATH", None)
    return find_cuda(LiveSystem(base))


def find_toolkit(backend: str, environ: Mapping[str, str] | None = None, *, prefix: Path | None = None) -> Toolkit:
    """The compiler for ``backend``: the environment's (``prefix``) for CUDA when it has one, else this
    machine's; one clear error naming CUDA_HOME/ROCM_PATH when there is none."""
    if backend == "cuda" and prefix is not None:
        own = environment_toolkit(prefix, environ)
        if own is not None:
            return own
    system = LiveSystem(environ)
    found = find_rocm(system) if backend == "rocm" else find_cuda(system)
    if found is not None:
        return found
    if backend == "rocm":
        raise EnvironmentProblem(f"hipcc was not found ({' / '.join(ROCM_HOME_VARS)} unset and hipcc not on PATH)",
                                 fix="install ROCm's HIP SDK or set ROCM_PATH to the ROCm root (the folder with bin/hipcc)")
    raise EnvironmentProblem(f"nvcc was not found ({' / '.join(CUDA_HOME_VARS)} unset, nvcc not on PATH nor in "
                             "/usr/local/cuda)", fix="install the CUDA toolkit or set CUDA_HOME to it (the folder with bin/nvcc)")
