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
from dataclasses import dataclass, field

# Every pattern here reads untrusted text (a pasted report) in linear time: line-based patterns use
# [ \t] where \s would run across blank lines, and no two neighbouring repetitions overlap.
_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")
_ROCM_H = re.compile(r"#define\s+ROCM_VERSION_(MAJOR|MINOR|PATCH)\s+(\d+)")
_AGENT_LINE = re.compile(r"^[ \t]*Agent[ \t]+\d+[ \t]*$", re.MULTILINE)
_AMD_SMI_GPU_LINE = re.compile(r"^GPU:[ \t]*\d+[ \t]*$", re.MULTILINE)
_AMD_SMI_ROW = re.compile(r"\s*[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\s+")
_ROCM_SMI_HEAD = re.compile(r"GPU\[(\d+)\]\s*:")
_ROCM_SMI_KEY = re.compile(r"[A-Za-z][A-Za-z ]*")
_ROCM_SMI_JSON = re.compile(r'\{\s*"card')
_JSON_TRIES = 8


@dataclass(frozen=True)
class AmdAgent:
    """One GPU as a ROCm tool names it. ``gfx`` is the raw ISA name (``gfx90a:sramecc+:xnack-``) or None."""

    name: str | None
    gfx: str | None
    pci_device: str | None = field(default=None, repr=False, compare=False)  # the PCI device id a tool printed (rocm-smi: "0x738c")


def parse_rocm_version_file(text: str) -> str | None:
    """``<rocm root>/.info/version`` holds e.g. ``6.0.2-115`` (build number after the dash)."""
    match = _VERSION.match(text.strip())
    return match.group(1) if match else None


def parse_rocm_version_header(text: str) -> str | None:
    """``<rocm root>/include/rocm-core/rocm_version.h``: ``#define ROCM_VERSION_MAJOR 6`` …

    >>> parse_rocm_version_header("#define ROCM_VERSION_MAJOR 6\\n#define ROCM_VERSION_MINOR 0\\n#define ROCM_VERSION_PATCH 2\\n")
    '6.0.2'
    >>> parse_rocm_version_header("#define ROCM_VERSION_MAJOR 6\\n") is None
    True
    """
    parts = dict(_ROCM_H.findall(text))
    if "MAJOR" not in parts or "MINOR" not in parts:
        return None
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts.get('PATCH', '0')}"


def _is_gfx(value: str | None) -> bool:
    return bool(value) and re.fullmatch(r"gfx[0-9a-f]{3,4}(:\S*)?", value, re.IGNORECASE) is not None


