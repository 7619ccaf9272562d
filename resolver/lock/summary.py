"""Whether pixi.lock is current (:class:`LockStatus`, the reasons it is not are :mod:`.reasons`), and
what a lock run reports: each environment resolved, the files written, why it ran (or that nothing
needed to). Light on purpose: an unchanged project answers with these alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from resolver.lock.reasons import Reason

Info = Callable[[str], None]


def quiet(text: str) -> None:
    """The default ``info``: say nothing."""


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
    reasons: tuple[Reason, ...] = ()  # why pixi.lock was stale (empty: asked to lock anyway)
    up_to_date: bool = False  # nothing was resolved: pixi.lock already satisfied pixi.toml and the plans

    def to_json(self) -> dict[str, Any]:
        return {"lockfile": str(self.lockfile), "manifest": str(self.manifest), "sha256": self.sha256,
                "status": "up-to-date" if self.up_to_date else "locked", "reasons": [r.to_json() for r in self.reasons],
                "manifest_changed": self.manifest_changed, "locked": [e.to_json() for e in self.locked],
                "carried_over": list(self.carried_over), "notes": list(self.notes), "added": list(self.added)}


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
