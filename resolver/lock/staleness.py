"""Does pixi.lock still satisfy pixi.toml and the plans, and if not, why (pixi's satisfiability check).

:func:`check` compares three things that are already read: the parsed lock (:func:`resolver.lock.lockfile.read_lock`),
the manifest and the plans. It solves nothing and asks no network. Each way a lock can fall behind
is its own frozen reason type naming the environment (and platform) it concerns and saying why in
one sentence, so ``lock --check`` can tell CI, ``setup`` can say why it relocks, and a relock can carry
over exactly the environments that still fit:

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

As in pixi (``crates/pixi_core/src/lock_file/satisfiability/``), platforms are matched by name,
channels by their URLs in order, PyPI indexes as recorded, and a requirement is satisfied when the
locked version of the package matches it; the packages of an environment must be exactly what its
requirements reach (conda ``depends``, PyPI ``Requires-Dist`` with markers evaluated for the
platform and the locked Python). A fallback environment (no conda packages: no channel answered)
is held to its Python pin only.

>>> LockMissing().sentence
'pixi.lock does not exist'
>>> EnvironmentMissing(environment="cpu").to_json()["kind"]
'environment-missing'
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Iterator, Mapping, Sequence

if TYPE_CHECKING:
    from resolver.decide.model import Plan
    from resolver.lock.lockfile import LockedEnv, PypiArtifact
    from resolver.lock.manifest import EnvSpec, Manifest

# pixi.toml and pixi.lock, as the sentences name them
MANIFEST, LOCK = "pixi.toml", "pixi.lock"


@dataclass(frozen=True, kw_only=True)
class Reason:
    """Why pixi.lock does not satisfy pixi.toml or a plan: one case, the environment and platform it
    concerns (None: the whole lock, or every platform of the environment)."""

    kind: ClassVar[str]
    environment: str | None = None
    platform: str | None = None

    @property
    def sentence(self) -> str:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **dataclasses.asdict(self), "sentence": self.sentence}

    def _on(self) -> str:
        return f" ({self.platform})" if self.platform else ""


@dataclass(frozen=True, kw_only=True)
class LockMissing(Reason):
    kind: ClassVar[str] = "lock-missing"

    @property
    def sentence(self) -> str:
        return f"{LOCK} does not exist"


@dataclass(frozen=True, kw_only=True)
class LockUnreadable(Reason):
    kind: ClassVar[str] = "lock-unreadable"
    problem: str

    @property
    def sentence(self) -> str:
        return f"{LOCK} cannot be read ({self.problem})"


@dataclass(frozen=True, kw_only=True)
class EnvironmentMissing(Reason):
    kind: ClassVar[str] = "environment-missing"

    @property
    def sentence(self) -> str:
        return f"environment {self.environment} is not in {LOCK}"


@dataclass(frozen=True, kw_only=True)
class EnvironmentRemoved(Reason):
    kind: ClassVar[str] = "environment-removed"

    @property
    def sentence(self) -> str:
        return f"{LOCK} holds environment {self.environment}, which {MANIFEST} no longer declares"


@dataclass(frozen=True, kw_only=True)
class EnvironmentNotDeclared(Reason):
    """A plan's environment that pixi.toml does not declare yet (locking the plan adds it)."""

    kind: ClassVar[str] = "environment-not-declared"
    target: str

    @property
    def sentence(self) -> str:
        return f"{MANIFEST} has no environment {self.environment} yet (the plan for {self.target} adds it)"


@dataclass(frozen=True, kw_only=True)
class PlatformAdded(Reason):
    kind: ClassVar[str] = "platform-added"
    found_in: str = LOCK  # where the platform is missing: pixi.lock, or pixi.toml for a plan's platform

    @property
    def sentence(self) -> str:
        if self.found_in == MANIFEST:
            return f"the plan runs environment {self.environment} on platform {self.platform}, which {MANIFEST} " \
                   "does not list for it"
        return f"environment {self.environment} is not locked for platform {self.platform}"


