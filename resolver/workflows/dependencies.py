"""``add`` and ``remove``: a dependency written into (or taken out of) pixi.toml, the environments that
have the feature locked again (every other environment's entries kept byte for byte, the others of the
changed environment preferred at their locked versions), then installed: only what changed.

pixi's spelling: ``add NAME... [--pypi] [--feature F | -e ENV]``. Without ``--feature`` or ``-e``, the
project's default environment is the one changed (its own feature: the resolver's environments do not
include pixi's default feature). pixi.toml is written through :class:`resolver.project.manifest.Manifest`
and only together with pixi.lock: a package that does not resolve leaves both as they were.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from resolver.core.errors import BadInput, UsageError
from resolver.project.paths import ProjectPaths

if TYPE_CHECKING:
    from resolver.install import InstallSummary
    from resolver.lock.summary import LockSummary
    from resolver.project.manifest import Manifest

Info = Callable[[str], None]

_CONDA_NAME = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.\-]*)\s*(.*)$")
# What the plan chooses: written by `lock`/`upgrade`, never by hand through add/remove.
PLANNED = ("torch",)


@dataclass(frozen=True)
class Wanted:
    """One package named on the command line: its name and what pixi.toml records for it."""

    name: str
    spec: Any  # "*", ">=0.9", or {"version": ..., "extras": [...]} (PyPI)

    @classmethod
    def parse(cls, text: str, *, pypi: bool) -> "Wanted":
        """``tabulate``, ``tabulate>=0.9``, ``rich[jupyter]==13.*`` (PyPI, PEP 508 without a marker or URL);
        ``numpy``, ``numpy>=1.26``, ``numpy 1.26.*`` (conda, a MatchSpec's name and version)."""
        text = text.strip()
        if pypi:
            from packaging.requirements import InvalidRequirement, Requirement

            from resolver.core.names import check_pypi_name

            try:
                requirement = Requirement(text)
            except InvalidRequirement as exc:
                raise BadInput(f"{text!r} is not a PyPI requirement ({exc})",
                               fix="name a package, optionally with a version: NAME, NAME>=1.0, NAME[extra]==2.*") from None
            if requirement.url or requirement.marker:
                raise BadInput(f"{text!r} has a URL or a marker, which add does not write",
                               fix="add it by name and version; write markers in pixi.toml by hand")
            name = check_pypi_name(requirement.name, where="the command line")
            version = str(requirement.specifier) or "*"
            if requirement.extras:
                return cls(name, {"version": version, "extras": sorted(requirement.extras)})
            return cls(name, version)
        match = _CONDA_NAME.match(text)
        if not match:
            raise BadInput(f"{text!r} is not a conda package name", fix="name a package, e.g. numpy or 'numpy>=1.26'")
        name, version = match.group(1), match.group(2).strip()
        if any(c in version for c in "[]#;,@/\\") and not re.fullmatch(r"[0-9A-Za-z.*=<>!~ ,|_+]*", version):
            raise BadInput(f"{text!r} has a version this command does not write", fix="use NAME or 'NAME>=1.0'")
        return cls(name, version or "*")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "spec": self.spec}


@dataclass(frozen=True)
class Change:
    """What ``add`` or ``remove`` did: pixi.toml's feature, the packages, the lock and each install."""

    action: str  # "add" | "remove"
    feature: str
    pypi: bool
    packages: tuple[Wanted, ...]
    environments: tuple[str, ...]  # the environments that have the feature
    lock: LockSummary
    installs: tuple[InstallSummary, ...]
    not_installed: tuple[str, ...]  # environments of the feature that are not installed here (nothing to change)
    seconds: float

    @property
    def table(self) -> str:
        kind = "pypi-dependencies" if self.pypi else "dependencies"
        return f"[{kind}]" if self.feature == "default" else f"[feature.{self.feature}.{kind}]"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "feature": self.feature, "table": self.table,
                "kind": "pypi" if self.pypi else "conda", "packages": [p.to_json() for p in self.packages],
                "environments": list(self.environments), "lock": self.lock.to_json(),
                "installs": [i.to_json() for i in self.installs], "not_installed": list(self.not_installed),
                "seconds": round(self.seconds, 3)}


