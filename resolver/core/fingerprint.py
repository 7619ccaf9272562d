"""Skip if unchanged: one key recipe (:func:`fingerprint`) and one record (:class:`Memo`) for every
answer the resolver keeps so as not to compute it again (a finished setup step, "pixi.lock is
current", a decided plan, what an environment's Python said, a kernel package's import check, a
kernel build's folder, a toolkit binary's answer).

A fingerprint is the sha256 of the parts in turn, separated by NUL bytes: a :class:`~pathlib.Path`
given as a part counts by the content of the file there (anything but a readable regular file counts
as ``<missing>``), ``bytes`` as they are, anything else as canonical JSON (keys sorted; inside it a path
is its text, bytes their sha256, a value type its ``to_json()``, a set sorted, a version its text).
So the same inputs give the same key in every process and on every machine, and any change to one
gives another. A single part is hashed as it is, so the keys that name what users already have (a
kernel build's, in its build string; an environment's lock digest, in its ready marker) kept their values
when they moved here.

>>> fingerprint({"b": 1, "a": 2}) == fingerprint({"a": 2, "b": 1})
True
>>> fingerprint("ab") == fingerprint("a", "b")
False
>>> import tempfile, pathlib
>>> from resolver.core.records import Text
>>> memo = Memo(pathlib.Path(tempfile.mkdtemp()) / "answer.json", Text())
>>> memo.keep(fingerprint("in-1"), "yes")
True
>>> memo.recall(fingerprint("in-1")), memo.recall(fingerprint("in-2"))
('yes', None)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from resolver.core.errors import BadInput
from resolver.core.fs import MiB, read_bytes_bounded, remove_file, sha256_bytes, sha256_hasher, sha256_of
from resolver.core.records import RECORD_LIMIT, SHA256, Fields, Shape, read_record, write_record

_MISSING = b"<missing>"
_FILE_LIMIT = 64 * MiB  # a part given as a file is a manifest, a marker, an index: larger ones are streamed
_SMALL = 2 * MiB  # below this, the interpreter's own sha256 is faster than importing OpenSSL's


def fingerprint(*parts: Any) -> str:
    """The sha256 (hex) of ``parts``, each as the module docstring says: the one key of every
    skip-if-unchanged record."""
    chunks = [_file_bytes(part) if isinstance(part, Path) else part if isinstance(part, (bytes, bytearray))
              else canonical_json(part).encode("utf-8") for part in parts]
    digest = sha256_hasher(small=sum(map(len, chunks)) < _SMALL)
    for i, chunk in enumerate(chunks):
        digest.update(b"\0" if i else b"")
        digest.update(chunk)
    return digest.hexdigest()


def canonical_json(value: Any) -> str:
    """``value`` as JSON with sorted keys and the stable encodings :func:`fingerprint` uses."""
    return json.dumps(value, sort_keys=True, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return sha256_bytes(bytes(value))
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=canonical_json)
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(value)
    return str(value)  # a version, a target: its text is its identity


def _file_bytes(path: Path) -> bytes:
    try:
        if not path.is_file():
            return _MISSING
        if path.stat().st_size > _FILE_LIMIT:  # not read into memory: its streamed sha256 stands for it
            return b"<sha256 " + sha256_of(path).encode() + b">"
        return read_bytes_bounded(path, limit=_FILE_LIMIT, what="the file")
    except (OSError, BadInput):
        return _MISSING


class Memo:
    """An answer kept beside the fingerprint of what it was computed from: one record,
    ``{"inputs_digest": <sha256>, "value": <the answer>}``, read back through
    :func:`~resolver.core.records.read_record` (a regular file of this user's, bounded, JSON) with the
    value checked against ``shape``. Anything else, or a record kept for other inputs, is no answer:
    the caller computes it again and keeps it. (A plain class: ``plan`` reads one, and dataclasses
    cost an import.)"""

    __slots__ = ("path", "shape", "label", "limit")

    def __init__(self, path: Path | None, shape: Shape, *, label: str = "memo", limit: int = RECORD_LIMIT) -> None:
        self.path, self.shape, self.label, self.limit = path, shape, label, limit

    def read(self) -> dict[str, Any] | None:
        """The whole record (``inputs_digest`` and ``value``) when it is one of this memo's shape."""
        if self.path is None:
            return None
        return read_record(self.path, Fields({"inputs_digest": SHA256, "value": self.shape}), limit=self.limit)

    def recall(self, inputs_digest: str) -> Any | None:
        """The answer kept for exactly these inputs, or None."""
        record = self.read()
        return record["value"] if record is not None and record["inputs_digest"] == inputs_digest else None

    def keep(self, inputs_digest: str, value: Any, *, in_order: bool = False) -> bool:
        """Keep ``value`` for these inputs (atomically); False where it cannot be written (a read-only
        cache: the next run computes again, which is all a missing record costs). ``in_order``: the
        value's own key order is kept (a plan as ``to_json`` orders it)."""
        if self.path is None:
            return False
        return write_record(self.path, {"inputs_digest": inputs_digest, "value": value}, label=self.label,
                            in_order=in_order)

    def forget(self) -> None:
        if self.path is not None:
            remove_file(self.path)
