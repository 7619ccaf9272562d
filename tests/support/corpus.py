"""The captured machines of the probe corpus."""

from __future__ import annotations

from support import DATA

MACHINES = DATA / "machines"


NAMES = sorted(p.name for p in MACHINES.iterdir() if p.is_dir()) if MACHINES.is_dir() else []