def _first_fields(block: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in block.splitlines():
        key, sep, value = line.strip().partition(":")
        if sep and key.strip() and key.strip() not in fields:  # first wins: ISA sub-blocks repeat "Name:"
            fields[key.strip()] = value.strip()
    return fields


def parse_rocminfo(text: str) -> list[AmdAgent]:
    """GPU agents from ``rocminfo``: each ``Agent N`` block with ``Device Type: GPU`` (or, in a block
    cut short before that line, a ``gfx`` name). An excerpt without ``Agent N`` lines, such as
    ``rocminfo | grep Name``, is read by its ``Name: gfx…`` lines.

    >>> parse_rocminfo('''*******
    ... Agent 2
    ... *******
    ...   Name:                    gfx90a
    ...   Marketing Name:          AMD Instinct MI250X/MI250
    ...   Device Type:             GPU
    ... ''')
    [AmdAgent(name='AMD Instinct MI250X/MI250', gfx='gfx90a')]
    >>> parse_rocminfo("  Name:                    gfx942\\n  Marketing Name:          AMD Instinct MI300X VF\\n")
    [AmdAgent(name='AMD Instinct MI300X VF', gfx='gfx942')]
    """
    blocks = _AGENT_LINE.split(text)
    if len(blocks) == 1:
        return _rocminfo_excerpt(text)
    agents: list[AmdAgent] = []
    for block in blocks[1:]:
        fields = _first_fields(block)
        device = fields.get("Device Type", "").upper()
        if device == "GPU" or (not device and _is_gfx(fields.get("Name"))):
            agents.append(AmdAgent(fields.get("Marketing Name") or None, fields.get("Name") or None))
    return agents


def _rocminfo_excerpt(text: str) -> list[AmdAgent]:
    """``Name: gfx942`` opens a GPU agent; the ``Marketing Name`` after it (before any other agent's
    ``Name``) names it. CPU agents and ISA names (``amdgcn-amd-amdhsa--gfx942…``) open none."""
    agents: list[list[str | None]] = []
    current: list[str | None] | None = None
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        key, value = key.strip(), value.strip()
        if not sep:
            continue
        if key == "Name":
            current = [None, value] if _is_gfx(value) else None
            if current is not None:
                agents.append(current)
        elif key == "Marketing Name" and current is not None and current[0] is None:
            current[0] = value or None
    return [AmdAgent(name, gfx) for name, gfx in agents]


def parse_amd_smi_static(text: str) -> list[AmdAgent]:
    """``amd-smi static --asic``: ``GPU: N`` blocks with ``MARKET_NAME`` and ``TARGET_GRAPHICS_VERSION``
    (the latter printed by amd-smi from ROCm 6.1 on).

    >>> parse_amd_smi_static("GPU: 0\\n    ASIC:\\n        MARKET_NAME: AMD Instinct MI300X\\n"
    ...                      "        TARGET_GRAPHICS_VERSION: gfx942\\n")
    [AmdAgent(name='AMD Instinct MI300X', gfx='gfx942')]
    """
    agents: list[AmdAgent] = []
    for block in _AMD_SMI_GPU_LINE.split(text)[1:]:
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.strip().partition(":")
            if sep and key not in fields:
                fields[key] = value.strip()
        name = fields.get("MARKET_NAME")
        gfx = fields.get("TARGET_GRAPHICS_VERSION")
        agents.append(AmdAgent(None if name in (None, "", "N/A") else name, None if gfx in (None, "", "N/A") else gfx))
    return agents


def parse_amd_smi_table(text: str) -> list[AmdAgent]:
    """The GPU rows of plain ``amd-smi`` (ROCm 6.4+): ``| <bus id>  <GPU-Name> | …``. The table has no
    gfx architecture.

    >>> parse_amd_smi_table("| 0000:04:00.0  AMD Radeon RX 9070 XT | 0 %      41 °C   0            16/304 W |")
    [AmdAgent(name='AMD Radeon RX 9070 XT', gfx=None)]
    """
    agents = []
    for line in text.splitlines():
        cells = line.split("|", 2)
        row = _AMD_SMI_ROW.match(cells[1]) if len(cells) == 3 and not cells[0].strip() else None
        name = cells[1][row.end():].strip() if row else ""
        if name:
            agents.append(AmdAgent(name, None))
    return agents


def parse_rocm_smi_products(text: str) -> list[AmdAgent]:
    """``rocm-smi --showproductname``: ``GPU[N] : Card Series: …`` and (ROCm 6+) ``GPU[N] : GFX Version: gfx…``.
    A name that is only a PCI id (``0x744c``, printed when the ids table lacks the card) is no name.

    >>> parse_rocm_smi_products("GPU[0] : Card Series: AMD Instinct MI300X VF\\nGPU[0] : Card Model: 0x74b5\\n"
    ...                         "GPU[0] : GFX Version: gfx942\\n")
    [AmdAgent(name='AMD Instinct MI300X VF', gfx='gfx942')]
    """
    cards: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        line = line.strip()
        head = _ROCM_SMI_HEAD.match(line)
        key, colon, value = line[head.end():].partition(":") if head else ("", "", "")
        key = key.strip()
        if colon and _ROCM_SMI_KEY.fullmatch(key):
            cards.setdefault(head.group(1), {}).setdefault(key.lower(), value.strip())
    return [agent for agent in (_rocm_smi_card(fields) for fields in cards.values()) if agent]


def _rocm_smi_card(fields: dict[str, str]) -> AmdAgent | None:
    """One card of rocm-smi (text or ``--json``; keys lower-cased): its name, gfx and PCI device id.
    Older rocm-smi put the device id in ``Card series`` (``0x738c``, MI100) or ``Card model``; from ROCm
    6.1 ``Device Name`` / ``Device ID`` hold the PCI ID Repository's name and the id."""
    names = [fields.get(k, "") for k in ("device name", "card series", "card model")]
    ids = [hex_text for hex_text in (fields.get("device id"), fields.get("gpu id"), *names) if hex_text and re.fullmatch(r"0x[0-9a-fA-F]{1,4}", hex_text.strip())]
    name = next((n for n in names if n and not re.fullmatch(r"0x[0-9a-fA-F]+", n.strip())), None)
    gfx = fields.get("gfx version") or None
    device = ids[0].strip().lower()[2:].zfill(4) if ids else None
    if name or gfx or device:
        return AmdAgent(name, gfx, device)
    return None


def parse_rocm_smi_json(text: str) -> list[AmdAgent]:
    """``rocm-smi ... --json``: ``{"card0": {"Card Series": ..., "Card Model": "0x7408", "GFX Version":
    "gfx9010"}, ...}`` (older keys) or ``{"card0": {"Device Name": ..., "Device ID": "0x744c"}}``. Text
    around the JSON object (a shell prompt, a paste's prose) is skipped; the object is read once.

    >>> parse_rocm_smi_json('{"card0": {"Card Series": "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2", '
    ...                     '"Card Model": "0x7408", "GFX Version": "gfx9010"}}')
    [AmdAgent(name='AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2', gfx='gfx9010')]
    """
    import json

    agents: list[AmdAgent] = []
    decoder = json.JSONDecoder()
    # an object opening with a "cardN" key, at most a few tries: each failed one may read to the end of the text
    for attempt, opening in enumerate(_ROCM_SMI_JSON.finditer(text)):
        if agents or attempt == _JSON_TRIES:
            break
        try:
            data, _ = decoder.raw_decode(text, opening.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict):
            for key, card in data.items():
                if str(key).startswith("card") and isinstance(card, dict):
                    fields = {str(k).strip().rstrip(":").lower(): str(v) for k, v in card.items()}
                    agent = _rocm_smi_card(fields)
                    if agent:
                        agents.append(agent)
    return agents


def parse_amd_smi_rocm_version(text: str) -> str | None:
    """``amd-smi version`` (``AMDSMI Tool: 24.6.2+2b02a07 | AMDSMI Library version: 24.6.2.0 | ROCm version: 6.2.0``)
    and plain ``amd-smi``'s header (``| AMD-SMI 26.2.0+021c61fc  amdgpu version: 6.16.6   ROCm version: 7.1.1 |``).

    >>> parse_amd_smi_rocm_version("AMDSMI Tool: 24.6.2+2b02a07 | AMDSMI Library version: 24.6.2.0 | ROCm version: 6.2.0")
    '6.2.0'
    """
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
