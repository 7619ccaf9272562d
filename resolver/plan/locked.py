"""The plans behind pixi.lock: for each environment a lock wrote, the plan it was locked from, what in it
decides the lock, the pixi.toml section it was locked with, and the conda python solved per platform.

This module is the one reader and writer of those records (``ProjectPaths.plan_record``): ``lock`` saves
them, and ``lock``, ``plan``, ``upgrade`` and the kernel build read them through it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resolver.core.model import Plan
    from resolver.project.manifest import Manifest
    from resolver.project.paths import ProjectPaths

RECORD_LIMIT = 4 << 20  # a stored plan is a few kB


def plan_key(plan: Plan) -> dict[str, Any]:
    """What in a plan decides the lock (trace, warnings and kernels do not), in JSON's types."""
    return {"environment": plan.env_name, "platform": plan.platform, "python": str(plan.python),
            "torch": plan.torch.requirement, "index": plan.torch.source.url,
            "conda": dict(plan.conda_packages),
            "cuda": str(plan.backend_version) if plan.backend == "cuda" and plan.backend_version is not None else None}


def manifest_env_digest(manifest: Manifest, name: str) -> str:
    """A digest of environment ``name``'s section of pixi.toml."""
    from resolver.core.fingerprint import fingerprint

    spec = manifest.environment(name)
    return fingerprint(spec.channels, [p.entry() for p in spec.platforms], spec.conda, spec.pypi, spec.index_url,
                       spec.extra_index_urls, spec.find_links)


def save(project: ProjectPaths, plan: Plan, manifest: Manifest, pythons: dict[str, str] | None = None) -> Path:
    """Keep the plan behind an environment, the pixi.toml section it was locked with, and (``pythons``)
    the conda python locked per platform."""
    from resolver.core.records import write_record

    path = project.plan_record(plan.env_name)
    write_record(path, {"plan": plan.to_json(), "key": plan_key(plan), "pythons": pythons or {},
                        "manifest_env": manifest_env_digest(manifest, plan.env_name)}, label="plan", strict=True)
    return path


def keep(project: ProjectPaths, plan: Plan) -> None:
    """Save ``plan`` as the one its environment was locked from, unless that is the one saved already."""
    from resolver.project.manifest import Manifest
    from resolver.project.pixi_toml import read_pixi_toml

    saved = record(project, plan.env_name)
    if saved is None or saved["plan"] != json.loads(json.dumps(plan.to_json())):
        save(project, plan, Manifest.view(read_pixi_toml(project.manifest)))


def record(project: ProjectPaths, env_name: str) -> dict[str, Any] | None:
    """What :func:`save` kept for ``env_name`` (``plan``, ``key``, ``pythons``, ``manifest_env``), or None
    when there is no such record (or it is not one)."""
    from resolver.core.records import Fields, MapOf, OfType, Text, read_record
    from resolver.plan.shape import plan_shape

    shape = Fields({"plan": plan_shape(), "key": OfType(dict),
                    "pythons": MapOf(Text(r"\d+(\.\d+)*", 32), Text(max_len=64)),
                    "manifest_env": Text(r"[0-9a-f]{64}", 64)})
    return read_record(project.plan_record(env_name), shape, limit=RECORD_LIMIT)


def read(project: ProjectPaths, env_name: str) -> Plan | None:
    """The plan environment ``env_name`` was locked from here, or None."""
    from resolver.core.errors import ResolverError
    from resolver.core.model import Plan

    saved = record(project, env_name)
    try:
        return Plan.from_json(saved["plan"]) if saved is not None else None
    except (ResolverError, KeyError, TypeError, ValueError, AttributeError):
        return None


def read_all(project: ProjectPaths) -> list[Plan]:
    """The plans the environments pixi.toml declares were locked from here, in pixi.toml's order."""
    from resolver.project.pixi_toml import read_pixi_toml

    if not project.manifest.is_file() or not project.plans.is_dir():
        return []
    return [plan for name in read_pixi_toml(project.manifest).environment_names() if (plan := read(project, name))]


def files(project: ProjectPaths) -> list[Path]:
    """The saved plans' files, by name."""
    if not project.plans.is_dir():
        return []
    return sorted(project.plans / entry.name for entry in os.scandir(project.plans) if entry.name.endswith(".json"))


def file_digests(project: ProjectPaths) -> list[list[str]]:
    """[file name, sha256 of its bytes] of every saved plan: what a check of the lock against them reads."""
    from resolver.core.fs import read_bytes_bounded, sha256_bytes

    return [[path.name, sha256_bytes(read_bytes_bounded(path, limit=RECORD_LIMIT, what="plan"))]
            for path in files(project)]
