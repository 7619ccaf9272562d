"""A fleet of probe files, as nodes would write them."""

from __future__ import annotations

import json
from pathlib import Path

from support import DATA


def machine_profiles(folder: Path) -> list[str]:
    """``probe --json`` of every captured machine of tests/data/machines into ``folder``; the node names."""
    from resolver.plan.probe import probe_machine

    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for machine in sorted(p for p in (DATA / "machines").iterdir() if p.is_dir()):
        profile = probe_machine(sysroot=machine)
        (folder / f"{machine.name}.json").write_text(json.dumps(profile.to_json(), indent=1))
        names.append(machine.name)
    return names
