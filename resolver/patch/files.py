"""The overlay's neighbour headers: symlinks to the ROCm root's files, swapped in atomically
(:mod:`resolver.core.fs` holds the atomic writes themselves)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from resolver.core.fs import temp_path, write_atomic


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
