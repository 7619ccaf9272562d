"""Locking plans: every environment pixi.toml declares resolved into one pixi.lock (see the package's
docstring for how); the half of ``lock`` an unchanged project never loads."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from resolver.core.errors import BadInput, SourceUnreachable
from resolver.core.fs import read_bytes_bounded
from resolver.core.versions import major_minor
from resolver.lock.summary import EnvLockReport, Info, LockSummary, quiet
from resolver.project.paths import ProjectPaths
from resolver.tools.conda import solve

if TYPE_CHECKING:  # the resolving half is imported when a lock runs: an unchanged project never loads it
    from resolver.core.model import Plan
    from resolver.lock.canonical import Canonicalizer
    from resolver.lock.lockfile import ExistingLock, LockedEnv
    from resolver.project.manifest import Carry, EnvSpec, Manifest
    from resolver.project.pixi_platforms import PixiPlatform
    from resolver.project.sources import Sources

@dataclass(frozen=True)
class LockSettings:
    """What every environment of one lock run is resolved with."""

    project: ProjectPaths
    sources: Sources
    canonical: Canonicalizer  # collects the notes about locations it could not make canonical
    no_conda: bool = False
    no_pypi: bool = False
    info: Info = quiet
    # (environment, platform's name) -> "name==version" of the PyPI packages the existing lock holds: a relock
    # keeps them where the new requirements allow (uv's preferences), so a package added moves nothing else
    preferences: Any = None


def lock_plans(project: ProjectPaths, plans: list[Plan], *, sources: Sources | None = None,
               no_conda: bool = False, no_pypi: bool = False, info: Info = quiet,
               edit: Callable[[Manifest], None] | None = None,
               carry: Mapping[str, Carry] | None = None, team: bool = True) -> LockSummary:
    """Lock the environments of ``plans`` (re-resolved) and every other environment of the manifest
    (kept from the existing lock while it holds them as pixi.toml asks, else resolved); write pixi.toml
    and pixi.lock. ``edit`` changes the manifest further before it is locked (``lock --fleet`` records
    its classes); ``carry``: per environment of a plan, the user's dependencies it takes from another
    (``upgrade``); ``team``: a pixi.toml made here proposes a team's platforms (:meth:`Manifest.new`)."""
    from concurrent.futures import ThreadPoolExecutor

    from resolver.core.fs import sha256_text, write_text_atomic
    from resolver.lock.canonical import Canonicalizer
    from resolver.lock.carry import carry_over, compose_lock, existing_lock, held, locked_normally, realigned
    from resolver.plan import locked
    from resolver.project.manifest import Manifest
    from resolver.project.sources import Sources

    sources = sources or Sources.load(project.root)
    manifest = Manifest.load(project.manifest) if project.manifest.exists() else \
        Manifest.new(project.root.name or "project", project.manifest, team=team)
    from resolver.project.paths import MANIFEST_LIMIT

    before = read_bytes_bounded(project.manifest, limit=MANIFEST_LIMIT, what="pixi.toml") \
        if project.manifest.is_file() else b""
    if edit is not None:
        edit(manifest)
    notes: list[str] = []
    existing = existing_lock(project, manifest, notes, info)
    keep = held(existing, manifest, {plan.env_name for plan in plans})
    wanted = {manifest.ensure_environment(plan, keep, (carry or {}).get(plan.env_name)): plan for plan in plans}
    manifest.drop_unserved()
    existing = realigned(existing, manifest)  # with the platforms the plans added, as pixi aligns them on load
    changed = manifest.dumps().encode() != before
    for note in manifest.notes:
        notes.append(note)
        info(f"note: {note}")
    kept, todo = carry_over(existing, manifest, set(wanted), no_conda=no_conda, no_pypi=no_pypi)  # refusals: here
    settings = LockSettings(project, sources, Canonicalizer(sources, project), no_conda=no_conda, no_pypi=no_pypi,
                            info=info, preferences=_preferences(existing, project, set(wanted)))
    # every (environment, platform) is resolved on its own, side by side; meanwhile the ones kept are checked
    # for packages nothing requires any more (the carry-over does not look for them), which are resolved too
    pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1))
    try:
        resolving = {(name, platform.name): pool.submit(_resolved, settings, manifest.environment(name, platform.name),
                                                        platform) for name, platform in todo}
        again = _no_longer_required(existing, project, manifest, {name for name, _, _ in kept}, no_pypi, sources)
        kept = [entry for entry in kept if entry[0] not in again]
        for name in sorted(again):
            for platform in manifest.environment(name).platforms:
                if (name, platform.name) in resolving:
                    continue
                todo.append((name, platform))
                resolving[(name, platform.name)] = pool.submit(_resolved, settings,
                                                               manifest.environment(name, platform.name), platform)
        order = {name: i for i, name in enumerate(manifest.environment_names())}
        todo.sort(key=lambda item: order[item[0]])  # reported in pixi.toml's order
        envs: list[LockedEnv] = []
        reports: list[EnvLockReport] = []
        left_out: set[str] = set()
        for position, (name, platform) in enumerate(todo, 1):
            try:
                env, report = resolving[(name, platform.name)].result()
                unserved = "no conda channel answers" if env.fallback else None
            except BadInput as exc:
                if (name, platform.name) not in manifest.optional:
                    raise
                unserved = exc.message
            if unserved and (name, platform.name) in manifest.optional:
                manifest.leave_out(name, platform.name)
                left_out.add(platform.name)
                note = (f"environment {name} is not locked for {platform.name} ({unserved}); where its channels and "
                        f"indexes serve it: python -m resolver lock --platform {platform.subdir}")
                notes.append(note)
                info(f"[{position}/{len(todo)}] {name} ({platform.name}): left out: {unserved}")
                continue
            if env.fallback and name not in wanted and locked_normally(existing, name, platform):
                raise SourceUnreachable(f"environment {name} ({platform.name}) must be locked again, and no conda "
                                        "channel answers: pixi.toml and pixi.lock are left as they were",
                                        fix="lock where its channels answer, or name a mirror (--channel, "
                                            "RESOLVER_CONDA_CHANNELS)")
            envs.append(env)
            reports.append(report)
            info(f"[{position}/{len(todo)}] {name} ({platform.name}): locked in {report.seconds:.1f}s, "
                 f"{report.conda_packages} conda + {report.pypi_packages} PyPI packages")
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)  # the error now, not after the other resolves end
        raise
    pool.shutdown()
    if left_out:  # what the workspace no longer lists is not locked for any environment either
        served = {(n, p.name) for n in manifest.environment_names() for p in manifest.environment(n).platforms}
        envs = [e for e in envs if (e.name, e.platform.name) in served]
        reports = [r for r in reports if (r.name, r.platform) in served]
        changed = manifest.dumps().encode() != before
    for note in sorted(settings.canonical.notes) + [r.fallback_note for r in envs if r.fallback]:
        if note not in notes:
            notes.append(note)
            info(f"note: {note}")
    text = compose_lock(project, manifest, envs, existing, kept)
    write_text_atomic(project.lockfile, text, label="lock")  # the pair: the lock first, then the manifest
    if changed:
        manifest.save(project.manifest)
    for plan in wanted.values():
        locked.save(project, plan, manifest, {e.platform.name: python for e in envs
                                            if e.name == plan.env_name and (python := _conda_python(e))})
    carried = [name for name, _, _ in kept]
    sources.remember(project.root)
    return LockSummary(project.lockfile, project.manifest, tuple(reports), tuple(dict.fromkeys(carried)), changed,
                       sha256_text(text), tuple(notes), tuple(manifest.added))


