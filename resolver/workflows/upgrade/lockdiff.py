"""pixi.lock seen by an upgrade: one environment's entries as text (to keep them byte for byte), and the
difference between two environments in words (what a reviewer reads in the pull request).

An environment's entries are its block under ``environments:`` and the block under ``packages:`` of every
artefact it names. Packages shared with other environments are shared entries: they may gain no byte either.

>>> text = '''version: 7
... environments:
...   a:
...     packages:
...       linux-64:
...       - pypi: https://x/p-1.whl
...   b:
...     packages:
...       linux-64:
...       - pypi: https://x/q-2.whl
... packages:
... - pypi: https://x/p-1.whl
...   name: p
... - pypi: https://x/q-2.whl
...   name: q
... '''
>>> block, packages = environment_entries(text, "a")
>>> block.splitlines()[0], list(packages)
('  a:', ['https://x/p-1.whl'])
>>> environment_entries(text.replace("q-2", "q-3"), "a") == (block, packages)
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from resolver.core.names import canonical_name
from resolver.lock.lockfile import LockedEnv

_ENTRY = re.compile(r"^\s*- (conda|pypi): (.+?)\s*$")


def environment_entries(text: str, name: str) -> tuple[str, dict[str, str]]:
    """(the environment's block under ``environments:``, {location: its block under ``packages:``}); ("", {})
    when the lock does not hold it."""
    lines = text.splitlines(keepends=True)
    block: list[str] = []
    inside_envs = False
    for line in lines:
        if not line.startswith(" "):
            inside_envs = line.rstrip() == "environments:"
            if block:
                break
            continue
        if not inside_envs:
            continue
        if line.startswith("  ") and not line.startswith("   "):  # an environment's name
            if block:
                break
            if line.strip() == f"{name}:":
                block.append(line)
            continue
        if block:
            block.append(line)
    wanted = {m.group(2) for line in block if (m := _ENTRY.match(line))}
    packages: dict[str, str] = {}
    current: str | None = None
    inside_packages = False
    for line in lines:
        if not line.startswith((" ", "-")):
            inside_packages = line.rstrip() == "packages:"
            current = None
            continue
        if not inside_packages:
            continue
        if line.startswith("- "):
            match = _ENTRY.match(line)
            current = match.group(2) if match and match.group(2) in wanted else None
            if current is not None:
                packages[current] = line
            continue
        if current is not None:
            packages[current] += line
    return "".join(block), dict(sorted(packages.items()))


def entries_unchanged(before: str, after: str, name: str) -> bool:
    """Whether environment ``name`` has exactly the same entries, byte for byte, in both lock texts."""
    return environment_entries(before, name) == environment_entries(after, name)


@dataclass(frozen=True)
class Moved:
    name: str
    kind: str  # "conda" | "pypi"
    before: str | None  # None: added
    after: str | None  # None: removed

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class LockDiff:
    """What moved from one locked environment to another."""

    old: str
    new: str
    moved: tuple[Moved, ...]
    unchanged: int

    @property
    def changed(self) -> tuple[Moved, ...]:
        return tuple(m for m in self.moved if m.before and m.after)

    @property
    def added(self) -> tuple[Moved, ...]:
        return tuple(m for m in self.moved if not m.before)

    @property
    def removed(self) -> tuple[Moved, ...]:
        return tuple(m for m in self.moved if not m.after)

    def words(self) -> str:
        """One paragraph: which packages moved, were added, were removed, how many stayed.

        >>> LockDiff("a", "b", (Moved("torch", "pypi", "2.13.0+cpu", "2.14.1"), Moved("nvidia-nccl-cu13", "pypi",
        ...          None, "2.28.3")), 38).words()
        'torch moves from 2.13.0+cpu to 2.14.1; 1 package added: nvidia-nccl-cu13 2.28.3; 38 packages stay as they are.'
        """
        parts = []
        if self.changed:
            parts.append("; ".join(f"{m.name} moves from {m.before} to {m.after}" for m in self.changed))
        for label, rows, side in (("added", self.added, "after"), ("removed", self.removed, "before")):
            if rows:
                listed = ", ".join(f"{m.name} {getattr(m, side)}" for m in rows)
                parts.append(f"{len(rows)} package{'s' if len(rows) != 1 else ''} {label}: {listed}")
        parts.append(f"{self.unchanged} packages stay as they are" if self.unchanged != 1 else
                     "1 package stays as it is")
        return "; ".join(parts) + "."

    def to_json(self) -> dict[str, Any]:
        return {"from": self.old, "to": self.new, "changed": [m.to_json() for m in self.changed],
                "added": [m.to_json() for m in self.added], "removed": [m.to_json() for m in self.removed],
                "unchanged": self.unchanged, "words": self.words()}


def lock_diff(old: LockedEnv, new: LockedEnv) -> LockDiff:
    """The packages of ``new`` against ``old`` (conda by name, PyPI by normalized name)."""
    def versions(env: LockedEnv) -> dict[tuple[str, str], str]:
        out = {("conda", r.name): r.version for r in env.conda}
        out.update({("pypi", canonical_name(a.name)): a.version for a in env.pypi})
        return out

    a, b = versions(old), versions(new)
    moved = [Moved(name, kind, a.get((kind, name)), b.get((kind, name)))
             for kind, name in sorted(set(a) | set(b), key=lambda k: (k[1], k[0]))
             if a.get((kind, name)) != b.get((kind, name))]
    unchanged = sum(1 for key in set(a) & set(b) if a[key] == b[key])
    return LockDiff(old.name, new.name, tuple(moved), unchanged)
