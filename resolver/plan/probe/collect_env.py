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
# The text is untrusted (a pasted report): keys are found with str.partition and checked with one
# character class, so no pattern can backtrack over a long run of blanks.
_KEY = re.compile(r"[A-Z][A-Za-z0-9 _./()-]*")
_GPU_KEY = re.compile(r"GPU\s+\d+:")
_GPU_LINE = re.compile(r"GPU\s+\d+:\s+")
_AMD_GPU = re.compile(r"\((gfx[0-9a-f]{3,4}(?::[^)]*)?)\)", re.IGNORECASE)
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
        key, colon, value = line.strip().partition(":")
        key = key.rstrip()  # newer layouts pad the key: "Python version       : 3.12.3"
        if colon and _KEY.fullmatch(key) and not _GPU_KEY.match(line.strip()) and line[:1] not in (" ", "\t"):
            current = key
            fields.setdefault(current, []).append(value.strip())
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


def _nvidia_gpu(line: str) -> str | None:
    """``GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)`` → the name (the UUID part is optional)."""
    head = _GPU_LINE.match(line)
    if head is None or head.end() == len(line):
        return None
    rest = line[head.end():]
    uuid = rest.find("(UUID:", 1)
    while uuid > 0 and not rest[uuid - 1].isspace():
        uuid = rest.find("(UUID:", uuid + 1)
    return rest[:uuid].rstrip() if uuid > 0 else rest


def _amd_gpu(line: str) -> tuple[str, str] | None:
    """``AMD Instinct MI210 (gfx90a:sramecc+:xnack-)`` → (name, gcnArchName)."""
    line = line.strip()
    if not line.endswith(")"):
        return None
    if line.startswith("(gfx") and (bare := _AMD_GPU.fullmatch(line)):  # newer layouts may print no name
        return "", bare.group(1)
    name_from = len(line) - len(line.lstrip())
    start = line.find("(", line.rfind(")", 0, len(line) - 1) + 1)  # the name ends at the first "(" that opens it
    while start > 0:
        if line[start - 1].isspace() and start > name_from:
            arch = _AMD_GPU.fullmatch(line, start)
            if arch:
                return line[:start].rstrip(), arch.group(1)
        start = line.find("(", start + 1)
    return None


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
    nvidia = tuple(name for g in gpus if (name := _nvidia_gpu(g)))
    amd = tuple(pair for g in gpus if (pair := _amd_gpu(g)))
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
