"""The nodes of a fleet: a folder of ``probe --json`` files (one per node or node type) plus files named one by one.

A node is named by its file (``a100-07.json`` is node ``a100-07``). Everything a file holds is checked
as ``plan --profile`` checks it (one sentence naming the file); on top of that a fleet refuses two files
that describe one node: two files with the same name, or two files that list the same GPU (by UUID,
which ``probe`` records and no two GPUs share).

>>> import json, tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> profile = {"platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "amd": None, "cuda_toolkit": None,
...            "nvidia": {"driver_version": "580.82.07", "gpus": [{"name": "NVIDIA H100 80GB HBM3",
...                       "compute_capability": "9.0", "uuid": "GPU-1"}]}}
>>> _ = (folder / "h100-01.json").write_text(json.dumps(profile))
>>> _ = (folder / "h100-02.json").write_text(json.dumps(profile))
>>> read_nodes(folder)
Traceback (most recent call last):
...
resolver.errors.BadInput: h100-02.json and h100-01.json describe the same node: both list GPU GPU-1. Fix: keep one file per node in the fleet (the GPU UUIDs come from `probe --json` on that node).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from resolver.errors import BadInput
from resolver.probe.profile import HardwareProfile

MAX_NODES = 100_000  # a fleet folder past this is not one


@dataclass(frozen=True)
class Node:
    name: str  # the file's stem
    file: Path
    profile: HardwareProfile


def read_nodes(folder: Path | None, files: tuple[Path, ...] = ()) -> tuple[Node, ...]:
    """The nodes of ``folder`` (its ``*.json`` files) and of ``files``, sorted by name."""
    paths: list[Path] = []
    if folder is not None:
        folder = Path(folder)
        if not folder.is_dir():
            raise BadInput(f"fleet folder {folder} does not exist or is not a folder",
                           fix="pass a folder holding one `python -m resolver probe --json` file per node")
        found = sorted(p for p in folder.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
        if not found and not files:
            raise BadInput(f"fleet folder {folder} holds no *.json profile",
                           fix="put one `python -m resolver probe --json > NODE.json` file per node (or node type) in it")
        paths += found
    paths += [Path(f) for f in files]
    if len(paths) > MAX_NODES:
        raise BadInput(f"the fleet has {len(paths)} profile files, more than {MAX_NODES}",
                       fix="describe node types, not every node: one file per kind of machine")
    seen_paths: set[Path] = set()
    by_name: dict[str, Path] = {}
    by_gpu: dict[str, Path] = {}
    nodes: list[Node] = []
    for path in paths:
        try:
            real = path.resolve()
        except (OSError, RuntimeError):  # a loop of symbolic links (RuntimeError before Python 3.13)
            raise BadInput(f"profile file {path} is a loop of symbolic links",
                           fix="replace it by the `python -m resolver probe --json` file of that node") from None
        if real in seen_paths:
            continue  # the same file named twice (the folder and --profile) is one file
        seen_paths.add(real)
        name = node_name(path)
        if name in by_name:
            raise BadInput(f"{by_name[name]} and {path} are two files for node {name!r}",
                           fix="keep one profile per node (rename one file if they are different nodes)")
        by_name[name] = path
        profile = HardwareProfile.from_file(path)
        for uuid in _gpu_uuids(profile):
            if uuid in by_gpu:
                raise BadInput(f"{path.name} and {by_gpu[uuid].name} describe the same node: both list GPU {uuid}",
                               fix="keep one file per node in the fleet (the GPU UUIDs come from `probe --json` on "
                                   "that node)")
            by_gpu[uuid] = path
        nodes.append(Node(name, path, profile))
    return tuple(sorted(nodes, key=lambda n: n.name))


def node_name(path: Path) -> str:
    """A node's name: its file's stem, as printable text.

    >>> node_name(Path("fleet/A100 node#7.json"))
    'A100-node-7'
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "-", Path(path).stem).strip("-") or "node"


def _gpu_uuids(profile: HardwareProfile) -> list[str]:
    if profile.nvidia is None:
        return []
    return list(dict.fromkeys(g.uuid for g in profile.nvidia.gpus if g.uuid))
