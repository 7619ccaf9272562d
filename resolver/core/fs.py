"""Files: atomic writes, bounded reads, streamed sha256 — one definition each, for every stage.

Every write goes to a temporary file in the same folder, is flushed, then renamed over the target
(``os.replace`` is atomic on POSIX), so a crash leaves the old content or the new, never a torn
file. ``RESOLVER_CRASH_AT=<label>`` makes the process exit abruptly (``os._exit``, like
``kill -9``) at a named point, so tests can interrupt a real run between two writes.

>>> import tempfile, pathlib
>>> target = pathlib.Path(tempfile.mkdtemp()) / "a.h"
>>> write_atomic(target, b"int x;\\n")
>>> sha256_of(target)[:12]
'7c725f30854a'
>>> read_text_bounded(target, limit=100, what="the header")
'int x;\\n'
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from resolver.core.errors import BadInput, ExitCode

CRASH_ENV = "RESOLVER_CRASH_AT"
TEMP_MARK = ".resolver-tmp-"
MiB = 1 << 20


# ------------------------------------------------------------------------------------------ digests


def sha256_hasher(*, small: bool = False):
    """A running sha256 (``update``, ``hexdigest``) for bytes hashed while they stream elsewhere (a
    download, a verified copy): the one place the resolver makes one. ``small``: for a few kB (a key,
    a manifest) the interpreter's built-in sha256 is taken unless OpenSSL's is loaded already: the same
    digest, without OpenSSL's import (15 ms, more than a whole `plan`; it hashes 2x faster past a MB)."""
    import sys

    if small and "hashlib" not in sys.modules:
        if not _BUILTIN_SHA256:
            _BUILTIN_SHA256.append(_builtin_sha256())
        if _BUILTIN_SHA256[0] is not None:
            return _BUILTIN_SHA256[0]()
    import hashlib  # here, not at import

    return hashlib.sha256()


_BUILTIN_SHA256: list = []  # the interpreter's own sha256 constructor (or None), found on first use


def _builtin_sha256():
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[no-redef]  # Python 3.10, 3.11
        except ImportError:
            return None
    return sha256


