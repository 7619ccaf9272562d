"""The verified store: artefacts by sha256, shared by the user's projects, installed only once checked.

Layout (:attr:`~resolver.project.paths.ProjectPaths.verified`, ``~/.cache/mamba-resolver/verified`` where the
user's cache is writable)::

    <sha256[:2]>/<sha256>/<file name>     the artefact, read-only
    <sha256[:2]>/<sha256>/.verified       the record of its check (see below)
    .incoming/                            downloads whose sha256 is not known yet

A file is given out (:meth:`VerifiedStore.find`) only when its content is known to have its sha256:
hashed now, or hashed earlier with a record of that check that only this user can have written: the
store's folders are owned by the user and writable by nobody else, and the record names the file's
size, mtime, inode and ctime (ctime cannot be set back: any write to the file, or a ``touch`` that
restores its mtime, moves it). Anything else (a record another user could have planted, one of an
older form, a folder others may write) is hashed again, and a file that does not match is removed.
Re-hashing torch (200 MB) on every install would cost more than the install itself; the record saves
exactly that, and nothing else.

>>> import tempfile, pathlib
>>> store = VerifiedStore(pathlib.Path(tempfile.mkdtemp()) / "verified")
>>> source = store.root.parent / "x-1.0-py3-none-any.whl"
>>> _ = source.write_bytes(b"wheel")
>>> sha = "ba59926159d2aa256eb8739b8da7e2b574b960e1202c6d624cbe981cef996c91"
>>> store.copy_in(source, sha, "x-1.0-py3-none-any.whl").name
'x-1.0-py3-none-any.whl'
>>> store.find(sha, "x-1.0-py3-none-any.whl") == store.path_for(sha, "x-1.0-py3-none-any.whl")
True
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path
from typing import Callable

from resolver.core.errors import BadInput, IntegrityError
from resolver.core.fingerprint import Memo, fingerprint
from resolver.core.fs import (
    MiB,
    atomic_stream,
    make_folder,
    open_read,
    remove_file,
    remove_tree,
    sha256_hasher,
    sha256_of,
)
from resolver.core.fs import rename as fs_rename
from resolver.core.names import check_file_name
from resolver.core.records import SHA256

Progress = Callable[[str, int, "int | None", float], None]

RECORD = ".verified"  # a Memo: the file's sha256, kept for the fingerprint of its size, mtime, ctime, inode, device
_FIX = "restore pixi.lock from version control or lock again"


class Mismatch(Exception):
    """The bytes copied in do not have the expected sha256 (``args[0]``: the sha256 they have)."""


class VerifiedStore:
    """One store folder; every path into it is made here."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path_for(self, sha256: str, file_name: str) -> Path:
        """Where the artefact with ``sha256`` named ``file_name`` is kept (both checked: a sha256 is 64 hex
        digits, a name one plain file name, and the path stays inside the store)."""
        if not SHA256.accepts(sha256):
            raise IntegrityError(f"{file_name} has no usable sha256 ({sha256[:80]!r})",
                                 fix="relock with `python -m resolver lock` (it records one for every artefact)")
        return self.root / sha256[:2] / sha256 / check_file_name(file_name, what="the stored file name", fix=_FIX)

    # ---- reading
    def find(self, sha256: str, file_name: str) -> Path | None:
        """The stored copy when its content has ``sha256`` (a trusted record, else hashed now), else None;
        a stored file that does not match is removed."""
        target = self.path_for(sha256, file_name)
        if not all(_real_folder(folder) for folder in self._folders(target)):
            return None  # a link planted for a folder: replaced when the copy is made
        try:
            info = os.lstat(target)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode):  # a link or anything else planted in the store
            _remove(target)
            return None
        if self._trusted(target, sha256, info):
            return target
        if sha256_of(target) != sha256:
            _remove(target)
            return None
        self._record(target, sha256)
        return target

    def _trusted(self, target: Path, sha256: str, info: os.stat_result) -> bool:
        return (_memo(target).recall(_identity(info)) == sha256 and _private(self.root, follow=True)
                and all(_private(folder) for folder in self._folders(target)))

    @staticmethod
    def _folders(target: Path) -> tuple[Path, Path]:
        """The store's own folders above ``target`` (the root is where the user put it, a link or not)."""
        return target.parent.parent, target.parent

    # ---- writing
    def copy_in(self, source: Path, sha256: str, file_name: str) -> Path:
        """Copy ``source`` into the store while hashing it; :class:`Mismatch` (nothing kept) when its bytes
        are not ``sha256``."""
        target = self._prepared(sha256, file_name)
        digest = sha256_hasher()
        try:
            with open_read(source, what="the file") as handle, \
                    atomic_stream(target, mode=0o444, label="verified-copy") as sink:
                for block in iter(lambda: handle.read(MiB), b""):  # noqa: B023 - read here, in this loop turn
                    sink.write(block)
                    digest.update(block)
                if digest.hexdigest() != sha256:
                    raise Mismatch(digest.hexdigest())
        except IsADirectoryError:
            raise Mismatch("(a folder)") from None
        self._record(target, sha256)
        return target

    def put(self, url: str, sha256: str, file_name: str, *, progress: Progress | None = None) -> Path:
        """Download ``url`` into the store, checked against ``sha256`` as it streams (nothing is kept under
        its name otherwise)."""
        from resolver.tools.net import download

        target = self._prepared(sha256, file_name)
        download(url, target, expected_sha256=sha256, progress=progress, what=file_name)
        os.chmod(target, 0o444)
        self._record(target, sha256)
        return target

    def put_unhashed(self, url: str, file_name: str) -> tuple[Path, str]:
        """Download ``url`` whose sha256 is not known yet (a find-links page that lists none): kept under
        the sha256 it turns out to have. (path, sha256)."""
        from resolver.tools.net import download

        name = check_file_name(file_name, what="the downloaded file name", fix=_FIX)
        incoming = self.root / ".incoming" / f"{os.getpid()}-{threading.get_ident()}-{name}"
        try:
            download(url, incoming, what=name)
            sha256 = sha256_of(incoming)
            target = self._prepared(sha256, name)
            os.chmod(incoming, 0o444)
            fs_rename(incoming, target)
        finally:
            _remove(incoming)
        self._record(target, sha256)
        return target, sha256

    def _prepared(self, sha256: str, file_name: str) -> Path:
        """The path for a new copy, its folders made private to this user, any earlier record dropped."""
        target = self.path_for(sha256, file_name)
        make_folder(self.root)  # a store others may write is hashed every time, not fixed
        for folder in self._folders(target):
            if not _real_folder(folder):
                _remove(folder)  # a link or a file where a folder belongs: never written through
            make_folder(folder)
            with contextlib.suppress(OSError):
                if os.lstat(folder).st_mode & 0o022 and os.lstat(folder).st_uid == os.getuid():
                    os.chmod(folder, 0o755)  # a umask of 002 must not make our folders writable by the group
        _remove(target.parent / RECORD)
        return target

    def _record(self, target: Path, sha256: str) -> None:
        """Remember that ``target`` was just checked (once: rewriting the record, or a chmod, on every
        install would move the file's ctime, and uv unpacks a wheel again whenever that changes)."""
        try:
            info = os.lstat(target)
            if info.st_mode & 0o222:
                os.chmod(target, 0o444)
                info = os.lstat(target)
        except OSError:
            return
        memo, identity = _memo(target), _identity(info)
        if memo.recall(identity) != sha256:
            memo.keep(identity, sha256)  # a read-only store: hashed next time

    def drop(self) -> None:
        _remove(self.root)


def _memo(target: Path) -> Memo:
    return Memo(target.parent / RECORD, SHA256, label="verified-record", limit=4096)


def _identity(info: os.stat_result) -> str:
    """The fingerprint of a stored file as it is now: any write to it, or a replacement, changes it."""
    return fingerprint(info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev)


def _real_folder(folder: Path) -> bool:
    """A folder that is not a link (or nothing there yet)."""
    try:
        return stat.S_ISDIR(os.lstat(folder).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _private(folder: Path, *, follow: bool = False) -> bool:
    """A folder (not a link to one, unless ``follow``) of this user that no one else may write to."""
    try:
        info = os.stat(folder) if follow else os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def _remove(path: Path) -> None:
    """Remove what is at ``path`` (a folder of the store, or a file, or a link as a link), reached without a
    link; what cannot be removed stays (the store is a speed-up)."""
    with contextlib.suppress(OSError, BadInput):
        if path.is_dir() and not path.is_symlink():
            remove_tree(path)
        else:
            remove_file(path)
