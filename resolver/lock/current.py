"""Is pixi.lock current, and ``lock`` itself: nothing to do when it is, a relock (with the reasons)
when it is not.

:func:`lock_status` reads the project's files and asks :func:`resolver.lock.staleness.check`; a
"current" answer is remembered by the fingerprint of its inputs (``.resolver/state/lock-check.json``,
a :class:`~resolver.core.fingerprint.Memo` of ``true``), so an unchanged project is answered without loading tomlkit or py-rattler.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from resolver.core.errors import BadInput
from resolver.core.fs import read_bytes_bounded, sha256_of
from resolver.lock.summary import Info, LockStatus, LockSummary, quiet
from resolver.plan import locked
from resolver.project.paths import ProjectPaths, project_lock

if TYPE_CHECKING:
    from resolver.core.model import Plan
    from resolver.project.manifest import Manifest
    from resolver.project.sources import Sources


def lock_status(project: ProjectPaths, plans: Sequence[Plan] | None = None, *, remember: bool = False,
                pypi: bool = True) -> LockStatus:
    """Whether pixi.lock satisfies pixi.toml and ``plans`` (None: the plans locked here before), and
    why not (:func:`.staleness.check` on the project's files; nothing is solved); ``pypi=False``: as
    ``lock --no-pypi`` sees it (the PyPI packages are not held to pixi.toml).

    A "current" answer is remembered by the digest of everything it was computed from (the bytes of
    pixi.toml, pixi.lock and the stored plans, or the plans given; the project's folder; the rules'
    source and the resolver's version): the same inputs give it again without reading any of them
    through tomlkit or py-rattler, so an unchanged project answers in milliseconds. ``remember``
    writes it (``lock`` and ``setup`` do; ``lock --check`` writes nothing)."""
    inputs = _inputs_digest(project, plans, pypi)
    if inputs is not None and _check_memo(project).recall(inputs):
        return LockStatus()
    status = _status(project, locked.read_all(project) if plans is None else plans, pypi)
    if remember and status.current and inputs is not None and _inputs_digest(project, plans, pypi) == inputs:
        _check_memo(project).keep(inputs, True)  # (unless an input changed while it was checked)
    return status


def holds(project: ProjectPaths, plan: Plan) -> bool:
    """Whether pixi.lock holds ``plan``'s environment as ``plan`` would lock it (no reason concerns it)."""
    return not lock_status(project, [plan]).about(plan.env_name)


def lock_project(project: ProjectPaths, plans: Sequence[Plan] | None = None, *,
                 plan_here: Callable[[], list[Plan]] | None = None, force: bool = False,
                 sources: Callable[[], Sources] | None = None, no_conda: bool = False, no_pypi: bool = False,
                 info: Info = quiet, edit: Callable[[Manifest], None] | None = None,
                 on_wait: Info | None = None) -> LockSummary:
    """``lock``: nothing to do when pixi.lock already satisfies pixi.toml and ``plans`` (unless ``force``,
    or ``edit`` changes the manifest), else :func:`lock_plans` under the project lock, with the reasons
    it was stale. ``plans``: None for the plans locked here before, or where there are none,
    ``plan_here()``'s (this machine's); ``sources``: how to load them (only a lock needs them)."""
    checking = not force and edit is None
    if plans is None and plan_here is not None and not locked.files(project):
        plans = plan_here()  # nothing was locked here before
    status = None
    if checking:
        status = lock_status(project, plans, remember=True, pypi=not no_pypi)
        if status.current:
            for plan in plans or ():
                locked.keep(project, plan)
            return _up_to_date(project)
        info(f"pixi.lock is stale: {status.reasons[0].sentence}"
             + (f" (and {len(status.reasons) - 1} more)" if len(status.reasons) > 1 else ""))
    with project_lock(project.stamps, on_wait=on_wait):  # one writer of pixi.toml / pixi.lock at a time
        from resolver.lock.resolving import lock_plans

        summary = lock_plans(project, list(locked.read_all(project) if plans is None else plans),
                             sources=sources() if sources else None, no_conda=no_conda, no_pypi=no_pypi, info=info,
                             edit=edit)
    return dataclasses.replace(summary, reasons=status.reasons if status else ())


def _up_to_date(project: ProjectPaths) -> LockSummary:
    return LockSummary(project.lockfile, project.manifest, (), sha256=sha256_of(project.lockfile),
                       up_to_date=True)


def _inputs_digest(project: ProjectPaths, plans: Sequence[Plan] | None, pypi: bool = True) -> str | None:
    """What a check's answer depends on, as one fingerprint; None when pixi.toml or pixi.lock cannot be read."""
    from resolver import __version__
    from resolver.core.fingerprint import fingerprint
    from resolver.project.paths import LOCK_LIMIT, MANIFEST_LIMIT

    try:
        manifest = read_bytes_bounded(project.manifest, limit=MANIFEST_LIMIT, what="the manifest")
        lock = read_bytes_bounded(project.lockfile, limit=LOCK_LIMIT, what="the lock file")
        planned: list[Any] = locked.file_digests(project) if plans is None else [locked.plan_key(p) for p in plans]
    except (BadInput, OSError):
        return None
    sources = _sources(project)
    rules = [Path(__file__).with_name(name) for name in ("staleness.py", "reasons.py")]  # the rules, as they are now
    return fingerprint(*rules, __version__, str(project.root.resolve()), manifest, lock, plans is None, planned, pypi,
                       None if sources is None else [sources.to_json(), sources.origins],
                       project.pypi_requires)  # the wheels' own Requires-Dist the check follows


def _sources(project: ProjectPaths) -> Sources | None:
    """The source settings in force here (pixi.toml's and pyproject.toml's [tool.resolver], what the last
    lock here was told, the environment's variables): part of what a check's answer depends on. None
    when they cannot be read (``lock`` then says why)."""
    from resolver.project.sources import Sources

    try:
        return Sources.load(project.root)
    except BadInput:
        return None


def _check_memo(project: ProjectPaths):
    """The last "current" answer, kept by the fingerprint of its inputs (a record like every record: a
    regular file of this user's that no one else can write)."""
    from resolver.core.fingerprint import Memo
    from resolver.core.records import Flag

    return Memo(project.lock_check_stamp, Flag(), label="lock-check", limit=4096)


def _status(project: ProjectPaths, plans: Sequence[Plan], pypi: bool) -> LockStatus:
    from resolver.lock import reasons, staleness
    from resolver.lock.lockfile import read_lock
    from resolver.project.manifest import Manifest
    from resolver.project.pixi_toml import read_pixi_toml

    manifest = Manifest.view(read_pixi_toml(project.manifest)) if project.manifest.is_file() else \
        Manifest.new(project.root.name or "project", project.manifest)
    if not os.path.lexists(project.lockfile):
        return staleness.check(None, manifest, plans, pypi=pypi)
    try:
        lock = read_lock(project.lockfile, project.root, manifest.platforms().values())
    except BadInput as exc:
        missing = staleness.check(None, manifest, plans).reasons[:-1]
        return LockStatus((*missing, reasons.LockUnreadable(problem=exc.message)))
    if not pypi:
        return staleness.check(lock, manifest, plans, pypi=pypi, sources=_sources(project))
    from resolver.lock.pypi import requires_read_here

    wheels = [art for envs in lock.values() for env in envs for art in env.pypi]
    return staleness.check(lock, manifest, plans, pypi=pypi, sources=_sources(project),
                           requires=requires_read_here(project, wheels))


