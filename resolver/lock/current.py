"""Is pixi.lock current, and ``lock`` itself: nothing to do when it is, a relock (with the reasons)
when it is not.

:func:`lock_status` reads the project's files and asks :func:`resolver.lock.staleness.check`; a
"current" answer is remembered by the digest of its inputs (``.resolver/state/lock-check.json``,
nothing but a sha256), so an unchanged project is answered without loading tomlkit or py-rattler.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from resolver.errors import BadInput
from resolver.fs import read_bytes_bounded, sha256_bytes, write_json_atomic
from resolver.lock import PLAN_LIMIT, Info, LockSummary, _keep_plan, _quiet, lock_plans, plan_key, stored_plans
from resolver.paths import ProjectPaths, project_lock

if TYPE_CHECKING:
    from resolver.decide.model import Plan
    from resolver.lock import reasons
    from resolver.lock.manifest import Manifest
    from resolver.lock.sources import Sources


def lock_status(project: ProjectPaths, plans: Sequence[Plan] | None = None, *, remember: bool = False,
                pypi: bool = True) -> reasons.LockStatus:
    """Whether pixi.lock satisfies pixi.toml and ``plans`` (None: the plans locked here before), and
    why not (:func:`.staleness.check` on the project's files; nothing is solved); ``pypi=False``: as
    ``lock --no-pypi`` sees it (the PyPI packages are not held to pixi.toml).

    A "current" answer is remembered by the digest of everything it was computed from (the bytes of
    pixi.toml, pixi.lock and the stored plans, or the plans given; the project's folder; the rules'
    source and the resolver's version): the same inputs give it again without reading any of them
    through tomlkit or py-rattler, so an unchanged project answers in milliseconds. ``remember``
    writes it (``lock`` and ``setup`` do; ``lock --check`` writes nothing)."""
    from resolver.lock import reasons

    inputs = _inputs_digest(project, plans, pypi)
    if inputs is not None and inputs == _stamped(project):
        return reasons.LockStatus()
    status = _status(project, stored_plans(project) if plans is None else plans, pypi)
    if remember and status.current and inputs is not None and _inputs_digest(project, plans, pypi) == inputs:
        try:  # (unless something changed while it was checked)
            write_json_atomic(project.lock_check_stamp, {"inputs": inputs}, label="lock-check")
        except OSError:  # a read-only project: checked again next time
            pass
    return status


def lock_project(project: ProjectPaths, plans: Sequence[Plan] | None = None, *,
                 plan_here: Callable[[], list[Plan]] | None = None, force: bool = False,
                 sources: Callable[[], Sources] | None = None, no_conda: bool = False, no_pypi: bool = False,
                 info: Info = _quiet, edit: Callable[[Manifest], None] | None = None,
                 on_wait: Info | None = None) -> LockSummary:
    """``lock``: nothing to do when pixi.lock already satisfies pixi.toml and ``plans`` (unless ``force``,
    or ``edit`` changes the manifest), else :func:`lock_plans` under the project lock, with the reasons
    it was stale. ``plans``: None for the plans locked here before, or where there are none,
    ``plan_here()``'s (this machine's); ``sources``: how to load them (only a lock needs them)."""
    checking = not force and edit is None
    if plans is None and plan_here is not None and not _plan_files(project):
        plans = plan_here()  # nothing was locked here before
    status = None
    if checking:
        status = lock_status(project, plans, remember=True, pypi=not no_pypi)
        if status.current:
            for plan in plans or ():
                _keep_plan(project, plan)
            return _up_to_date(project)
        info(f"pixi.lock is stale: {status.reasons[0].sentence}"
             + (f" (and {len(status.reasons) - 1} more)" if len(status.reasons) > 1 else ""))
    with project_lock(project.stamps, on_wait=on_wait):  # one writer of pixi.toml / pixi.lock at a time
        summary = lock_plans(project, list(stored_plans(project) if plans is None else plans),
                             sources=sources() if sources else None, no_conda=no_conda, no_pypi=no_pypi, info=info,
                             edit=edit)
    return dataclasses.replace(summary, reasons=status.reasons if status else ())


def _up_to_date(project: ProjectPaths) -> LockSummary:
    return LockSummary(project.lockfile, project.manifest, (), sha256=sha256_bytes(project.lockfile.read_bytes()),
                       up_to_date=True)


def _inputs_digest(project: ProjectPaths, plans: Sequence[Plan] | None, pypi: bool = True) -> str | None:
    """What a check's answer depends on, as one sha256; None when pixi.toml or pixi.lock cannot be read."""
    from resolver import __version__
    from resolver.lock.lockfile import LOCK_LIMIT
    from resolver.lock.manifest import MANIFEST_LIMIT

    try:
        rules = [sha256_bytes(Path(__file__).with_name(name).read_bytes())  # the rules, as they are now
                 for name in ("staleness.py", "reasons.py")]
        manifest = read_bytes_bounded(project.manifest, limit=MANIFEST_LIMIT, what="the manifest")
        lock = read_bytes_bounded(project.lockfile, limit=LOCK_LIMIT, what="the lock file")
        if plans is None:
            planned: list[Any] = [[path.name, sha256_bytes(read_bytes_bounded(path, limit=PLAN_LIMIT, what="plan"))]
                                  for path in _plan_files(project)]
        else:
            planned = [plan_key(plan) for plan in plans]
    except (BadInput, OSError):
        return None
    return sha256_bytes(json.dumps([rules, __version__, str(project.root.resolve()), sha256_bytes(manifest),
                                    sha256_bytes(lock), plans is None, planned, pypi], sort_keys=True).encode())


def _plan_files(project: ProjectPaths) -> list[Path]:
    """The stored plans' files, by name."""
    folder = project.stamps / "plans"
    if not folder.is_dir():
        return []
    return sorted(folder / entry.name for entry in os.scandir(folder) if entry.name.endswith(".json"))


def _stamped(project: ProjectPaths) -> str | None:
    """The inputs digest of the last "current" answer: only from a regular file of this user's that
    no one else can write, holding nothing but a sha256."""
    path = project.lock_check_stamp
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022 or info.st_size > 4096:
        return None
    try:
        value = json.loads(read_bytes_bounded(path, limit=4096, what="the lock check", follow_symlinks=False))
    except (BadInput, ValueError, RecursionError):
        return None
    value = value.get("inputs") if isinstance(value, dict) else None
    return value if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) else None


def _status(project: ProjectPaths, plans: Sequence[Plan], pypi: bool) -> reasons.LockStatus:
    from resolver.lock import reasons, staleness
    from resolver.lock.lockfile import read_lock
    from resolver.lock.manifest import Manifest

    manifest = Manifest.load(project.manifest) if project.manifest.is_file() else \
        Manifest.new(project.root.name or "project", project.manifest)
    if not os.path.lexists(project.lockfile):
        return staleness.check(None, manifest, plans, pypi=pypi)
    try:
        lock = read_lock(project.lockfile, project.root)
    except BadInput as exc:
        missing = staleness.check(None, manifest, plans).reasons[:-1]
        return reasons.LockStatus((*missing, reasons.LockUnreadable(problem=exc.message)))
    return staleness.check(lock, manifest, plans, pypi=pypi)


