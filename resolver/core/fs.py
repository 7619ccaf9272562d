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


def sha256_of(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks (wheels and sdists are hundreds of MB)."""
    digest = sha256_hasher()
    with open(path, "rb") as handle:
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
    except OSError:
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
                digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


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
def atomic_stream(path: str | Path, *, mode: int = 0o644, label: str = "write") -> Iterator[BinaryIO]:
    """Write ``path`` through a handle: the content appears under its name only when the block ends
    without an exception (a download cut short leaves no partial file behind)."""
    path = Path(path)
    if path.is_dir():  # os.replace cannot put a file there: say so before anything is written
        raise BadInput(f"cannot write {path}: a folder of that name is in the way",
                       fix=f"move the folder {path} aside (the file {path.name} belongs there)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # an earlier write's leftover, or a link someone put there: never written through
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        crash_point(f"{label}:after-temp")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)
    crash_point(f"{label}:after-replace")


def open_no_follow(path: str | Path, flags: int, *, what: str, mode: int = 0o644) -> int:
    """A descriptor of the regular file ``path``, opened without following a symbolic link in its last part:
    how the resolver opens a file it writes in place (a lock file) in a folder others can write. A link
    or anything but a regular file there is one :class:`BadInput` (exit 3), and nothing is written."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BadInput(f"{what} {path} is a symbolic link; the resolver does not write through a link",
                           fix=f"remove the link {path} (and find out who made it), then run again") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise BadInput(f"{what} {path} is not a regular file", fix=f"remove {path}, then run again")
    return fd


def check_real_folder(path: str | Path, *, what: str) -> None:
    """Refuse (:class:`BadInput`, exit 3) a ``path`` that is a symbolic link or anything but a folder; a
    missing path is fine (it will be made). For the folders the resolver writes in that others can write."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise BadInput(f"{what} {path} is a symbolic link (to {os.readlink(path)}); the resolver does not write "
                       "through a link", fix=f"remove the link {path} (and find out who made it), then run again")
    if not stat.S_ISDIR(info.st_mode):
        raise BadInput(f"{what} {path} is not a folder", fix=f"move {path} aside, then run again")


def write_atomic(path: str | Path, data: bytes, *, mode: int = 0o644, label: str = "write") -> None:
    """Replace ``path`` by ``data`` through a temporary file and a rename."""
    with atomic_stream(path, mode=mode, label=label) as handle:
        handle.write(data)


def write_text_atomic(path: str | Path, text: str, *, label: str = "write") -> None:
    write_atomic(path, text.encode("utf-8"), label=label)


def write_json_atomic(path: str | Path, data: Any, *, label: str = "record") -> None:
    write_atomic(path, (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode("utf-8"), label=label)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -------------------------------------------------------------------------------------------- reads


def read_bytes_bounded(path: str | Path, *, limit: int, what: str, fix: str | None = None,
                       follow_symlinks: bool = True, own: bool = False) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; anything else is one :class:`BadInput`.

    Input that comes from users or shared files (logs, captured tool output, headers, configs) is
    read through here: a FIFO or device file (``/dev/zero``) is refused without reading, and a file
    past the bound is refused instead of filling memory. ``follow_symlinks=False`` refuses a symbolic
    link (a file in a folder others write to; the resolver's own cache and state files, which it never
    writes as links). ``own=True`` (the same files) refuses a file this user does not own or others may
    write: what the resolver writes is the user's, mode 644. The file is read in chunks sized by its
    length, so a small file costs one small read whatever the bound.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise BadInput(f"{what} {path} does not exist", fix="check the path") from None
    except IsADirectoryError:
        raise BadInput(f"{what} {path} is a folder, not a file", fix="pass a file") from None
    except OSError as exc:
        if not follow_symlinks and os.path.islink(path):
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


def check_regular_file(path: str | Path, *, limit: int, what: str, fix: str | None = None) -> int:
    """The size of ``path`` when it is a regular file of at most ``limit`` bytes, for a reader that
    opens it itself (rattler); the same :class:`BadInput` sentences as :func:`read_bytes_bounded`."""
    path = Path(path)
    try:
        info = os.stat(path)
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


def read_text_bounded(path: str | Path, *, limit: int, what: str, fix: str | None = None) -> str:
    """:func:`read_bytes_bounded` decoded as UTF-8 (undecodable bytes replaced)."""
    return read_bytes_bounded(path, limit=limit, what=what, fix=fix).decode("utf-8", errors="replace")


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
