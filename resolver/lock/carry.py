"""Joining the lock there is: what of it is kept as it is, and the lock written from what is kept and
what is locked now.

An environment's entry for a platform is kept (carried over, as text) when pixi.lock still holds it
as pixi.toml asks: the platform matched as pixi matches it (by identity, whatever name or alias the
lock gives it), the environment by name, the channels and PyPI indexes the manifest's, every
dependency satisfied by the locked packages. Otherwise it is locked again, when the resolver can lock
all of it; when it cannot, nothing runs and nothing is written (BadInput). docs/lock-install.md,
"Joining a workspace pixi wrote".
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable

from resolver.core.errors import BadInput
from resolver.core.fs import copy_file_new
from resolver.lock.lockfile import (
    FALLBACK_HEADER,
    ExistingLock,
    LockedEnv,
    LockedPlatform,
    NotALock,
    RawEnv,
    absolute_location,
    check_lock_text,
    fallback_header,
    fallback_note,
    fresh_lock,
    load_lock,
)
from resolver.project.manifest import Manifest
from resolver.project.paths import LOCK_LIMIT, ProjectPaths
from resolver.project.pixi_platforms import PixiPlatform, align, lock_identity, lock_names
from resolver.project.sources import channel_url

Info = Callable[[str], None]


def held(existing: ExistingLock | None, manifest: Manifest, locking: set[str]) -> list[str]:
    """The environments of pixi.toml that pixi.lock holds with packages and that are not locked now."""
    if existing is None:
        return []
    names = set(manifest.environment_names())
    return sorted(name for name, env in existing.raw.envs.items()
                  if name in names and any(env.packages.values()) and name not in locking)


def realigned(existing: ExistingLock | None, manifest: Manifest) -> ExistingLock | None:
    """``existing`` with its platform names aligned to the manifest's platforms as they are now."""
    if existing is None:
        return None
    return dataclasses.replace(existing, renames=align(existing.view.platforms(), manifest.platforms().values()))


def existing_lock(project: ProjectPaths, manifest: Manifest, notes: list[str], info: Info) -> ExistingLock | None:
    """The lock there is (platform names aligned with the manifest's), or None. One that rattler cannot
    read at all (pixi could not either) is kept as a backup before it is replaced; one that reads but
    is laid out otherwise than rattler writes is not understood: nothing is written (BadInput)."""
    if not project.lockfile.is_file():
        return None
    try:
        return load_lock(project.lockfile, project.root, manifest.platforms().values())
    except ValueError as exc:
        raise BadInput(f"pixi.lock is not laid out as pixi and rattler write it ({exc}), so the resolver cannot keep "
                       "its environments as they are: pixi.toml and pixi.lock are left as they were",
                       fix="let pixi write it again (`pixi lock`), or restore it from version control") from None
    except NotALock as exc:
        # a new file: a name taken by anything (a link someone planted included) gets -2, -3, ...
        backup = copy_file_new(project.lockfile,
                               project.lockfile.with_name(f"{project.lockfile.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}"),
                               limit=LOCK_LIMIT, what="pixi.lock")
        notes.append(f"the previous pixi.lock could not be read ({exc.message}); it is kept as {backup.name} and "
                     "only the environments resolvable now are in the new one")
        info(f"note: {notes[-1]}")
        return None


def carry_over(existing: ExistingLock | None, manifest: Manifest, wanted: set[str], *, no_conda: bool = False,
               no_pypi: bool = False) -> tuple[list[tuple[str, str, str]], list[tuple[str, PixiPlatform]]]:
    """What of pixi.lock is kept as it is: (environment, its platform's name in the lock, the manifest's
    name), and what is locked now: (environment, platform), every environment of ``wanted`` among them.
    An environment pixi.lock does not hold as pixi.toml asks and that the resolver cannot lock itself
    is refused here, before any solve (BadInput). ``no_conda`` / ``no_pypi``: the lock leaves that part
    out, so an entry without it still fits."""
    kept: list[tuple[str, str, str]] = []
    todo: list[tuple[str, PixiPlatform]] = []
    for name in manifest.environment_names():
        for platform in manifest.environment(name).platforms:
            if name not in wanted and existing is not None:
                why = unfit_reason(existing, manifest, name, platform, no_conda=no_conda, no_pypi=no_pypi)
                if why is None:
                    kept.append((name, existing.platform_of(platform.name) or platform.name, platform.name))
                    continue
                _check_lockable(manifest, name, platform, why)
            todo.append((name, platform))
    return kept, todo


