"""Cache and state files: what the resolver keeps between runs, read back as untrusted data.

Every such file is named in :mod:`resolver.project.paths`, written through :func:`write_record` and read
through :func:`read_record` alone: sealed by this user for the place it is read from
(:mod:`resolver.core.seal`: a record that came with a clone or a pull request reads as absent), a
regular file (a symbolic link, FIFO or device in its place is ignored, never followed) that this
user owns and no one else may write (what the resolver writes is mode 644; a file another user
replaced it with is theirs), at most ``limit`` bytes, JSON, and of the shape its reader declares.
Anything else reads as absent, so the caller computes the answer again and rewrites the file: a
record is a speed-up, never trusted for more than the data its shape allows (no flags, no commands,
no paths to run).

>>> import tempfile, pathlib, os
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> shape = Fields({"answer": Text(r"[a-z]+"), "count": Integer()})
>>> write_record(folder / "a.json", {"answer": "yes", "count": 2})
True
>>> read_record(folder / "a.json", shape)
{'answer': 'yes', 'count': 2}
>>> write_record(folder / "b.json", {"answer": "--python=/bin/sh", "count": 2})
True
>>> read_record(folder / "b.json", shape) is None
True
>>> os.symlink(folder / "a.json", folder / "c.json")
>>> read_record(folder / "c.json", shape) is None
True
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

from resolver.core.errors import BadInput
from resolver.core.fs import MiB, read_bytes_bounded, write_atomic
from resolver.core.seal import SEAL_OVERHEAD, seal, unseal

RECORD_LIMIT = 16 * MiB  # the largest cache (every wheel's requires_dist) is a few MB


# ------------------------------------------------------------------------------------------- shapes


class Shape:
    """A check of decoded JSON data (plain classes: ``plan`` reads a record, and dataclasses cost imports)."""

    __slots__ = ()

    def accepts(self, value: Any) -> bool:  # pragma: no cover - every shape overrides it
        raise NotImplementedError


class Text(Shape):
    """A string of at most ``max_len`` characters matching ``pattern`` in full (any, by default), with no
    control characters."""

    __slots__ = ("pattern", "max_len")

    def __init__(self, pattern: str | None = None, max_len: int = 4096) -> None:
        self.pattern = None if pattern is None else re.compile(pattern)
        self.max_len = max_len

    def accepts(self, value: Any) -> bool:
        return (isinstance(value, str) and len(value) <= self.max_len and not _CONTROL.search(value)
                and (self.pattern is None or self.pattern.fullmatch(value) is not None))


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class Integer(Shape):
    __slots__ = ("minimum",)

    def __init__(self, minimum: int = 0) -> None:
        self.minimum = minimum

    def accepts(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= self.minimum


class Number(Shape):
    __slots__ = ()

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


class Flag(Shape):
    __slots__ = ()

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)


class Null(Shape):
    __slots__ = ()

    def accepts(self, value: Any) -> bool:
        return value is None


class Anything(Shape):
    """Data of any JSON shape, for a record whose reader rebuilds a typed value from it (``from_json``)
    and treats any failure there as a miss."""

    __slots__ = ()

    def accepts(self, value: Any) -> bool:
        return True


class OfType(Shape):
    """A value of one JSON type whose content its reader only ever compares with what it computes, or
    rebuilds a typed value from (``Plan.from_json``: any failure there is a miss)."""

    __slots__ = ("kind",)

    def __init__(self, kind: type) -> None:
        self.kind = kind

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.kind)


class AnyOf(Shape):
    __slots__ = ("options",)

    def __init__(self, *options: Shape) -> None:
        self.options = options

    def accepts(self, value: Any) -> bool:
        return any(option.accepts(value) for option in self.options)


def optional(shape: Shape) -> Shape:
    return AnyOf(shape, Null())


class ListOf(Shape):
    __slots__ = ("item", "max_items")

    def __init__(self, item: Shape, max_items: int = 100_000) -> None:
        self.item, self.max_items = item, max_items

    def accepts(self, value: Any) -> bool:
        return isinstance(value, list) and len(value) <= self.max_items and all(self.item.accepts(v) for v in value)


class Row(Shape):
    """A list of exactly these shapes, in order."""

    __slots__ = ("items",)

    def __init__(self, *items: Shape) -> None:
        self.items = items

    def accepts(self, value: Any) -> bool:
        return (isinstance(value, list) and len(value) == len(self.items)
                and all(shape.accepts(v) for shape, v in zip(self.items, value)))


class MapOf(Shape):
    __slots__ = ("value", "key", "max_items")

    def __init__(self, value: Shape, key: Shape | None = None, max_items: int = 1_000_000) -> None:
        self.value, self.key, self.max_items = value, key or Text(max_len=1024), max_items

    def accepts(self, value: Any) -> bool:
        return (isinstance(value, dict) and len(value) <= self.max_items
                and all(self.key.accepts(k) and self.value.accepts(v) for k, v in value.items()))


class Fields(Shape):
    """An object with exactly the ``required`` keys and any of the ``optional`` ones, each of its shape."""

    __slots__ = ("required", "optional")

    def __init__(self, required: Mapping[str, Shape], optional: Mapping[str, Shape] | None = None) -> None:
        self.required, self.optional = dict(required), dict(optional or {})

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, dict) or not self.required.keys() <= value.keys() \
                or not value.keys() <= self.required.keys() | self.optional.keys():
            return False
        return all((self.required.get(k) or self.optional[k]).accepts(v) for k, v in value.items())


SHA256 = Text(r"[0-9a-f]{64}", 64)


# ------------------------------------------------------------------------------------ read and write


def read_record(path: str | Path, shape: Shape, *, limit: int = RECORD_LIMIT) -> Any | None:
    """The data of the cache or state file ``path`` when it is a regular file of at most ``limit`` bytes
    (not a link to one), sealed by this user for this place (:mod:`resolver.core.seal`: not a file that
    came with a clone), valid JSON and of ``shape``; else None, as if it were absent."""
    try:
        blob = read_bytes_bounded(path, limit=limit + SEAL_OVERHEAD, what="record", follow_symlinks=False, own=True)
        payload = unseal(path, blob)
        if payload is None:
            return None
        data = json.loads(payload)
    except (BadInput, ValueError, RecursionError):
        return None
    return data if shape.accepts(data) else None


def write_record(path: str | Path, data: Any, *, label: str = "record", in_order: bool = False,
                 place: str | Path | None = None, strict: bool = False) -> bool:
    """Write a record atomically (keys sorted, unless ``in_order``), sealed for ``place`` (where it will
    be read: ``path`` itself unless it is written in a folder that is then renamed); False when it
    cannot be written (a read-only cache: the next run computes again, which is all a missing record
    costs), or with ``strict`` (a record that must exist before the work it guards) the error."""
    text = json.dumps(data, indent=1) if in_order else json.dumps(data, indent=2, sort_keys=True, default=str)
    try:
        write_atomic(path, seal(path if place is None else place, (text + "\n").encode("utf-8")), label=label)
    except (OSError, BadInput):
        if strict:
            raise
        return False
    return True


class RecordMap:
    """A cache that maps keys (a sha256, by default) to entries of one shape, kept in one record.

    Entries whose key or value is not of its shape are dropped one by one when it is read (and the file
    rewritten at the next :meth:`save`); a file that is not a record at all counts as empty. Threads may
    share one: each change is one dict operation (a lost update between two threads costs one answer
    computed again, nothing more). ``keep``: at most this many entries are written, the newest.
    """

    def __init__(self, path: Path, entry: Shape, *, key: Shape = SHA256, keep: int | None = None,
                 limit: int = RECORD_LIMIT) -> None:
        self.path, self.entry, self.key, self.keep = path, entry, key, keep
        data = read_record(path, OfType(dict), limit=limit)
        self.dirty = data is None and (path.exists() or path.is_symlink())  # a bad file is replaced
        self.entries: dict[str, Any] = {k: v for k, v in (data or {}).items()
                                        if key.accepts(k) and entry.accepts(v)}
        self.dirty = self.dirty or len(self.entries) != len(data or {})

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def get(self, key: str, default: Any = None) -> Any:
        return self.entries.get(key, default)

    def put(self, key: str, value: Any) -> None:
        """Remember ``value`` under ``key`` (refused silently when either is not of the declared shape)."""
        if self.key.accepts(key) and self.entry.accepts(value) and self.entries.get(key, self) != value:
            self.entries.pop(key, None)
            self.entries[key] = value
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        entries = dict(self.entries)
        if self.keep is not None and len(entries) > self.keep:
            entries = dict(list(entries.items())[-self.keep:])
        if write_record(self.path, entries, label="cache", in_order=self.keep is not None):
            self.dirty = False
