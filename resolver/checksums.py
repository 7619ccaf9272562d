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
