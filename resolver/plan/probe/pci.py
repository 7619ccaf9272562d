"""GPUs by PCI id, for machines (or reports) where no GPU tool names them: sysfs, ``lspci -n`` /
``lspci -nn``, and the hex ids rocm-smi prints. Parsers are pure; ``gpus_on_bus`` reads through the
:class:`~resolver.plan.probe.system.System` seam. The id → GPU table is the knowledge base's
(:mod:`resolver.plan.knowledge.pci_ids`), loaded only when an id is actually looked up.

>>> parse_lspci("01:00.0 0302: 10de:1eb8 (rev a1)\\n00:02.0 0300: 8086:591b (rev 04)\\n")
[PciDevice(slot='01:00.0', vendor='10de', device='1eb8', pci_class='0302')]
>>> parse_lspci("0a:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] "
...             "Navi 48 [Radeon AI PRO R9700] [1002:7551] (rev c0) (prog-if 00 [VGA controller])")[0].device
'7551'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SYSFS_DEVICES = "/sys/bus/pci/devices"
GPU_VENDORS = {"10de": "nvidia", "1002": "amd"}
_DISPLAY_CLASSES = ("0300", "0302", "0380", "1200")  # VGA, 3D controller, other display, processing accelerator
_LINE_LIMIT = 4096  # an lspci line is ~200 characters; longer ones are not lspci's
# `lspci -n`: "01:00.0 0302: 10de:20b0 (rev a1)"; `lspci -nn`: "... [0302]: NVIDIA ... [10de:20b0] (rev a1)"
_LSPCI_N = re.compile(r"^\s*((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?:Class\s+)?([0-9a-fA-F]{4}):"
                      r"\s+([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\b")
_LSPCI_NN_SLOT = re.compile(r"^\s*((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s")
_LSPCI_NN_CLASS = re.compile(r"\[([0-9a-fA-F]{4})\]:")
_LSPCI_NN_ID = re.compile(r"\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]")


@dataclass(frozen=True)
class PciDevice:
    slot: str
    vendor: str  # four lower-case hex digits
    device: str
    pci_class: str | None = None  # "0302"; None when the source does not say

    @property
    def gpu_vendor(self) -> str | None:
        """``nvidia`` / ``amd`` for a display device of those vendors, else None."""
        if self.vendor not in GPU_VENDORS:
            return None
        if self.pci_class is not None and not self.pci_class.startswith(_DISPLAY_CLASSES):
            return None
        return GPU_VENDORS[self.vendor]


def parse_lspci(text: str) -> list[PciDevice]:
    """The GPU-vendor display devices in ``lspci -n`` or ``lspci -nn`` (also ``-vnn``) output."""
    found: list[PciDevice] = []
    for line in text.splitlines():
        line = line[:_LINE_LIMIT]
        plain = _LSPCI_N.match(line)
        if plain:
            device = PciDevice(plain.group(1), plain.group(3).lower(), plain.group(4).lower(), plain.group(2).lower())
        else:
            slot = _LSPCI_NN_SLOT.match(line)
            ids = _LSPCI_NN_ID.findall(line)
            if not slot or not ids:
                continue
            cls = _LSPCI_NN_CLASS.search(line)
            vendor, dev = ids[-1]
            device = PciDevice(slot.group(1), vendor.lower(), dev.lower(), cls.group(1).lower() if cls else None)
        if device.gpu_vendor and device not in found:
            found.append(device)
    return found


def _hex_field(text: str | None) -> str | None:
    match = re.fullmatch(r"\s*(?:0x)?([0-9a-fA-F]{1,4})\s*", text or "")
    return match.group(1).lower().zfill(4) if match else None


def gpus_on_bus(system) -> list[PciDevice]:
    """Display devices of NVIDIA and AMD in sysfs (``/sys/bus/pci/devices/*/{vendor,device,class}``)."""
    found = []
    for folder in system.glob(f"{SYSFS_DEVICES}/*"):
        vendor = _hex_field(system.read(f"{folder}/vendor"))
        if vendor not in GPU_VENDORS:
            continue
        device = _hex_field(system.read(f"{folder}/device"))
        cls = re.fullmatch(r"\s*(?:0x)?([0-9a-fA-F]{6})\s*", system.read(f"{folder}/class") or "")
        if device is None:
            continue
        pci = PciDevice(folder.rsplit("/", 1)[-1], vendor, device, cls.group(1)[:4].lower() if cls else None)
        if pci.gpu_vendor:
            found.append(pci)
    return found


def identify(vendor: str, device: str):
    """The knowledge base's :class:`~resolver.plan.knowledge.pci_ids.PciGpu` for an id, or None (also when the
    table cannot be read: the probe never fails on it)."""
    try:
        from resolver.plan.knowledge.pci_ids import identify as lookup

        return lookup(vendor, device)
    except Exception:  # noqa: BLE001 - a broken table must not break the probe
        return None


def hex_id(text: str | None) -> str | None:
    """``0x738c`` / ``0x738C`` → ``738c``; anything else None (a product name is not an id).

    >>> hex_id("0x738c"), hex_id("AMD Instinct MI100")
    ('738c', None)
    """
    match = re.fullmatch(r"\s*0x([0-9a-fA-F]{1,4})\s*", text or "")
    return match.group(1).lower().zfill(4) if match else None
