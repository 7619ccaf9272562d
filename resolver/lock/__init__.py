"""``lock``: plans → pixi.toml environments → one pixi.lock (v7) holding every environment.

For each environment being locked:

1. pixi.toml gets (or keeps) feature + environment ``plan.env_name`` with torch pinned to the plan's
   exact build and index (:mod:`resolver.lock.manifest`);
2. conda side: py-rattler ``solve`` of the environment's conda dependencies against its channels
   (mirrors applied, the local kernel channel ``.resolver/channel`` first when it has packages) with
   the *target's* virtual packages from the plan, so a laptop can lock for a GPU cluster. No conda
   dependencies → no solve (the environment is then a venv of the host's Python, see install);
3. PyPI side: pip resolves the environment's PyPI dependencies (:mod:`resolver.lock.pypi`);
4. all environments go into pixi.lock (:mod:`resolver.lock.lockfile`); environments not asked for
   are carried over from the existing lock unchanged.

The plan used is stored in ``.resolver/state/plans/<env>.json`` so :func:`lock_is_current` can tell
whether the lock is stale for a new plan.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from resolver.conda import index_channel, solve, virtual_package_strings
from resolver.decide.model import Plan
from resolver.errors import BadInput, Refusal, ResolverError
from resolver.lock.lockfile import LockedEnv, LockedPlatform, read_lock, write_lock
from resolver.lock.manifest import Manifest
from resolver.lock.sources import Sources
from resolver.paths import ProjectPaths

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

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.name, "platform": self.platform, "conda_packages": self.conda_packages,
                "pypi_packages": self.pypi_packages, "torch": self.torch, "channels": list(self.channels),
                "skipped_indexes": list(self.skipped_indexes), "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class LockSummary:
    lockfile: Path
    manifest: Path
    locked: tuple[EnvLockReport, ...]
    carried_over: tuple[str, ...] = ()
    manifest_changed: bool = False
    sha256: str = ""
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"lockfile": str(self.lockfile), "manifest": str(self.manifest), "sha256": self.sha256,
                "manifest_changed": self.manifest_changed, "locked": [e.to_json() for e in self.locked],
                "carried_over": list(self.carried_over), "notes": list(self.notes)}


def lock_plans(project: ProjectPaths, plans: list[Plan], *, sources: Sources | None = None,
               no_conda: bool = False, no_pypi: bool = False, all_platforms: bool = False,
               info: Info = lambda text: None) -> LockSummary:
    """Lock the environments of ``plans`` (re-resolved) plus every other locked one (carried over).

    Each environment is locked for its plan's platform; with ``all_platforms`` also for every other
    platform its features declare (e.g. ``osx-arm64`` for ``cpu``), resolved for that platform.
    """
    sources = sources or Sources.load(project.root)
    manifest = Manifest.load(project.manifest) if project.manifest.exists() else \
        Manifest.new(project.root.name or "project", project.manifest)
    before = manifest.dumps() if project.manifest.is_file() else ""
    by_env: dict[str, Plan] = {}
    for plan in plans:
        by_env[manifest.ensure_environment(plan)] = plan
    changed = manifest.dumps() != before
    if changed:
        manifest.save(project.manifest)
    notes = []
    try:
        existing = read_lock(project.lockfile, project.root) if project.lockfile.is_file() else {}
    except BadInput as exc:  # a damaged lock is rewritten; what it held for other environments is lost
        existing = {}
        notes.append(f"the previous pixi.lock could not be read ({exc.message}); only the environments "
                     f"locked now are in the new one")
        info(f"note: {notes[-1]}")
    envs: list[LockedEnv] = []
    reports = []
    for name, plan in sorted(by_env.items()):
        declared = manifest.environment(name).platforms
        before = {e.platform.subdir for e in existing.get(name, [])}  # platforms locked before stay locked
        extra = [p for p in declared if p != plan.platform and (all_platforms or p in before)]
        targets = [plan, *(for_platform(plan, p) for p in extra)]
        for target in targets:
            started = time.monotonic()
            try:
                env, skipped = lock_environment(project, manifest, target, sources, no_conda=no_conda,
                                                no_pypi=no_pypi, info=info)
            except ResolverError as exc:
                if target is plan:
                    raise
                # another OS resolved from here: pip evaluates markers for this host, so this can fail;
                # the plan's own platform still locks, the other keeps what it had
                kept = [e for e in existing.get(name, []) if e.platform.subdir == target.platform]
                envs.extend(kept)
                notes.append(f"{name} could not be locked for {target.platform} from this machine ({exc.message}); "
                             + ("the previous entry is kept" if kept else "lock it on a machine of that platform"))
                info(f"note: {notes[-1]}")
                continue
            envs.append(env)
            torch = next((f"{a.name}=={a.version}" for a in env.pypi if a.name == "torch"), None)
            reports.append(EnvLockReport(name, env.platform.name, len(env.conda), len(env.pypi), torch,
                                         env.channels, skipped, time.monotonic() - started))
    carried = []
    for name, locked in sorted(existing.items()):
        if name in by_env or name not in manifest.environment_names():
            continue
        envs.extend(locked)
        carried.append(name)
    _check_platform_names(envs)
    text = write_lock(project.lockfile, envs, project.root)
    for name, plan in by_env.items():
        save_plan(project, plan, manifest)
    return LockSummary(project.lockfile, project.manifest, tuple(reports), tuple(carried), changed,
                       hashlib.sha256(text.encode()).hexdigest(), tuple(notes))


def lock_environment(project: ProjectPaths, manifest: Manifest, plan: Plan, sources: Sources, *,
                     no_conda: bool = False, no_pypi: bool = False,
                     info: Info = lambda text: None) -> tuple[LockedEnv, tuple[str, ...]]:
    """Resolve one environment for ``plan``'s target machine."""
    from resolver.lock import pypi

    spec = manifest.environment(plan.env_name, plan.platform)
    platform = locked_platform(plan)
    channels = sources.channels_for(list(spec.channels))
    local = local_kernel_channel(project, info)
    if local:
        channels = [local, *[c for c in channels if c != local]]
    records: list[Any] = []
    conda_specs = spec.conda_specs()
    if conda_specs and not no_conda:
        info(f"solving conda packages for {spec.name} ({plan.platform}): {', '.join(conda_specs)}")
        records = solve(channels, conda_specs, plan.platform, list(platform.virtual_packages))  # conda gateway
    indexes = [sources.torch_index_for(url, plan.torch.variant) for url in spec.pypi_indexes()
               if url != spec.index_url]
    index_url = sources.mirror(spec.index_url) if spec.index_url else None
    if sources.torch_index and not indexes and index_url is None:
        indexes = [sources.torch_index_for(None, plan.torch.variant)]
    artifacts: tuple = ()
    skipped: tuple[str, ...] = ()
    requirements = [] if no_pypi else spec.pypi_requirements()
    if requirements:
        info(f"resolving PyPI packages for {spec.name} ({plan.platform}, Python {plan.python}) with pip")
        resolution = pypi.resolve(pypi.PipRequest(
            requirements=tuple(requirements), python=plan.python, platform=plan.platform, glibc=plan.glibc,
            index_url=index_url,
            extra_index_urls=tuple(dict.fromkeys([*(i for i in indexes if i), *sources.extra_index_urls,
                                                  *(sources.mirror(u) for u in spec.extra_index_urls)])),
            find_links=tuple(dict.fromkeys([*sources.find_links, *spec.find_links]))),
            project.cache / "pypi", info=info)
        artifacts, skipped = resolution.artifacts, resolution.skipped_indexes
    return LockedEnv(spec.name, platform, tuple(channels), tuple(records), artifacts), skipped


