"""Conda packages as a hostile or careless teammate makes them: any info/index.json, any info/paths.json,
any archive member (a path with ``..``, an absolute path, a link to /etc), written byte by byte.

A ``.conda`` is a zip of ``metadata.json``, ``info-<stem>.tar.zst`` and ``pkg-<stem>.tar.zst``. The
standard library has no zstd encoder, so the tars go into zstd frames of raw (stored) blocks, which
every zstd decoder reads (RFC 8878 §3.1.1.2: Block_Type 0, Raw_Block).

>>> zstd_stored(b"")[:4] == ZSTD_MAGIC
True
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path
from typing import Any

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_BLOCK = 1 << 17  # 128 KiB, the largest block and the window declared below


def zstd_stored(data: bytes) -> bytes:
    """``data`` as one zstd frame of raw blocks (no compression)."""
    out = bytearray(ZSTD_MAGIC)
    out += bytes([0x00, 0x38])  # frame header: no content size, no checksum; window 2^(10+7) = 128 KiB
    chunks = [data[i:i + _BLOCK] for i in range(0, len(data), _BLOCK)] or [b""]
    for number, chunk in enumerate(chunks):
        last = number == len(chunks) - 1
        out += ((len(chunk) << 3) | int(last)).to_bytes(3, "little") + chunk  # Block_Type 0 (raw)
    return bytes(out)


def tar_of(members: list[dict[str, Any]]) -> bytes:
    """A tar of ``members``: ``{"name", "data"}`` files, ``{"name", "symlink": target}``,
    ``{"name", "hardlink": member}``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            info = tarfile.TarInfo(member["name"])
            if member.get("symlink") is not None:
                info.type, info.linkname = tarfile.SYMTYPE, member["symlink"]
                tar.addfile(info)
            elif member.get("hardlink") is not None:
                info.type, info.linkname = tarfile.LNKTYPE, member["hardlink"]
                tar.addfile(info)
            else:
                data = member.get("data", b"")
                info.size, info.mode = len(data), 0o755
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def index_json(name: str, version: str = "1.0.0", build: str = "h0_0", subdir: str = "linux-64",
               **extra: Any) -> dict[str, Any]:
    return {"name": name, "version": version, "build": build, "build_number": 0, "depends": [], "license": "MIT",
            "subdir": subdir, **({"arch": "x86_64", "platform": "linux"} if subdir == "linux-64" else
                                 {"noarch": "generic"}), **extra}


def paths_json(members: list[dict[str, Any]]) -> dict[str, Any]:
    """What rattler-build writes for ``members``: each file and link with its type (and a file's hash)."""
    entries = []
    for member in members:
        if member.get("symlink") is not None:
            entries.append({"_path": member["name"], "path_type": "softlink"})
        else:
            data = member.get("data", b"")
            entries.append({"_path": member["name"], "path_type": "hardlink",
                            "sha256": hashlib.sha256(data).hexdigest(), "size_in_bytes": len(data)})
    return {"paths": entries, "paths_version": 1}


def write_conda(channel: Path, index: dict[str, Any], members: list[dict[str, Any]], *,
                paths: dict[str, Any] | bytes | None = None, file_name: str | None = None) -> Path:
    """``<channel>/<subdir>/<name>-<version>-<build>.conda`` holding ``members``; ``paths`` replaces the
    info/paths.json that would describe them (a dict, or raw bytes)."""
    stem = f"{index['name']}-{index['version']}-{index['build']}"
    path = channel / index["subdir"] / (file_name or f"{stem}.conda")
    path.parent.mkdir(parents=True, exist_ok=True)
    described = paths if paths is not None else paths_json(members)
    info = [{"name": "info/index.json", "data": json.dumps(index).encode()},
            {"name": "info/paths.json",
             "data": described if isinstance(described, bytes) else json.dumps(described).encode()}]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("metadata.json", json.dumps({"conda_pkg_format_version": 2}))
        archive.writestr(f"pkg-{stem}.tar.zst", zstd_stored(tar_of(members)))
        archive.writestr(f"info-{stem}.tar.zst", zstd_stored(tar_of(info)))
    return path


def zstd_of_zero_runs(pieces: list[bytes | int]) -> bytes:
    """One zstd frame of ``pieces``: bytes as raw blocks, an int as that many zero bytes in RLE blocks (four
    bytes of frame per 128 KiB): how a package that unpacks to terabytes fits in a few MiB."""
    out = bytearray(ZSTD_MAGIC)
    out += bytes([0x00, 0x38])
    blocks: list[tuple[int, bytes]] = []  # (type, content): 0 raw, 1 RLE
    for piece in pieces:
        if isinstance(piece, int):
            left = piece
            while left:
                size = min(left, _BLOCK)
                blocks.append((1, size.to_bytes(3, "little")))
                left -= size
        else:
            blocks.extend((0, piece[i:i + _BLOCK]) for i in range(0, len(piece), _BLOCK))
    blocks = blocks or [(0, b"")]
    for number, (kind, content) in enumerate(blocks):
        last = int(number == len(blocks) - 1)
        if kind == 1:
            size = int.from_bytes(content, "little")
            out += ((size << 3) | (1 << 1) | last).to_bytes(3, "little") + b"\0"
        else:
            out += ((len(content) << 3) | last).to_bytes(3, "little") + content
    return bytes(out)


def zero_tar_pieces(files: list[tuple[str, int]]) -> list[bytes | int]:
    """A tar of files of zeros (``(name, size)``), as headers and runs of zeros for :func:`zstd_of_zero_runs`."""
    pieces: list[bytes | int] = []
    for name, size in files:
        info = tarfile.TarInfo(name)
        info.size, info.mode = size, 0o644
        pieces.append(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
        pieces.append(size + (-size) % 512)
    pieces.append(1024)  # the end of the archive
    return pieces


def write_conda_bomb(channel: Path, index: dict[str, Any], files: list[tuple[str, int]], *,
                     stated: dict[str, Any] | None = None) -> Path:
    """A well-formed ``.conda`` whose payload is ``files`` of zeros (``(name, size)``, sizes up to terabytes)
    in a file of a few MiB; its info/paths.json states the true sizes unless ``stated`` replaces it."""
    stem = f"{index['name']}-{index['version']}-{index['build']}"
    path = channel / index["subdir"] / f"{stem}.conda"
    path.parent.mkdir(parents=True, exist_ok=True)
    described = stated if stated is not None else {
        "paths": [{"_path": name, "path_type": "hardlink", "size_in_bytes": size} for name, size in files],
        "paths_version": 1}
    info = [{"name": "info/index.json", "data": json.dumps(index).encode()},
            {"name": "info/paths.json", "data": json.dumps(described).encode()}]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("metadata.json", json.dumps({"conda_pkg_format_version": 2}))
        archive.writestr(f"pkg-{stem}.tar.zst", zstd_of_zero_runs(zero_tar_pieces(files)))
        archive.writestr(f"info-{stem}.tar.zst", zstd_stored(tar_of(info)))
    return path
