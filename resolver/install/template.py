"""The cached build of a lock's environment: a hard-linked copy the next install of the same lock
content links instead of running the installers again.

The cache must not be writable through an environment: every file's size and mtime are recorded when
the copy is made, and a copy whose files changed since (an edit inside an environment changes the
shared file) is thrown away instead of being linked again; ``install --force`` never uses it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

TEMPLATE_MARKER = ".resolver-template.json"


def template_ready(template: Path) -> bool:
    """A complete cached copy whose files are still the ones recorded (nothing edited them since)."""
    try:
        record = json.loads((template / TEMPLATE_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, dict) or files != _stats(template):
        shutil.rmtree(template, ignore_errors=True)
        return False
    return True


def _stats(folder: Path) -> dict[str, list[int]]:
    """size and mtime of every regular file below ``folder`` (the marker itself left out)."""
    out: dict[str, list[int]] = {}
    for root, _dirs, names in os.walk(folder):
        for name in names:
            path = Path(root) / name
            if path.is_symlink() or name == TEMPLATE_MARKER:
                continue
            info = path.stat()
            out[str(path.relative_to(folder))] = [info.st_size, info.st_mtime_ns]
    return out


def template_final(template: Path) -> str | None:
    try:
        return json.loads((template / TEMPLATE_MARKER).read_text(encoding="utf-8")).get("final")
    except (OSError, ValueError):
        return None


def save_template(tmp: Path, template: Path, final: Path) -> None:
    """Keep a hard-linked copy of a freshly built environment: the next install of the same lock
    content links it instead of running uv again (files are shared like conda's package cache;
    every write we make replaces a file rather than editing it in place)."""
    for stale in template.parent.glob(f".{template.name}.part-*"):
        shutil.rmtree(stale, ignore_errors=True)
    part = template.with_name(f".{template.name}.part-{os.getpid()}")
    try:
        link_tree(tmp, part)
        (part / TEMPLATE_MARKER).write_text(json.dumps({"final": str(final), "files": _stats(part)}) + "\n",
                                            encoding="utf-8")
        shutil.rmtree(template, ignore_errors=True)
        part.rename(template)
    except OSError:  # a cache is an optimisation: never fail the install for it
        shutil.rmtree(part, ignore_errors=True)


def link_tree(source: Path, target: Path) -> None:
    """Recreate ``source`` at ``target`` with hard links (symlinks copied as symlinks)."""
    for folder, dirs, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in dirs + files:
            src = Path(folder) / name
            if src.is_symlink():
                os.symlink(os.readlink(src), target / rel / name)
        for name in files:
            src = Path(folder) / name
            if not src.is_symlink():
                try:
                    os.link(src, target / rel / name)
                except OSError:
                    shutil.copy2(src, target / rel / name)


