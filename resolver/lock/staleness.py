"""Does pixi.lock still satisfy pixi.toml and the plans, and if not, why (pixi's satisfiability check).

:func:`check` compares three things that are already read: the parsed lock (:func:`resolver.lock.lockfile.read_lock`),
the manifest and the plans. It solves nothing and asks no network. Each way a lock can fall behind
is its own frozen reason type (:mod:`.reasons`) naming the environment (and platform) it concerns and
saying why in one sentence, so ``lock --check`` can tell CI, ``setup`` can say why it relocks, and a
relock can carry over exactly the environments that still fit:

* the lock itself: :class:`LockMissing`, :class:`LockUnreadable`;
* an environment: :class:`EnvironmentMissing` (in pixi.toml, not in pixi.lock), :class:`EnvironmentRemoved`
  (the reverse), :class:`ChannelsChanged`, :class:`IndexesChanged`;
* a platform of it: :class:`PlatformAdded`, :class:`PlatformRemoved`, :class:`PlatformChanged` (its subdir
  or declared virtual packages);
* what is locked for a platform: :class:`DependencyChanged` (a conda or PyPI requirement of pixi.toml the
  locked packages do not satisfy), :class:`TorchBuildChanged`, :class:`PythonChanged`,
  :class:`PackagesNotRequired` (locked packages nothing in pixi.toml requires any more);
* a plan: :class:`EnvironmentNotDeclared`, and the torch build, Python, conda packages, PyTorch index
  or platform it wants that pixi.toml does not have yet (the same types, ``found_in="pixi.toml"``).

As in pixi (``crates/pixi_core/src/lock_file/satisfiability/``), platforms are matched by name (the
lock's names aligned with the manifest's by identity when it is read, as pixi aligns them) and
compared by identity (subdir and customised virtual packages),
channels by their URLs in order, PyPI indexes as recorded, and a requirement is satisfied when the
locked version of the package matches it; the packages of an environment must be exactly what its
requirements reach (conda ``depends``, PyPI ``Requires-Dist`` with markers evaluated for the
platform and the locked Python). A fallback environment (no conda packages: no channel answered)
is held to its Python pin only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from resolver.core.names import canonical_name
from resolver.core.versions import major_minor
from resolver.lock.reasons import (
    MANIFEST,
    ChannelsChanged,
    DependencyChanged,
    EnvironmentMissing,
    EnvironmentNotDeclared,
    EnvironmentRemoved,
    IndexesChanged,
    LocationNotCanonical,
    LockMissing,
    PackagesNotRequired,
    PlatformAdded,
    PlatformChanged,
    PlatformRemoved,
    PythonChanged,
    Reason,
    TorchBuildChanged,
)
from resolver.lock.summary import LockStatus

if TYPE_CHECKING:
    from resolver.core.model import Plan
    from resolver.lock.lockfile import LockedEnv, PypiArtifact
    from resolver.project.manifest import EnvSpec, Manifest
    from resolver.project.sources import Sources


# ------------------------------------------------------------------------------------------ check
def check(lock: Mapping[str, Sequence[LockedEnv]] | None, manifest: Manifest, plans: Iterable[Plan] = (), *,
          environments: Iterable[str] | None = None, pypi: bool = True, sources: Sources | None = None,
          requires: Mapping[str, Sequence[str]] | None = None) -> LockStatus:
    """Whether ``lock`` (None: there is no pixi.lock) satisfies ``manifest`` and ``plans``, and every
    reason it does not; ``environments``: only whether these still do (what a relock may carry over);
    ``pypi=False``: the PyPI packages are not held to pixi.toml (a lock made with ``--no-pypi``);
    ``sources``: the source settings in force, held against where the lock records its files (a path of
    this machine that a mirror now maps to a canonical address is stale: a lock now records the address);
    ``requires``: ``Requires-Dist`` of wheels by sha256 as their own metadata says (verified here), followed
    instead of what the lock claims for the same file."""
    reasons: list[Reason] = []
    names = manifest.environment_names()
    for plan in plans:
        reasons += _plan_reasons(manifest, names, plan)
    if lock is None:
        return LockStatus((*reasons, LockMissing()))
    for name in names if environments is None else [n for n in names if n in set(environments)]:
        if name not in lock:
            reasons.append(EnvironmentMissing(environment=name))
        else:
            reasons += _environment_reasons(manifest, name, lock[name], pypi, requires or {})
            if sources is not None and pypi:
                reasons += [r for env in lock[name] for r in _location_reasons(env, sources)]
    if environments is None:
        reasons += [EnvironmentRemoved(environment=name) for name in sorted(lock) if name not in names]
    return LockStatus(tuple(reasons))


def _plan_reasons(manifest: Manifest, names: list[str], plan: Plan) -> Iterator[Reason]:
    """What ``plan`` wants that pixi.toml does not hold yet (``lock`` would write it)."""
    name = plan.env_name
    if name not in names:
        yield EnvironmentNotDeclared(environment=name, target=plan.target)
        return
    spec = manifest.environment(name)
    index = plan.torch.source.url if plan.torch.source.kind == "pypi-index" else None
    torch = dict(spec.pypi).get("torch", {})
    pin = "==" + plan.torch.requirement.split("==", 1)[1]
    if torch.get("version") != pin or torch.get("index") != index:
        wanted = plan.torch.requirement + (f" from {index}" if index else "")
        found = f"{torch.get('version')}" + (f" from {torch['index']}" if torch.get("index") else "") \
            if torch.get("version") else None
        yield TorchBuildChanged(environment=name, wanted=wanted, found=found, found_in=MANIFEST)
    conda = dict(spec.conda)
    for package, wanted in plan.conda_packages:
        if conda.get(package) == wanted:
            continue
        if package == "python":
            yield PythonChanged(environment=name, wanted=str(plan.python), found=conda.get(package), found_in=MANIFEST)
        else:
            yield DependencyChanged(environment=name, ecosystem="conda", package=package, wanted=wanted,
                                    found=conda.get(package), found_in=MANIFEST)
    if plan.backend == "rocm" and index and spec.index_url != index:
        yield IndexesChanged(environment=name, wanted=(index,), locked=(spec.index_url,) if spec.index_url else (),
                             found_in=MANIFEST)
    platform = manifest.planned_platform(plan)
    # a CUDA environment is locked on its subdir's own platform when declaring the CUDA one would add it to
    # environments pixi.lock holds as they are (lock says so in a note): while the workspace still does not
    # declare that platform, the environment is where its lock put it
    on_base = plan.backend == "cuda" and platform.name not in manifest.platforms() and \
        any(p.subdir == plan.platform and p.cuda is None for p in spec.platforms)
    if platform.name not in [p.name for p in spec.platforms] and not on_base:
        yield PlatformAdded(environment=name, platform=platform.name, found_in=MANIFEST)


def _environment_reasons(manifest: Manifest, name: str, locked: Sequence[LockedEnv], pypi: bool,
                         requires: Mapping[str, Sequence[str]]) -> Iterator[Reason]:
    from resolver.project.pixi_platforms import lock_identity
    from resolver.project.sources import channel_url

    spec = manifest.environment(name)
    channels = tuple(channel_url(c) for c in spec.channels)
    found_channels = locked[0].channels if locked else channels
    if found_channels != channels:
        yield ChannelsChanged(environment=name, wanted=channels, locked=found_channels)
    indexes = tuple(spec.pypi_indexes())
    if spec.pypi and any(env.pypi for env in locked) and locked[0].indexes != indexes:  # written with wheels only
        yield IndexesChanged(environment=name, wanted=indexes, locked=locked[0].indexes)
    by_platform = {env.platform.name: env for env in locked}
    for platform in spec.platforms:
        env = by_platform.get(platform.name)
        merged = manifest.environment(name, platform.subdir)
        if env is None:
            if merged.conda or merged.pypi:  # an environment with nothing to lock has no entry
                yield PlatformAdded(environment=name, platform=platform.name)
            continue
        if lock_identity(env.platform.subdir, env.platform.virtual_packages) != platform.identity:  # as pixi matches
            yield PlatformChanged(environment=name, platform=platform.name, wanted_subdir=platform.subdir,
                                  locked_subdir=env.platform.subdir,
                                  wanted_virtual_packages=tuple(platform.lock_virtual_packages()),
                                  locked_virtual_packages=tuple(env.platform.virtual_packages))
            continue
        yield from _conda_reasons(merged, env)
        if pypi:
            yield from _pypi_reasons(merged, env, requires)
    declared = {p.name for p in spec.platforms}
    for platform_name in sorted(by_platform):
        if platform_name not in declared:
            yield PlatformRemoved(environment=name, platform=platform_name)


def _conda_reasons(spec: EnvSpec, env: LockedEnv) -> Iterator[Reason]:
    where = {"environment": spec.name, "platform": env.platform.name}
    if env.fallback:  # a virtual environment of the host's Python: only its Python pin can be checked
        pin = dict(spec.conda).get("python", "").strip()
        major_minor = re.match(r"^=?=?(\d+\.\d+)", pin)
        if major_minor and env.python and major_minor.group(1) != env.python:
            yield PythonChanged(**where, wanted=pin, found=env.python)
        return
    from resolver.tools.conda import depends_names, record_matches

    records = {r.name.lower(): r for r in env.conda}
    built = {name.lower() for name in env.sources}  # packages pixi builds from source: locked, not ours to match
    unmet = False
    for package, version in spec.conda:
        record = records.get(package.lower())
        text = package if version in ("", "*") else f"{package} {version}"
        if package.lower() in built or (record is not None and record_matches(record, text)):
            continue
        unmet = True
        found = record.version if record is not None else None
        if package == "python":
            yield PythonChanged(**where, wanted=version, found=found)
        else:
            yield DependencyChanged(**where, ecosystem="conda", package=package, wanted=version, found=found)
    if unmet or built:  # (what a source package depends on is not in the lock to follow)
        return
    reached: set[str] = set()
    todo = [package.lower() for package, _ in spec.conda]
    while todo:
        package = todo.pop()
        if package in reached or package not in records:
            continue
        reached.add(package)
        todo += depends_names(records[package])
    extra = sorted(set(records) - reached)
    if extra:
        yield PackagesNotRequired(**where, ecosystem="conda", packages=tuple(extra))


def _pypi_reasons(spec: EnvSpec, env: LockedEnv, requires: Mapping[str, Sequence[str]]) -> Iterator[Reason]:
    where = {"environment": spec.name, "platform": env.platform.name}
    artifacts = {canonical_name(a.name): a for a in env.pypi}
    unmet = False
    for package, dep in spec.pypi:
        art = artifacts.get(canonical_name(package))
        wanted = str(dep.get("version") or "*").strip()
        if art is not None and _version_admits(wanted, art.version):
            continue
        unmet = True
        found = art.version if art is not None else None
        if canonical_name(package) == "torch":
            yield TorchBuildChanged(**where, wanted=wanted, found=found)
        else:
            yield DependencyChanged(**where, ecosystem="pypi", package=package, wanted=wanted, found=found)
    if unmet or not artifacts:
        return
    extra = sorted(set(artifacts) - _pypi_reached(spec, artifacts, _marker_environment(env), requires))
    if extra:
        yield PackagesNotRequired(**where, ecosystem="pypi", packages=tuple(extra))


def _location_reasons(env: LockedEnv, sources: Sources) -> Iterator[Reason]:
    """Each locked PyPI file recorded at a path of this machine that ``sources`` map to its canonical address
    (what :class:`resolver.lock.canonical.Canonicalizer` would record now)."""
    for art in env.pypi:
        if not art.location.startswith("file://"):
            continue
        canonical = sources.canonical(art.location)
        if canonical is not None and canonical != art.location:
            yield LocationNotCanonical(environment=env.name, platform=env.platform.name, package=art.name,
                                       location=art.location, canonical=canonical)


def _pypi_reached(spec: EnvSpec, artifacts: dict[str, PypiArtifact], markers: dict[str, str],
                  requires: Mapping[str, Sequence[str]] | None = None) -> set[str]:
    """The locked PyPI packages that pixi.toml's requirements reach through ``Requires-Dist`` (markers
    evaluated for the platform; a requirement that cannot be read or evaluated counts as reached): a
    wheel's own, where ``requires`` knows it by the wheel's sha256, else what the lock records."""
    from packaging.requirements import InvalidRequirement, Requirement

    reached: set[str] = set()
    visited: set[tuple[str, str]] = set()
    todo = [(canonical_name(name), extra) for name, dep in spec.pypi for extra in ("", *(dep.get("extras") or ()))]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in visited or name not in artifacts:
            continue
        visited.add((name, extra))
        reached.add(name)
        art = artifacts[name]
        for text in (requires or {}).get(art.sha256, art.requires_dist):
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                words = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
                todo += [(canonical_name(words.group(1)), "")] if words else []
                continue
            if requirement.marker is not None and not _marker_holds(requirement.marker, markers, extra):
                continue
            child = canonical_name(requirement.name)
            todo += [(child, ""), *((child, e) for e in requirement.extras)]
    return reached


def _marker_holds(marker: Any, markers: dict[str, str], extra: str) -> bool:
    try:
        return bool(marker.evaluate({**markers, "extra": extra}))
    except Exception:  # an unknown variable or an odd comparison: assume it holds (never a false "stale")
        return True


def _marker_environment(env: LockedEnv) -> dict[str, str]:
    """PEP 508 marker values of the locked platform and Python (what uv resolved for)."""
    from resolver.core.platforms import PLATFORMS

    platform = PLATFORMS.get(env.platform.subdir)
    full = next((r.version for r in env.conda if r.name == "python"), None) or f"{env.python}.0"
    os_name = platform.os if platform else "linux"
    return {"python_version": env.python or major_minor(full), "python_full_version": full,
            "implementation_name": "cpython", "implementation_version": full,
            "platform_python_implementation": "CPython",
            "os_name": "nt" if os_name == "win" else "posix",
            "sys_platform": {"linux": "linux", "osx": "darwin", "win": "win32"}.get(os_name, os_name),
            "platform_system": {"linux": "Linux", "osx": "Darwin", "win": "Windows"}.get(os_name, os_name),
            "platform_machine": (platform.wheel_machine if platform else "x86_64").replace("amd64", "AMD64"),
            "platform_release": "", "platform_version": ""}


def _version_admits(spec: str, version: str) -> bool:
    """Whether a PEP 440 specifier (``==2.13.0+cpu``, ``>=1.2,<2``, ``*``) admits ``version``; a spec
    that cannot be read admits nothing (the relock then says what is wrong with it)."""
    if spec in ("", "*"):
        return True
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return SpecifierSet(spec, prereleases=True).contains(version, prereleases=True)
    except (InvalidSpecifier, ValueError):
        return False
