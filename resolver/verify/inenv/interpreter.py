"""What an environment's interpreter is, and which torch it holds (the kernel build compiles against it).

Runs INSIDE the environment: ``python -m resolver.verify.inenv.interpreter`` answers (protocol.emit) with
python, executable, platlib, and torch's version, CUDA/HIP version and C++ ABI (or why torch did not
import). Standard library only, apart from the torch import it reports on.
"""

from __future__ import annotations

import os
import sys
import sysconfig

from resolver.core.inenv_protocol import emit


def describe() -> dict:
    facts = {"python": "%d.%d" % sys.version_info[:2], "executable": sys.executable,
             "platlib": os.path.relpath(sysconfig.get_paths()["platlib"], sys.prefix),
             "torch": None, "torch_cuda": None, "torch_hip": None, "cxx11_abi": None, "torch_error": None}
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - any import failure is a fact to report
        facts["torch_error"] = f"{type(exc).__name__}: {exc}"
        return facts
    facts.update(torch=torch.__version__, torch_cuda=torch.version.cuda, torch_hip=getattr(torch.version, "hip", None),
                 cxx11_abi=bool(torch._C._GLIBCXX_USE_CXX11_ABI))
    return facts


if __name__ == "__main__":
    emit(describe())
