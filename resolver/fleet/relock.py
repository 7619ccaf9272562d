"""A fleet locked again solves only what changed: which classes are new, changed, gone or kept, and why.

``lock --fleet`` on a project that holds a fleet compares each class's environment as the lock is about to
write it into pixi.toml (what pixi reads of it: channels, platforms with their virtual packages, conda and
PyPI requirements, indexes; per platform) with the one pixi.toml has, and with what pixi.lock holds:

- **new**: pixi.toml has no environment of that name yet (a node type joined; or its nodes' GPUs changed
  the class's architectures, hence its name);
- **changed**: pixi.toml's environment is not what the class now needs (e.g. its nodes plan another torch
  build or Python): the sentence names each requirement that changes;
- **unlocked**: pixi.toml is as it should be but pixi.lock does not hold the environment for every platform;
- **kept**: all three agree, so the lock keeps the environment's entries as they are (no solve);
- **gone**: pixi.toml records a class no node of the fleet is in any more: it leaves pixi.toml and pixi.lock.

Only the plans of new, changed and unlocked classes go to the lock as the ones to resolve; the kept ones
are carried over by the lock like any environment it was not asked to resolve (so a kept class whose lock
entry no longer fits pixi.toml's channels or platforms is solved after all, and said so). Locking the same
fleet from scratch writes the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from resolver.fleet.classes import FleetPlan, brief_list
from resolver.fleet.record import read_classes
from resolver.project.manifest import EnvSpec, Manifest

STATUSES = ("new", "changed", "unlocked", "kept", "gone")


@dataclass(frozen=True)
class ClassChange:
    environment: str
    status: str  # one of STATUSES
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.environment, "status": self.status, "why": self.why}


def compare(manifest: Manifest, locked: dict[str, set[str]], fleet: FleetPlan,
            record: Callable[[Manifest], None]) -> tuple[ClassChange, ...]:
    """Each class of ``fleet`` against ``manifest`` (pixi.toml as it is) and ``locked`` (environment → the platform
    names pixi.lock holds it for), once ``record`` (the fleet's edit) and each class's environment are written
    into a copy of the manifest; then the classes pixi.toml records that are gone."""
    after = Manifest.parse(manifest.dumps(), manifest.path)
    record(after)
    classes = {c.name for c in fleet.classes}
    keep = sorted(name for name in locked if name not in classes and name in manifest.environment_names())
    for c in fleet.classes:
        after.ensure_environment(c.plan, keep)  # as the lock will: no platform its other environments would take
    existing = set(manifest.environment_names())
    changes = []
    for c in fleet.classes:
        name = c.name
        nodes = f"{len(c.nodes):,} node(s): {brief_list(c.nodes, 3)}"
        if name not in existing:
            changes.append(ClassChange(name, "new", f"a new class ({nodes})"))
            continue
        before, now = _specs(manifest, name), _specs(after, name)
        if before != now:
            changes.append(ClassChange(name, "changed", f"its environment changes: {_difference(before, now)}"))
            continue
        missing = [p.name for p in now[0].platforms if p.name not in locked.get(name, set())] if now else []
        if missing:
            changes.append(ClassChange(name, "unlocked", f"pixi.lock does not hold it for {', '.join(missing)}"))
            continue
        changes.append(ClassChange(name, "kept", f"unchanged ({nodes})"))
    names = {c.name for c in fleet.classes}
    changes += [ClassChange(name, "gone", "no node of the fleet is in it any more")
                for name in sorted(read_classes(manifest)) if name not in names]
    return tuple(changes)


def project_state(project) -> tuple[Manifest, dict[str, set[str]]]:
    """pixi.toml as it is (a new one where there is none) and, per environment, the platforms pixi.lock holds it for."""
    from resolver.core.errors import BadInput
    from resolver.lock.lockfile import read_lock

    manifest = Manifest.load(project.manifest) if project.manifest.exists() else \
        Manifest.new(project.root.name or "project", project.manifest, team=False)
    locked: dict[str, set[str]] = {}
    if project.lockfile.is_file():
        try:
            locked = {name: {env.platform.name for env in envs}
                      for name, envs in read_lock(project.lockfile, project.root,
                                                  manifest.platforms().values()).items()}
        except BadInput:  # the lock says why it cannot be read, and solves every class
            pass
    return manifest, locked


def to_solve(changes: tuple[ClassChange, ...]) -> set[str]:
    return {c.environment for c in changes if c.status in ("new", "changed", "unlocked")}


def settled(changes: tuple[ClassChange, ...], solved: set[str]) -> tuple[ClassChange, ...]:
    """The changes as the lock carried them out: a class expected kept that the lock solved anyway (its entry no
    longer fit pixi.toml's channels or platforms) says so."""
    return tuple(ClassChange(c.environment, "unlocked", "its pixi.lock entry no longer fits pixi.toml's channels or "
                                                        "platforms")
                 if c.status == "kept" and c.environment in solved else c for c in changes)


def _specs(manifest: Manifest, name: str) -> tuple[EnvSpec, ...]:
    """What pixi reads of environment ``name``, for each of its platforms (their targets merged in)."""
    spec = manifest.environment(name)
    return (spec, *(manifest.environment(name, platform.subdir) for platform in spec.platforms))


def _difference(before: tuple[EnvSpec, ...], now: tuple[EnvSpec, ...]) -> str:
    """What changes between two forms of one environment, as ``what: old → new`` clauses."""
    old, new = before[0], now[0]
    clauses = []
    for label, was, will in (("conda", dict(old.conda), dict(new.conda)),
                             ("PyPI", {k: _pypi_text(v) for k, v in old.pypi}, {k: _pypi_text(v) for k, v in new.pypi})):
        for package in sorted(set(was) | set(will)):
            if was.get(package) != will.get(package):
                clauses.append(f"{label} {package} {was.get(package) or '(none)'} → {will.get(package) or '(none)'}")
    if [p.name for p in old.platforms] != [p.name for p in new.platforms]:
        clauses.append(f"platforms {', '.join(p.name for p in old.platforms)} → {', '.join(p.name for p in new.platforms)}")
    elif old.platforms != new.platforms:
        clauses.append("the virtual packages of " + ", ".join(p.name for p, q in zip(old.platforms, new.platforms)
                                                              if p != q))
    if old.channels != new.channels:
        clauses.append(f"channels {', '.join(old.channels)} → {', '.join(new.channels)}")
    if (old.index_url, old.extra_index_urls, old.find_links) != (new.index_url, new.extra_index_urls, new.find_links):
        clauses.append(f"PyPI index {old.index_url or 'PyPI'} → {new.index_url or 'PyPI'}")
    return "; ".join(clauses) or "a platform's own requirements"


def _pypi_text(spec: dict[str, Any]) -> str:
    return (spec.get("version") or "*") + (f" from {spec['index']}" if spec.get("index") else "")
