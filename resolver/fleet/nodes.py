"""The nodes of a fleet: a folder of ``probe --json`` files (one per node or node type) plus files named one by one.

A node is named by its file (``a100-07.json`` is node ``a100-07``). Everything a file holds is checked
as ``plan --profile`` checks it (one sentence naming the file); on top of that a fleet refuses two files
that describe one node: two files with the same name, or two files that list the same GPU (by UUID,
which ``probe`` records and no two GPUs share). A file in the folder that is a symbolic link is refused
(the folder is one the nodes write to; a link could point anywhere).

The files are read one at a time (:func:`iter_nodes`), never held: what stays is each node's name and
the profile of its *kind*. Nodes of one kind differ only in what is theirs alone (GPU UUIDs and memory,
CPU count, free memory): a file is checked in full by :meth:`HardwareProfile.from_json` the first time its
kind is seen, and later files of the kind reuse that profile. Their own values are only type-checked,
which is all ``from_json`` does with them, so a file is refused exactly when ``plan --profile`` would
refuse it; 100,000 files of a few kinds cost a few full checks.

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
resolver.core.errors.BadInput: h100-02.json and h100-01.json describe the same node: both list GPU GPU-1. Fix: keep one file per node in the fleet (the GPU UUIDs come from `probe --json` on that node).
"""

from __future__ import annotations

import marshal
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

from resolver.core.errors import BadInput
from resolver.plan.probe.profile import PROFILE_LIMIT, HardwareProfile

MAX_NODES = 1_000_000  # a fleet folder past this is not one
OWN_GPU_FIELDS = ("uuid", "memory_mib")  # what a GPU has that another of its model does not
OWN_HOST_FIELDS = ("cpu_count", "memory_available_mib")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Node:
    name: str  # the file's stem
    file: str
    profile: HardwareProfile  # what ``decide`` reads (:func:`decision_inputs`): one object per kind of node


def read_nodes(folder: Path | None, files: tuple[Path, ...] = ()) -> tuple[Node, ...]:
    """The nodes of ``folder`` and ``files``, sorted by name (for a few nodes; a fleet is read with :func:`iter_nodes`)."""
    return tuple(sorted(iter_nodes(folder, files), key=lambda n: n.name))


def iter_nodes(folder: Path | None, files: tuple[Path, ...] = ()) -> Iterator[Node]:
    """Each node of ``folder`` (its ``*.json`` files, by file name) and of ``files``, read and checked one at a time.
    The first file that is no profile, or that describes a node already read, stops it with one sentence."""
    paths = fleet_files(folder, files)
    kinds: dict[bytes, HardwareProfile] = {}
    by_name: dict[str, str] = {}
    by_gpu: dict[str, str] = {}
    for path, in_folder in paths:
        name = node_name(path)
        if name in by_name:
            raise BadInput(f"{by_name[name]} and {path} are two files for node {name!r}",
                           fix="keep one profile per node (rename one file if they are different nodes)")
        by_name[name] = path
        profile, uuids = _read(path, in_folder, kinds)
        for uuid in uuids:
            if uuid in by_gpu:
                raise BadInput(f"{os.path.basename(path)} and {os.path.basename(by_gpu[uuid])} describe the same "
                               f"node: both list GPU {uuid}",
                               fix="keep one file per node in the fleet (the GPU UUIDs come from `probe --json` on "
                                   "that node)")
            by_gpu[uuid] = path
        yield Node(name, path, profile)