def change(project: ProjectPaths, action: str, names: Sequence[str], *, pypi: bool, feature: str | None = None,
           environment: str | None = None, exact: bool = False, install: bool = True, info: Info = lambda t: None,
           progress=None, source_flags: Mapping[str, Any] | None = None) -> Change:
    """Add (``action="add"``) or remove the packages ``names`` in pixi.toml, lock, install the difference."""
    from resolver.lock.current import lock_project
    from resolver.project.manifest import Manifest
    from resolver.project.pixi_toml import read_manifest_text
    from resolver.project.sources import Sources

    started = time.monotonic()
    if not project.manifest.is_file():
        raise BadInput(f"{project.manifest} does not exist",
                       fix="run the command in the project folder, or make one with `python -m resolver lock --target cpu`")
    manifest = Manifest.parse(read_manifest_text(project.manifest), project.manifest)
    chosen = _feature(project, manifest, feature, environment)
    wanted = tuple(Wanted.parse(n, pypi=pypi) for n in names)
    _check(manifest, action, chosen, wanted, pypi)
    environments = tuple(manifest.environments_with(chosen))

    def edit(m: Manifest) -> None:
        for package in wanted:
            if action == "add":
                m.set_dependency(chosen, package.name, package.spec, pypi=pypi)
            else:
                m.drop_dependency(chosen, package.name, pypi=pypi)

    info(f"{'adding' if action == 'add' else 'removing'} {', '.join(p.name for p in wanted)} "
         f"{'to' if action == 'add' else 'from'} feature {chosen}; locking {', '.join(environments) or 'nothing'}")
    summary = lock_project(project, [], edit=edit, info=info, on_wait=info,
                           sources=lambda: Sources.load(project.root, flags=source_flags))
    if action == "add":
        wanted = _pinned(project, chosen, environments, wanted, pypi)
    installs, missing = [], []
    if install:
        installs, missing = _install(project, environments, exact=exact, info=info, progress=progress,
                                     source_flags=source_flags)
    return Change(action, chosen, pypi, wanted, environments, summary, tuple(installs), tuple(missing),
                  time.monotonic() - started)


def pixi_pin(version: str) -> str | None:
    """The range pixi's ``add`` writes for a package it locked at ``version`` (its default, semver, strategy):
    ``>=1.2.3,<2``; for a 0.x release ``>=0.9.0,<0.10``. None for a version without a release number.

    >>> pixi_pin("0.9.0"), pixi_pin("2.4.6"), pixi_pin("2026.9.0"), pixi_pin("1.0.0+cpu")
    ('>=0.9.0,<0.10', '>=2.4.6,<3', '>=2026.9.0,<2027', '>=1.0.0,<2')
    """
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    release = parsed.release
    if not release:
        return None
    upper = f"0.{release[1] + 1}" if release[0] == 0 and len(release) > 1 else str(release[0] + 1)
    return f">={parsed.public},<{upper}"


def _pinned(project: ProjectPaths, feature: str, environments: Sequence[str], wanted: tuple[Wanted, ...],
            pypi: bool) -> tuple[Wanted, ...]:
    """The packages added without a version, each written back as pixi writes it: the range from the version
    locked now (``>=0.9.0,<0.10``); pixi.lock holds that version, so it still satisfies pixi.toml."""
    from resolver.core.names import canonical_name
    from resolver.lock.lockfile import read_lock

    loose = [p for p in wanted if (p.spec if isinstance(p.spec, str) else p.spec.get("version")) == "*"]
    if not loose:
        return wanted
    versions: dict[str, str] = {}
    for envs in (read_lock(project.lockfile, project.root).get(name, []) for name in environments):
        for env in envs:
            found = [(canonical_name(a.name), a.version) for a in env.pypi] if pypi else \
                [(r.name, r.version) for r in env.conda]
            for name, version in found:
                versions.setdefault(name, version)
    from resolver.project.paths import project_lock

    with project_lock(project.stamps):  # the one writer of pixi.toml at a time
        return _write_pins(project, feature, wanted, loose, versions, pypi)