def unfit_reason(existing: ExistingLock, manifest: Manifest, name: str, platform: PixiPlatform, *,
                 no_conda: bool = False, no_pypi: bool = False) -> str | None:
    """None when pixi.lock's entry of environment ``name`` on ``platform`` still fits pixi.toml (so it is
    kept as it is, without a solve); else why not, in a few words. The platform is matched as pixi
    matches it (by identity, under whatever name or alias the lock gives it); the environment by name."""
    raw = existing.raw.envs.get(name)
    if raw is None:
        return "pixi.lock has no such environment"
    spec = manifest.environment(name, platform.name)
    locked = existing.platform_of(platform.name)
    selected = raw.packages.get(locked) if locked is not None else None
    if not selected and ((spec.conda and not no_conda) or (spec.pypi and not no_pypi)):
        return f"pixi.lock has none of its packages for {platform.name}"
    if locked is not None and locked in existing.view.platforms():
        subdir, packages = existing.view.platforms()[locked]
        if lock_identity(subdir, packages) != platform.identity:
            return f"platform {platform.name} declares other virtual packages than pixi.lock records"
    root = manifest.path.parent if manifest.path is not None else Path.cwd()
    channels = [absolute_location(c, root).rstrip("/") for c in existing.view.channels(name)]
    if channels != [channel_url(c).rstrip("/") for c in spec.channels]:
        return "its channels changed"
    if not selected:
        return None
    pypi_locked = any(key[0] == 2 for key, _ in selected)
    if pypi_locked and [u.rstrip("/") for u in raw.indexes()] != [u.rstrip("/") for u in spec.pypi_indexes()]:
        return "its PyPI indexes changed"
    fallback = (name, locked) in existing.fallbacks
    missing = existing.view.unsatisfied(name, locked or platform.name,
                                        [] if fallback or no_conda else spec.conda_specs(),
                                        [] if no_pypi else spec.pypi_requirements())
    return "; ".join(missing[:3]) if missing else None


def _check_lockable(manifest: Manifest, name: str, platform: PixiPlatform, why: str) -> None:
    """An environment that pixi.lock does not hold as pixi.toml asks is locked by us only when we can
    lock all of it; otherwise nothing is written and the user is told to let pixi lock it."""
    cannot = manifest.unlockable(name, platform)
    if not cannot:
        return
    raise BadInput(f"environment {name} ({platform.name}) must be locked again ({why}) and it {cannot}, which the "
                   "resolver does not lock: pixi.toml and pixi.lock are left as they were",
                   fix=f"run `pixi lock` to lock environment {name} (or undo the change to pixi.toml), then lock again")


def locked_normally(existing: ExistingLock | None, name: str, platform: PixiPlatform) -> bool:
    """Whether pixi.lock holds ``name`` on ``platform`` with its conda packages (not as a fallback)."""
    if existing is None or name not in existing.raw.envs:
        return False
    locked = existing.platform_of(platform.name)
    return bool(locked and existing.raw.envs[name].packages.get(locked)) and (name, locked) not in existing.fallbacks


def locked_python(existing: ExistingLock | None, name: str, platform: PixiPlatform) -> str | None:
    """The exact version of the conda python pixi.lock holds for ``name`` on ``platform``."""
    locked = existing.platform_of(platform.name) if existing is not None else None
    if locked is None or name not in existing.view.environments():
        return None
    conda, _, _ = existing.view.packages(name, locked, lambda location: location)
    return next((r.version for r in conda if r.name == "python"), None)


def compose_lock(project: ProjectPaths, manifest: Manifest, envs: list[LockedEnv], existing: ExistingLock | None,
                 kept: list[tuple[str, str, str]]) -> str:
    """pixi.lock's text: ``envs`` (locked now) as rattler writes them, the ``kept`` entries of the
    existing lock as they were, every platform as pixi writes it (its alias, its virtual packages)."""
    declared = manifest.platforms()
    aliases = lock_names(declared.values())
    used = {p.name for name in manifest.environment_names() for p in manifest.environment(name).platforms}
    platforms = [LockedPlatform(p.name, p.subdir, tuple(p.lock_virtual_packages()))
                 for p in declared.values() if p.name in used]
    raw = fresh_lock(envs, platforms, aliases, project.root)
    for name, locked, platform in kept:
        old = existing.raw.envs[name]
        env = raw.envs.setdefault(name, RawEnv(list(old.head), {}))
        env.head = list(old.head)  # the environment's own lines as they were (pixi's options too)
        selected = old.packages.get(locked, [])
        env.packages[aliases.get(platform, platform)] = list(selected)
        for key in existing.raw.reachable(key for key, _ in selected):
            raw.packages[key] = existing.raw.packages[key]  # the entry as it was, whatever wrote it
    kept_notes = [FALLBACK_HEADER + fallback_note(name, aliases.get(platform, platform),
                                                  existing.fallbacks[(name, locked)])
                  for name, locked, platform in kept if existing is not None and (name, locked) in existing.fallbacks]
    text = raw.text(sorted([*fallback_header(envs, aliases), *kept_notes]))
    check_lock_text(text, raw)
    return text