def sha256_of(path: str | Path, *, under: str | Path | None = None) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks (wheels and sdists are hundreds of MB); under a
    root, reached through the door (never through a link), and only a regular file."""
    digest = sha256_hasher()
    with open_read(path, under=under, what="the file") as handle:
        for block in iter(lambda: handle.read(MiB), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    digest = sha256_hasher(small=len(data) < MiB)
    digest.update(data)
    return digest.hexdigest()


def sha256_text(text: str) -> str:
    """Hex sha256 of ``text`` as UTF-8 (keys and fingerprints made of strings)."""
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: str | Path) -> str | None:
    """:func:`sha256_of`, or None when ``path`` is not a readable regular file."""
    try:
        return sha256_of(path) if Path(path).is_file() else None
    except (OSError, BadInput):
        return None


def tree_digest(*folders: str | Path, skip_top: tuple[str, ...] = ()) -> str:
    """sha256 over every file's relative path and content below each of ``folders`` in turn (sorted;
    ``__pycache__`` and the top-level folders named in ``skip_top`` left out). Content-addressed:
    renames count."""
    digest = sha256_hasher()
    for folder in map(Path, folders):
        if folder.is_dir():
            for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                               and p.relative_to(folder).parts[0] not in skip_top):
                with open_read(path, what="the file") as handle:
                    digest.update(str(path.relative_to(folder)).encode() + b"\0" + handle.read() + b"\0")
    return digest.hexdigest()


# ------------------------------------------------------------------------------------------ the door
#
# Every path under a root the resolver does not alone control (the project and its ``.resolver/``, the
# user's cache, a channel folder, a declared local folder) is reached from that root one component at a
# time, each opened with ``O_NOFOLLOW | O_DIRECTORY`` relative to the one before (``dir_fd``): a symbolic
# link, FIFO or device anywhere on the way is one :class:`BadInput` (exit 3) before anything is read,
# written or removed, so a link cannot carry a write, a rename or a delete outside. The root itself is
# opened as given (the user chose it, links and all). Roots are registered once per process by the
# layer that knows them (:class:`resolver.project.paths.ProjectPaths`, the user's cache) or named by the
# caller (``under=``); a path under no root is opened as before (never through a link in its last name).


class Root:
    """A folder the door guards: ``path`` (absolute, as given), ``what`` it is in words, and ``own_trees``:
    patterns of relative paths (``*`` one name not starting with a dot: the resolver's own temporary
    folders beside them stay guarded) of folders that are trees of their own (an installed
    environment, made by conda or uv, with its own links): the name itself may be a link the user made,
    followed to read or write inside it, never renamed or deleted through; below it the door is not in
    charge."""

    __slots__ = ("path", "what", "own_trees")

    def __init__(self, path: str | Path, what: str, own_trees: tuple[tuple[str, ...], ...] = ()) -> None:
        self.path = os.path.normpath(os.path.abspath(os.fspath(path)))
        self.what = what
        self.own_trees = own_trees

    def own_tree_depth(self, parts: tuple[str, ...]) -> int | None:
        """How many of ``parts`` lead to a tree of its own (None: not in one)."""
        for pattern in self.own_trees:
            if len(parts) >= len(pattern) and all((p == "*" and not q.startswith(".")) or p == q
                                                  for p, q in zip(pattern, parts)):
                return len(pattern)
        return None


_ROOTS: dict[str, Root] = {}


def register_root(path: str | Path, *, what: str, own_trees: tuple[tuple[str, ...], ...] = ()) -> Root:
    """Guard every path below ``path`` from now on in this process (idempotent)."""
    root = Root(path, what, own_trees)
    known = _ROOTS.get(root.path)
    if known is None or (own_trees and known.own_trees != own_trees):
        _ROOTS[root.path] = root
        return root
    return known


def registered_roots() -> list[dict[str, Any]]:
    """The roots this process guards, as data (a child process that writes below them registers the same)."""
    return [{"path": r.path, "what": r.what, "own_trees": [list(t) for t in r.own_trees]} for r in _ROOTS.values()]


def register_roots(roots: list[dict[str, Any]]) -> None:
    """Register the roots :func:`registered_roots` gave (in a child process)."""
    for root in roots:
        register_root(root["path"], what=str(root["what"]), own_trees=tuple(tuple(t) for t in root["own_trees"]))


def guarded_root(path: str | Path, under: str | Path | None = None) -> tuple[Root, tuple[str, ...]] | None:
    """The root ``path`` is reached from (``under``, else the nearest registered root above it) and the
    names below it; None when ``path`` is under no root."""
    full = os.path.normpath(os.path.abspath(os.fspath(path)))
    if under is not None:
        root = _ROOTS.get(os.path.normpath(os.path.abspath(os.fspath(under)))) or Root(under, str(under))
        candidates = [root]
    else:
        candidates = sorted(_ROOTS.values(), key=lambda r: len(r.path), reverse=True)
    for root in candidates:
        if full == root.path:
            return root, ()
        prefix = root.path.rstrip(os.sep) + os.sep
        if full.startswith(prefix):
            return root, tuple(full[len(prefix):].split(os.sep))
    if under is not None:
        raise ValueError(f"{path} is not under {under}")  # a caller's mistake, not the user's
    return None


def _shown(root: Root, parts: tuple[str, ...]) -> str:
    return os.path.join(root.path, *parts) if parts else root.path


def _refuse_link(root: Root, parts: tuple[str, ...]) -> BadInput:
    shown = _shown(root, parts)
    try:
        target = f" (to {os.readlink(shown)})"
    except OSError:
        target = ""
    return BadInput(f"{shown} is a symbolic link{target} inside {root.what}; the resolver does not follow links "
                    "there", fix=f"remove the link {shown} (and find out who made it), then run again")


def _refuse_kind(root: Root, parts: tuple[str, ...], dir_fd: int) -> BadInput:
    """The sentence for a name that cannot be opened as a folder: a link, a special file, a plain file."""
    shown = _shown(root, parts)
    try:
        info = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return BadInput(f"cannot open {shown}", fix=f"check {shown} and its permissions")
    if stat.S_ISLNK(info.st_mode):
        return _refuse_link(root, parts)
    if stat.S_ISREG(info.st_mode):
        return BadInput(f"{shown} is a file where the resolver needs a folder", fix=f"move {shown} aside, then run again")
    return BadInput(f"{shown} is a special file (a FIFO, device or socket) where the resolver needs a folder",
                    fix=f"remove {shown}, then run again")


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


def _open_root(root: Root, *, create: bool) -> int:
    try:
        return os.open(root.path, _DIR_FLAGS)
    except FileNotFoundError:
        if not create:
            raise
        os.makedirs(root.path, exist_ok=True)
        return os.open(root.path, _DIR_FLAGS)
    except NotADirectoryError:
        raise BadInput(f"{root.what} {root.path} is not a folder", fix=f"move {root.path} aside, then run again") \
            from None


def _walk(root: Root, parts: tuple[str, ...], *, create: bool, follow_own_tree: bool = True) -> int:
    """A descriptor of the folder ``root/parts``, every name below the root opened without following a
    link (or made, with ``create``). A missing folder without ``create`` is FileNotFoundError."""
    own = root.own_tree_depth(parts) if follow_own_tree else None
    fd = _open_root(root, create=create)
    try:
        for depth, name in enumerate(parts, start=1):
            if name in ("", ".", ".."):
                raise BadInput(f"{_shown(root, parts)} is not a plain path below {root.path}", fix="name a path inside it")
            follow = own is not None and depth >= own
            flags = _DIR_FLAGS | (0 if follow else os.O_NOFOLLOW)
            try:
                nxt = os.open(name, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=fd)
                try:
                    nxt = os.open(name, flags, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise _refuse_kind(root, parts[:depth], fd) from None
                    raise
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refuse_kind(root, parts[:depth], fd) from None
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def folder_fd(path: str | Path, *, under: str | Path | None = None, create: bool = False) -> Iterator[int]:
    """A descriptor of the real folder ``path`` (made, with ``create``), reached through the door when it
    is under a root; the way to list, open or remove what is in it (``dir_fd=``)."""
    guarded = guarded_root(path, under)
    if guarded is None:
        if create:
            os.makedirs(path, exist_ok=True)
        fd = os.open(path, _DIR_FLAGS)
    else:
        fd = _walk(*guarded, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _parent_fd(path: str | Path, under: str | Path | None, *, create: bool) -> Iterator[tuple[int, str, Root | None,
                                                                                              tuple[str, ...]]]:
    """The folder holding ``path`` (a descriptor), the last name, and the root and names when guarded."""
    path = os.fspath(path)
    guarded = guarded_root(path, under)
    if guarded is None:
        parent, name = os.path.split(os.path.abspath(path))
        if create:
            os.makedirs(parent, exist_ok=True)
        fd = os.open(parent, _DIR_FLAGS)
        root, parts = None, ()
    else:
        root, parts = guarded
        if not parts:
            raise BadInput(f"{path} is a root folder, not a file in it", fix="name a file inside it")
        fd = _walk(root, parts[:-1], create=create)
        name = parts[-1]
    try:
        yield fd, name, root, parts
    finally:
        os.close(fd)


def make_folder(path: str | Path, *, under: str | Path | None = None) -> Path:
    """Make the folder ``path`` and those above it below its root, none of them through a link."""
    with folder_fd(path, under=under, create=True):
        return Path(path)


def _open_file(path: str | Path, flags: int, *, under: str | Path | None, what: str, mode: int = 0o644,
               create_parent: bool = False, nonblock: bool = True) -> int:
    """A descriptor of the regular file ``path`` opened with ``flags``, never through a link (in its last name
    too) and never a FIFO, device or socket (refused after a non-blocking open, before any byte)."""
    with _parent_fd(path, under, create=create_parent) as (dfd, name, root, parts):
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | (os.O_NONBLOCK if nonblock else 0)
                         | getattr(os, "O_CLOEXEC", 0), mode, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                if root is not None:
                    raise _refuse_link(root, parts) from None
                raise BadInput(f"{what} {path} is a symbolic link; the resolver does not follow it",
                               fix=f"remove the link {path} (and find out who made it), then run again") from None
            if exc.errno == errno.EISDIR:
                raise BadInput(f"{what} {path} is a folder, not a file", fix=f"move {path} aside, then run again") \
                    from None
            if exc.errno == errno.ENXIO:  # a FIFO with no reader, opened for writing
                raise BadInput(f"{what} {path} is not a regular file (a device, FIFO or socket)",
                               fix=f"remove {path}, then run again") from None
            raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise BadInput(f"{what} {path} is a folder, not a file", fix=f"move {path} aside, then run again")
        raise BadInput(f"{what} {path} is not a regular file (a device, FIFO or socket)",
                       fix=f"remove {path}, then run again")
    if nonblock:
        os.set_blocking(fd, True)
    return fd


def open_read(path: str | Path, *, under: str | Path | None = None, what: str = "the file") -> BinaryIO:
    """The regular file ``path`` open for reading (binary), through the door; a missing file is
    FileNotFoundError, a link, folder or special file one :class:`BadInput`. The caller bounds what it reads."""
    return os.fdopen(_open_file(path, os.O_RDONLY, under=under, what=what), "rb")


def create_new(path: str | Path, *, under: str | Path | None = None, what: str = "the file",
               mode: int = 0o644) -> tuple[BinaryIO, Path]:
    """A new file for a log or a backup, created (``O_EXCL | O_NOFOLLOW``) at ``path`` or, when that name
    is taken (by anything: a file, a link someone planted), at ``name-2.ext``, ``name-3.ext``, ...: never
    appended to or written through what was there. The open handle (binary) and the path it has."""
    path = Path(path)
    suffix = path.suffix if 1 < len(path.suffix) <= 5 and path.suffix[1:].isalnum() else ""  # .log, .json
    stem = path.name[:len(path.name) - len(suffix)]
    for n in range(1, 1000):
        candidate = path if n == 1 else path.with_name(f"{stem}-{n}{suffix}")
        try:
            fd = _open_file(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, under=under, what=what, mode=mode,
                            create_parent=True)
        except FileExistsError:
            continue
        except BadInput:
            if os.path.lexists(candidate) and n < 999:
                continue  # a link or special file at the name: the next name
            raise
        return os.fdopen(fd, "wb"), candidate
    raise BadInput(f"cannot create {what} beside {path}: 999 names are taken", fix=f"clean up {path.parent}")


def new_log(path: str | Path, text: str = "", *, under: str | Path | None = None) -> Path:
    """Create a run's log (or a backup) with ``text`` in it through :func:`create_new` (a new file: a
    taken name gets ``-2``, ``-3``, ...); the path it has. Later lines go in through :func:`append_text`."""
    handle, created = create_new(path, under=under, what="the log")
    with handle:
        handle.write(text.encode("utf-8"))
    return created


def append_text(path: str | Path, text: str, *, under: str | Path | None = None) -> None:
    """Add ``text`` to the log ``path`` (made when missing), never through a link or into anything but a
    regular file."""
    fd = _open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, under=under, what="the log", create_parent=True)
    with os.fdopen(fd, "ab") as handle:
        handle.write(text.encode("utf-8"))


def open_append(path: str | Path, *, under: str | Path | None = None, what: str = "the log") -> BinaryIO:
    """The existing regular file ``path`` open to append (a log this run created with :func:`create_new`),
    never through a link put there since."""
    return os.fdopen(_open_file(path, os.O_WRONLY | os.O_APPEND, under=under, what=what), "ab")


def remove_file(path: str | Path, *, under: str | Path | None = None, missing_ok: bool = True) -> bool:
    """Remove the file (or link: the link itself) ``path``, reached through the door. True when one was removed."""
    try:
        with _parent_fd(path, under, create=False) as (dfd, name, _root, _parts):
            try:
                os.unlink(name, dir_fd=dfd)  # a folder there: IsADirectoryError, as os.unlink says
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    exc.filename = os.fspath(path)
                raise
            return True
    except FileNotFoundError:
        if missing_ok:
            return False
        raise


TREE_MARK = ".resolver-made"  # the file the resolver puts in a tree it made, so that it may delete it


def mark_tree(path: str | Path, *, under: str | Path | None = None) -> None:
    """Record in the folder ``path`` that the resolver made it (what :func:`remove_tree` asks for)."""
    with _open_tree(path, under, create=True) as fd:
        with contextlib.suppress(FileExistsError):
            os.close(os.open(TREE_MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd))


def is_marked_tree(path: str | Path, *, under: str | Path | None = None, marks: tuple[str, ...] = (TREE_MARK,)) -> bool:
    """Whether the folder ``path``, reached without a link, holds one of ``marks`` (see :func:`remove_tree`)."""
    try:
        with _open_tree(path, under, create=False) as fd:
            return any(_has_mark(fd, mark) for mark in marks)
    except (OSError, BadInput):
        return False


@contextlib.contextmanager
def _open_tree(path: str | Path, under: str | Path | None, *, create: bool) -> Iterator[int]:
    """A descriptor of the folder ``path`` itself opened without following a link at its name (even where
    the root calls the name a tree of its own: a tree is never removed or marked through a link)."""
    guarded = guarded_root(path, under)
    if guarded is None:
        if create:
            os.makedirs(path, exist_ok=True)
        try:
            fd = os.open(path, _DIR_FLAGS | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise BadInput(f"{path} is not a real folder (a link or a file)", fix=f"remove {path}, then run again") \
                    from None
            raise
    else:
        fd = _walk(*guarded, create=create, follow_own_tree=False)
    try:
        yield fd
    finally:
        os.close(fd)


def remove_tree(path: str | Path, *, under: str | Path | None = None, made_by_us: bool = False,
                marks: tuple[str, ...] = (TREE_MARK,), missing_ok: bool = True) -> bool:
    """Delete the folder ``path`` and all below it, reached without a link and walked by descriptors (a
    link inside is removed as a link, never followed). ``made_by_us``: only when it holds one of ``marks``,
    files only the resolver writes there (:func:`mark_tree`'s, an environment's ready marker), else one
    :class:`BadInput` and nothing deleted. True when it was removed."""
    try:
        with _parent_fd(path, under, create=False) as (dfd, name, root, parts):
            try:
                fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dfd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    if root is not None:
                        raise _refuse_kind(root, parts, dfd) from None
                    raise BadInput(f"{path} is not a real folder (a link or a file); the resolver does not delete "
                                   "through it", fix=f"remove {path} yourself, then run again") from None
                raise
            try:
                if made_by_us and not any(_has_mark(fd, mark) for mark in marks):
                    raise BadInput(f"{path} was not made by the resolver; it is not deleted",
                                   fix=f"move {path} aside yourself, then run again")
                _empty_folder(fd)
            finally:
                os.close(fd)
            os.rmdir(name, dir_fd=dfd)
            return True
    except FileNotFoundError:
        if missing_ok:
            return False
        raise


def _has_mark(fd: int, mark: str = TREE_MARK) -> bool:
    """Whether the folder holds ``mark``: a regular file or a real folder (never a link to one)."""
    try:
        mode = os.stat(mark, dir_fd=fd, follow_symlinks=False).st_mode
        return stat.S_ISREG(mode) or stat.S_ISDIR(mode)
    except OSError:
        return False


def _empty_folder(fd: int) -> None:
    with os.scandir(fd) as entries:
        names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
    for name, is_dir in names:
        if is_dir:
            try:
                sub = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                os.unlink(name, dir_fd=fd)  # swapped for a link or a file meanwhile: removed as such
                continue
            try:
                _empty_folder(sub)
            finally:
                os.close(sub)
            os.rmdir(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)


def rename(source: str | Path, target: str | Path, *, under: str | Path | None = None,
           target_under: str | Path | None = None) -> None:
    """Rename ``source`` to ``target`` (replacing a file, or an empty folder, there), both reached through the
    door; neither is ever a link followed: a link at ``source`` is refused, not moved."""
    with _parent_fd(source, under, create=False) as (sfd, sname, sroot, sparts), \
            _parent_fd(target, target_under if target_under is not None else under, create=True) as (tfd, tname, _r, _p):
        info = os.stat(sname, dir_fd=sfd, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            if sroot is not None:
                raise _refuse_link(sroot, sparts)
            raise BadInput(f"{source} is a symbolic link; the resolver does not move it",
                           fix=f"remove the link {source}, then run again")
        os.rename(sname, tname, src_dir_fd=sfd, dst_dir_fd=tfd)
        _fsync_fd(tfd)


def copy_file(source: str | Path, target: str | Path, *, limit: int, what: str = "the file",
              under: str | Path | None = None, target_under: str | Path | None = None, mode: int = 0o644,
              label: str = "copy") -> int:
    """Copy the regular file ``source`` (at most ``limit`` bytes) to ``target`` atomically, both through
    the door; the number of bytes."""
    with open_read(source, under=under, what=what) as handle, \
            atomic_stream(target, mode=mode, label=label, under=target_under) as sink:
        size = 0
        for block in iter(lambda: handle.read(MiB), b""):
            size += len(block)
            if size > limit:
                raise BadInput(f"{what} {source} is larger than {_size(limit)}", fix=f"pass a file of at most {_size(limit)}")
            sink.write(block)
    return size


def copy_file_new(source: str | Path, target: str | Path, *, limit: int, what: str = "the file",
                  under: str | Path | None = None) -> Path:
    """Copy the regular file ``source`` (at most ``limit`` bytes) to a new file at ``target`` made by
    :func:`create_new` (a backup: a taken name gets ``-2``, ``-3``, ...); the path it has."""
    with open_read(source, under=under, what=what) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise BadInput(f"{what} {source} is larger than {_size(limit)}", fix=f"pass a file of at most {_size(limit)}")
    sink, created = create_new(target, what=f"the copy of {what}")
    with sink:
        sink.write(data)
    return created


def remove_empty_folder(path: str | Path, *, under: str | Path | None = None) -> bool:
    """Remove the folder ``path`` when it is empty, reached through the door; False when it is not (or is
    gone, or is a link: never removed through)."""
    try:
        with _parent_fd(path, under, create=False) as (dfd, name, _root, _parts):
            if stat.S_ISLNK(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                return False
            os.rmdir(name, dir_fd=dfd)
            return True
    except (OSError, BadInput):
        return False


def place_link(target: str | Path, link: str | Path, *, under: str | Path | None = None) -> None:
    """Make ``link`` a symbolic link to ``target``, swapped in atomically (a temporary link renamed over the
    name, by descriptor, in the real folder of ``link``): what stood at the name is replaced, never followed."""
    with _parent_fd(link, under, create=True) as (dfd, name, _root, _parts):
        tmp = f".{name}{TEMP_MARK}{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dfd)
        os.symlink(os.fspath(target), tmp, dir_fd=dfd)
        try:
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise


def place_new(path: str | Path, data: bytes, *, under: str | Path | None = None, mode: int = 0o600) -> bool:
    """Put a file holding ``data`` at ``path`` only if nothing is there: written in full to an
    ``O_EXCL|O_NOFOLLOW`` temporary in the real folder, then hard-linked to the name, which never replaces
    (two first runs agree on the one file that got there first). Whether this call placed it."""
    with _parent_fd(path, under, create=True) as (dfd, name, _root, _parts):
        tmp = f".{name}{TEMP_MARK}{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dfd)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                     mode, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            except FileExistsError:
                return False
            return True
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)


def list_names(path: str | Path, *, under: str | Path | None = None) -> list[str]:
    """The names in the folder ``path`` (sorted), reached through the door; a missing folder has none."""
    try:
        with folder_fd(path, under=under) as fd:
            return sorted(os.listdir(fd))
    except FileNotFoundError:
        return []


# ------------------------------------------------------------------------------------------- writes


def crash_point(label: str) -> None:
    """Exit at once, without cleanup, when ``RESOLVER_CRASH_AT`` names this point (tests only)."""
    if os.environ.get(CRASH_ENV) == label:
        os._exit(ExitCode.KILLED)


def temp_path(path: Path) -> Path:
    """Where a write to ``path`` goes first: a hidden sibling named after this process."""
    return path.parent / f".{path.name}{TEMP_MARK}{os.getpid()}"


def remove_stale_temps(path: Path) -> list[Path]:
    """Temporary files a killed run left beside ``path``; removed, and returned. A temporary file of a
    process that still runs is another run's write in progress: it is left alone."""
    removed = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    prefix = f".{path.name}{TEMP_MARK}"
    for entry in entries:
        if entry.name.startswith(prefix) and not _running(entry.name[len(prefix):]):
            with contextlib.suppress(OSError):
                entry.unlink()
                removed.append(entry)
    return removed


