"""Why pixi.lock does not satisfy pixi.toml or a plan: one frozen type per case, each naming the
environment (and platform) it concerns and saying why in one sentence; :class:`~resolver.lock.summary.LockStatus` is the
answer of :func:`resolver.lock.staleness.check` (current when it holds no reason).

>>> LockMissing().sentence
'pixi.lock does not exist'
>>> EnvironmentMissing(environment="cpu").to_json()["kind"]
'environment-missing'
>>> from resolver.lock.summary import LockStatus
>>> LockStatus((PlatformAdded(environment="cpu", platform="linux-aarch64"),)).fits("cpu", "linux-64")
True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from resolver.core.names import without_credentials

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
        fields = {key: _redacted(value) for key, value in dataclasses.asdict(self).items()}
        return {"kind": self.kind, **fields, "sentence": self.sentence}

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


@dataclass(frozen=True, kw_only=True)
class LocationNotCanonical(Reason):
    """A locked file recorded at a path of this machine that the sources now map to its canonical address
    (a ``[tool.resolver.mirrors]`` entry read backwards): a lock now would record that address instead."""

    kind: ClassVar[str] = "location-not-canonical"
    package: str
    location: str
    canonical: str

    @property
    def sentence(self) -> str:
        return (f"{LOCK} records {self.package} of environment {self.environment}{self._on()} at {self.location}, "
                f"a path of this machine that [tool.resolver.mirrors] now maps to {self.canonical}")


def _urls(urls: Sequence[str]) -> str:
    """URLs for a sentence, without the credentials an index URL may carry."""
    return ", ".join(_redacted(url) for url in urls)


def _redacted(value: Any) -> Any:
    """``value`` with the credentials of any URL in it left out (``https://user:token@host`` -> ``https://host``)."""
    if isinstance(value, str):
        return without_credentials(value)
    if isinstance(value, (list, tuple)):
        return [_redacted(v) for v in value]
    return value
