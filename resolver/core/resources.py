"""Folders the resolver ships beside its code: ``recipes/`` (kernel build recipes) and ``patches/``
(ROCm header fixes).

In a source checkout (and an editable install) they are the repository's own folders; a wheel
installs them as data under ``<prefix>/share/mamba-resolver/`` (pyproject's ``data-files``).

>>> shipped("patches").name
'patches'
"""

from __future__ import annotations

import sys
from pathlib import Path

SHARE = Path("share") / "mamba-resolver"


def shipped(name: str) -> Path:
    """The shipped folder ``name``; the source checkout's path when neither copy exists (callers say so)."""
    source = Path(__file__).resolve().parents[2] / name
    if source.is_dir():
        return source
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, sys.exec_prefix)):
        installed = Path(prefix) / SHARE / name
        if installed.is_dir():
            return installed
    return source
