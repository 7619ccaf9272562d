"""sha256 of files, streamed (wheels and sdists are hundreds of MB); one definition for every stage."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_of(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile(delete=False) as f: _ = f.write(b"abc")
    >>> sha256_of(f.name)[:12]
    'ba7816bf8f01'
    >>> os.unlink(f.name)
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_digest(folder: str | Path, *, skip_top: tuple[str, ...] = ()) -> str:
    """sha256 over every file's relative path and content below ``folder`` (sorted; ``__pycache__``
    and the top-level folders named in ``skip_top`` left out). Content-addressed: renames count."""
    folder = Path(folder)
    digest = hashlib.sha256()
    if folder.is_dir():
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                           and p.relative_to(folder).parts[0] not in skip_top):
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