def _running(pid_text: str) -> bool:
    """Whether the process named by a temporary file's suffix is alive (this one included)."""
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False  # our own leftover from an earlier write of this run: ours to remove
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # alive, another user's (or unknowable): leave it
    return True


@contextlib.contextmanager
def atomic_stream(path: str | Path, *, mode: int = 0o644, label: str = "write",
                  under: str | Path | None = None) -> Iterator[BinaryIO]:
    """Write ``path`` through a handle: the content appears under its name only when the block ends
    without an exception (a download cut short leaves no partial file behind). The folder is reached
    through the door (made when missing); the temporary file is created there ``O_EXCL | O_NOFOLLOW`` and
    renamed over the name by descriptor, so a link at the name is replaced, never written through."""
    with _parent_fd(path, under, create=True) as (dfd, name, _root, _parts):
        try:
            if stat.S_ISDIR(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                raise BadInput(f"cannot write {path}: a folder of that name is in the way",
                               fix=f"move the folder {path} aside (the file {Path(path).name} belongs there)")
        except FileNotFoundError:
            pass
        tmp = f".{name}{TEMP_MARK}{os.getpid()}"
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)  # an earlier write's leftover, or a link someone put there: never written through
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600,
                         dir_fd=dfd)
        except OSError as exc:
            exc.filename = str(temp_path(Path(path)))  # the message names the whole path, not the name alone
            raise
        try:
            with os.fdopen(fd, "wb") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
                os.fchmod(handle.fileno(), mode)
            crash_point(f"{label}:after-temp")
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
        _fsync_fd(dfd)
    crash_point(f"{label}:after-replace")