def _preferences(existing: ExistingLock | None, project: ProjectPaths, planned: set[str]) -> dict[tuple[str, str], tuple[str, ...]]:
    """The PyPI pins of every environment the existing lock holds, but those whose plan is locked now (a plan
    chooses anew), by (environment, platform's name)."""
    if existing is None:
        return {}
    from resolver.lock.lockfile import locked_envs

    try:
        envs = locked_envs(existing, project.root)
    except (BadInput, ValueError):
        return {}
    return {(name, env.platform.name): tuple(f"{a.name}=={a.version}" for a in env.pypi)
            for name, platforms in envs.items() if name not in planned for env in platforms}


def resolves(project: ProjectPaths, manifest: Manifest, name: str, *, sources: Sources,
             info: Info = quiet) -> str | None:
    """Whether environment ``name`` of ``manifest`` (as held in memory: nothing is written) resolves on every
    platform it has: None, or why not in one sentence."""
    from resolver.lock.canonical import Canonicalizer

    settings = LockSettings(project, sources, Canonicalizer(sources, project), info=info)
    for platform in manifest.environment(name).platforms:
        try:
            lock_environment(settings, manifest.environment(name, platform.name), platform)
        except BadInput as exc:
            return exc.message
    return None


def _no_longer_required(existing: ExistingLock | None, project: ProjectPaths, manifest: Manifest, kept: set[str],
                        no_pypi: bool, sources: Sources | None = None) -> set[str]:
    """Of the environments ``kept``, the ones pixi.lock holds with packages nothing in pixi.toml requires
    any more (a dependency removed), or with a file at a path of this machine that ``sources`` now map to
    its canonical address (a mirror added), where the resolver can lock them."""
    if existing is None or not kept:
        return set()
    from resolver.lock import staleness
    from resolver.lock.lockfile import locked_envs

    status = staleness.check(locked_envs(existing, project.root), manifest, environments=sorted(kept),
                             pypi=not no_pypi, sources=sources)
    again = ("packages-not-required", "location-not-canonical")
    return {r.environment for r in status.reasons if r.kind in again and r.environment
            and not any(manifest.unlockable(r.environment, p) for p in manifest.environment(r.environment).platforms)}


