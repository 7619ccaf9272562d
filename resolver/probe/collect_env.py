"""Parser for ``python -m torch.utils.collect_env`` (PyTorch's bug-report template). Pure; no I/O.

What its lines mean, from torch/utils/collect_env.py: ``CUDA runtime version`` is what ``nvcc
--version`` prints (the CUDA toolkit, not the driver); ``GPU models and configuration`` is ``nvidia-smi
-L`` without the UUIDs on NVIDIA, and on ROCm the current device's name with its ``gcnArchName`` (one
GPU, however many there are); ``ROCM used to build PyTorch`` is PyTorch's build, not the machine's
ROCm install.

>>> env = parse_collect_env('''Collecting environment information...
... PyTorch version: 2.6.0.dev20241113+rocm6.2
... ROCM used to build PyTorch: 6.2.41133-dd7f95766
... Libc version: glibc-2.31
... Python version: 3.9.19 (main, May  6 2024, 19:43:03)  [GCC 11.2.0] (64-bit runtime)
... Python platform: Linux-5.15.0-100-generic-x86_64-with-glibc2.31
... GPU models and configuration: AMD Instinct MI210 (gfx90a:sramecc+:xnack-)
... Nvidia driver version: Could not collect''')
>>> env.python, env.glibc, env.machine, env.torch_rocm, env.amd_gpus, env.nvidia_driver
('3.9.19', '2.31', 'x86_64', '6.2', (('AMD Instinct MI210', 'gfx90a:sramecc+:xnack-'),), None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NOT_COLLECTED = {"", "could not collect", "n/a", "none", "no cuda", "false"}
_KEY = re.compile(r"^([A-Z][A-Za-z0-9 _./()-]*?):\s*(.*?)\s*$")
_MACHINES = ("x86_64", "aarch64", "ppc64le", "arm64", "AMD64")
# Keys whose value may continue on the following lines (the GPU list of a multi-GPU machine).
_MULTILINE = {"GPU models and configuration"}


@dataclass(frozen=True)
class CollectEnv:
    """The machine facts a collect_env report states; None where it says "Could not collect" or nothing."""

    python: str | None = None
    glibc: str | None = None
    system: str | None = None  # "Linux", "Darwin", "Windows"
    machine: str | None = None  # "x86_64", "aarch64", ...
    nvidia_driver: str | None = None
    nvidia_gpus: tuple[str, ...] = ()
    amd_gpus: tuple[tuple[str, str], ...] = ()  # (name, gcnArchName)
    cuda_toolkit: str | None = None  # nvcc's release, "12.1"
    torch_rocm: str | None = None  # the ROCm PyTorch was built with, "6.2"


def _fields(text: str) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        match = _KEY.match(line.strip())
        if match and not re.match(r"GPU\s+\d+:", line.strip()) and line[:1] not in (" ", "\t"):
            current = match.group(1).strip()  # newer layouts pad the key: "Python version       : 3.12.3"
            fields.setdefault(current, []).append(match.group(2))
        elif current in _MULTILINE and line.strip():
            fields[current].append(line.strip())
        else:
            current = None if not line.strip() else current
    return fields


def _value(fields: dict[str, list[str]], key: str) -> str | None:
    values = [v for v in fields.get(key, []) if v.strip().lower() not in _NOT_COLLECTED]
    return values[0] if values else None


def _first(pattern: str, text: str | None) -> str | None:
    match = re.search(pattern, text or "")
    return match.group(1) if match else None


def parse_collect_env(text: str) -> CollectEnv | None:
    """The facts of a collect_env report, or None when ``text`` holds none of its lines."""
    fields = _fields(text)
    if not ({"PyTorch version", "Python version", "GPU models and configuration", "Libc version"} & fields.keys()):
        return None
    platform = _value(fields, "Python platform") or ""
    system = _first(r"^(Linux|Darwin|macOS|Windows)", platform)
    machine = _first(rf"\b({'|'.join(_MACHINES)})\b", platform) or _first(
        rf"\(({'|'.join(_MACHINES)})\)", _value(fields, "OS"))
    gpus = [g for g in fields.get("GPU models and configuration", []) if g.strip().lower() not in _NOT_COLLECTED]
    nvidia = tuple(m.group(1) for g in gpus if (m := re.match(r"GPU\s+\d+:\s+(.+?)(?:\s+\(UUID:.*)?$", g)))
    amd = tuple((m.group(1), m.group(2)) for g in gpus
                if (m := re.match(r"(.+?)\s+\((gfx[0-9a-f]{3,4}(?::[^)]*)?)\)\s*$", g, re.IGNORECASE)))
    return CollectEnv(
        python=_first(r"^(\d+\.\d+(?:\.\d+)?)", _value(fields, "Python version")),
        glibc=_first(r"glibc-?(\d+\.\d+)", _value(fields, "Libc version")) or _first(r"glibc(\d+\.\d+)", platform),
        system={"macOS": "Darwin"}.get(system or "", system) if system else None,
        machine=machine,
        nvidia_driver=_first(r"^(\d+(?:\.\d+)+)", _value(fields, "Nvidia driver version")),
        nvidia_gpus=nvidia,
        amd_gpus=amd,
        cuda_toolkit=_first(r"^(\d+\.\d+)", _value(fields, "CUDA runtime version")),
        torch_rocm=_first(r"^(\d+\.\d+)", _value(fields, "ROCM used to build PyTorch")),
    )


# The probe never runs collect_env on the live machine (it imports torch and takes seconds); a
# captured machine may hold its output under one of these argvs.
COLLECT_ENV_ARGVS = (("python", "-m", "torch.utils.collect_env"), ("python3", "-m", "torch.utils.collect_env"))


def captured_collect_env(system) -> tuple[CollectEnv | None, str | None]:
    """``(facts, argv label)`` from a captured machine's collect_env output; ``(None, None)`` when the
    system is not a replayed capture (a live machine, or one being recorded) or the capture has none."""
    if not getattr(system, "replays_a_capture", False):
        return None, None
    for argv in COLLECT_ENV_ARGVS:
        result = system.run(list(argv))
        if result is not None and result.ok:
            env = parse_collect_env(result.stdout)
            if env is not None:
                return env, " ".join(argv)
    return None, None
