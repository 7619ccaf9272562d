"""The cached build of a lock's environment: a hard-linked copy the next install of the same lock
content links instead of running the installers (and the byte-compiler) again.

The cache must not be writable through an environment: every file's size and mtime are recorded when
the copy is made, and checked as each file is linked: a copy whose files changed since (an edit
inside an environment changes the shared file) is thrown away instead of being linked again, and
``install --force`` never uses it. The record is read as untrusted data
(:func:`resolver.core.records.read_record`): one that is not of its shape is no cached build.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from resolver.core.errors import BadInput
from resolver.core.fs import make_folder, remove_tree
from resolver.core.fs import rename as fs_rename
from resolver.core.records import Fields, OfType, Text, read_record, write_record

TEMPLATE_MARKER = ".resolver-template.json"
# "files": {relative path: [size, mtime_ns]}, each entry compared with the file it names as it is linked
_RECORD = Fields({"final": Text(max_len=4096), "files": OfType(dict)})
_RECORD_LIMIT = 64 << 20  # ~80 bytes per file: hundreds of thousands of files


class EnvBuild:
    """The cached build at ``folder`` of an environment installed at ``final``."""

    def __init__(self, folder: Path, final: Path) -> None:
        self.folder, self.final = folder, final

    def record(self) -> dict | None:
        """The record of a cached build for ``final`` (None: there is none; conda files have the prefix
        baked in, so a build kept for another place is none either)."""
        record = read_record(self.folder / TEMPLATE_MARKER, _RECORD, limit=_RECORD_LIMIT)
        return record if record is not None and record["final"] == str(self.final) else None

    def link_into(self, target: Path, record: dict | None = None) -> bool:
        """Recreate the cached build at ``target`` with hard links; False (nothing left at ``target``, the
        cache dropped) when there is none for ``final``, or a file of it changed since it was kept."""
        record = record or self.record()
        if record is None:
            return False
        if _link_tree(self.folder, target, record["files"]):
            return True
        _remove(target)
        self.drop()
        return False

    def keep(self, built: Path) -> None:
        """Keep a hard-linked copy of a freshly built environment (files are shared like conda's package
        cache; every write the resolver makes replaces a file rather than editing it in place)."""
        for stale in self.folder.parent.glob(f".{self.folder.name}.part-*"):  # our own temporary names
            _remove(stale)
        part = self.folder.with_name(f".{self.folder.name}.part-{os.getpid()}")
        try:
            files: dict[str, list[int]] = {}
            _link_tree(built, part, recorded=files)
            if not write_record(part / TEMPLATE_MARKER, {"final": str(self.final), "files": files},
                                label="env-build", place=self.folder / TEMPLATE_MARKER):
                raise OSError("the record of the cached build cannot be written")
            self.drop()
            fs_rename(part, self.folder)
        except (OSError, BadInput):  # a cache is a speed-up: never fail the install for it
            _remove(part)

    def drop(self) -> None:
        """Remove the cached build (only a folder holding its record: one the resolver made)."""
        _remove(self.folder, marks=(TEMPLATE_MARKER,))


def _remove(folder: Path, marks: tuple[str, ...] | None = None) -> None:
    """Remove a folder of the cache reached without a link (a cache is a speed-up: what cannot be removed
    stays); with ``marks``, only one holding one of them."""
    with contextlib.suppress(OSError, BadInput):
        remove_tree(folder, made_by_us=marks is not None, marks=marks or ())


def _link_tree(source: Path, target: Path, expected: dict[str, list[int]] | None = None, *,
               recorded: dict[str, list[int]] | None = None) -> bool:
    """Recreate ``source`` at ``target`` with hard links (links copied as links, the marker left out).

    ``expected``: every regular file must have the recorded ``[size, mtime_ns]``, and no file may be
    missing or added; False at the first that does not. ``recorded``: filled with what was linked.
    One ``stat`` and one ``link`` per file, no path objects: the CPU environment has ~30,000 files.
    """
    seen = 0
    make_folder(target.parent)  # through the door: no link on the way to the copy
    stack = [(str(source), str(target), "")]
    while stack:
        src_dir, dst_dir, prefix = stack.pop()
        os.mkdir(dst_dir)
        with os.scandir(src_dir) as entries:
            for entry in entries:
                rel = prefix + entry.name
                dst = os.path.join(dst_dir, entry.name)
                if entry.is_symlink():
                    os.symlink(os.readlink(entry.path), dst)
                elif entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, dst, rel + "/"))
                elif rel != TEMPLATE_MARKER:
                    if expected is not None or recorded is not None:
                        info = entry.stat(follow_symlinks=False)
                        facts = [info.st_size, info.st_mtime_ns]
                        if recorded is not None:
                            recorded[rel] = facts
                        if expected is not None:
                            if expected.get(rel) != facts:
                                return False
                            seen += 1
                    try:
                        os.link(entry.path, dst, follow_symlinks=False)
                    except OSError:
                        shutil.copy2(entry.path, dst, follow_symlinks=False)
    return expected is None or seen == len(expected)