def fleet_files(folder: Path | None, files: tuple[Path, ...] = ()) -> list[tuple[str, bool]]:
    """(path, whether it is in the folder) of every profile file: the folder's ``*.json`` by name, then ``files``;
    a file named twice (in the folder and by ``--profile``) once."""
    paths: list[tuple[str, bool]] = []
    if folder is not None:
        folder = Path(folder)
        if not folder.is_dir():
            raise BadInput(f"fleet folder {folder} does not exist or is not a folder",
                           fix="pass a folder holding one `python -m resolver probe --json` file per node")
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".json") and not e.name.startswith("."))
        if not names and not files:
            raise BadInput(f"fleet folder {folder} holds no *.json profile",
                           fix="put one `python -m resolver probe --json > NODE.json` file per node (or node type) in it")
        if len(names) + len(files) > MAX_NODES:
            raise BadInput(f"the fleet has {len(names) + len(files)} profile files, more than {MAX_NODES}",
                           fix="describe node types, not every node: one file per kind of machine")
        base = os.path.join(str(folder), "")
        paths = [(base + name, True) for name in names]
        in_folder = set(names)
        real_folder = folder.resolve()
    seen: set[Path] = set()
    for file in files:
        try:
            real = Path(file).resolve()
        except (OSError, RuntimeError):  # a loop of symbolic links (RuntimeError before Python 3.13)
            raise BadInput(f"profile file {file} is a loop of symbolic links",
                           fix="replace it by the `python -m resolver probe --json` file of that node") from None
        if real in seen or (folder is not None and real.parent == real_folder and real.name in in_folder):
            continue  # the same file named twice is one file
        seen.add(real)
        paths.append((str(file), False))
    return paths


def node_name(path: str | Path) -> str:
    """A node's name: its file's stem, as printable text.

    >>> node_name(Path("fleet/A100 node#7.json"))
    'A100-node-7'
    """
    stem = os.path.basename(path)
    stem = stem[:stem.rindex(".")] if "." in stem[1:] else stem  # Path.stem
    if _PLAIN_NAME.fullmatch(stem) and stem[0] not in "-" and stem[-1] != "-":
        return stem
    return re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-") or "node"


def decision_inputs(profile: HardwareProfile) -> HardwareProfile:
    """``profile`` less what ``decide`` never reads (UUIDs, memory, CPU count, notes, sources): equal for two
    nodes of one kind, so one decision serves both."""
    nvidia = profile.nvidia and replace(profile.nvidia, sources=(), gpus=tuple(
        replace(g, memory_mib=None, uuid=None) for g in profile.nvidia.gpus))
    amd = profile.amd and replace(profile.amd, sources=())
    return replace(profile, nvidia=nvidia, amd=amd, notes=(), sources=(), cpu_count=None,
                   memory_available_mib=None, container=False)


def _read(path: str, in_folder: bool, kinds: dict[bytes, HardwareProfile]) -> tuple[HardwareProfile, list[str]]:
    """(the node's profile as ``decide`` reads it, its GPU UUIDs); one profile object per kind of node."""
    from resolver.core.fs import parse_json, read_bytes_bounded

    what = f"profile file {path}"
    raw = read_bytes_bounded(path, limit=PROFILE_LIMIT, what="profile file", follow_symlinks=not in_folder,
                             fix="regenerate it with `python -m resolver probe --json > profile.json`")
    fix = "regenerate it with `python -m resolver probe --json > profile.json`"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"cannot read {what}: {exc}", fix="pass a UTF-8 JSON file written by `python -m resolver probe "
                                                          "--json`") from None
    data = parse_json(text, what=what, fix=fix)
    uuids = _mask_own_values(data)
    key = marshal.dumps(data)  # equal bytes for equal values (it reads back as the value), 4x faster than repr
    profile = kinds.get(key)
    if profile is None:  # a kind not seen before: checked in full, as `plan --profile` checks it
        profile = kinds[key] = decision_inputs(HardwareProfile.from_json(parse_json(text, what=what, fix=fix),
                                                                         origin=what))
    return profile, uuids


def _mask_own_values(data: Any) -> list[str]:
    """Replace, in place, each value a node has alone by its JSON type's name (what ``from_json`` checks of it);
    the node's GPU UUIDs."""
    uuids: list[str] = []
    if not isinstance(data, dict):
        return uuids
    for key in OWN_HOST_FIELDS:
        if key in data:
            data[key] = type(data[key]).__name__
    nvidia = data.get("nvidia")
    gpus = nvidia.get("gpus") if isinstance(nvidia, dict) else None
    for gpu in gpus if isinstance(gpus, list) else ():
        if not isinstance(gpu, dict):
            continue
        uuid = gpu.get("uuid")
        if isinstance(uuid, str) and uuid and uuid not in uuids:
            uuids.append(uuid)
        for key in OWN_GPU_FIELDS:
            if key in gpu:
                gpu[key] = type(gpu[key]).__name__
    return uuids
