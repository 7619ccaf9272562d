"""Parsers for what NVIDIA's driver and tools print. Pure functions over text; no I/O.

>>> parse_proc_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.98  Thu Oct 26 15:16:01 PDT 2017")
'384.98'
>>> parse_smi_header("| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4     |")
('550.54.15', '12.4')
>>> parse_query_csv("NVIDIA H100 80GB HBM3, 9.0, 550.54.15, 81559 MiB, GPU-a1b2", QUERY_FIELDS)[0]["compute_cap"]
'9.0'
"""

from __future__ import annotations

import re

QUERY_FIELDS = ("name", "compute_cap", "driver_version", "memory.total", "uuid")
# nvidia-smi before 510 has no compute_cap field and refuses the whole query; ask again without it.
QUERY_FIELDS_OLD = ("name", "driver_version", "memory.total", "uuid")

_PROC_VERSION = re.compile(r"NVRM version:.*?Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)")
_DRIVER = re.compile(r"Driver Version:\s*(\d+(?:\.\d+)+)")
_CUDA = re.compile(r"CUDA Version:\s*(\d+\.\d+)")
_MISSING = {"", "[n/a]", "n/a", "[not supported]", "[unknown error]", "[insufficient permissions]"}


def parse_proc_version(text: str) -> str | None:
    """The driver version from ``/proc/driver/nvidia/version`` (proprietary or open kernel module)."""
    match = _PROC_VERSION.search(text)
    return match.group(1) if match else None


def parse_module_version(text: str) -> str | None:
    """``/sys/module/nvidia/version`` holds just the version, e.g. ``550.54.15``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)+)\s*", text)
    return match.group(1) if match else None


def parse_query_csv(text: str, fields: tuple[str, ...]) -> list[dict[str, str | None]]:
    """Rows of ``nvidia-smi --query-gpu=<fields> --format=csv,noheader``; ``[N/A]`` becomes None.

    >>> parse_query_csv("Tesla V100-SXM2-16GB, 470.57.02, [N/A], GPU-1", QUERY_FIELDS_OLD)[0]["memory.total"] is None
    True
    """
    rows = []
    for line in text.splitlines():
        cells = line.split(",")  # nvidia-smi's csv never quotes: product names hold no commas
        if len(cells) != len(fields) or cells[0].strip().split(" [")[0] == fields[0]:
            continue  # not a row, or the header line of --format=csv without noheader
        rows.append({f: (None if c.strip().lower() in _MISSING else c.strip()) for f, c in zip(fields, cells)})
    return rows


def parse_memory_mib(text: str | None) -> int | None:
    """``81559 MiB`` → 81559."""
    match = re.match(r"\s*(\d+)\s*MiB", text or "")
    return int(match.group(1)) if match else None


def unsupported_field(output: str) -> bool:
    """True when nvidia-smi rejected a --query-gpu field (old drivers: no ``compute_cap``)."""
    return "is not a valid field to query" in output


def parse_smi_header(text: str) -> tuple[str | None, str | None]:
    """``(driver_version, cuda_version)`` from plain ``nvidia-smi``; the CUDA Version is the newest
    CUDA the driver supports (not an installed toolkit)."""
    driver = _DRIVER.search(text)
    cuda = _CUDA.search(text)
    return (driver.group(1) if driver else None), (cuda.group(1) if cuda else None)


def parse_gpu_information(text: str) -> dict[str, str]:
    """``/proc/driver/nvidia/gpus/<bus id>/information``: ``Model:``, ``GPU UUID:``, ``Bus Location:`` …

    >>> parse_gpu_information("Model: \\t\\t NVIDIA A100-SXM4-40GB\\nGPU UUID: \\t GPU-3b6\\n")["Model"]
    'NVIDIA A100-SXM4-40GB'
    """
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip()] = value.strip()
    return fields
