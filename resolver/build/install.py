"""Install one built kernel package into an environment (conda prefix or venv) with py-rattler.

rattler's ``install`` makes the prefix hold exactly the records it is given, so the records
already installed there (``conda-meta/*.json``) are passed along, minus older builds of the same
name; a venv gets a ``conda-meta/`` folder of its own and keeps its pip-installed packages (the
package's files go to ``lib/pythonX.Y/site-packages``, the venv's own layout).
"""

from __future__ import annotations

import asyncio
from pathlib import Path


def install_into(prefix: Path, package_file: Path) -> None:
    from rattler import PrefixRecord, install

    record = _record_for(package_file)
    meta = prefix / "conda-meta"
    installed = [PrefixRecord.from_path(str(p)) for p in sorted(meta.glob("*.json"))] if meta.is_dir() else []
    name = record.name.normalized
    keep = [r for r in installed if r.name.normalized != name]
    asyncio.run(install([*keep, record], target_prefix=str(prefix), installed_packages=installed,
                        show_progress=False, execute_link_scripts=False))


def _record_for(package_file: Path):
    """The channel's repodata record of ``package_file`` (the channel is its grandparent folder)."""
    import json

    subdir = package_file.parent
    repodata = json.loads((subdir / "repodata.json").read_text(encoding="utf-8"))
    entry = (repodata.get("packages.conda") or {}).get(package_file.name)
    if entry is None:
        raise FileNotFoundError(f"{package_file.name} is not in {subdir / 'repodata.json'}")
    return _solve_one(subdir.parent, entry, package_file.name)


def _solve_one(channel: Path, entry: dict, file_name: str):
    from rattler import Channel, solve

    spec = f"{entry['name']} =={entry['version']} {entry['build']}"
    records = asyncio.run(solve([Channel(str(channel.resolve()))], [spec], platforms=[entry["subdir"], "noarch"],
                                virtual_packages=[]))
    match = [r for r in records if r.file_name == file_name]
    if not match:
        raise FileNotFoundError(f"{file_name} could not be resolved from {channel}")
    return match[0]
