"""A local conda channel's index: the record ``repodata.json`` keeps of one package file.

Read by the package check (does the file match what the channel says it is?) and by the conda door
(which record to link); the index is untrusted: bounded, and one sentence when the file is not in it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from resolver.core.errors import BadInput

INDEX_LIMIT = 64 << 20  # a channel subdir's repodata.json read here: kernel packages, a handful


def channel_record(package_file: Path) -> dict[str, Any]:
    """The entry of ``package_file`` in its folder's ``repodata.json`` (one sentence when there is none)."""
    from resolver.core.fs import read_bytes_bounded

    index_file = package_file.parent / "repodata.json"
    try:
        data = json.loads(read_bytes_bounded(index_file, limit=INDEX_LIMIT, what="channel index"))
    except (BadInput, ValueError, RecursionError):
        data = None
    entries = data.get("packages.conda" if package_file.name.endswith(".conda") else "packages") \
        if isinstance(data, dict) else None
    entry = entries.get(package_file.name) if isinstance(entries, dict) else None
    if not isinstance(entry, dict):
        raise BadInput(f"{package_file.name} is not in {index_file}",
                       fix=f"re-index the channel (`python -m resolver build` does), or rebuild {package_file.name}")
    return entry