def _write_pins(project: ProjectPaths, feature: str, wanted: tuple[Wanted, ...], loose: list[Wanted],
                versions: dict[str, str], pypi: bool) -> tuple[Wanted, ...]:
    from resolver.core.names import canonical_name
    from resolver.project.manifest import Manifest

    manifest = Manifest.load(project.manifest)
    out = []
    for package in wanted:
        version = versions.get(canonical_name(package.name) if pypi else package.name)
        pin = pixi_pin(version) if package in loose and version else None
        if pin is None:
            out.append(package)
            continue
        spec = pin if isinstance(package.spec, str) else {**package.spec, "version": pin}
        manifest.set_dependency(feature, package.name, spec, pypi=pypi)
        out.append(Wanted(package.name, spec))
    manifest.save()
    return tuple(out)


def _feature(project: ProjectPaths, manifest: Manifest, feature: str | None, environment: str | None) -> str:
    """The feature to change: the one named; else the environment's own (named with -e, else the project's
    default, else the only one pixi.toml declares)."""
    if feature is not None:
        if environment is not None:
            raise UsageError("--feature and -e name the same thing two ways", fix="give one of them")
        manifest.dependencies(feature, pypi=True)  # an unknown feature: one sentence
        return feature
    if environment is None:
        from resolver.project.pixi_toml import default_environment

        environment = default_environment(project)
    if environment is None:
        declared = [n for n in manifest.environment_names() if n != "default"]
        if len(declared) > 1:
            raise UsageError(f"pixi.toml has several environments ({', '.join(declared)}) and no default one",
                             fix=f"name one with -e, e.g. -e {declared[0]}")
        environment = declared[0] if declared else "default"
    own = [f for f in manifest.features_of(environment) if f != "default"]
    return own[0] if own else "default"


def _check(manifest: Manifest, action: str, feature: str, wanted: Sequence[Wanted], pypi: bool) -> None:
    """The packages can be added or removed as asked: never the plan's own pins; a removed one is there."""
    from resolver.core.names import canonical_name

    for package in wanted:
        if pypi and canonical_name(package.name) in PLANNED:
            raise UsageError(f"{package.name} is the plan's choice, which `{action}` does not change",
                             fix="run `python -m resolver upgrade --torch X.Y` to change it")
        if action != "remove":
            continue
        here = manifest.dependencies(feature, pypi=pypi)
        names = {canonical_name(n) if pypi else n for n in here}
        if (canonical_name(package.name) if pypi else package.name) in names:
            continue
        other = manifest.dependencies(feature, pypi=not pypi)
        hint = " (it is a PyPI dependency there: add --pypi)" if not pypi and any(
            canonical_name(n) == canonical_name(package.name) for n in other) else \
            " (it is a conda dependency there: leave out --pypi)" if pypi and package.name in other else ""
        table = "pypi-dependencies" if pypi else "dependencies"
        where = f"[{table}]" if feature == "default" else f"[feature.{feature}.{table}]"
        raise BadInput(f"{package.name} is not in {where} of pixi.toml{hint}",
                       fix="name a package that table holds, or another feature with --feature")


def _install(project: ProjectPaths, environments: Sequence[str], *, exact: bool, info: Info, progress,
             source_flags) -> tuple[list, list]:
    """Install the environments of the feature that are installed here (only what changed); the names of
    those that are not."""
    from resolver.install import install_environment
    from resolver.install.environment import Environment
    from resolver.project.paths import project_lock

    installs, missing = [], []
    for name in environments:
        if Environment.kind_of(project.env(name)) is None:
            missing.append(name)
            continue
        with project_lock(project.stamps, on_wait=info):
            installs.append(install_environment(project, name, exact=exact, info=info, progress=progress,
                                                source_flags=source_flags))
    return installs, missing