@dataclass(frozen=True, kw_only=True)
class PlatformRemoved(Reason):
    kind: ClassVar[str] = "platform-removed"

    @property
    def sentence(self) -> str:
        return f"{LOCK} holds environment {self.environment} for platform {self.platform}, which {MANIFEST} no " \
               "longer lists for it"


@dataclass(frozen=True, kw_only=True)
class PlatformChanged(Reason):
    kind: ClassVar[str] = "platform-changed"
    wanted_subdir: str
    locked_subdir: str
    wanted_virtual_packages: tuple[str, ...]
    locked_virtual_packages: tuple[str, ...]

    @property
    def sentence(self) -> str:
        if self.wanted_subdir != self.locked_subdir:
            return f"platform {self.platform} is {self.wanted_subdir} in {MANIFEST} but {LOCK} was solved for " \
                   f"{self.locked_subdir}"
        return f"platform {self.platform} declares [{', '.join(self.wanted_virtual_packages)}] in {MANIFEST} but " \
               f"{LOCK} was solved with [{', '.join(self.locked_virtual_packages)}]"


@dataclass(frozen=True, kw_only=True)
class ChannelsChanged(Reason):
    kind: ClassVar[str] = "channels-changed"
    wanted: tuple[str, ...]
    locked: tuple[str, ...]

    @property
    def sentence(self) -> str:
        how = "were extended" if self.wanted[:len(self.locked)] == self.locked else "changed"
        return f"the channels of environment {self.environment} {how}: {_urls(self.wanted)} in {MANIFEST}, " \
               f"{_urls(self.locked)} in {LOCK}"


@dataclass(frozen=True, kw_only=True)
class IndexesChanged(Reason):
    kind: ClassVar[str] = "indexes-changed"
    wanted: tuple[str, ...]
    locked: tuple[str, ...]
    found_in: str = LOCK

    @property
    def sentence(self) -> str:
        wanted_by = "the plan" if self.found_in == MANIFEST else MANIFEST
        return f"the PyPI indexes of environment {self.environment} changed: {_urls(self.wanted)} in " \
               f"{wanted_by}, {_urls(self.locked) or 'none'} in {self.found_in}"


@dataclass(frozen=True, kw_only=True)
class DependencyChanged(Reason):
    """A requirement the other side does not satisfy: pixi.toml's against pixi.lock, or a plan's
    against pixi.toml (``found_in``)."""

    kind: ClassVar[str] = "dependency-changed"
    ecosystem: str  # "conda" | "pypi"
    package: str
    wanted: str  # the spec, "*" for any version
    found: str | None  # the locked version (the spec in pixi.toml for a plan); None: absent
    found_in: str = LOCK

    @property
    def sentence(self) -> str:
        kind = "PyPI" if self.ecosystem == "pypi" else "conda"
        wanted_by = "the plan" if self.found_in == MANIFEST else MANIFEST
        wanted = self.package if self.wanted in ("", "*") else f"{self.package} {self.wanted}"
        found = f"has {self.package} {self.found}" if self.found is not None else f"has no {kind} package {self.package}"
        return f"{wanted_by} asks for {kind} package {wanted} in environment {self.environment}, but " \
               f"{self.found_in} {found}{self._on()}"


@dataclass(frozen=True, kw_only=True)
class TorchBuildChanged(Reason):
    kind: ClassVar[str] = "torch-build-changed"
    wanted: str  # "==2.13.0+cpu", or with a plan "torch==2.13.0+cpu from <index>"
    found: str | None
    found_in: str = LOCK

    @property
    def sentence(self) -> str:
        if self.found_in == MANIFEST:
            return f"the plan wants {self.wanted} for environment {self.environment}, but {MANIFEST} " + \
                (f"pins torch {self.found}" if self.found else "does not pin torch")
        return f"environment {self.environment} asks for torch {self.wanted}, but {LOCK} has " + \
            (f"torch {self.found}" if self.found else "no torch") + self._on()