def _resolved(settings: LockSettings, spec: EnvSpec, platform: PixiPlatform) -> tuple[LockedEnv, EnvLockReport]:
    """:func:`lock_environment`, and what ``lock`` reports of it."""
    started = time.monotonic()
    env, skipped = lock_environment(settings, spec, platform)
    torch = next((f"{a.name}=={a.version}" for a in env.pypi if a.name == "torch"), None)
    return env, EnvLockReport(spec.name, platform.name, len(env.conda), len(env.pypi), torch, env.channels, skipped,
                              time.monotonic() - started, env.fallback)


def lock_environment(settings: LockSettings, spec: EnvSpec, platform: PixiPlatform) -> tuple[LockedEnv, tuple[str, ...]]:
    """Resolve one environment (``spec``: merged for ``platform``) for one platform: its conda
    packages, then its PyPI packages for the conda python the solve gave (its exact version decides
    markers); which PyPI indexes answer is asked while conda solves."""
    from concurrent.futures import ThreadPoolExecutor

    from resolver.lock.lockfile import LockedEnv, LockedPlatform
    from resolver.project.sources import channel_url

    requirements = [] if settings.no_pypi else spec.pypi_requirements()
    artifacts: tuple = ()
    skipped: tuple[str, ...] = ()
    with ThreadPoolExecutor(max_workers=1) as side:
        answering = side.submit(_answering_indexes, settings, spec) if requirements else None
        records, python, python_full, fallback = _solve_conda(settings, spec, platform)
        if answering is not None:
            if python is None:
                raise BadInput(f"environment {spec.name} has PyPI dependencies but no python (neither a conda python "
                               "nor a python pin in its [dependencies])",
                               fix=f"add python = \"3.11.*\" to [feature.{spec.name}.dependencies] in pixi.toml")
            resolution = _resolve_pypi(settings, spec, platform, requirements, python_full or python, answering.result())
            with ThreadPoolExecutor(max_workers=8) as pool:  # a location PyPI is asked about is a network round trip
                artifacts = tuple(pool.map(lambda a: settings.canonical.pypi_artifact(a, spec), resolution.artifacts))
            skipped = resolution.skipped_indexes
    indexes = tuple(spec.pypi_indexes()) if spec.pypi else ()
    locked = LockedPlatform(platform.name, platform.subdir, tuple(platform.lock_virtual_packages()))
    return LockedEnv(spec.name, locked, tuple(channel_url(c) for c in spec.channels), tuple(records), artifacts,
                     indexes, fallback=fallback, python=python), skipped


