"""What ``patch`` is asked (:class:`PatchRequest`) and what it answers, per patch and in all.

>>> order = [s for s in STATUS_ORDER]
>>> order[0], order[-1]
('refused', 'not-needed')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resolver.patch.rocm import RocmRoot
from resolver.patch.transform import Change

STATUS_ORDER = ("refused", "needed", "applied", "reverted", "already-applied", "not-needed")


@dataclass(frozen=True)
class PatchRequest:
    """What ``python -m resolver patch`` was asked to do."""

    rocm_root: Path | None = None  # None: ROCM_PATH / ROCM_HOME / /opt/rocm
    overlay: Path | None = None  # None: .resolver/overlay/rocm-<version>
    in_place: bool = False
    check: bool = False
    revert: bool = False
    dry_run: bool = False
    force: bool = False
    patch_ids: tuple[str, ...] = ()  # empty: every patch of the registry


@dataclass(frozen=True)
class PatchOutcome:
    patch_id: str
    status: str  # one of STATUS_ORDER
    message: str
    file: Path | None = None  # the header under the ROCm root
    target: Path | None = None  # the file written (or that would be): overlay copy or the header itself
    sha256_before: str | None = None
    sha256_after: str | None = None
    header_state: str | None = None  # original | fixed | upstream-fixed | older-affected | unknown
    changes: tuple[Change, ...] = ()
    written: tuple[Path, ...] = ()
    fix: str | None = None  # for refused/needed: what to do

    def to_json(self) -> dict[str, Any]:
        return {"id": self.patch_id, "status": self.status, "message": self.message,
                "file": str(self.file) if self.file else None, "target": str(self.target) if self.target else None,
                "sha256_before": self.sha256_before, "sha256_after": self.sha256_after,
                "header_state": self.header_state,
                "changed_functions": [c.function for c in self.changes],
                "changes": [c.to_json() for c in self.changes],
                "written": [str(p) for p in self.written], "fix": self.fix}


@dataclass(frozen=True)
class PatchReport:
    mode: str  # "overlay" | "in-place"
    action: str  # "apply" | "check" | "revert"
    rocm: RocmRoot | None
    overlay: Path | None
    outcomes: tuple[PatchOutcome, ...] = ()
    dry_run: bool = False
    looked_at: tuple[str, ...] = field(default=())

    @property
    def status(self) -> str:
        if not self.outcomes:
            return "not-needed"
        return min((o.status for o in self.outcomes), key=STATUS_ORDER.index)

    @property
    def include_dir(self) -> Path | None:
        """``<overlay>/include`` when the overlay holds a fixed header; None when no overlay is needed."""
        if self.mode != "overlay" or self.overlay is None or self.action == "revert":
            return None
        for outcome in self.outcomes:
            if outcome.target is not None and outcome.status in ("applied", "already-applied") \
                    and outcome.target != outcome.file:
                return self.overlay / "include"
        return None

    def to_json(self) -> dict[str, Any]:
        single = self.outcomes[0] if len(self.outcomes) == 1 else None
        return {
            "status": self.status, "action": self.action, "mode": self.mode, "dry_run": self.dry_run,
            "rocm_root": str(self.rocm.path) if self.rocm else None,
            "rocm_version": str(self.rocm.version) if self.rocm and self.rocm.version else None,
            "version_source": self.rocm.version_source if self.rocm else None,
            "overlay": str(self.overlay) if self.overlay else None,
            "include_dir": str(self.include_dir) if self.include_dir else None,
            "file": str(single.file) if single and single.file else None,
            "sha256_before": single.sha256_before if single else None,
            "sha256_after": single.sha256_after if single else None,
            "changed_functions": [c.function for c in single.changes] if single else [],
            "patches": [o.to_json() for o in self.outcomes],
        }