@dataclass(frozen=True, kw_only=True)
class PythonChanged(Reason):
    kind: ClassVar[str] = "python-changed"
    wanted: str
    found: str | None
    found_in: str = LOCK

    @property
    def sentence(self) -> str:
        if self.found_in == MANIFEST:
            return f"the plan wants Python {self.wanted} for environment {self.environment}, but {MANIFEST} pins " \
                   f"python {self.found or 'nothing'}"
        return f"environment {self.environment} asks for python {self.wanted}, but {LOCK} has " + \
            (f"Python {self.found}" if self.found else "no Python") + self._on()


@dataclass(frozen=True, kw_only=True)
class PackagesNotRequired(Reason):
    kind: ClassVar[str] = "packages-not-required"
    ecosystem: str
    packages: tuple[str, ...]

    @property
    def sentence(self) -> str:
        kind = "PyPI" if self.ecosystem == "pypi" else "conda"
        return f"{LOCK} holds {kind} packages that nothing in environment {self.environment} requires any more" \
               f"{self._on()}: {', '.join(self.packages)}"


@dataclass(frozen=True)
class LockStatus:
    """The answer: current when there is no reason."""

    reasons: tuple[Reason, ...] = ()

    @property
    def current(self) -> bool:
        return not self.reasons

    def about(self, environment: str) -> tuple[Reason, ...]:
        """The reasons that concern ``environment`` (those about the whole lock included)."""
        return tuple(r for r in self.reasons if r.environment in (None, environment))

    def fits(self, environment: str, platform: str) -> bool:
        """Whether the locked ``environment`` on ``platform`` still satisfies pixi.toml (it can be carried over)."""
        return not any(r.platform in (None, platform) for r in self.about(environment))

    def stale_environments(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.environment for r in self.reasons if r.environment))

    def to_json(self) -> dict[str, Any]:
        return {"current": self.current, "reasons": [r.to_json() for r in self.reasons]}


# ------------------------------------------------------------------------------------------ check
def check(lock: Mapping[str, Sequence[LockedEnv]] | None, manifest: Manifest, plans: Iterable[Plan] = (), *,
          environments: Iterable[str] | None = None) -> LockStatus:
    """Whether ``lock`` (None: there is no pixi.lock) satisfies ``manifest`` and ``plans``, and every
    reason it does not; ``environments``: only whether these still do (what a relock may carry over)."""
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
            reasons += _environment_reasons(manifest, name, lock[name])
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
            yield PythonChanged(environment=name, wanted=plan.python, found=conda.get(package), found_in=MANIFEST)
        else:
            yield DependencyChanged(environment=name, ecosystem="conda", package=package, wanted=wanted,
                                    found=conda.get(package), found_in=MANIFEST)
    if plan.backend == "rocm" and index and spec.index_url != index:
        yield IndexesChanged(environment=name, wanted=(index,), locked=(spec.index_url,) if spec.index_url else (),
                             found_in=MANIFEST)
    platform = manifest.planned_platform(plan)
    if platform.name not in [p.name for p in spec.platforms]:
        yield PlatformAdded(environment=name, platform=platform.name, found_in=MANIFEST)


def _environment_reasons(manifest: Manifest, name: str, locked: Sequence[LockedEnv]) -> Iterator[Reason]:
    from resolver.lock.sources import channel_url

    spec = manifest.environment(name)
    channels = tuple(channel_url(c) for c in spec.channels)
    found_channels = locked[0].channels if locked else channels
    if found_channels != channels:
        yield ChannelsChanged(environment=name, wanted=channels, locked=found_channels)
    indexes = tuple(spec.pypi_indexes())
    if spec.pypi and locked and locked[0].indexes != indexes:
        yield IndexesChanged(environment=name, wanted=indexes, locked=locked[0].indexes)
    by_platform = {env.platform.name: env for env in locked}
    for platform in spec.platforms:
        env = by_platform.get(platform.name)
        merged = manifest.environment(name, platform.subdir)
        if env is None:
            if merged.conda or merged.pypi:  # an environment with nothing to lock has no entry
                yield PlatformAdded(environment=name, platform=platform.name)
            continue
        wanted_vps = tuple(sorted(platform.lock_virtual_packages()))
        if env.platform.subdir != platform.subdir or tuple(sorted(env.platform.virtual_packages)) != wanted_vps:
            yield PlatformChanged(environment=name, platform=platform.name, wanted_subdir=platform.subdir,
                                  locked_subdir=env.platform.subdir, wanted_virtual_packages=wanted_vps,
                                  locked_virtual_packages=tuple(sorted(env.platform.virtual_packages)))
            continue
        yield from _conda_reasons(merged, env)
        yield from _pypi_reasons(merged, env)
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
    from resolver.conda import depends_names, record_matches

    records = {r.name.normalized: r for r in env.conda}
    unmet = False
    for package, version in spec.conda:
        record = records.get(package.lower())
        text = package if version in ("", "*") else f"{package} {version}"
        if record is not None and record_matches(record, text):
            continue
        unmet = True
        found = str(record.version) if record is not None else None
        if package == "python":
            yield PythonChanged(**where, wanted=version, found=found)
        else:
            yield DependencyChanged(**where, ecosystem="conda", package=package, wanted=version, found=found)
    if unmet:
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