def for_platform(plan: Plan, platform: str) -> Plan:
    """``plan`` for another platform of the same environment (the glibc floor only applies to linux)."""
    import dataclasses

    return dataclasses.replace(plan, platform=platform, glibc=plan.glibc if platform.startswith("linux") else None,
                               runnable_here=False)


def locked_platform(plan: Plan) -> LockedPlatform:
    """The lock platform of a plan: the subdir, named apart when it carries a GPU virtual package."""

    vps = virtual_package_strings(plan.platform, glibc=plan.glibc,
                                  cuda=plan.cuda_driver if plan.backend == "cuda" else None)
    name = plan.platform if plan.backend == "cpu" else f"{plan.platform}-{plan.env_name}"
    return LockedPlatform(name, plan.platform, tuple(vps))


def _check_platform_names(envs: list[LockedEnv]) -> None:
    seen: dict[str, LockedPlatform] = {}
    for env in envs:
        other = seen.setdefault(env.platform.name, env.platform)
        if other != env.platform:
            raise Refusal(f"two environments lock platform {env.platform.name} for different machines "
                          f"({', '.join(other.virtual_packages)} vs {', '.join(env.platform.virtual_packages)})",
                          fix="lock them from the same profile (--profile), or relock all with one `lock` run")


def local_kernel_channel(project: ProjectPaths, info: Info = lambda text: None) -> str | None:
    """``.resolver/channel`` as a channel URL when it holds packages, re-indexed when they changed."""
    folder = project.channel
    if not folder.is_dir():
        return None
    packages = sorted(p for p in folder.glob("*/*") if p.suffix == ".conda" or p.name.endswith(".tar.bz2"))
    if not packages:
        return None
    newest = max(p.stat().st_mtime for p in packages)
    indexes = [folder / sub / "repodata.json" for sub in {p.parent.name for p in packages}]
    if not (folder / "noarch").is_dir() or any(not i.is_file() or i.stat().st_mtime < newest for i in indexes):
        info(f"indexing the local channel {folder}")
        index_channel(folder)
    return folder.resolve().as_uri() + "/"


