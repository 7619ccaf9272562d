"""The GPU journey on a machine double: the captured machines and the tiny kernel recipe."""

from __future__ import annotations

import os
from pathlib import Path

from support import DATA

DOUBLES = DATA / "doubles"


TINY_RECIPE = DATA / "fixtures" / "tiny-ext" / "recipe"


def without_system_cuda(environ: dict[str, str]) -> dict[str, str]:
    """The environment minus every CUDA toolkit of this machine: no CUDA_HOME/CUDA_PATH, no PATH entry
    that holds an nvcc. Only the environment's own toolkit can compile then."""
    env = {k: v for k, v in environ.items() if k not in ("CUDA_HOME", "CUDA_PATH", "RESOLVER_SYSROOT")}
    env["PATH"] = os.pathsep.join(p for p in environ.get("PATH", "").split(os.pathsep)
                                  if p and not (Path(p) / "nvcc").exists())
    return env