def _pypi_reasons(spec: EnvSpec, env: LockedEnv) -> Iterator[Reason]:
    where = {"environment": spec.name, "platform": env.platform.name}
    artifacts = {_pypi_name(a.name): a for a in env.pypi}
    unmet = False
    for package, dep in spec.pypi:
        art = artifacts.get(_pypi_name(package))
        wanted = str(dep.get("version") or "*").strip()
        if art is not None and _version_admits(wanted, art.version):
            continue
        unmet = True
        found = art.version if art is not None else None
        if _pypi_name(package) == "torch":
            yield TorchBuildChanged(**where, wanted=wanted, found=found)
        else:
            yield DependencyChanged(**where, ecosystem="pypi", package=package, wanted=wanted, found=found)
    if unmet or not artifacts:
        return
    extra = sorted(set(artifacts) - _pypi_reached(spec, artifacts, _marker_environment(env)))
    if extra:
        yield PackagesNotRequired(**where, ecosystem="pypi", packages=tuple(extra))


def _pypi_reached(spec: EnvSpec, artifacts: dict[str, PypiArtifact], markers: dict[str, str]) -> set[str]:
    """The locked PyPI packages that pixi.toml's requirements reach through ``Requires-Dist`` (markers
    evaluated for the platform; a requirement that cannot be read or evaluated counts as reached)."""
    from packaging.requirements import InvalidRequirement, Requirement

    reached: set[str] = set()
    visited: set[tuple[str, str]] = set()
    todo = [(_pypi_name(name), extra) for name, dep in spec.pypi for extra in ("", *(dep.get("extras") or ()))]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in visited or name not in artifacts:
            continue
        visited.add((name, extra))
        reached.add(name)
        for text in artifacts[name].requires_dist:
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                words = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
                todo += [(_pypi_name(words.group(1)), "")] if words else []
                continue
            if requirement.marker is not None and not _marker_holds(requirement.marker, markers, extra):
                continue
            child = _pypi_name(requirement.name)
            todo += [(child, ""), *((child, e) for e in requirement.extras)]
    return reached


def _marker_holds(marker: Any, markers: dict[str, str], extra: str) -> bool:
    try:
        return bool(marker.evaluate({**markers, "extra": extra}))
    except Exception:  # an unknown variable or an odd comparison: assume it holds (never a false "stale")
        return True


def _marker_environment(env: LockedEnv) -> dict[str, str]:
    """PEP 508 marker values of the locked platform and Python (what uv resolved for)."""
    from resolver.platforms import PLATFORMS

    platform = PLATFORMS.get(env.platform.subdir)
    full = next((str(r.version) for r in env.conda if r.name.normalized == "python"), None) or f"{env.python}.0"
    os_name = platform.os if platform else "linux"
    return {"python_version": env.python or ".".join(full.split(".")[:2]), "python_full_version": full,
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


def _pypi_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _urls(urls: Sequence[str]) -> str:
    """URLs for a sentence, without the credentials an index URL may carry."""
    return ", ".join(re.sub(r"//[^/@\s]*@", "//", url) for url in urls)
