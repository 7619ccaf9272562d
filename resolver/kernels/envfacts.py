"""What the environment's own Python reports about itself and its torch (run inside it).

The build compiles against the environment's torch, so its version, CUDA/HIP version and C++ ABI
are read by running a few lines in that interpreter (the resolver never imports torch itself).

>>> EnvFacts.from_json({"python": "3.11", "executable": "/e/bin/python", "torch": None, "torch_cuda": None,
...                     "torch_hip": None, "cxx11_abi": None, "platlib": "lib/python3.11/site-packages"}).backend
'cpu'
"""

from __future__ import annotations

from dataclasses import dataclass

from resolver.core.errors import EnvironmentProblem
from resolver.core.fs import sha256_text
from resolver.core.records import SHA256, Fields, Flag, Text, optional, read_record, write_record


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
    the interpreter's real path, mtime and ctime, and every ``torch-*.dist-info`` folder with its
    mtime and ctime."""
    import glob
    import os

    parts = []
    python = os.path.realpath(env.python)
    info = os.stat(python)
    parts.append(f"{python}:{info.st_mtime_ns}:{info.st_ctime_ns}")
    for pattern in ("lib/python*/site-packages/torch-*.dist-info", "Lib/site-packages/torch-*.dist-info"):
        for folder in sorted(glob.glob(str(env.path / pattern))):
            info = os.stat(folder)
            parts.append(f"{os.path.basename(folder)}:{info.st_mtime_ns}:{info.st_ctime_ns}")
    return sha256_text("\n".join(parts))


_FACTS = Fields({"python": Text(r"\d+\.\d+", 16), "executable": Text(max_len=4096), "platlib": Text(max_len=4096),
                 "torch": optional(Text(max_len=128)), "torch_cuda": optional(Text(max_len=64)),
                 "torch_hip": optional(Text(max_len=64)), "cxx11_abi": optional(Flag()),
                 "torch_error": optional(Text(max_len=4096))})
_RECORD = Fields({"fingerprint": SHA256, "path": Text(max_len=4096), "facts": _FACTS})


def probe_environment(env, record=None) -> EnvFacts:
    """Run the probe in ``env`` (a resolver.install.environment.Environment); 120 s is plenty even for torch's import.

    With ``record`` (:meth:`~resolver.project.paths.ProjectPaths.env_facts_record`) the answer is kept beside the
    environment's :func:`fingerprint` and reused while it holds, so a cached build does not pay for
    importing torch.
    """
    if record is not None:
        current = fingerprint(env)
        data = read_record(record, _RECORD)
        if data is not None and data["fingerprint"] == current and data["path"] == str(env.path):
            return EnvFacts.from_json(data["facts"])
    answer = env.call("resolver.verify.inenv.interpreter", timeout=120)
    if answer.document is None:
        raise EnvironmentProblem(f"the Python of environment '{env.name}' did not describe itself ({answer.failure})",
                                 fix=f"check `{env.python} -c 'import torch'` by hand; "
                                     f"`python -m resolver install --env {env.name}` repairs a broken environment")
    facts = EnvFacts.from_json(answer.document)
    if record is not None:
        write_record(record, {"fingerprint": current, "path": str(env.path), "facts": _raw(facts)}, label="env-facts")
    return facts


def _raw(facts: EnvFacts) -> dict:
    data = facts.to_json()
    data.pop("backend")
    data["torch_error"] = facts.torch_error
    return data
