"""The overlay's neighbour headers: symlinks to the ROCm root's files, swapped in atomically
(:mod:`resolver.core.fs` holds the atomic writes themselves)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from resolver.core.fs import MiB, copy_file, make_folder, place_link


def link_or_copy(target: Path, link: Path) -> str:
    """Make ``link`` point at ``target`` (a symlink, swapped in atomically); copy when links fail.

    A symlink keeps the file's identity, so ``#pragma once`` still sees one file (clang compares
    files by inode); returns "link" or "copy".
    """
    make_folder(link.parent)
    if link.is_symlink() and os.readlink(link) == str(target):
        return "link"
    try:
        place_link(target, link)
        return "link"
    except OSError:
        copy_file(target, link, limit=64 * MiB, what="the header", label="overlay")
        shutil.copystat(target, link)
        return "copy"