# -- staleness ------------------------------------------------------------------------------------
def plan_key(plan: Plan) -> dict[str, Any]:
    """What in a plan decides the lock (trace, warnings and kernels do not)."""
    return {"environment": plan.env_name, "platform": plan.platform, "python": plan.python,
            "torch": plan.torch.requirement, "index": plan.torch.source.url, "glibc": plan.glibc,
            "cuda_driver": plan.cuda_driver if plan.backend == "cuda" else None}


def save_plan(project: ProjectPaths, plan: Plan, manifest: Manifest) -> Path:
    folder = project.stamps / "plans"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{plan.env_name}.json"
    data = {"plan": plan.to_json(), "key": plan_key(plan), "manifest_env": _env_digest(manifest, plan.env_name)}
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def stored_plan(project: ProjectPaths, env_name: str) -> Plan | None:
    path = project.stamps / "plans" / f"{env_name}.json"
    try:
        return Plan.from_json(json.loads(path.read_text(encoding="utf-8"))["plan"])
    except (OSError, ValueError, KeyError, BadInput):
        return None


def _env_digest(manifest: Manifest, name: str) -> str:
    spec = manifest.environment(name)
    return hashlib.sha256(json.dumps([spec.channels, spec.platforms, spec.conda, spec.pypi, spec.index_url,
                                      spec.extra_index_urls, spec.find_links], default=str).encode()).hexdigest()


def lock_is_current(project: ProjectPaths, plan: Plan) -> bool:
    """Whether pixi.lock already holds ``plan``'s environment as ``plan`` would lock it.

    Checked against the lock's own content (torch build, target virtual packages, Python tag), so
    it also holds on a teammate's machine; where this machine locked it, the pixi.toml section
    must also be unchanged since.
    """
    if not project.lockfile.is_file() or not project.manifest.is_file():
        return False
    try:
        manifest = Manifest.load(project.manifest)
        if plan.env_name not in manifest.environment_names():
            return False
        spec = manifest.environment(plan.env_name, plan.platform)
        torch_pin = dict(spec.pypi).get("torch", {}).get("version", "")
        if torch_pin != "==" + plan.torch.requirement.split("==", 1)[1]:
            return False
        state_path = project.stamps / "plans" / f"{plan.env_name}.json"
        if state_path.is_file():
            state = json.loads(state_path.read_text(encoding="utf-8"))
            if state.get("key") != plan_key(plan) or state.get("manifest_env") != _env_digest(manifest, plan.env_name):
                return False
        locked = read_lock(project.lockfile, project.root).get(plan.env_name, [])
    except (ResolverError, OSError, ValueError):
        return False
    want = locked_platform(plan)
    for env in locked:
        if env.platform != want:
            continue
        torch = [a for a in env.pypi if a.name == "torch"]
        version = plan.torch.requirement.split("==", 1)[1]
        if torch and torch[0].version != version:
            return False
        tag = "cp" + plan.python.replace(".", "")
        if torch and "-cp" in torch[0].file_name and f"-{tag}-" not in torch[0].file_name:
            return False
        return bool(torch) or not any(name == "torch" for name, _ in spec.pypi)
    return False
