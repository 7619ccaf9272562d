"""What the environment's own Python reports about itself and its torch (run inside it).

The build compiles against the environment's torch, so its version, CUDA/HIP version and C++ ABI
are read by running a few lines in that interpreter (the resolver never imports torch itself).

>>> EnvFacts.from_json({"python": "3.11", "executable": "/e/bin/python", "torch": None, "torch_cuda": None,
...                     "torch_hip": None, "cxx11_abi": None, "platlib": "lib/python3.11/site-packages"}).backend
'cpu'
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from resolver.errors import EnvironmentProblem

_PROBE = r"""
import json, os, sys, sysconfig
facts = {"python": "%d.%d" % sys.version_info[:2], "executable": sys.executable,
         "platlib": os.path.relpath(sysconfig.get_paths()["platlib"], sys.prefix),
         "torch": None, "torch_cuda": None, "torch_hip": None, "cxx11_abi": None, "torch_error": None}
try:
    import torch
    facts["torch"] = torch.__version__
    facts["torch_cuda"] = torch.version.cuda
    facts["torch_hip"] = getattr(torch.version, "hip", None)
    facts["cxx11_abi"] = bool(torch._C._GLIBCXX_USE_CXX11_ABI)
except Exception as exc:
    facts["torch_error"] = "%s: %s" % (type(exc).__name__, exc)
print("RESOLVER-FACTS " + json.dumps(facts))
"""


@dataclass(frozen=True)
class EnvFacts:
    python: str  # "3.11"
    executable: str
    platlib: str  # site-packages relative to the prefix
    torch: str | None  # "2.14.1+cu130"
    torch_cuda: str | None  # "13.0"
    torch_hip: str | None
    cxx11_abi: bool | None
    torch_error: str | None = None

    @property
    def backend(self) -> str:
        if self.torch_hip:
            return "rocm"
        if self.torch_cuda:
            return "cuda"
        return "cpu"

    @classmethod
    def from_json(cls, data: dict) -> "EnvFacts":
        return cls(python=data["python"], executable=data["executable"], platlib=data["platlib"],
                   torch=data.get("torch"), torch_cuda=data.get("torch_cuda"), torch_hip=data.get("torch_hip"),
                   cxx11_abi=data.get("cxx11_abi"), torch_error=data.get("torch_error"))

    def to_json(self) -> dict:
        return {"python": self.python, "executable": self.executable, "platlib": self.platlib, "torch": self.torch,
                "torch_cuda": self.torch_cuda, "torch_hip": self.torch_hip, "cxx11_abi": self.cxx11_abi,
                "backend": self.backend}


def fingerprint(env) -> str:
    """Changes whenever the interpreter or the installed torch changes (no torch import needed):
    the interpreter's real path and mtime, and every ``torch-*.dist-info`` folder with its mtime."""
    import glob
    import hashlib
    import os

    parts = []
    python = os.path.realpath(env.python)
    parts.append(f"{python}:{os.stat(python).st_mtime_ns}")
    for pattern in ("lib/python*/site-packages/torch-*.dist-info", "Lib/site-packages/torch-*.dist-info"):
        for folder in sorted(glob.glob(str(env.path / pattern))):
            parts.append(f"{os.path.basename(folder)}:{os.stat(folder).st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def probe_environment(env, cache_dir=None) -> EnvFacts:
    """Run the probe in ``env`` (a resolver.environment.Environment); 120 s is plenty even for torch's import.

    With ``cache_dir`` the answer is kept beside the environment's :func:`fingerprint` and reused
    while it holds, so a cached build does not pay for importing torch.
    """
    import subprocess

    stored = None
    if cache_dir is not None:
        stored = cache_dir / f"envfacts-{env.name}.json"
        current = fingerprint(env)
        try:
            data = json.loads(stored.read_text(encoding="utf-8"))
            if data.get("fingerprint") == current and data.get("path") == str(env.path):
                return EnvFacts.from_json(data["facts"])
        except (OSError, ValueError, KeyError):
            pass

    try:
        done = env.run_python(["-c", _PROBE], timeout=120)
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"the Python of environment '{env.name}' did not answer within 120 s",
                                 fix=f"check `{env.python} -c 'import torch'` by hand") from None
    line = next((l for l in done.stdout.splitlines() if l.startswith("RESOLVER-FACTS ")), None)
    if done.returncode != 0 or line is None:
        raise EnvironmentProblem(f"the Python of environment '{env.name}' failed to start ({done.stderr.strip()[-200:]})",
                                 fix=f"run `python -m resolver install --env {env.name}` to repair it")
    facts = EnvFacts.from_json(json.loads(line.split(" ", 1)[1]))
    if stored is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_text(json.dumps({"fingerprint": current, "path": str(env.path), "facts": _raw(facts)}),
                          encoding="utf-8")
    return facts


def _raw(facts: EnvFacts) -> dict:
    data = facts.to_json()
    data.pop("backend")
    data["torch_error"] = facts.torch_error
    return data
