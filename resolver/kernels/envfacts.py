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
from resolver.core.fingerprint import Memo, fingerprint
from resolver.core.records import Fields, Flag, Text, optional


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


def env_fingerprint(env) -> str:
    """Changes whenever the interpreter or the installed torch changes (no torch import needed):
    the interpreter's real path, mtime and ctime, and every ``torch-*.dist-info`` folder with its
    mtime and ctime."""
    import glob
    import os

    python = os.path.realpath(env.python)
    info = os.stat(python)
    parts: list = [[python, info.st_mtime_ns, info.st_ctime_ns]]
    for pattern in ("lib/python*/site-packages/torch-*.dist-info", "Lib/site-packages/torch-*.dist-info"):
        for folder in sorted(glob.glob(str(env.path / pattern))):
            info = os.stat(folder)
            parts.append([os.path.basename(folder), info.st_mtime_ns, info.st_ctime_ns])
    return fingerprint(parts)


_FACTS = Fields({"python": Text(r"\d+\.\d+", 16), "executable": Text(max_len=4096), "platlib": Text(max_len=4096),
                 "torch": optional(Text(max_len=128)), "torch_cuda": optional(Text(max_len=64)),
                 "torch_hip": optional(Text(max_len=64)), "cxx11_abi": optional(Flag()),
                 "torch_error": optional(Text(max_len=4096))})


def probe_environment(env, record=None) -> EnvFacts:
    """Run the probe in ``env`` (a resolver.install.environment.Environment); 120 s is plenty even for torch's import.

    With ``record`` (:meth:`~resolver.project.paths.ProjectPaths.env_facts_record`) the answer is kept as a
    :class:`~resolver.core.fingerprint.Memo` keyed by the environment's folder and :func:`env_fingerprint`,
    and reused while they hold, so a cached build does not pay for importing torch.
    """
    memo = inputs = None
    if record is not None:
        memo, inputs = Memo(record, _FACTS, label="env-facts"), fingerprint(str(env.path), env_fingerprint(env))
        known = memo.recall(inputs)
        if known is not None:
            return EnvFacts.from_json(known)
    answer = env.call("resolver.verify.inenv.interpreter", timeout=120)
    if answer.document is None:
        raise EnvironmentProblem(f"the Python of environment '{env.name}' did not describe itself ({answer.failure})",
                                 fix=f"check `{env.python} -c 'import torch'` by hand; "
                                     f"`python -m resolver install --env {env.name}` repairs a broken environment")
    facts = EnvFacts.from_json(answer.document)
    if memo is not None and inputs is not None:
        memo.keep(inputs, _raw(facts))
    return facts


def _raw(facts: EnvFacts) -> dict:
    data = facts.to_json()
    data.pop("backend")
    data["torch_error"] = facts.torch_error
    return data
