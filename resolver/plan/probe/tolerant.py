"""The tolerant reader: the facts a paste states, read wherever they stand, each with its line.

The form parsers know shapes; a paste is often no shape at all (a log line, a metrics dump, a tool
nobody wrote a parser for, an issue form, a table flattened into one line, a paste cut short). Under
them this reader looks at each line alone for what names a fact by itself: a GPU's product name
(the GPU name table and the PCI ID table place it), a PCI ``vendor:device`` id, a ``gfx`` target, a
driver version after its label, a ROCm version after its label. Markdown, HTML escapes, quoting,
prompts and timestamps are only text around them. Nothing is inferred from what a line does not
say: no compute capability from ``sm_XX`` (torch prints its build's list), no GPU from a list of
targets, no CUDA version from anywhere but a form.

A GPU named on several lines is one GPU unless the lines have one shape (``card="0"`` …
``card="3"``: four GPUs), so a machine described twice is not counted twice.

Untrusted text: each line is read only up to ``MAX_LINE`` characters, every pattern is linear in
it, and at most ``MAX_LOOKUPS`` name look-ups are made however long the paste.

>>> facts = read_facts('rocm_version_info{card="0",type="AMD Instinct MI210"} 1.0\\n'
...                    'rocm_version_info{card="1",type="AMD Instinct MI210"} 1.0\\n### ROCm Version\\nROCm 6.3.3\\n')
>>> [(g.arch, g.line) for g in facts.gpus("amd")], facts.first("rocm").value, facts.first("rocm").line
([('gfx90a', 1), ('gfx90a', 2)], '6.3.3', 4)
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING

from resolver.plan.probe.name_table import NameTable

if TYPE_CHECKING:  # the PCI ID table loads on first use, as the name table does
    from resolver.plan.knowledge.pci_ids import PciGpu

MAX_LINE = 4096
MAX_LOOKUPS = 512  # name-table look-ups in one paste; a machine is named in far fewer lines
MAX_FACTS = 4096
MAX_NAMES_A_LINE = 16

_NV_BRAND = re.compile(r"\b(?:NVIDIA|Nvidia|GeForce|Tesla|Quadro|TITAN|Jetson|Orin|Xavier|RTX|GTX)")
_BARE_GEFORCE = re.compile(r"(?:NVIDIA\s+)?((?:RTX|GTX)\s\d{3,4}\b.*)", re.IGNORECASE)
_GLUED = re.compile(r"\b(RTX|GTX)(\d)", re.IGNORECASE)  # "RTX3080 TI" as people type it
_AMD_BRAND = re.compile(r"\b(?:AMD|Radeon|Instinct|Navi ?\d{2}|FirePro|Vega)\b")
_SEGMENT = 90  # characters of a line after a brand word that a product name can span
_GFX = re.compile(r"(?<![\w-])gfx(\d[0-9a-f]{2}|\d{2}[0-9a-f]{2})(?![\w-])", re.IGNORECASE)
_GFX_LIST_HINT = re.compile(r"\b(?:archs?|targets?|offload-arch|supported)\b|_ARCH|arch=", re.IGNORECASE)
_PCI = re.compile(r"(?<![0-9A-Fa-f])(?:0x)?(10de|1002):(?:0x)?([0-9a-fA-F]{4})(?![0-9A-Fa-f])", re.IGNORECASE)
_VENDOR_DEVICE = re.compile(r"(NVIDIA Corporation|\[AMD/ATI\]|Advanced Micro Devices,? Inc\.?) Device ([0-9a-fA-F]{4})\b")
_SMI_DEVICE_ID = re.compile(r"Device Id\s{0,40}:\s{0,4}0x([0-9A-Fa-f]{4})10DE\b")  # nvidia-smi -q: device, vendor
_BARE_DEVICE = re.compile(r"GPU models and configuration\s?:\s{0,40}Device ([0-9a-fA-F]{4})\b")
_AMD_ID = re.compile(r"\b(?:GPU ID|Device ID|DEVICE_ID)\"?\s{0,20}[:=]\s{0,20}\"?0x([0-9a-fA-F]{4})\b", re.IGNORECASE)
_AMD_CONTEXT = re.compile(r"\b(?:AMD|Radeon|ROCm|rocm-smi|amd-smi|amdgpu|card\d)\b", re.IGNORECASE)
_DRIVER = re.compile(r"\b[Dd]river(?:[ _][Vv]ersion)?\s{0,40}[:=]?\s{0,40}(\d{3}\.\d{1,3}(?:\.\d{1,3})?)"
                     r"(?![\d.])")
_ROCM = re.compile(r"(?<![+.\w-])ROCm(?: version)?\s{0,20}[:=]?\s{0,20}(?:ROCm )?v?(\d\.\d{1,2}(?:\.\d{1,3})?)(?![\d.])",
                   re.IGNORECASE)
_NAME_END = re.compile(r"[\"'{}|,;(]|\s\w{1,20}=|\s{3}")  # where a product name printed in a line ends
_SHAPE = re.compile(r"[0-9a-fA-F]*\d[0-9a-fA-F]*")
# a line holding none of these states no fact the reader knows, and is skipped after one scan
_BRANDS = ("nvidia", "geforce", "tesla", "quadro", "titan", "jetson", "orin", "xavier", "rtx", "gtx", "amd", "radeon",
           "instinct", "navi", "firepro", "vega")
_TRIGGERS = (*_BRANDS, "10de", "1002", "device", "gpu id", "gfx", "driver", "rocm")
_MARKUP = re.compile(r"```\w*|`|\*\*|</?(?:details|summary|code|pre|p|br)\s*/?>")


@dataclass(frozen=True)
class Fact:
    """One fact and where it stands: ``kind`` is ``nvidia``/``amd`` (a GPU: ``value`` its name, ``arch`` its
    compute capability or gfx target), ``driver`` (NVIDIA) or ``rocm``; ``line`` counts from 1."""

    kind: str
    value: str
    line: int
    how: str
    arch: str | None = None
    shape: str = field(default="", repr=False, compare=False)  # the line with its numbers blanked

    def where(self) -> str:
        return f"line {self.line} ({self.how})"


@dataclass(frozen=True)
class PasteFacts:
    """The facts of one paste, in the order they stand."""

    facts: tuple[Fact, ...] = ()

    def first(self, kind: str) -> Fact | None:
        return next((f for f in self.facts if f.kind == kind), None)

    def gpus(self, vendor: str) -> tuple[Fact, ...]:
        """One fact per GPU: the lines naming the same target are one GPU, unless lines of one shape repeat it."""
        by_arch: dict[str, dict[str, list[Fact]]] = {}
        for fact in self.facts:
            if fact.kind == vendor and fact.arch:
                by_arch.setdefault(fact.arch, {}).setdefault(fact.shape, []).append(fact)
        gpus: list[Fact] = []
        for shapes in by_arch.values():
            said = [f for facts in shapes.values() for f in facts]
            named = min(said, key=lambda f: (f.how != "name", f.how == "gfx target", f.line))
            most = max((run for facts in shapes.values() for run in _runs(facts)), key=len)
            gpus.extend(Fact(f.kind, named.value, f.line, f.how, f.arch, f.shape) for f in most)
        return tuple(sorted(gpus, key=lambda f: f.line))


def _runs(facts: list[Fact]) -> list[list[Fact]]:
    """The facts in runs of near lines (a list of GPUs is printed together; a log repeating a name is not a list)."""
    runs: list[list[Fact]] = []
    for fact in facts:
        if runs and fact.line - runs[-1][-1].line <= 2:
            runs[-1].append(fact)
        else:
            runs.append([fact])
    return runs


def clean_line(line: str) -> str:
    """A line without the markup around its text: HTML escapes, markdown code marks, quoting.

    >>> clean_line("> `GPU 0: NVIDIA A100 &amp; more`")
    'GPU 0: NVIDIA A100 & more'
    """
    line = line[:MAX_LINE]
    if "&" in line:
        line = html.unescape(line)
    return _MARKUP.sub(" ", line).lstrip("> \t").strip()


class _Reader:
    def __init__(self, table: NameTable) -> None:
        self.table = table
        self.lookups = 0
        self.facts: list[Fact] = []
        self._seen: set[tuple[str, int, str | None]] = set()
        self._shape = (0, "")
        self._versions: set[str] = set()
        self._named: dict[tuple[str, str], str | None] = {}  # each name is looked up once per paste
        self._placed: dict[tuple[str, str], PciGpu | None] = {}  # each PCI id is placed once per paste

    def identify(self, vendor: str, device: str) -> PciGpu | None:
        from resolver.plan.probe.pci import identify

        if (vendor, device) not in self._placed:
            self._placed[vendor, device] = identify(vendor, device)
        return self._placed[vendor, device]

    def add(self, kind: str, value: str, number: int, how: str, arch: str | None, line: str) -> None:
        if (kind, number, arch) not in self._seen and len(self.facts) < MAX_FACTS:
            self._seen.add((kind, number, arch))
            if self._shape[0] != number:  # made only for a line a fact is taken from
                self._shape = (number, " ".join(_SHAPE.sub("#", line).split()))
            self.facts.append(Fact(kind, value, number, how, arch, self._shape[1]))

    def names(self, line: str, number: int) -> None:
        for brand, kind in ((_NV_BRAND, "nvidia"), (_AMD_BRAND, "amd")):
            for count, found in enumerate(brand.finditer(line)):
                if count == MAX_NAMES_A_LINE:  # a flattened listing names a few GPUs a line, not hundreds
                    break
                segment = _NAME_END.split(line[found.start():found.start() + _SEGMENT], maxsplit=1)[0]
                segment = _GLUED.sub(r"\1 \2", segment.rstrip(" .:(["))
                if (kind, segment) not in self._named:
                    if self.lookups >= MAX_LOOKUPS:
                        return
                    self.lookups += 1
                    self._named[kind, segment] = self._place(kind, segment)
                arch = self._named[kind, segment]
                if arch and not segment.endswith("..."):
                    self.add(kind, segment, number, "name", arch, line)

    def _place(self, kind: str, name: str) -> str | None:
        if kind == "amd":
            return self.table.gfx(name)[0]
        arch = self.table.compute_capability(name)[0]
        bare = _BARE_GEFORCE.match(name)
        if arch is None and bare:  # "RTX 3080 Ti" is the GeForce RTX 3080 Ti; the table names it so
            arch = self.table.compute_capability(f"GeForce {bare.group(1)}")[0]
        return arch

    def ids(self, line: str, number: int, amd_context: bool) -> None:
        identify = self.identify
        seen = [(m.group(1).lower(), m.group(2).lower(), f"PCI id {m.group(1)}:{m.group(2)}")
                for m in islice(_PCI.finditer(line), MAX_NAMES_A_LINE)]
        for m in islice(_VENDOR_DEVICE.finditer(line), MAX_NAMES_A_LINE):
            vendor = "10de" if m.group(1).startswith("NVIDIA") else "1002"
            seen.append((vendor, m.group(2).lower(), f"PCI device {m.group(2)}"))
        if smi := _SMI_DEVICE_ID.search(line):
            seen.append(("10de", smi.group(1).lower(), f"device id 0x{smi.group(1)}"))
        if bare := _BARE_DEVICE.search(line):
            placed = [v for v in ("10de", "1002") if identify(v, bare.group(1).lower()) is not None]
            if len(placed) == 1:
                seen.append((placed[0], bare.group(1).lower(), f"PCI device {bare.group(1)}"))
        if amd_context and (labelled := _AMD_ID.search(line)):
            seen.append(("1002", labelled.group(1).lower(), f"device id 0x{labelled.group(1)}"))
        for vendor, device, how in dict.fromkeys(seen):
            gpu = identify(vendor, device)
            if gpu is not None and gpu.arch:
                kind = "nvidia" if vendor == "10de" else "amd"
                name = f"NVIDIA {gpu.name}" if kind == "nvidia" else f"AMD {gpu.name}"
                self.add(kind, name, number, how, gpu.arch, line)

    def gfx(self, line: str, number: int) -> None:
        targets = set()
        for found in _GFX.finditer(line):
            targets.add(found.group(0).lower())
            if len(targets) > 1:
                return
        if len(targets) == 1 and not _GFX_LIST_HINT.search(line):  # several, or after "arch": a list of targets
            target = targets.pop()
            self.add("amd", f"AMD GPU {target}", number, "gfx target", target, line)

    def versions(self, line: str, number: int) -> None:
        """The first driver and ROCm version stated (a later mention is most often an older one quoted)."""
        if "driver" not in self._versions and (driver := _DRIVER.search(line)):
            self._versions.add("driver")
            self.facts.append(Fact("driver", driver.group(1), number, "driver version label"))
        if "rocm" not in self._versions and "used to build" not in line and (rocm := _ROCM.search(line)):
            self._versions.add("rocm")
            self.facts.append(Fact("rocm", rocm.group(1), number, "ROCm version label"))


def read_facts(text: str, table: NameTable | None = None) -> PasteFacts:
    """Every fact ``text`` states by itself, line by line (see the module's description)."""
    reader = _Reader(table or NameTable())
    amd_context = bool(_AMD_CONTEXT.search(text)) and not _NV_BRAND.search(text)
    for number, raw in enumerate(text.split("\n"), start=1):
        low = raw[:MAX_LINE].lower()
        if not any(word in low for word in _TRIGGERS):
            continue
        line = clean_line(raw)
        if not line or line.startswith("Subsystem"):  # lspci's subsystem names the board maker's ids
            continue
        # each pattern only where its words stand: a substring test is far cheaper than a pattern's scan
        if any(word in low for word in _BRANDS):
            reader.names(line, number)
        if "10de" in low or "1002" in low or "device" in low or "gpu id" in low:
            reader.ids(line, number, amd_context)
        if "gfx" in low:
            reader.gfx(line, number)
        if "driver" in low or "rocm" in low:
            reader.versions(line, number)
    return PasteFacts(tuple(reader.facts))
