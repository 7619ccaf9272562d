"""Parsers for what NVIDIA's driver and tools print. Pure functions over text; no I/O.

Each nvidia-smi form has a reader that returns an :class:`NvidiaReading` (what that output says);
``resolver.plan.probe.nvidia`` runs the forms and merges the readings.

>>> parse_proc_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.98  Thu Oct 26 15:16:01 PDT 2017")
'384.98'
>>> parse_smi_header("| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4     |")
('550.54.15', '12.4')
>>> parse_smi_header("| NVIDIA-SMI 610.43.02   KMD Version: 610.43.02     CUDA UMD Version: 13.3     |")
('610.43.02', '13.3')
>>> parse_query_csv("NVIDIA H100 80GB HBM3, 9.0, 550.54.15, 81559 MiB, GPU-a1b2", QUERY_FIELDS)[0]["compute_cap"]
'9.0'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

QUERY_FIELDS = ("name", "compute_cap", "driver_version", "memory.total", "uuid")
# nvidia-smi before 510 has no compute_cap field and refuses the whole query; ask again without it.
QUERY_FIELDS_OLD = ("name", "driver_version", "memory.total", "uuid")

# Every pattern here reads untrusted text (a pasted report) and runs in linear time: no two neighbouring
# repetitions can match the same characters, and a pattern that starts inside a run of digits or blanks
# starts only at its beginning (``(?<!\d)``), so a crafted line cannot make the engine backtrack.
_NVRM = "NVRM version:"
_PROC_VERSION = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)")
_PROC_MACHINE = re.compile(r"\b(x86_64|aarch64|ppc64le)\b")
# Drivers from the 610 series print "KMD Version" and "CUDA UMD Version" where older ones print
# "Driver Version" and "CUDA Version" (the same facts under new names).
_DRIVER = re.compile(r"(?:Driver|KMD) Version:\s*(\d+(?:\.\d+)+)")
_CUDA = re.compile(r"CUDA (?:UMD )?Version:\s*(\d+\.\d+)")
_MISSING = {"", "[n/a]", "n/a", "[not supported]", "[unknown error]", "[insufficient permissions]"}
_BUS_ID = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"
# A GPU row of plain nvidia-smi's table: index, name, persistence mode (or the Windows driver model),
# then the PCI bus id. Names longer than the column are cut and end in "...".
_TABLE_MODES = ("On", "Off", "WDDM", "TCC", "MCDM", "N/A")
_TABLE_INDEX = re.compile(r"\s*(\d+)\s+")
_TABLE_BUS = re.compile(rf"\s*(?:{_BUS_ID}|N/A\s)")  # a Jetson (nvgpu) has no PCI bus id
_TABLE_MEMORY = re.compile(r"(?<!\d)(\d{1,9})\s*MiB\s*/\s*(\d{1,9})\s*MiB")
_VERSION_CELL = re.compile(r"\d{1,6}(?:\.\d{1,6}){1,3}")  # a driver version as a csv cell holds it
_LIST_HEAD = re.compile(r"GPU\s+(\d+):\s+")
_LIST_UUID = re.compile(r"\(UUID:\s*(GPU-[0-9A-Fa-f-]+|\[[a-z ]{1,20}\])\)")  # a paste may redact it
_DETAIL_KEY = re.compile(r"[A-Za-z][A-Za-z0-9 ./()-]*")
_DETAIL_GPU = re.compile(rf"GPU\s+{_BUS_ID}")


@dataclass(frozen=True)
class GpuSeen:
    """One GPU as an output names it; ``compute_capability`` only when the output prints it."""

    name: str
    compute_capability: str | None = None
    memory_mib: int | None = None
    uuid: str | None = None


@dataclass(frozen=True)
class NvidiaReading:
    """What one output says: the driver, the newest CUDA it supports, the GPUs (any may be missing)."""

    driver: str | None = None
    cuda: str | None = None
    gpus: tuple[GpuSeen, ...] = ()

    @property
    def empty(self) -> bool:
        return self.driver is None and self.cuda is None and not self.gpus


def parse_proc_version(text: str) -> str | None:
    """The driver version from ``/proc/driver/nvidia/version`` (proprietary or open kernel module)."""
    return next((m.group(1) for line in _nvrm_lines(text) if (m := _PROC_VERSION.search(line))), None)


def _nvrm_lines(text: str):
    """What follows ``NVRM version:`` on each line that holds it."""
    for line in text.splitlines():
        start = line.find(_NVRM)
        if start >= 0:
            yield line[start + len(_NVRM):]


def parse_proc_machine(text: str) -> str | None:
    """The CPU architecture ``/proc/driver/nvidia/version`` names (``x86_64``, ``aarch64``, ``ppc64le``).

    >>> parse_proc_machine("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  35.3.1  Release Build")
    'aarch64'
    """
    return next((m.group(1) for line in _nvrm_lines(text) if (m := _PROC_MACHINE.search(line))), None)


def parse_module_version(text: str) -> str | None:
    """``/sys/module/nvidia/version`` holds just the version, e.g. ``550.54.15``.

    >>> parse_module_version("550.54.15\\n"), parse_module_version("not loaded")
    ('550.54.15', None)
    """
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
    """``81559 MiB`` → 81559.

    >>> parse_memory_mib("81559 MiB"), parse_memory_mib("[N/A]"), parse_memory_mib(None)
    (81559, None, None)
    """
    match = re.match(r"\s*(\d{1,9})\s*MiB", text or "")
    return int(match.group(1)) if match else None


def unsupported_field(output: str) -> bool:
    """True when nvidia-smi rejected a --query-gpu field (old drivers: no ``compute_cap``).

    >>> unsupported_field('Field "compute_cap" is not a valid field to query.'), unsupported_field("NVIDIA A100, 8.0")
    (True, False)
    """
    return "is not a valid field to query" in output


def read_query_csv(text: str, fields: tuple[str, ...]) -> NvidiaReading:
    """The ``--query-gpu`` csv as a reading (the driver of the first row that names one).

    >>> read_query_csv("NVIDIA A100-SXM4-80GB, 8.0, 535.54.03, 81920 MiB, GPU-1\\n", QUERY_FIELDS).gpus[0].memory_mib
    81920
    """
    rows = parse_query_csv(text, fields)
    driver = next((row["driver_version"] for row in rows if _VERSION_CELL.fullmatch(row.get("driver_version") or "")),
                  None)
    gpus = tuple(GpuSeen(row["name"] or "NVIDIA GPU", row.get("compute_cap"), parse_memory_mib(row.get("memory.total")),
                         row.get("uuid")) for row in rows)
    return NvidiaReading(driver=driver, gpus=gpus)


def read_query_csv_with_header(text: str) -> NvidiaReading:
    """``--query-gpu=… --format=csv`` pasted with its header line, whatever fields it asked for (the
    header names them; units such as `` [MiB]`` are dropped).

    >>> read_query_csv_with_header("name, compute_cap\\nNVIDIA TITAN V, 7.0\\n").gpus[0].compute_capability
    '7.0'
    """
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        fields = tuple(_without_unit(cell.strip()) for cell in lines[number].split(","))
        number += 1
        if len(fields) < 2 or "name" not in fields or not all(re.fullmatch(r"[a-z_][a-z0-9_.]*", f) for f in fields):
            continue
        body = []
        while number < len(lines) and len(lines[number].split(",")) == len(fields):
            body.append(lines[number])
            number += 1  # a body without GPUs (header lines only) is not read again as headers
        reading = read_query_csv("\n".join(body), fields)
        if reading.gpus:
            return reading
    return NvidiaReading()


def _without_unit(cell: str) -> str:
    """A csv header cell without its unit: ``memory.total [MiB]`` → ``memory.total``."""
    start = cell.find("[", cell.rfind("]", 0, len(cell) - 1) + 1)
    return cell[:start].rstrip() if cell.endswith("]") and start >= 0 else cell


def parse_smi_header(text: str) -> tuple[str | None, str | None]:
    """``(driver_version, cuda_version)`` from plain ``nvidia-smi``'s header, in both generations
    (``Driver Version``/``CUDA Version``; from 610 on ``KMD Version``/``CUDA UMD Version``). The CUDA
    version is the newest CUDA the driver supports (not an installed toolkit)."""
    driver = _DRIVER.search(text)
    cuda = _CUDA.search(text)
    return (driver.group(1) if driver else None), (cuda.group(1) if cuda else None)


def parse_smi_table(text: str) -> list[GpuSeen]:
    """The GPU rows of plain ``nvidia-smi``'s table: name (as printed, possibly cut short with
    ``...``) and total memory from the row below. The table has no compute capability.

    >>> parse_smi_table('''|   0  NVIDIA L4                      On  |   00000000:31:00.0 Off |                    0 |
    ... | N/A   36C    P8             16W /   72W |       0MiB /  23034MiB |      0%      Default |''')
    [GpuSeen(name='NVIDIA L4', compute_capability=None, memory_mib=23034, uuid=None)]
    """
    gpus: list[GpuSeen] = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        name = _table_row_name(line)
        if name is None:
            continue
        following = lines[number + 1] if number + 1 < len(lines) else ""
        memory = _TABLE_MEMORY.search(following)
        gpus.append(GpuSeen(name, memory_mib=int(memory.group(2)) if memory else None))
    return gpus


def _table_row_name(line: str) -> str | None:
    """The GPU name of a table row ``| <index>  <name>  <mode> | <bus id> ...``, else None."""
    cells = line.split("|", 3)
    if len(cells) < 3 or cells[0].strip() or not _TABLE_BUS.match(cells[2]):
        return None
    index = _TABLE_INDEX.match(cells[1])
    parts = cells[1][index.end():].rsplit(None, 1) if index else []
    if len(parts) != 2 or parts[1] not in _TABLE_MODES:
        return None
    return parts[0].strip()


def read_smi_plain(text: str) -> NvidiaReading:
    """Plain ``nvidia-smi``: the header's driver and CUDA version, and the GPU table.

    >>> reading = read_smi_plain("| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |")
    >>> reading.driver, reading.cuda, reading.gpus
    ('550.54.15', '12.4', ())
    """
    driver, cuda = parse_smi_header(text)
    return NvidiaReading(driver=driver, cuda=cuda, gpus=tuple(parse_smi_table(text)))


def read_smi_list(text: str) -> NvidiaReading:
    """``nvidia-smi -L``: ``GPU 0: NVIDIA B200 (UUID: GPU-…)`` lines (MIG device lines are not GPUs).

    >>> read_smi_list("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5135)\\n  MIG 1g.20gb Device 0: (UUID: MIG-ce86)\\n").gpus
    (GpuSeen(name='NVIDIA A100-SXM4-80GB', compute_capability=None, memory_mib=None, uuid='GPU-5135'),)
    """
    gpus = []
    for line in text.splitlines():
        line = line.strip()
        head = _LIST_HEAD.match(line)
        start = line.rfind("(UUID:")  # the UUID closes the line
        uuid = _LIST_UUID.fullmatch(line, start) if head and start > head.end() else None
        if uuid is None or not line[start - 1].isspace():
            continue
        name = line[head.end():uuid.start()].strip()
        if name:
            gpus.append(GpuSeen(name, uuid=uuid.group(1) if uuid.group(1).startswith("GPU-") else None))
    return NvidiaReading(gpus=tuple(gpus))


def read_smi_details(text: str) -> NvidiaReading:
    """``nvidia-smi -q`` (or ``-a``): ``Driver Version``/``KMD Version``, ``CUDA Version``/``CUDA UMD
    Version``, and per GPU ``Product Name``, ``GPU UUID`` and ``FB Memory Usage``'s ``Total``.

    >>> r = read_smi_details('''Driver Version                            : 450.66
    ... CUDA Version                              : 11.0
    ... GPU 00000000:01:00.0
    ...     Product Name                          : GeForce GTX 780
    ...     GPU UUID                              : GPU-a230e637
    ...     FB Memory Usage
    ...         Total                             : 3018 MiB''')
    >>> r.driver, r.cuda, r.gpus[0].name, r.gpus[0].memory_mib
    ('450.66', '11.0', 'GeForce GTX 780', 3018)
    """
    driver = cuda = None
    gpus: list[dict[str, str | int | None]] = []
    section = ""
    for line in text.splitlines():
        if _DETAIL_GPU.fullmatch(line.strip()):
            gpus.append({})
            continue
        key, colon, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not colon or not _DETAIL_KEY.fullmatch(key):
            section = line.strip()  # a heading such as "FB Memory Usage"
            continue
        if key in ("Driver Version", "KMD Version") and driver is None:
            driver = _leading_version(value)
        elif key in ("CUDA Version", "CUDA UMD Version") and cuda is None:
            cuda = _leading_version(value, minor_only=True)
        elif key == "Product Name":
            if not gpus or "name" in gpus[-1]:
                gpus.append({})  # a paste without the "GPU <bus id>" lines
            gpus[-1]["name"] = value
        elif key == "GPU UUID" and gpus and value.startswith("GPU-"):
            gpus[-1]["uuid"] = value
        elif key == "Total" and section == "FB Memory Usage" and gpus:
            gpus[-1].setdefault("memory", parse_memory_mib(value))
    seen = tuple(GpuSeen(str(g["name"]), memory_mib=g.get("memory"), uuid=g.get("uuid"))  # type: ignore[arg-type]
                 for g in gpus if g.get("name"))
    return NvidiaReading(driver=driver, cuda=cuda, gpus=seen)


def _leading_version(value: str, minor_only: bool = False) -> str | None:
    match = re.match(r"(\d+\.\d+)" if minor_only else r"(\d+(?:\.\d+)+)", value)
    return match.group(1) if match else None


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
