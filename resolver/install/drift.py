"""Drift: what was pip-installed (or removed, or changed) by hand in an environment since ``install``
made it from pixi.lock. Such a package works here but is in no teammate's environment, and the
next ``install --force`` removes it; doctor names each one and how to make the lock follow.

Read from the environment's folder, without running it: every ``*.dist-info`` of its site-packages
against the wheels the ready marker lists (what install put there from the lock, and the pip a
fallback environment is seeded with) and the distributions conda packages own (``conda-meta/*.json``,
the locked conda packages and the kernels ``build`` linked in). The folder is the user's: reads are
bounded, links are not followed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from resolver.core.errors import BadInput
from resolver.core.fs import open_read, read_bytes_bounded
from resolver.core.names import canonical_name

METADATA_LIMIT = 64 * 1024
CONDA_RECORD_LIMIT = 32 * 1024 * 1024


@dataclass(frozen=True)
class Drift:
    added: tuple[tuple[str, str], ...]  # (name, version) installed by hand
    changed: tuple[tuple[str, str, str], ...]  # (name, installed, locked)
    removed: tuple[tuple[str, str], ...]  # (name, locked version) no longer installed

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def sentence(self) -> str:
        parts = []
        if self.added:
            parts.append("installed by hand, not in pixi.lock: " + ", ".join(f"{n} {v}" for n, v in self.added))
        if self.changed:
            parts.append("changed by hand: " + ", ".join(f"{n} {v} (pixi.lock has {locked})"
                                                         for n, v, locked in self.changed))
        if self.removed:
            parts.append("removed by hand: " + ", ".join(f"{n} {v}" for n, v in self.removed))
        return "; ".join(parts)



def drift_of(env_path: Path, marker: dict) -> Drift:
    """The environment at ``env_path`` against its ready marker (``install``'s record of the lock)."""
    expected: dict[str, str] = {}
    for item in [*marker.get("pypi", []), *marker.get("seeded", [])]:
        name, _, version = str(item).partition("==")
        expected[canonical_name(name)] = version
    owned = _conda_owned(env_path)
    installed = {name: (version, folder) for name, version, folder in _distributions(env_path)}
    added, changed = [], []
    for name, (version, folder) in sorted(installed.items()):
        if folder in owned:
            continue
        if name not in expected:
            added.append((name, version))
        elif version.lower() != expected[name].lower():
            changed.append((name, version, expected[name]))
    removed = [(name, version) for name, version in sorted(expected.items()) if name not in installed]
    return Drift(tuple(added), tuple(changed), tuple(removed))


def _site_packages(env_path: Path) -> list[Path]:
    folders = [p for p in env_path.glob("lib/python3*/site-packages") if p.is_dir() and not p.is_symlink()]
    windows = env_path / "Lib" / "site-packages"
    return folders + ([windows] if windows.is_dir() and not windows.is_symlink() else [])


def _distributions(env_path: Path) -> list[tuple[str, str, str]]:
    """(canonical name, version, dist-info folder relative to the environment) of each distribution."""
    found = []
    for site in _site_packages(env_path):
        for folder in site.glob("*.dist-info"):
            metadata = folder / "METADATA"
            if folder.is_symlink() or metadata.is_symlink() or not metadata.is_file():
                continue
            try:
                with open_read(metadata, what="the METADATA") as handle:
                    head = handle.read(METADATA_LIMIT).decode("utf-8", errors="replace")
            except (OSError, BadInput):
                continue
            name = re.search(r"^Name:\s*(\S+)", head, flags=re.M)
            version = re.search(r"^Version:\s*(\S+)", head, flags=re.M)
            if name and version:
                found.append((canonical_name(name.group(1)), version.group(1), folder.relative_to(env_path).as_posix()))
    return found


def _conda_owned(env_path: Path) -> set[str]:
    """The dist-info folders (relative to the environment) that conda packages installed."""
    owned: set[str] = set()
    meta = env_path / "conda-meta"
    if not meta.is_dir() or meta.is_symlink():
        return owned
    for record in meta.glob("*.json"):
        try:
            if record.is_symlink() or record.stat().st_size > CONDA_RECORD_LIMIT:
                continue
            files = json.loads(read_bytes_bounded(record, limit=CONDA_RECORD_LIMIT, what="the conda record")
                               ).get("files") or []
        except (OSError, BadInput, ValueError, AttributeError):
            continue
        for entry in files:
            path = entry if isinstance(entry, str) else (entry.get("_path") if isinstance(entry, dict) else None)
            if isinstance(path, str) and ".dist-info/" in path:
                owned.add(path.split(".dist-info/", 1)[0] + ".dist-info")
    return owned
