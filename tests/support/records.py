"""Records as tests see them: the resolver seals each one (resolver.core.seal) with a key in the user's
cache (the session's, never the real one). A test plants a record this user's resolver would have
written with :func:`plant`, one that came with a clone with :func:`unsealed`, and reads what the
resolver wrote with :func:`read`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from resolver.core.records import Anything, read_record, write_record
from resolver.core.seal import seal


def plant(path: Path, data: Any, *, place: Path | None = None) -> Path:
    """``data`` at ``path`` as this user's resolver writes a record (sealed for ``place``, default ``path``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    assert write_record(path, data, place=place, strict=True)
    return path


def plant_text(path: Path, text: str) -> Path:
    """Any text at ``path`` under this user's seal (a record whose content the reader must still check)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(seal(path, text.encode("utf-8")))
    return path


def unsealed(path: Path, data: Any) -> Path:
    """``data`` at ``path`` as plain JSON: what a clone or a pull request brings (no seal of this user's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def read(path: Path) -> Any:
    """The data of the record the resolver wrote at ``path`` (which must be sealed for it)."""
    data = read_record(path, Anything())
    assert data is not None, f"{path} is not a record this user's resolver wrote here"
    return data
