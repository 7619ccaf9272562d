"""``lock``: pixi.toml environments → one pixi.lock (v7) that pixi itself calls up to date.

Every environment the manifest declares is locked, for every platform it declares (pixi requires
it): the requested ones are (re)resolved, the others keep their entries as text when the lock still
holds them as pixi.toml asks (:func:`carry_over`: platforms matched by identity as pixi matches them,
environments by name), and are resolved again only when the resolver can lock all of them; a
workspace it cannot lock is refused before anything runs. For one environment on one platform:

1. conda: py-rattler ``solve`` of its ``[dependencies]`` (its own ``python``; for CUDA the toolkit)
   against its channels, mirrors applied, with the platform's virtual packages as the manifest declares
   them (pixi's defaults otherwise), so a laptop can lock for a GPU cluster. When no channel answers,
   the environment falls back, explicitly, to a virtual environment of the host's Python: the lock
   says so in its header and ``setup`` in its summary;
2. PyPI: uv resolves its ``[pypi-dependencies]`` for that Python and platform (:mod:`.pypi`);
3. locations are canonical: the channel and index a package canonically comes from, never this
   machine's mirror or wheelhouse (:mod:`.canonical`); install applies the mirrors again.

pixi.toml and pixi.lock are written together, only after every environment resolved: a failed
resolve leaves the previous pair as it was, byte for byte.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from resolver.conda import solve
from resolver.decide.model import Plan
from resolver.errors import BadInput, SourceUnreachable
from resolver.fs import sha256_text, write_text_atomic
from resolver.lock.canonical import Canonicalizer
from resolver.lock.carry import carry_over, compose_lock, existing_lock, held, locked_normally, locked_python, realigned
from resolver.lock.lockfile import LockedEnv, LockedPlatform, read_lock
from resolver.lock.manifest import EnvSpec, Manifest
from resolver.lock.pixi_platforms import PixiPlatform
from resolver.lock.sources import Sources, channel_url
from resolver.paths import ProjectPaths
from resolver.planning import locked_plan_record, manifest_env_digest, plan_key, save_plan, stored_pythons
from resolver.planning import stored_plan as stored_plan  # the locked plans live in planning; importable here too

if TYPE_CHECKING:
    from resolver.uv import Speculation

Info = Callable[[str], None]


@dataclass(frozen=True)
class EnvLockReport:
    name: str
    platform: str
    conda_packages: int
    pypi_packages: int
    torch: str | None
    channels: tuple[str, ...]
    skipped_indexes: tuple[str, ...]
    seconds: float
    fallback: bool = False  # a virtual environment of the host's Python: no conda channel answered

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.name, "platform": self.platform, "conda_packages": self.conda_packages,
                "pypi_packages": self.pypi_packages, "torch": self.torch, "channels": list(self.channels),
                "skipped_indexes": list(self.skipped_indexes), "seconds": round(self.seconds, 3),
                "fallback": self.fallback}


@dataclass(frozen=True)
class LockSummary:
    lockfile: Path
    manifest: Path
    locked: tuple[EnvLockReport, ...]
    carried_over: tuple[str, ...] = ()
    manifest_changed: bool = False
    sha256: str = ""
    notes: tuple[str, ...] = field(default=())
    added: tuple[str, ...] = ()  # what pixi.toml gained ("environment cpu (...)", "platform linux-64-cuda13")

    def to_json(self) -> dict[str, Any]:
        return {"lockfile": str(self.lockfile), "manifest": str(self.manifest), "sha256": self.sha256,
                "manifest_changed": self.manifest_changed, "locked": [e.to_json() for e in self.locked],
                "carried_over": list(self.carried_over), "notes": list(self.notes), "added": list(self.added)}


def lock_plans(project: ProjectPaths, plans: list[Plan], *, sources: Sources | None = None,
               no_conda: bool = False, no_pypi: bool = False, info: Info = lambda text: None,
               edit: Callable[[Manifest], None] | None = None, speculation: Speculation | None = None) -> LockSummary:
    """Lock the environments of ``plans`` (re-resolved) and every other environment of the manifest
    (kept from the existing lock, or resolved when it holds none); write pixi.toml and pixi.lock.
    ``edit`` changes the manifest further before it is locked (``lock --fleet`` records its classes);
    ``speculation``: PyPI resolves the caller started ahead (:class:`resolver.uv.Speculation`)."""
    sources = sources or Sources.load(project.root)
    manifest = Manifest.load(project.manifest) if project.manifest.exists() else \
        Manifest.new(project.root.name or "project", project.manifest)
    before = project.manifest.read_bytes() if project.manifest.is_file() else b""
    if edit is not None:
        edit(manifest)
    notes: list[str] = []
    existing = existing_lock(project, manifest, notes, info)
    keep = held(existing, manifest, {plan.env_name for plan in plans})
    wanted = {manifest.ensure_environment(plan, keep): plan for plan in plans}
    existing = realigned(existing, manifest)  # with the platforms the plans added, as pixi aligns them on load
    changed = manifest.dumps().encode() != before
    for note in manifest.notes:
        notes.append(note)
        info(f"note: {note}")
    kept, todo = carry_over(existing, manifest, set(wanted), no_conda=no_conda, no_pypi=no_pypi)  # refusals: here
    ahead = ThreadPoolExecutor(max_workers=4)
    try:
        # uv starts now, for the Python the last lock solved, while the old lock is read and conda solves
        pythons = {} if no_pypi or no_conda else stored_pythons(project, list(wanted))
        early = {(name, platform.name): guess for name in wanted for platform in manifest.environment(name).platforms
                 if (guess := _start_pypi(ahead, project, manifest, name, platform, sources,
                                          pythons.get((name, platform.name)), info, speculation))}
        canonical = Canonicalizer(sources, project)
        envs: list[LockedEnv] = []
        reports: list[EnvLockReport] = []
        for position, (name, platform) in enumerate(todo, 1):
            guess = early.get((name, platform.name))
            if guess is None and not no_pypi and not no_conda:
                guess = _start_pypi(ahead, project, manifest, name, platform, sources,
                                    locked_python(existing, name, platform), info, speculation)
            started = time.monotonic()
            env, skipped = lock_environment(project, manifest, name, platform, sources, canonical,
                                            no_conda=no_conda, no_pypi=no_pypi, info=info, early=guess,
                                            speculation=speculation)
            if env.fallback and name not in wanted and locked_normally(existing, name, platform):
                raise SourceUnreachable(f"environment {name} ({platform.name}) must be locked again, and no conda "
                                        "channel answers: pixi.toml and pixi.lock are left as they were",
                                        fix="lock where its channels answer, or name a mirror (--channel, "
                                            "RESOLVER_CONDA_CHANNELS)")
            envs.append(env)
            torch = next((f"{a.name}=={a.version}" for a in env.pypi if a.name == "torch"), None)
            reports.append(EnvLockReport(name, platform.name, len(env.conda), len(env.pypi), torch, env.channels,
                                         skipped, time.monotonic() - started, env.fallback))
            info(f"[{position}/{len(todo)}] {name} ({platform.name}): locked in {reports[-1].seconds:.1f}s, "
                 f"{len(env.conda)} conda + {len(env.pypi)} PyPI packages")
    except BaseException:
        ahead.shutdown(wait=False, cancel_futures=True)  # the error now, not after a guessed resolve ends
        raise
    ahead.shutdown(wait=True)
    for note in canonical.notes + [r.fallback_note for r in envs if r.fallback]:
        if note not in notes:
            notes.append(note)
            info(f"note: {note}")
    text = compose_lock(project, manifest, envs, existing, kept)
    write_text_atomic(project.lockfile, text, label="lock")  # the pair: the lock first, then the manifest
    if changed:
        manifest.save(project.manifest)
    for plan in wanted.values():
        save_plan(project, plan, manifest, {e.platform.name: python for e in envs
                                            if e.name == plan.env_name and (python := _conda_python(e))})
    carried = [name for name, _, _ in kept]
    sources.remember(project.root)
    return LockSummary(project.lockfile, project.manifest, tuple(reports), tuple(dict.fromkeys(carried)), changed,
                       sha256_text(text), tuple(notes), tuple(manifest.added))


def lock_environment(project: ProjectPaths, manifest: Manifest, name: str, platform: PixiPlatform, sources: Sources,
                     canonical: Canonicalizer, *, no_conda: bool = False, no_pypi: bool = False,
                     info: Info = lambda text: None, early: tuple[str, Future] | None = None,
                     speculation: Speculation | None = None) -> tuple[LockedEnv, tuple[str, ...]]:
    """Resolve one environment for one platform.

    The PyPI part needs the conda python's exact version (markers). ``early`` is a resolve started
    before the conda solve for a guessed Python (:func:`_start_pypi`): its answer is taken only when
    the solve gives that same Python; otherwise uv runs again for the one solved."""
    spec = manifest.environment(name, platform.name)
    requirements = [] if no_pypi else spec.pypi_requirements()
    records, python, python_full, fallback = _solve_conda(spec, name, platform, sources, canonical,
                                                          no_conda=no_conda, info=info)
    artifacts: tuple = ()
    skipped: tuple[str, ...] = ()
    if requirements:
        if python is None:
            raise BadInput(f"environment {name} has PyPI dependencies but no python (neither a conda python nor a "
                           "python pin in its [dependencies])",
                           fix=f"add python = \"3.11.*\" to [feature.{name}.dependencies] in pixi.toml")
        wanted_python = python_full or python
        info(f"resolving PyPI packages for {name} ({platform.name}, Python {wanted_python}) with uv")
        if early is not None and early[0] == wanted_python:
            resolution = early[1].result()
        else:
            resolution = _resolve_pypi(project, spec, name, platform, sources, requirements, wanted_python, info,
                                       speculation)
        artifacts = tuple(canonical.pypi_artifact(a, spec) for a in resolution.artifacts)
        skipped = resolution.skipped_indexes
    indexes = tuple(spec.pypi_indexes()) if spec.pypi else ()
    locked = LockedPlatform(platform.name, platform.subdir, tuple(platform.lock_virtual_packages()))
    return LockedEnv(name, locked, tuple(channel_url(c) for c in spec.channels), tuple(records), artifacts, indexes,
                     fallback=fallback, python=python), skipped


def _solve_conda(spec: EnvSpec, name: str, platform: PixiPlatform, sources: Sources, canonical: Canonicalizer, *,
                 no_conda: bool, info: Info) -> tuple[list[Any], str | None, str | None, bool]:
    """(records, python X.Y, the conda python's X.Y.Z or None, whether the environment falls back)."""
    channels = tuple(channel_url(c) for c in spec.channels)
    python = _python_of_spec(spec)
    if spec.conda and no_conda:
        return [], _fallback_python(spec, name, "--no-conda skips the conda channels", "lock without --no-conda"), \
            None, True
    if not spec.conda:
        return [], python, None, False
    solve_channels = sources.channels_for(list(spec.channels))
    info(f"solving conda packages for {name} ({platform.name}): {', '.join(spec.conda_specs())}")
    try:
        solved = solve(solve_channels, spec.conda_specs(), platform.subdir, platform.solve_virtual_packages())
    except SourceUnreachable as exc:
        if solve_channels != list(channels):  # mirrors the user named must answer: no silent fallback
            raise
        info(f"note: {exc.message}: environment {name} falls back to a virtual environment of this machine's "
             "Python (not installable by pixi until locked where a conda channel answers)")
        return [], _fallback_python(spec, name, exc.message, exc.fix), None, True
    records = [canonical.conda_record(r, solve_channels, list(channels)) for r in solved]
    python_full = next((r.version for r in records if r.name == "python"), None)
    return records, ".".join(python_full.split(".")[:2]) if python_full else python, python_full, False


def _resolve_pypi(project: ProjectPaths, spec: EnvSpec, name: str, platform: PixiPlatform, sources: Sources,
                  requirements: list[str], python: str, info: Info = lambda text: None,
                  speculation: Speculation | None = None):
    from resolver.lock import pypi

    pinned = {url for _, dep in spec.pypi if (url := dep.get("index"))}
    extra = [sources.torch_index_for(url, _variant_of(url)) for url in sorted(pinned)]
    return pypi.resolve(pypi.PypiRequest(
        requirements=tuple(requirements), python=python, platform=platform.subdir, glibc=platform.glibc,
        index_url=sources.mirror(spec.index_url) if spec.index_url else None,
        extra_index_urls=tuple(dict.fromkeys(u.rstrip("/") for u in [
            *(u for u in extra if u), *sources.extra_index_urls, *(sources.mirror(u) for u in spec.extra_index_urls)])),
        find_links=tuple(dict.fromkeys([*sources.find_links, *spec.find_links]))),
        project, info=info, speculation=speculation, label=f"{name}/{platform.name}")


def _start_pypi(pool: ThreadPoolExecutor, project: ProjectPaths, manifest: Manifest, name: str, platform: PixiPlatform,
                sources: Sources, python: str | None, info: Info,
                speculation: Speculation | None = None) -> tuple[str, Future] | None:
    """The PyPI resolve of ``name`` for a guessed conda ``python``, started in ``pool`` (None when
    there is no guess, no conda python to solve, or nothing from PyPI)."""
    spec = manifest.environment(name, platform.name)
    requirements = spec.pypi_requirements()
    if not python or not spec.conda or not requirements:
        return None
    return python, pool.submit(_resolve_pypi, project, spec, name, platform, sources, requirements, python, info,
                               speculation)


def _conda_python(env: LockedEnv | None) -> str | None:
    """The exact version of the conda python a previous lock of this environment holds."""
    if env is None or env.fallback:
        return None
    return next((r.version for r in env.conda if r.name == "python"), None)


def _fallback_python(spec: EnvSpec, name: str, why: str, fix: str | None) -> str:
    """The Python of a fallback environment: the pinned ``X.Y``, or this interpreter's when the pin
    admits it (the fallback is a virtual environment of a Python this machine has)."""
    import sys

    from resolver.conda import version_matches

    pinned = _python_of_spec(spec)
    if pinned:
        return pinned
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    pin = dict(spec.conda).get("python", "").strip()
    if not pin or pin == "*" or version_matches(pin, f"{here}.{sys.version_info.micro}"):
        return here
    raise SourceUnreachable(f"{why}, and environment {name} asks for python {pin} which this machine's Python "
                            f"{here} is not", fix=fix)


def _python_of_spec(spec: EnvSpec) -> str | None:
    """``3.11`` from a ``python = "3.11.*"`` pin (what a fallback environment uses), else None."""
    import re

    pin = dict(spec.conda).get("python", "")
    match = re.match(r"^=?=?(\d+\.\d+)", pin.strip())
    return match.group(1) if match else None


def _variant_of(index_url: str) -> str:
    """``cu126`` from ``https://download.pytorch.org/whl/cu126`` (the {variant} of a torch-index template)."""
    return index_url.rstrip("/").rsplit("/", 1)[-1]


def lock_is_current(project: ProjectPaths, plan: Plan) -> bool:
    """Whether pixi.lock already holds ``plan``'s environment as ``plan`` would lock it.

    Checked against the lock's own content (torch build, the environment's conda python), so it also
    holds on a teammate's machine; where this machine locked it, the pixi.toml section must also be
    unchanged since.
    """
    if not project.lockfile.is_file() or not project.manifest.is_file():
        return False
    try:
        manifest = Manifest.load(project.manifest)
        if plan.env_name not in manifest.environment_names():
            return False
        spec = manifest.environment(plan.env_name)
        torch_pin = dict(spec.pypi).get("torch", {}).get("version", "")
        if torch_pin != "==" + plan.torch.requirement.split("==", 1)[1]:
            return False
        if any(dict(spec.conda).get(name) != wanted for name, wanted in plan.conda_packages):
            return False
        state = locked_plan_record(project, plan.env_name)
        if state is not None and (state["key"] != plan_key(plan)
                                  or state["manifest_env"] != manifest_env_digest(manifest, plan.env_name)):
            return False
        locked = {e.platform.name: e for e in read_lock(project.lockfile, project.root,
                                                        manifest.platforms().values()).get(plan.env_name, [])}
    except (BadInput, OSError, ValueError):
        return False
    if not spec.platforms or any(p.name not in locked for p in spec.platforms):
        return False
    version = plan.torch.requirement.split("==", 1)[1]
    for env in locked.values():
        torch = [a for a in env.pypi if a.name == "torch"]
        if torch and torch[0].version != version:
            return False
        if env.python not in (None, plan.python):
            return False
    return True
