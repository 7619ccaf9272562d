"""Which GPU architectures a compiled extension carries, read from its ELF ``.nv_fatbin`` (CUDA) or
``.hip_fatbin`` (ROCm) section.

No CUDA toolkit needed (``cuobjdump --list-elf`` does the same when it is installed). A fat binary
is a sequence of containers (magic ``0xBA55ED50``), each holding entries of kind 1 (PTX, JIT-able
by the driver for newer GPUs) or 2 (ELF/SASS for exactly one ``sm_XY``).

>>> blob = fatbin_container([(2, 90), (1, 90)])
>>> archs_in_fatbin(blob)
['compute_90', 'sm_90']
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
_KIND = {1: "compute", 2: "sm"}


def archs_in_fatbin(data: bytes) -> list[str]:
    """Architectures named by the entries of every fat-binary container in ``data``."""
    found: set[str] = set()
    pos = 0
    while pos + 16 <= len(data):
        magic, _version, header_size, fat_size = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            nxt = data.find(struct.pack("<I", FATBIN_MAGIC), pos + 1)
            if nxt < 0:
                break
            pos = nxt
            continue
        entry, end = pos + header_size, min(pos + header_size + fat_size, len(data))
        while entry + 48 <= end:
            kind, _ev, entry_header, padded = struct.unpack_from("<HHII", data, entry)
            sm = struct.unpack_from("<I", data, entry + 28)[0]
            if kind in _KIND and 10 <= sm < 1000:
                found.add(f"{_KIND[kind]}_{sm}")
            if entry_header == 0:
                break
            entry += entry_header + padded
        pos = max(end, pos + 16)
    return sorted(found, key=lambda a: (int("".join(c for c in a if c.isdigit())), a))


def _section(data: bytes, name: bytes) -> bytes | None:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:  # 64-bit little-endian only
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if not shoff or shstrndx >= shnum:
        return None
    def header(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    strtab = header(shstrndx)
    names = data[strtab[4]:strtab[4] + strtab[5]]
    for i in range(shnum):
        h = header(i)
        end = names.find(b"\0", h[0])
        if names[h[0]:end] == name:
            return data[h[4]:h[4] + h[5]]
    return None


def gfx_in_hip_fatbin(data: bytes) -> list[str]:
    """gfx targets of a HIP fat binary (clang offload bundle entries ``hipv4-amdgcn-amd-amdhsa--gfx90a...``).

    >>> gfx_in_hip_fatbin(b"__CLANG_OFFLOAD_BUNDLE__...hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-...hip-amdgcn-amd-amdhsa--gfx942")
    ['gfx90a', 'gfx942']
    """
    found = re.findall(rb"amdgcn-amd-amdhsa-+(gfx[0-9a-f]+)", data)
    return sorted({g.decode() for g in found})


def archs_of_library(path: str | Path) -> list[str]:
    """The architectures in a shared library's ``.nv_fatbin`` (CUDA) or ``.hip_fatbin`` (ROCm) section;
    [] when it has none or is unreadable."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return []
    section = _section(data, b".nv_fatbin")
    if section:
        return archs_in_fatbin(section)
    section = _section(data, b".hip_fatbin")
    return gfx_in_hip_fatbin(section) if section else []


def fatbin_container(entries: list[tuple[int, int]]) -> bytes:
    """A minimal container with (kind, sm) entries and empty payloads: for tests and examples."""
    body = b"".join(struct.pack("<HHIIIIIIIIIQQQ", kind, 0x0101, 64, 0, 0, 0, 0, 0, sm, 64, 0, 0, 0, 0)
                    for kind, sm in entries)
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body