def open_no_follow(path: str | Path, flags: int, *, what: str, mode: int = 0o644,
                   under: str | Path | None = None) -> int:
    """A descriptor of the regular file ``path``, reached through the door and opened without following a
    link in its last part: how the resolver opens a file it writes in place (a lock file) in a folder others
    can write. A link or anything but a regular file there is one :class:`BadInput` (exit 3), and nothing
    is written; the folder is made when ``flags`` create the file."""
    return _open_file(path, flags, under=under, what=what, mode=mode, create_parent=bool(flags & os.O_CREAT))


def check_real_folder(path: str | Path, *, what: str, under: str | Path | None = None) -> None:
    """Refuse (:class:`BadInput`, exit 3) a ``path`` that is a symbolic link or anything but a folder, or is
    reached through one below its root; a missing path is fine (it will be made). For the folders the
    resolver writes in that others can write."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise BadInput(f"{what} {path} is a symbolic link (to {os.readlink(path)}); the resolver does not write "
                       "through a link", fix=f"remove the link {path} (and find out who made it), then run again")
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise BadInput(f"{what} {path} is not a folder", fix=f"move {path} aside, then run again")
    if guarded_root(path, under) is not None:
        with contextlib.suppress(FileNotFoundError), folder_fd(path, under=under):
            pass


def write_atomic(path: str | Path, data: bytes, *, mode: int = 0o644, label: str = "write",
                 under: str | Path | None = None) -> None:
    """Replace ``path`` by ``data`` through a temporary file and a rename."""
    with atomic_stream(path, mode=mode, label=label, under=under) as handle:
        handle.write(data)


def write_text_atomic(path: str | Path, text: str, *, label: str = "write", mode: int = 0o644,
                      under: str | Path | None = None) -> None:
    write_atomic(path, text.encode("utf-8"), label=label, mode=mode, under=under)


def write_json_atomic(path: str | Path, data: Any, *, label: str = "record", under: str | Path | None = None) -> None:
    write_atomic(path, (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode("utf-8"), label=label,
                 under=under)


def _fsync_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.fsync(fd)


# -------------------------------------------------------------------------------------------- reads


def read_bytes_bounded(path: str | Path, *, limit: int, what: str, fix: str | None = None,
                       follow_symlinks: bool = True, own: bool = False, under: str | Path | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; anything else is one :class:`BadInput`.

    Input that comes from users or shared files (logs, captured tool output, headers, configs) is
    read through here: a FIFO or device file (``/dev/zero``) is refused without reading, and a file
    past the bound is refused instead of filling memory. ``follow_symlinks=False`` refuses a symbolic
    link (a file in a folder others write to; the resolver's own cache and state files, which it never
    writes as links). ``own=True`` (the same files) refuses a file this user does not own or others may
    write: what the resolver writes is the user's, mode 644. The file is read in chunks sized by its
    length, so a small file costs one small read whatever the bound. Under a root (``under``, or a
    registered one) the file is reached through the door: no link anywhere on its path, its last name too.
    """
    guarded = guarded_root(path, under)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow_symlinks and guarded is None
                                                          else getattr(os, "O_NOFOLLOW", 0))
    try:
        if guarded is None:
            fd = os.open(path, flags)
        else:
            with _parent_fd(path, under, create=False) as (dfd, name, _root, _parts):
                fd = os.open(name, flags, dir_fd=dfd)
    except FileNotFoundError:
        raise BadInput(f"{what} {path} does not exist", fix="check the path") from None
    except IsADirectoryError:
        raise BadInput(f"{what} {path} is a folder, not a file", fix="pass a file") from None
    except OSError as exc:
        if os.path.islink(path):
            raise BadInput(f"{what} {path} is a symbolic link", fix=fix or "put the file itself there, not a link to it") \
                from None
        raise BadInput(f"cannot read {what} {path}: {exc.strerror}", fix="check its permissions") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            if stat.S_ISDIR(info.st_mode):
                raise BadInput(f"{what} {path} is a folder, not a file", fix="pass a file")
            raise BadInput(f"{what} {path} is not a regular file (a device, FIFO or socket)",
                           fix=fix or "pass a regular file (save the text to a file first)")
        if own and (info.st_uid != os.getuid() or info.st_mode & 0o022):
            raise BadInput(f"{what} {path} was not written by this user (or others may write it)",
                           fix=fix or f"remove {path}")
        chunks, size = [], 0
        want = min(info.st_size, limit) + 1  # one byte past the size: a file that grew is read on
        while size <= limit:
            asked = min(max(want - size, 1 << 16), limit + 1 - size)
            chunk = os.read(fd, asked)
            chunks.append(chunk)
            size += len(chunk)
            if len(chunk) < asked:  # a regular file reads short only at its end
                break
    finally:
        os.close(fd)
    if size > limit:
        raise BadInput(f"{what} {path} is larger than {_size(limit)}", fix=fix or f"pass a file of at most {_size(limit)}")
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def check_regular_file(path: str | Path, *, limit: int, what: str, fix: str | None = None,
                       under: str | Path | None = None) -> int:
    """The size of ``path`` when it is a regular file of at most ``limit`` bytes, for a reader that
    opens it itself (rattler); the same :class:`BadInput` sentences as :func:`read_bytes_bounded`. Under a
    root, no link on its path (its last name too)."""
    path = Path(path)
    try:
        if guarded_root(path, under) is None:
            info = os.stat(path)
        else:
            with _parent_fd(path, under, create=False) as (dfd, name, root, parts):
                info = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    raise _refuse_link(root, parts)
    except FileNotFoundError:
        raise BadInput(f"{what} {path} does not exist", fix=fix or "check the path") from None
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror}", fix="check its permissions") from None
    if stat.S_ISDIR(info.st_mode):
        raise BadInput(f"{what} {path} is a folder, not a file", fix=fix or "pass a file")
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{what} {path} is not a regular file (a device, FIFO or socket)",
                       fix=fix or "pass a regular file")
    if info.st_size > limit:
        raise BadInput(f"{what} {path} is larger than {_size(limit)}", fix=fix or f"pass a file of at most {_size(limit)}")
    return info.st_size


