"""Conda packages someone else made, checked before anything links or indexes them.

A kernel package fetched from a fleet's shared channel, one in this project's channel, and every package
``channel publish`` is given come from a place others can write. rattler links what a package's
``info/paths.json`` lists and extracts every member of its archive; it checks none of it (a path with
``..`` lands outside the environment, an absolute one makes it panic). So before a package is linked or
published, :func:`check_package` reads its archive (py-rattler streams it; nothing is extracted) and
refuses it, as one :class:`IntegrityError` (exit 4) naming the file and the reason, when:

* its sha256 is not the one the channel's index records for it;
* its ``info/index.json`` says another name, version, build, build number, subdir, depends or constrains
  than the index's record, or its file is not named ``<name>-<version>-<build>`` in its subdir's folder;
* a path it installs (each ``paths.json`` entry, each member of its archive) is absolute, has a ``..``,
  ``.`` or empty part, a backslash or a control character, or is longer than a path can be;
* a link in it leads outside the environment: a symbolic link is resolved through the package's own
  links, so ``lib -> ../..``, ``etc -> /etc`` and chains of links that climb out are all refused; a
  hard link names another member;
* ``paths.json`` is missing, malformed, or lists a file the archive does not hold;
* it unpacks to more than :func:`unpacked_bound` allows (a hundred times its size, at most 32 GiB) or
  holds more than :data:`MEMBER_LIMIT` files: refused from its paths.json before its payload is read,
  and from each member's header while it streams, so a small archive of terabytes of zeros stops in
  well under a second.

>>> path_problem("lib/libfoo.so"), path_problem("../escape.txt"), path_problem("/etc/passwd")
(None, "a '..' part", 'an absolute path')
>>> link_problem("lib/libfoo.so", {"lib/libfoo.so": "libfoo.so.1"}), link_problem("etc", {"etc": "/etc"})
(None, 'it points to the absolute path /etc')
>>> link_problem("a/b", {"a/b": "../.."})
'it points outside the environment'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from resolver.core.errors import BadInput, IntegrityError
from resolver.core.names import printable

PACKAGE_SUFFIXES = (".conda", ".tar.bz2")
INFO_LIMIT = 64 << 20  # paths.json of the largest packages (pytorch) is a few MiB
MEMBER_LIMIT = 500_000  # files of one package (pytorch: about 20 000)
UNPACKED_LIMIT = 32 << 30  # bytes one package may unpack to (the largest CUDA libraries: a few GiB)
UNPACKED_RATIO = 100  # unpacked bytes per archive byte (zstd on text and code: ~10; a bomb of zeros: ~30 000)
UNPACKED_FLOOR = 256 << 20  # a tiny package may still unpack to this much, whatever its ratio
PATH_MAX = 4096
NAME_MAX = 255
LINK_HOPS = 40  # links followed while resolving one (the kernel's own limit)
PATH_TYPES = ("hardlink", "softlink", "directory")
# index.json fields the channel's record repeats; they must agree (what the solver reads is what is linked)
_SAME = ("name", "version", "build", "build_number", "subdir", "depends", "constrains", "noarch", "license",
         "track_features", "features")
_FIX = ("rebuild the package, or publish it again from its build; a package from a channel you do not publish: "
        "tell its publisher, and do not use it")


@dataclass(frozen=True)
class PathEntry:
    """One entry of ``info/paths.json``: the path it installs (relative to the environment) and its type."""

    path: str
    path_type: str
    size: int = 0


def unpacked_bound(archive_size: int) -> int:
    """The most bytes a package archive of ``archive_size`` bytes may unpack to: :data:`UNPACKED_RATIO`
    times its size (at least :data:`UNPACKED_FLOOR`), and never past :data:`UNPACKED_LIMIT`. Checked
    before its payload is read (its paths.json) and while it streams (each member's header).

    >>> unpacked_bound(1000) == UNPACKED_FLOOR, unpacked_bound(37 << 20) == 3700 << 20
    (True, True)
    >>> unpacked_bound(1 << 30) == UNPACKED_LIMIT
    True
    """
    return min(UNPACKED_LIMIT, max(UNPACKED_FLOOR, UNPACKED_RATIO * archive_size))


def check_package(path: Path, *, record: Mapping[str, Any] | None = None, subdir: str | None = None) -> None:
    """Refuse ``path`` (one :class:`IntegrityError`, the file and the reason) unless it is a well-formed
    package whose every path and link stays inside the environment, matching ``record`` (its entry in the
    channel's index, when it comes from a channel) and named for what it holds."""
    from resolver.core.fs import sha256_of
    from resolver.tools.conda import read_package, size_text

    name = printable(path.name)
    if record is not None and record.get("sha256") is not None and record.get("sha256") != sha256_of(path):
        _refuse(name, "its sha256 is not the one the channel's index records for it")
    bound = unpacked_bound(path.stat().st_size)

    def before_payload(info: dict[str, bytes]) -> None:  # what paths.json states, before a byte of the payload
        if info.get("info/paths.json") is not None:
            stated = parse_paths_json(info["info/paths.json"], what=f"package {name} is refused: its info/paths.json")
            total = sum(entry.size for entry in stated)
            if total > bound:
                _refuse(name, f"its info/paths.json says it unpacks to {size_text(total)}, more than the "
                              f"{size_text(bound)} a package of {size_text(path.stat().st_size)} may (a decompression "
                              "bomb, or not a package)")

    listing = read_package(path, info_limit=INFO_LIMIT, member_limit=MEMBER_LIMIT, unpacked_limit=bound,
                           before_payload=before_payload)
    if listing.index_json is None:
        _refuse(name, "it holds no info/index.json")
    if listing.paths_json is None:
        _refuse(name, "it holds no info/paths.json")
    index = _json_object(listing.index_json, name)
    problem = index_problem(index, path.name, subdir) or (record_problem(index, record) if record is not None else None)
    if problem:
        _refuse(name, problem)
    entries = parse_paths_json(listing.paths_json, what=f"package {name} is refused: its info/paths.json")
    links: dict[str, str] = {}
    held: set[str] = set()
    for member in listing.members:
        member_name = member.name[2:] if member.name.startswith("./") else member.name
        member_name = member_name[:-1] if member.kind == "dir" and member_name.endswith("/") else member_name
        problem = path_problem(member_name)
        if problem:
            _refuse(name, f"its archive holds {_show(member.name)}: {problem}")
        if member.kind == "symlink":
            links[member_name] = member.target or ""
        elif member.kind == "hardlink":
            target = member.target or ""
            target = target[2:] if target.startswith("./") else target
            problem = path_problem(target) or (None if target in held else "no earlier member of that name")
            if problem:
                _refuse(name, f"its hard link {_show(member_name)} -> {_show(member.target)}: {problem}")
        held.add(member_name)
    for link in links:
        problem = link_problem(link, links)
        if problem:
            _refuse(name, f"its link {_show(link)} -> {_show(links[link])}: {problem}")
    for entry in entries:
        problem = path_problem(entry.path)
        if problem:
            _refuse(name, f"info/paths.json lists {_show(entry.path)}: {problem}")
        if entry.path_type != "directory" and entry.path not in held:
            _refuse(name, f"info/paths.json lists {_show(entry.path)}, which its archive does not hold")


def check_wheel(path: Path) -> None:
    """Refuse (one :class:`IntegrityError`, exit 4) a wheel that is not a readable zip, holds more than
    :data:`MEMBER_LIMIT` files, or whose members unpack (by its central directory, read before anything is
    extracted) to more than :func:`unpacked_bound` of its size: a zip bomb never reaches the installer,
    which extracts each member to the size its header states or fails."""
    import zipfile

    from resolver.tools.conda import size_text

    name = printable(path.name)
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (OSError, zipfile.BadZipFile, ValueError):
        _refuse(name, "it is not a readable zip archive")
    if len(members) > MEMBER_LIMIT:
        _refuse(name, f"it holds more than {MEMBER_LIMIT} files")
    total, bound = sum(member.file_size for member in members), unpacked_bound(path.stat().st_size)
    if total > bound:
        _refuse(name, f"it unpacks to {size_text(total)}, more than the {size_text(bound)} a wheel of "
                      f"{size_text(path.stat().st_size)} may (a decompression bomb, or not a wheel)")


def _refuse(name: str, reason: str) -> None:
    raise IntegrityError(f"package {name} is refused: {reason}", fix=_FIX)


def _show(text: object) -> str:
    shown = printable(repr(text))
    return shown if len(shown) <= 200 else shown[:200] + "…"


def _json_object(data: bytes, name: str) -> dict[str, Any]:
    from resolver.core.fs import parse_json

    try:
        value = parse_json(data, what=f"package {name} is refused: its info/index.json", fix=_FIX)
    except BadInput as exc:
        raise IntegrityError(exc.message, fix=_FIX) from None
    if not isinstance(value, dict):
        _refuse(name, "its info/index.json is not a JSON object")
    return value


def parse_paths_json(data: bytes | str, *, what: str = "info/paths.json") -> tuple[PathEntry, ...]:
    """The entries of a package's ``info/paths.json``; anything else is one :class:`IntegrityError`.

    >>> parse_paths_json('{"paths": [{"_path": "bin/x", "path_type": "hardlink", "size_in_bytes": 3}], '
    ...                  '"paths_version": 1}')
    (PathEntry(path='bin/x', path_type='hardlink', size=3),)
    >>> parse_paths_json('{"paths": [{"_path": 7}]}')
    Traceback (most recent call last):
    ...
    resolver.core.errors.IntegrityError: info/paths.json is malformed: entry 0 has no "_path" text. Fix: ...
    """
    from resolver.core.fs import parse_json

    try:
        value = parse_json(data, what=what, fix=_FIX)
    except BadInput as exc:
        raise IntegrityError(exc.message, fix=_FIX) from None
    paths = value.get("paths") if isinstance(value, dict) else None
    if not isinstance(paths, list):
        raise IntegrityError(f'{what} is malformed: it has no "paths" list', fix=_FIX)
    if len(paths) > MEMBER_LIMIT:
        raise IntegrityError(f"{what} lists more than {MEMBER_LIMIT} paths", fix=_FIX)
    entries = []
    for number, item in enumerate(paths):
        problem = _entry_problem(item)
        if problem:
            raise IntegrityError(f"{what} is malformed: entry {number} {problem}", fix=_FIX)
        entries.append(PathEntry(item["_path"], item.get("path_type", "hardlink"), item.get("size_in_bytes", 0)))
    return tuple(entries)


def _entry_problem(item: object) -> str | None:
    if not isinstance(item, dict):
        return "is not an object"
    if not isinstance(item.get("_path"), str):
        return 'has no "_path" text'
    if item.get("path_type", "hardlink") not in PATH_TYPES:
        return f'has path_type {_show(item.get("path_type"))}, not one of {", ".join(PATH_TYPES)}'
    size = item.get("size_in_bytes", 0)
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return "has a size_in_bytes that is not a count of bytes"
    for key in ("sha256", "prefix_placeholder", "file_mode"):
        if key in item and not isinstance(item[key], str):
            return f"has a {key} that is not text"
    return None


def path_problem(path: str) -> str | None:
    """Why ``path`` (relative to the environment) is not a plain relative path, or None when it is."""
    if not path:
        return "an empty path"
    if path.startswith("/"):
        return "an absolute path"
    if "\\" in path:
        return "a backslash"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return "a control character"
    if len(path.encode("utf-8", "surrogatepass")) > PATH_MAX:
        return "longer than a path can be"
    parts = path.split("/")
    if ".." in parts:
        return "a '..' part"
    if "" in parts or "." in parts:
        return "an empty or '.' part"
    if any(len(part.encode("utf-8", "surrogatepass")) > NAME_MAX for part in parts):
        return "a part longer than a file name can be"
    return None


def link_problem(link: str, links: Mapping[str, str]) -> str | None:
    """Why the symbolic link ``link`` (its target in ``links``, with the package's other links) leads
    outside the environment, or None. The link's folder and its target are resolved part by part through
    the package's own links, as the kernel will once they are linked, so no chain of links climbs out."""
    if not links[link]:
        return "it points nowhere"
    folder = link.rpartition("/")[0]
    pending = [links[link], folder] if folder else [links[link]]  # a stack: the folder first, then the target
    resolved: list[str] = []
    hops = 0
    while pending:
        target = pending.pop()
        if target.startswith("/"):
            return f"it points to the absolute path {_show(target)[1:-1]}"
        if "\0" in target:
            return "its target holds a NUL character"
        parts = target.split("/")
        for number, part in enumerate(parts):
            if part in ("", "."):
                continue
            if part == "..":
                if not resolved:
                    return "it points outside the environment"
                resolved.pop()
                continue
            resolved.append(part)
            here = "/".join(resolved)
            if here in links:
                hops += 1
                if hops > LINK_HOPS:
                    return "its links form a loop"
                resolved.pop()
                rest = "/".join(parts[number + 1:])
                if rest:
                    pending.append(rest)
                pending.append(links[here])
                break
    return None


def index_problem(index: Mapping[str, Any], file_name: str, subdir: str | None) -> str | None:
    """Why ``info/index.json`` does not describe the file ``file_name`` in folder ``subdir``, or None."""
    for key in ("name", "version", "build", "subdir"):
        if not isinstance(index.get(key), str) or not index[key]:
            return f'its info/index.json has no "{key}" text'
    stem = f"{index['name']}-{index['version']}-{index['build']}"
    if file_name not in (stem + suffix for suffix in PACKAGE_SUFFIXES):
        return f"its file name is not {_show(stem + '.conda')[1:-1]}, the package its info/index.json describes"
    if subdir is not None and index["subdir"] != subdir:
        return f"it is in the folder {_show(subdir)} but its info/index.json says subdir {_show(index['subdir'])}"
    return None


def record_problem(index: Mapping[str, Any], record: Mapping[str, Any]) -> str | None:
    """Why ``info/index.json`` disagrees with the channel's ``record`` of the package, or None."""
    for key in _SAME:
        if key in ("depends", "constrains"):
            mine, theirs = list(index.get(key) or []), list(record.get(key) or [])
        elif key in index and key in record:
            mine, theirs = index[key], record[key]
        else:
            continue
        if mine != theirs:
            return f"its info/index.json says {key} {_show(mine)}, the channel's index {_show(theirs)}"
    return None