def _solve_conda(settings: LockSettings, spec: EnvSpec,
                 platform: PixiPlatform) -> tuple[list[Any], str | None, str | None, bool]:
    """(records, python X.Y, the conda python's X.Y.Z or None, whether the environment falls back)."""
    from resolver.project.sources import channel_url

    channels = tuple(channel_url(c) for c in spec.channels)
    python = _python_of_spec(spec)
    if spec.conda and settings.no_conda:
        return [], _fallback_python(spec, "--no-conda skips the conda channels", "lock without --no-conda"), None, True
    if not spec.conda:
        return [], python, None, False
    solve_channels = settings.sources.channels_for(list(spec.channels))
    settings.info(f"solving conda packages for {spec.name} ({platform.name}): {', '.join(spec.conda_specs())}")
    try:
        solved = solve(solve_channels, spec.conda_specs(), platform.subdir, platform.solve_virtual_packages())
    except SourceUnreachable as exc:
        if solve_channels != list(channels):  # mirrors the user named must answer: no silent fallback
            raise
        settings.info(f"note: {exc.message}: environment {spec.name} falls back to a virtual environment of this "
                      "machine's Python (not installable by pixi until locked where a conda channel answers)")
        return [], _fallback_python(spec, exc.message, exc.fix), None, True
    records = [settings.canonical.conda_record(r, solve_channels, list(channels)) for r in solved]
    python_full = next((r.version for r in records if r.name == "python"), None)
    return records, major_minor(python_full) if python_full else python, python_full, False


def _pypi_indexes(settings: LockSettings, spec: EnvSpec) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """(index-url, extra index URLs, wheelhouses) of ``spec``'s PyPI part, mirrors applied: the
    manifest's, the PyTorch index of each pinned package, and ``[tool.resolver]``'s."""
    sources = settings.sources
    pinned = {url for _, dep in spec.pypi if (url := dep.get("index"))}
    extra = [sources.torch_index_for(url, _variant_of(url)) for url in sorted(pinned)]
    return (sources.mirror(spec.index_url) if spec.index_url else None,
            tuple(dict.fromkeys(u.rstrip("/") for u in [*(u for u in extra if u), *sources.extra_index_urls,
                                                        *(sources.mirror(u) for u in spec.extra_index_urls)])),
            tuple(dict.fromkeys([*sources.find_links, *spec.find_links])))


def _answering_indexes(settings: LockSettings, spec: EnvSpec):
    from resolver.lock import pypi

    return pypi.uv_sources(*_pypi_indexes(settings, spec), info=settings.info)


def _resolve_pypi(settings: LockSettings, spec: EnvSpec, platform: PixiPlatform, requirements: list[str], python: str,
                  sources=None):
    from resolver.lock import pypi

    settings.info(f"resolving PyPI packages for {spec.name} ({platform.name}, Python {python}) with uv")
    index_url, extra_index_urls, find_links = _pypi_indexes(settings, spec)
    return pypi.resolve(pypi.PypiRequest(
        requirements=tuple(requirements), python=python, platform=platform.subdir, glibc=platform.glibc,
        index_url=index_url, extra_index_urls=extra_index_urls, find_links=find_links,
        preferences=(settings.preferences or {}).get((spec.name, platform.name), ())),
        settings.project, info=settings.info, sources=sources)


def _fallback_python(spec: EnvSpec, why: str, fix: str | None) -> str:
    """The Python of a fallback environment: the pinned ``X.Y``, or this interpreter's when the pin
    admits it (the fallback is a virtual environment of a Python this machine has)."""
    import sys

    from resolver.tools.conda import version_matches

    pinned = _python_of_spec(spec)
    if pinned:
        return pinned
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    pin = dict(spec.conda).get("python", "").strip()
    if not pin or pin == "*" or version_matches(pin, f"{here}.{sys.version_info.micro}"):
        return here
    raise SourceUnreachable(f"{why}, and environment {spec.name} asks for python {pin} which this machine's Python "
                            f"{here} is not", fix=fix)


def _python_of_spec(spec: EnvSpec) -> str | None:
    """``3.11`` from a ``python = "3.11.*"`` pin (what a fallback environment uses), else None."""

    pin = dict(spec.conda).get("python", "")
    match = re.match(r"^=?=?(\d+\.\d+)", pin.strip())
    return match.group(1) if match else None


def _variant_of(index_url: str) -> str:
    """``cu126`` from ``https://download.pytorch.org/whl/cu126`` (the {variant} of a torch-index template)."""
    return index_url.rstrip("/").rsplit("/", 1)[-1]


def _conda_python(env: LockedEnv | None) -> str | None:
    """The exact version of the conda python an environment was locked with."""
    if env is None or env.fallback:
        return None
    return next((r.version for r in env.conda if r.name == "python"), None)
