"""Parsers for what ROCm's tools and the amdgpu kernel driver print. Pure functions over text.

>>> parse_rocm_version_file("6.0.2-115")
'6.0.2'
>>> parse_kfd_properties("cpu_cores_count 0\\ngfx_target_version 90010\\ndrm_render_minor 128\\n")["gfx_target_version"]
90010
>>> parse_hipcc_version("HIP version: 6.0.32831-204d35d16\\nAMD clang version 17.0.0")
'6.0.32831'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")
_ROCM_H = re.compile(r"#define\s+ROCM_VERSION_(MAJOR|MINOR|PATCH)\s+(\d+)")


@dataclass(frozen=True)
class AmdAgent:
    """One GPU as a ROCm tool names it. ``gfx`` is the raw ISA name (``gfx90a:sramecc+:xnack-``) or None."""

    name: str | None
    gfx: str | None


def parse_rocm_version_file(text: str) -> str | None:
    """``<rocm root>/.info/version`` holds e.g. ``6.0.2-115`` (build number after the dash)."""
    match = _VERSION.match(text.strip())
    return match.group(1) if match else None


def parse_rocm_version_header(text: str) -> str | None:
    """``<rocm root>/include/rocm-core/rocm_version.h``: ``#define ROCM_VERSION_MAJOR 6`` …"""
    parts = dict(_ROCM_H.findall(text))
    if "MAJOR" not in parts or "MINOR" not in parts:
        return None
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts.get('PATCH', '0')}"


def parse_rocminfo(text: str) -> list[AmdAgent]:
    """GPU agents from ``rocminfo``: each ``Agent N`` block with ``Device Type: GPU``.

    >>> parse_rocminfo('''*******
    ... Agent 2
    ... *******
    ...   Name:                    gfx90a
    ...   Marketing Name:          AMD Instinct MI250X/MI250
    ...   Device Type:             GPU
    ... ''')
    [AmdAgent(name='AMD Instinct MI250X/MI250', gfx='gfx90a')]
    """
    agents: list[AmdAgent] = []
    for block in re.split(r"^\s*Agent\s+\d+\s*$", text, flags=re.MULTILINE)[1:]:
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.strip().partition(":")
            if sep and key.strip() and key.strip() not in fields:  # first wins: ISA sub-blocks repeat "Name:"
                fields[key.strip()] = value.strip()
        if fields.get("Device Type", "").upper() != "GPU":
            continue
        agents.append(AmdAgent(fields.get("Marketing Name") or None, fields.get("Name") or None))
    return agents


def parse_amd_smi_static(text: str) -> list[AmdAgent]:
    """``amd-smi static --asic``: ``GPU: N`` blocks with ``MARKET_NAME`` and ``TARGET_GRAPHICS_VERSION``
    (the latter printed by amd-smi from ROCm 6.1 on).

    >>> parse_amd_smi_static("GPU: 0\\n    ASIC:\\n        MARKET_NAME: AMD Instinct MI300X\\n"
    ...                      "        TARGET_GRAPHICS_VERSION: gfx942\\n")
    [AmdAgent(name='AMD Instinct MI300X', gfx='gfx942')]
    """
    agents: list[AmdAgent] = []
    for block in re.split(r"^GPU:\s*\d+\s*$", text, flags=re.MULTILINE)[1:]:
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.strip().partition(":")
            if sep and key not in fields:
                fields[key] = value.strip()
        name = fields.get("MARKET_NAME")
        gfx = fields.get("TARGET_GRAPHICS_VERSION")
        agents.append(AmdAgent(None if name in (None, "", "N/A") else name, None if gfx in (None, "", "N/A") else gfx))
    return agents


def parse_amd_smi_rocm_version(text: str) -> str | None:
    """``amd-smi version``: ``AMDSMI Tool: 24.6.2+2b02a07 | AMDSMI Library version: 24.6.2.0 | ROCm version: 6.2.0``."""
    match = re.search(r"ROCm version:\s*(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else None


def parse_kfd_properties(text: str) -> dict[str, int]:
    """``/sys/class/kfd/kfd/topology/nodes/N/properties``: ``key value`` lines of integers."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            values[parts[0]] = int(parts[1])
    return values


def parse_hipcc_version(text: str) -> str | None:
    """``hipcc --version`` prints ``HIP version: 6.0.32831-204d35d16``."""
    match = re.search(r"HIP version:\s*(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else None