def read_head(path: str | Path, *, limit: int, what: str, under: str | Path | None = None) -> str:
    """The first ``limit`` bytes of the regular file ``path`` as UTF-8 (the rest ignored), through the door:
    for pages whose tail may be cut (an index page of links)."""
    with open_read(path, under=under, what=what) as handle:
        return handle.read(limit).decode("utf-8", errors="replace")


def read_text_bounded(path: str | Path, *, limit: int, what: str, fix: str | None = None,
                      under: str | Path | None = None) -> str:
    """:func:`read_bytes_bounded` decoded as UTF-8 (undecodable bytes replaced)."""
    return read_bytes_bounded(path, limit=limit, what=what, fix=fix, under=under).decode("utf-8", errors="replace")


def read_stream_bounded(stream: BinaryIO, *, limit: int, what: str, fix: str | None = None) -> bytes:
    """At most ``limit`` bytes of an open stream (stdin); more is one :class:`BadInput`."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise BadInput(f"{what} is larger than {_size(limit)}", fix=fix or f"pass at most {_size(limit)}")
    return data


def parse_json(text: str | bytes, *, what: str, fix: str) -> Any:
    """JSON from input: malformed text, nesting too deep for the parser, or an integer too long to
    convert is one :class:`BadInput` (never a RecursionError or a bare ValueError)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{what} is not valid JSON (line {exc.lineno}: {exc.msg})", fix=fix) from None
    except RecursionError:
        raise BadInput(f"{what} is nested too deeply to be read", fix=fix) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"{what} is not valid JSON ({value_error_text(exc)})", fix=fix) from None


def value_error_text(exc: Exception) -> str:
    text = str(exc)
    if "integer string conversion" in text:  # Python's guard against quadratic int() on huge numbers
        return "it holds an integer of thousands of digits"
    return text[:160]


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB else f"{n} bytes"
