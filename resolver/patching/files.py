"""Writing files so that a crash leaves the old or the new content, never a torn one.

Every write goes to a temporary file in the same folder, is flushed to disk, then renamed over the
target (``os.replace`` is atomic on POSIX). ``RESOLVER_CRASH_AT=<label>`` makes the process exit
abruptly (``os._exit``, like ``kill -9``) at a named point, so tests can interrupt a real run
between writing and recording.

>>> import tempfile, pathlib
>>> target = pathlib.Path(tempfile.mkdtemp()) / "a.h"
>>> write_atomic(target, b"int x;\\n")
>>> sha256_file(target)[:12]
'7c725f30854a'
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

CRASH_ENV = "RESOLVER_CRASH_AT"
TEMP_MARK = ".resolver-tmp-"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str | None:
    try:
        return sha256_bytes(Path(path).read_bytes())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def crash_point(label: str) -> None:
    """Exit at once, without cleanup, when ``RESOLVER_CRASH_AT`` names this point (tests only)."""
    if os.environ.get(CRASH_ENV) == label:
        os._exit(137)


def temp_path(path: Path) -> Path:
    return path.parent / f".{path.name}{TEMP_MARK}{os.getpid()}"


def remove_stale_temps(path: Path) -> list[Path]:
    """Temporary files a killed run left beside ``path``; removed, and returned."""
    removed = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    prefix = f".{path.name}{TEMP_MARK}"
    for entry in entries:
        if entry.name.startswith(prefix):
            try:
                entry.unlink()
                removed.append(entry)
            except OSError:
                pass
    return removed


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644, label: str = "write") -> None:
    """Replace ``path`` by ``data`` through a temporary file and a rename."""
    path = Path(path)
    tmp = temp_path(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        crash_point(f"{label}:after-temp")
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)
    crash_point(f"{label}:after-replace")


def write_json_atomic(path: Path, data: Any, *, label: str = "record") -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"), label=label)


def read_json(path: Path) -> dict[str, Any] | None:
    """A record written by :func:`write_json_atomic`; None when absent or unreadable."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def link_or_copy(target: Path, link: Path) -> str:
    """Make ``link`` point at ``target`` (a symlink, swapped in atomically); copy when links fail.

    A symlink keeps the file's identity, so ``#pragma once`` still sees one file (clang compares
    files by inode); returns "link" or "copy".
    """
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and os.readlink(link) == str(target):
        return "link"
    tmp = temp_path(link)
    try:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        os.symlink(target, tmp)
        os.replace(tmp, link)
        return "link"
    except OSError:
        if tmp.is_symlink():
            tmp.unlink()
        write_atomic(link, Path(target).read_bytes())
        shutil.copystat(target, link)
        return "copy"


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
