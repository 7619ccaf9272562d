"""GPUs by PCI device id: the PCI ID Repository's names (data/pci_gpus.toml) and what chip each is.

A GPU that no tool names is still on the PCI bus: sysfs, ``lspci -n`` and rocm-smi's hex fields give
its vendor and device id (``10de:2204``). data/pci_gpus.toml holds, for NVIDIA (10de) and AMD (1002),
the name the PCI ID Repository gives every display device whose chip gpus.toml's ``[[nvidia_chip]]`` /
``[[amd_chip]]`` rows place; the chip (the name's first word, ``GA102 [GeForce RTX 3090]``) gives the
compute capability or gfx target. An AMD device whose bracketed product name is in gpus.toml's
``[[amd]]`` rows takes the gfx from there first (MI350X shares MI300's code name but is gfx950).

The file is loaded on first use (only when a GPU has no name, or a name the tables do not know).
``python -m resolver.plan.knowledge.pci_ids /usr/share/misc/pci.ids`` rewrites it from a newer pci.ids.

>>> gpu = identify("10de", "2204")
>>> gpu.name, gpu.chip, gpu.arch
('GeForce RTX 3090', 'GA102', '8.6')
>>> identify("1002", "74a1").arch, identify("1002", "75a0").arch, identify("0x1002", "0x738C").name
('gfx942', 'gfx950', 'Instinct MI100')
>>> by_name("nvidia", "Quadro M1000M").arch
'5.0'
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from resolver.core.errors import ExitCode

DATA_FILE = Path(__file__).resolve().parent / "data" / "pci_gpus.toml"
VENDORS = {"10de": "nvidia", "1002": "amd"}
# pci.ids entries of a GPU vendor that are not GPUs: audio functions, bridges, switches, controllers
_NOT_A_GPU = re.compile(r"\b(Audio|USB|UCSI|Bridge|Root|Switch|NVSwitch|Controller|SATA|SMBus|LPC|IDE|Host|"
                        r"Endpoint|Coprocessor|Port|Theater|Modem|Decoder|Tuner|RP x\d+|NPU)\b", re.I)


@dataclass(frozen=True)
class PciGpu:
    vendor: str  # "nvidia" | "amd"
    device: str  # four lower-case hex digits
    entry: str  # the PCI ID Repository's text: "GA102 [GeForce RTX 3090]"
    chip: str  # "GA102", "Navi 31"
    arch: str | None  # compute capability "8.6" or gfx target "gfx1100"
    source: str

    @property
    def names(self) -> tuple[str, ...]:
        """The product names in the entry's brackets, each alternative whole (``Radeon RX 7900 XT/7900 XTX``
        → both); the chip alone when there are none."""
        inner = re.search(r"\[([^\]]*)\]", self.entry)
        if not inner:
            return (self.chip,)
        parts = [p.strip() for p in re.split(r"\s*/\s*", inner.group(1)) if p.strip()]
        out: list[str] = []
        for part in parts:
            if out and part[:1].isdigit():  # "7900 XTX" continues "Radeon RX 7900 XT"
                lead = re.match(r"^(.*?)\s*\d", out[0])
                part = f"{lead.group(1)} {part}".strip() if lead else part
            out.append(part)
        return tuple(out)

    @property
    def name(self) -> str:
        return self.names[0]


def _hex(value: str) -> str | None:
    text = str(value).strip().lower()
    text = text[2:] if text.startswith("0x") else text
    return text.zfill(4) if re.fullmatch(r"[0-9a-f]{1,4}", text) else None


@lru_cache(maxsize=1)
def _table() -> tuple[str, dict[str, dict[str, str]]]:
    from resolver.core.fs import read_text_bounded
    from resolver.core.toml import parse_toml

    data = parse_toml(read_text_bounded(DATA_FILE, limit=16 << 20, what="the PCI id table"), what=str(DATA_FILE),
                      fix="restore it from the repository (git checkout resolver/plan/knowledge/data)")
    return str(data.get("source", "")), {v: dict(data.get(v, {})) for v in VENDORS.values()}


@lru_cache(maxsize=1)
def _knowledge():
    from resolver.plan.knowledge import Knowledge

    return Knowledge.load()


def _place(vendor: str, device: str, entry: str) -> PciGpu | None:
    source, _ = _table()
    k = _knowledge()
    where = f"PCI ID Repository ({source}) {device}"
    if vendor == "nvidia":
        chip = entry.split()[0] if entry.split() else ""
        row = k.nvidia_chip(chip)
        if row is None:
            return None
        base = next(c for c in sorted(row.chips, key=len, reverse=True) if chip.upper().startswith(c.upper()))
        return PciGpu(vendor, device, entry, base, str(row.compute_capability), f"{where}; chip {base}: {row.source}")
    codename = entry.split(" [", 1)[0].strip()
    gpu = PciGpu(vendor, device, entry, codename, None, where)
    for name in gpu.names:
        model = k.amd_model(name) or k.amd_model("AMD " + name)
        if model is not None:
            return PciGpu(vendor, device, entry, codename, str(model.gfx), f"{where}; name: {model.source}")
    row = k.amd_chip(codename)
    if row is None:
        return None
    return PciGpu(vendor, device, entry, codename, str(row.gfx), f"{where}; code name: {row.source}")


def identify(vendor: str, device: str) -> PciGpu | None:
    """The GPU with this PCI vendor and device id (hex, with or without ``0x``), or None when the
    tables hold no GPU of that id."""
    v, d = _hex(vendor), _hex(device)
    if v not in VENDORS or d is None:
        return None
    entry = _table()[1][VENDORS[v]].get(d)
    return _place(VENDORS[v], d, entry) if entry else None


@lru_cache(maxsize=2)
def _placed(vendor: str) -> tuple[tuple[str, PciGpu], ...]:
    """Every placed GPU of ``vendor`` with each of its product names in word form (" geforce rtx 3090 ")."""
    out = []
    for device, entry in _table()[1][vendor].items():
        gpu = _place(vendor, device, entry)
        if gpu is None or gpu.arch is None:
            continue
        for product in gpu.names:
            if any(ch.isdigit() for ch in product):  # "Radeon Pro" alone names a family, not a product
                out.append((" " + re.sub(r"[^a-z0-9]+", " ", product.lower()).strip() + " ", gpu))
    return tuple(out)


def by_name(vendor: str, name: str) -> PciGpu | None:
    """The GPU whose product name occurs in ``name`` as whole words (the longest such name wins); None
    when no entry names it, or entries of different architectures do ("GeForce GT 730")."""
    text = " " + re.sub(r"[^a-z0-9]+", " ", name.lower()) + " "
    found: dict[str | None, PciGpu] = {}
    best = 0
    for needle, gpu in _placed(vendor):
        if needle not in text or len(needle) < best:
            continue
        if len(needle) > best:
            best, found = len(needle), {}
        found.setdefault(gpu.arch, gpu)
    return next(iter(found.values())) if len(found) == 1 else None


def rows() -> dict[str, int]:
    """How many GPUs of each vendor the table places (an architecture known)."""
    return {vendor: sum(1 for d, e in _table()[1][vendor].items() if (g := _place(vendor, d, e)) and g.arch)
            for vendor in VENDORS.values()}


# ------------------------------------------------------------------------------- refreshing the data


def refresh(pci_ids: str, version: str) -> str:
    """data/pci_gpus.toml's text from a pci.ids file: every NVIDIA and AMD device entry whose chip the
    gpus.toml chip rows place and that is not an audio function, bridge or controller."""
    entries: dict[str, dict[str, str]] = {"nvidia": {}, "amd": {}}
    vendor = None
    for line in pci_ids.splitlines():
        if not line or line.startswith("#"):
            continue
        if not line.startswith("\t"):
            vendor = VENDORS.get(line[:4].lower()) if re.match(r"^[0-9a-f]{4}\s", line) else None
            continue
        if vendor is None or line.startswith("\t\t"):
            continue
        match = re.match(r"^\t([0-9a-f]{4})\s+(\S.*)$", line)
        if not match or _NOT_A_GPU.search(match.group(2)):
            continue
        device, entry = match.group(1), match.group(2).strip()
        if _place_raw(vendor, entry):
            entries[vendor][device] = entry
    out = ["# GPUs by PCI device id, from the PCI ID Repository (https://pci-ids.ucw.cz/): its pci.ids file as",
           "# Debian ships it. Only entries whose chip gpus.toml's [[nvidia_chip]]/[[amd_chip]] rows place; the text",
           "# is the repository's own. Regenerate with: python -m resolver.plan.knowledge.pci_ids /usr/share/misc/pci.ids",
           "", "schema_version = 1", f'source = "pci.ids {version}"']
    for vendor, items in entries.items():
        out += ["", f"[{vendor}]"]
        out += [f'"{d}" = "{e.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
                for d, e in sorted(items.items())]
    return "\n".join(out) + "\n"


def _place_raw(vendor: str, entry: str) -> bool:
    k = _knowledge()
    if vendor == "nvidia":
        return bool(entry.split()) and k.nvidia_chip(entry.split()[0]) is not None
    return k.amd_chip(entry.split(" [", 1)[0].strip()) is not None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m resolver.plan.knowledge.pci_ids PATH/TO/pci.ids", file=sys.stderr)
        return int(ExitCode.REFUSED)  # usage
    from resolver.core.fs import read_text_bounded, write_text_atomic

    text = read_text_bounded(argv[0], limit=64 << 20, what="pci.ids")
    version = re.search(r"^#\s*Version:\s*(\S+)", text, re.M)
    write_text_atomic(DATA_FILE, refresh(text, version.group(1) if version else "unknown version"))
    print(f"wrote {DATA_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
