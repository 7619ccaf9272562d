"""Decide, apply, check and revert header fixes: by ROCm version *and* checksum, never by whether
a text patch happens to apply.

For each patch of the registry and the ROCm root at hand:

* no ROCm, or a release the fix is not for (6.1+): ``not-needed``, nothing is written;
* the header is a known original: the fix is applied (into the overlay by default, or in place with
  a backup and a record), and the result must have the recorded fixed checksum;
* the header is a known fixed result (or matches our own record): ``already-applied``;
* an unknown header: ``refused`` unless ``force``; forced, the structural fix runs and every
  rewritten definition (function, line, before, after) is reported.

The request and report types are in :mod:`resolver.patch.report`. (Over 400 lines on purpose: the
apply, check and revert paths share one run's state in ``_Worker``, and each path's refusals read
the same guarded overlay paths; split apart they would hand that state around.)
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path
from typing import Any

from resolver.core.errors import BadInput, EnvironmentProblem, IntegrityError, ResolverError
from resolver.core.fs import (
    make_folder,
    read_bytes_bounded,
    remove_empty_folder,
    remove_file,
    remove_stale_temps,
    sha256_bytes,
    sha256_file,
    sha256_text,
    write_atomic,
)
from resolver.core.names import check_relative, inside
from resolver.core.records import (
    SHA256,
    Fields,
    Flag,
    Integer,
    ListOf,
    MapOf,
    OfType,
    Text,
    optional,
    read_record,
    write_record,
)
from resolver.patch.files import link_or_copy
from resolver.patch.overlay import HEADER_LIMIT, RECORD_NAME, default_overlay, quoted_siblings, read_header
from resolver.patch.registry import KnownHeader, PatchSpec, Registry, load_registry
from resolver.patch.report import PatchOutcome, PatchReport, PatchRequest
from resolver.patch.rocm import RocmRoot, locate_rocm
from resolver.patch.transform import Change, add_static_inline
from resolver.project.paths import ProjectPaths

# the records this stage keeps (read as untrusted data: what they name is checked again before any use)
_OVERLAY_ENTRY = Fields({"file": Text(max_len=1024), "source_sha256": SHA256, "sha256": SHA256,
                         "siblings": ListOf(Text(max_len=1024), 4096), "forced": Flag(), "header_state": Text(max_len=64),
                         "changes": OfType(list), "time": Text(max_len=64)})
_OVERLAY_RECORD = Fields({"format": Integer(), "rocm_root": Text(max_len=4096), "rocm_version": optional(Text(max_len=64)),
                          "patches": MapOf(_OVERLAY_ENTRY, Text(max_len=256))})
_IN_PLACE_RECORD = Fields({"patch": Text(max_len=256), "rocm_root": Text(max_len=4096), "file": Text(max_len=4096),
                           "backup": Text(max_len=4096), "sha256_before": SHA256, "sha256_after": SHA256,
                           "forced": Flag(), "header_state": Text(max_len=64), "changes": OfType(list),
                           "state": Text("applying|applied|reverted"), "time": Text(max_len=64)},
                          {"reverted": Text(max_len=64)})

BACKUP_SUFFIX = ".resolver-orig"


def run_patches(project: ProjectPaths, request: PatchRequest, registry: Registry | None = None) -> PatchReport:
    """Apply, check or revert every requested patch for one ROCm root; the one entry point."""
    registry = registry or load_registry()
    specs = [registry.get(i) for i in request.patch_ids] if request.patch_ids else list(registry.patches)
    rocm = locate_rocm(request.rocm_root)
    mode = "in-place" if request.in_place else "overlay"
    action = "revert" if request.revert else "check" if request.check else "apply"
    overlay = None
    if mode == "overlay":
        overlay = Path(request.overlay).resolve() if request.overlay else \
            default_overlay(project, str(rocm.version) if rocm and rocm.version else None)
        if rocm is not None:
            check_overlay_place(overlay, rocm.path, explicit=request.overlay is not None)
    if rocm is None:
        # a --rocm-root that is not there is an error of locate_rocm's: what was looked at is the default
        outcomes = tuple(PatchOutcome(s.id, "not-needed", f"no ROCm installation found ({_default_looked()}): "
                                      "nothing to fix")
                         for s in specs)
        return PatchReport(mode, action, None, None, outcomes, request.dry_run)
    worker = _Worker(project, request, rocm, overlay)
    outcomes = tuple(worker.run(spec) for spec in specs)
    return PatchReport(mode, action, rocm, overlay, outcomes, request.dry_run)


def overlay_include_dir(project: ProjectPaths, rocm_root: Path | None = None, *, overlay: Path | None = None,
                        registry: Registry | None = None) -> Path | None:
    """The folder the kernel build must put first on the include path (``-I<dir>``), or None when
    this ROCm needs no overlay (no ROCm, 6.1+, or the system header already fixed in place).

    Raises :class:`EnvironmentProblem` when the fix is needed but the overlay is missing or stale.
    """
    report = run_patches(project, PatchRequest(rocm_root=rocm_root, overlay=overlay, check=True), registry)
    if report.status == "needed":
        ids = ", ".join(o.patch_id for o in report.outcomes if o.status == "needed")
        # "needed" is only ever said of a ROCm that was found; its release may be unreadable
        rocm = f"ROCm {report.rocm.version}" if report.rocm.version else f"the ROCm at {report.rocm.path}"
        raise EnvironmentProblem(f"{rocm} needs the header fix {ids}, which is not in the overlay",
                                 fix="run `python -m resolver patch`")
    return report.include_dir


def ensure_overlay(project: ProjectPaths, env: object | None = None, *, rocm_root: Path | None = None,
                   registry: Registry | None = None) -> dict[str, Any]:
    """Apply every needed fix into the default overlay (the chain's patch step); the JSON report.

    ``env`` is accepted for the pipeline's signature; the overlay belongs to the ROCm root, not to
    an environment. Raises the refusal when a header is unknown.
    """
    report = run_patches(project, PatchRequest(rocm_root=rocm_root), registry)
    refusal = refusal_of(report)
    if refusal is not None:
        raise refusal
    return report.to_json()


def refusal_of(report: PatchReport) -> ResolverError | None:
    for outcome in report.outcomes:
        if outcome.status == "refused":
            from resolver.core.errors import Refusal

            return Refusal(outcome.message, fix=outcome.fix)
    return None


def check_overlay_place(overlay: Path, rocm_root: Path, *, explicit: bool) -> None:
    """The overlay is never the ROCm root nor inside it, symlinks followed (only ``--in-place`` writes
    there, with a backup): refused before anything is read or written."""
    if inside(rocm_root, overlay):
        flag = f"--overlay {overlay}" if explicit else f"the overlay folder {overlay}"
        real = os.path.realpath(overlay)
        where = "is the ROCm root" if real == os.path.realpath(rocm_root) else "lies inside the ROCm root"
        shown = f"{flag} {where} {rocm_root}" + (f" (it leads to {real})" if real != str(overlay) else "")
        raise BadInput(shown, fix="pass --overlay DIR outside the ROCm installation (the default is "
                                  ".resolver/overlay/ in the project; remove a link there that points into ROCm), "
                                  "or --in-place to fix the ROCm header itself with a backup")


def _overlay_path(overlay: Path, rel: object, what: str) -> Path:
    """``overlay / rel`` for a path from the overlay record or a header's includes: relative, and inside
    the overlay once its folders are resolved (the file itself may be a link into ROCm)."""
    fix = "run `python -m resolver patch --revert`, delete the overlay folder, and apply again"
    rel = check_relative(rel, what=what, fix=fix)
    path = overlay / rel
    if not inside(overlay, path.parent):
        raise BadInput(f"{what} {rel} leads outside the overlay {overlay}", fix=fix)
    return path


def _write_error(where: Path, exc: OSError) -> EnvironmentProblem:
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR):
        return EnvironmentProblem(f"cannot write the overlay {where} ({exc.strerror})",
                                  fix="pass --overlay DIR on a writable disk")
    return EnvironmentProblem(f"cannot write the overlay {where} ({exc.strerror}: {exc.filename})",
                              fix="run the same command again (another run may have changed the overlay meanwhile)")


def _default_looked() -> str:
    for name in ("ROCM_PATH", "ROCM_HOME"):
        if os.environ.get(name, "").strip():
            return f"${name}={os.environ[name]}"
    return "/opt/rocm; set ROCM_PATH or pass --rocm-root if it is elsewhere"


class _Worker:
    """One run for one ROCm root; holds nothing beyond the run."""

    def __init__(self, project: ProjectPaths, request: PatchRequest, rocm: RocmRoot, overlay: Path | None) -> None:
        self.project = project
        self.request = request
        self.rocm = rocm
        self.overlay = overlay

    # -- shared ------------------------------------------------------------------------------------
    def run(self, spec: PatchSpec) -> PatchOutcome:
        source = self.rocm.path / spec.file
        if self.request.in_place and not self.request.check and not self.request.dry_run:
            remove_stale_temps(source)
            remove_stale_temps(source.with_name(source.name + BACKUP_SUFFIX))
        if not os.path.lexists(source):
            return PatchOutcome(spec.id, "not-needed", f"ROCm at {self.rocm.path} has no {spec.file}: nothing to fix",
                                file=source)
        data = read_header(source)
        if self.request.revert:
            return self._revert_in_place(spec, source, data) if self.request.in_place else \
                self._revert_overlay(spec, source)
        return self._apply(spec, source, data)

    def _apply(self, spec: PatchSpec, source: Path, data: bytes) -> PatchOutcome:
        sha = sha256_bytes(data)
        known = spec.classify(sha)
        version = self.rocm.version
        base = dict(file=source, sha256_before=sha, header_state=known.state if known else "unknown")
        # Our own earlier work on this exact header (in place or in the overlay) comes first: a
        # forced fix of an unknown header is not refused again on the next run.
        done = self._already_done(spec, source, sha)
        if done is not None:
            return done
        if known is not None and known.state == "fixed":
            self._finish_in_place_record(spec, source, sha)
            return PatchOutcome(spec.id, "already-applied", f"{source} is already fixed in place ({_tags(known)})",
                                target=source, sha256_after=sha, **base)
        if known is not None and known.state in ("upstream-fixed", "older-affected"):
            return PatchOutcome(spec.id, "not-needed", self._not_needed_text(spec, known), **base)
        if known is None and version is not None and not spec.applies_to(version):
            return PatchOutcome(spec.id, "not-needed", self._version_text(spec, version), **base)
        fixed = add_static_inline(data.decode("latin-1"), spec.fix.functions, spec.fix.insert)
        new = fixed.text.encode("latin-1")
        if known is not None:  # a known original: the result must be the recorded one, byte for byte
            if sha256_bytes(new) != known.fixed_sha256:
                raise IntegrityError(f"the fix of {source} ({_tags(known)}) did not give the recorded checksum "
                                     f"{known.fixed_sha256[:12]}…", fix="report it: patches/ and the transformation disagree")
        else:
            if not fixed.changes:
                return PatchOutcome(spec.id, "not-needed",
                                    f"{source} is not a header we know (sha256 {sha[:12]}…), but none of "
                                    f"{', '.join(spec.fix.functions)} lacks inline: nothing to fix", **base)
            if not self.request.force:
                where = f"ROCm {version}" if version else f"ROCm at {self.rocm.path}"
                return PatchOutcome(
                    spec.id, "needed" if self.request.check else "refused",
                    f"{source} ({where}) has sha256 {sha[:12]}…, which is neither a known original nor a known "
                    f"fixed result of {spec.id}; refusing to guess",
                    fix="compare it with a ROCm 6.0 header, then run `python -m resolver patch --force` to apply the "
                        "structural fix (it reports every line it changes)", **base)
        label = "in place" if self.request.in_place else "into the overlay"
        if self.request.check or self.request.dry_run:
            target = source if self.request.in_place else self.overlay / spec.file
            verb = "would write" if self.request.dry_run else "needs"
            return PatchOutcome(spec.id, "needed", f"{source} {verb} the fix {spec.id} {label}"
                                + (f" ({target})" if self.request.dry_run else ""),
                                target=target, sha256_after=sha256_bytes(new), changes=fixed.changes,
                                fix="run `python -m resolver patch`" + (" --in-place" if self.request.in_place else ""),
                                **base)
        if self.request.in_place:
            written = self._write_in_place(spec, source, data, new, fixed.changes, forced=known is None)
        else:
            written = self._write_overlay(spec, source, sha, new, fixed.changes, forced=known is None)
        what = ", ".join(fixed.changed_functions)
        forced = "" if known is not None else " (forced on an unknown header)"
        return PatchOutcome(spec.id, "applied", f"applied {spec.id} {label}{forced}: {what} are now "
                            f"{spec.fix.insert}", target=written[0], sha256_after=sha256_bytes(new),
                            changes=fixed.changes, written=tuple(written), **base)

    def _not_needed_text(self, spec: PatchSpec, known: KnownHeader) -> str:
        if known.state == "older-affected":
            return (f"this header ({_tags(known)}) has the same defect, but {spec.id} is for ROCm "
                    f"{', '.join(str(v) for v in spec.rocm_versions)} and mamba-ssm needs ROCm 6.0 or newer")
        return f"this header ({_tags(known)}) is fixed upstream: {spec.id} is not needed"

    def _version_text(self, spec: PatchSpec, version) -> str:
        series = ", ".join(f"{v}.x" for v in spec.rocm_versions)
        if spec.is_older(version):
            return f"ROCm {version} is older than the {series} this fix is for: {spec.id} is not needed"
        upstream = f" (fixed upstream in {spec.fixed_upstream_in})" if spec.fixed_upstream_in else ""
        return f"ROCm {version} does not need {spec.id}{upstream}"

    def _already_done(self, spec: PatchSpec, source: Path, sha: str) -> PatchOutcome | None:
        base = dict(file=source, sha256_before=sha)
        record = read_record(self._in_place_record(spec), _IN_PLACE_RECORD)
        if record and record.get("sha256_after") == sha and record.get("file") == str(source):
            self._finish_in_place_record(spec, source, sha)
            return PatchOutcome(spec.id, "already-applied", f"{source} already holds {spec.id} (fixed in place)",
                                target=source, sha256_after=sha, header_state=record.get("header_state"), **base)
        if self.request.in_place or self.overlay is None:
            return None
        entry = self._overlay_entry(spec)
        if entry and entry.get("source_sha256") == sha and self._overlay_valid(spec, entry):
            return PatchOutcome(spec.id, "already-applied",
                                f"already applied: the overlay {self.overlay} holds {spec.id} for this header",
                                target=self.overlay / spec.file, sha256_after=entry.get("sha256"),
                                header_state=entry.get("header_state"),
                                changes=_changes_from(entry.get("changes")), **base)
        return None

    # -- overlay -------------------------------------------------------------------------------------
    def _overlay_record(self) -> dict[str, Any]:
        return read_record(self.overlay / RECORD_NAME, _OVERLAY_RECORD) or {}

    def _overlay_entry(self, spec: PatchSpec) -> dict[str, Any] | None:
        record = self._overlay_record()
        if record.get("rocm_root") != str(self.rocm.path):
            return None
        patches = record.get("patches")
        entry = patches.get(spec.id) if isinstance(patches, dict) else None
        if not isinstance(entry, dict) or not isinstance(entry.get("siblings", []), list):
            return None
        return entry

    def _overlay_valid(self, spec: PatchSpec, entry: dict[str, Any]) -> bool:
        if sha256_file(self.overlay / spec.file) != entry.get("sha256"):
            return False
        for rel in entry.get("siblings", []):
            try:
                link = _overlay_path(self.overlay, rel, "a sibling in the overlay record")
            except BadInput:
                return False  # a record naming paths outside the overlay is not ours: rebuilt, never trusted
            expected = self.rocm.path / rel
            if not inside(self.rocm.path, expected):
                return False
            if link.is_symlink():  # the overlay's own link to the ROCm header: its target is what counts
                if os.readlink(link) != str(expected):
                    return False
            elif sha256_file(link) != sha256_file(expected):
                return False
        return True

    def _write_overlay(self, spec: PatchSpec, source: Path, sha: str, new: bytes, changes: tuple[Change, ...],
                       forced: bool) -> list[Path]:
        # every path is checked before the first write: all of them stay in the overlay
        target = _overlay_path(self.overlay, spec.file, "the fixed header")
        siblings = quoted_siblings(self.rocm.path, spec.file, new)
        links = [_overlay_path(self.overlay, rel, "the sibling header") for rel in siblings]
        written = [target]
        try:
            make_folder(target.parent)
            remove_stale_temps(target)
            write_atomic(target, new, label="overlay")
            for rel, link in zip(siblings, links):
                link_or_copy(self.rocm.path / rel, link)
                written.append(link)
            record = self._overlay_record()
            if record.get("rocm_root") != str(self.rocm.path):
                record = {}
            record.update(format=1, rocm_root=str(self.rocm.path),
                          rocm_version=str(self.rocm.version) if self.rocm.version else None)
            record.setdefault("patches", {})[spec.id] = {
                "file": spec.file, "source_sha256": sha, "sha256": sha256_bytes(new), "siblings": siblings,
                "forced": forced, "header_state": "unknown" if forced else "original",
                "changes": [c.to_json() for c in changes], "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            write_record(self.overlay / RECORD_NAME, record, label="overlay-record", strict=True)
        except OSError as exc:
            raise _write_error(self.overlay, exc) from None
        return written

    def _revert_overlay(self, spec: PatchSpec, source: Path) -> PatchOutcome:
        entry = self._overlay_entry(spec) if self.overlay else None
        record = self._overlay_record() if self.overlay else {}
        if entry is None:
            hint = ""
            in_place = read_record(self._in_place_record(spec), _IN_PLACE_RECORD)
            if in_place and in_place.get("state") == "applied":
                hint = "; the system header was fixed in place: use --in-place --revert"
            return PatchOutcome(spec.id, "not-needed", f"no overlay holds {spec.id} for {self.rocm.path}{hint}",
                                file=source)
        if self.request.dry_run or self.request.check:
            return PatchOutcome(spec.id, "needed", f"would remove {spec.id} from the overlay {self.overlay}",
                                file=source, target=self.overlay / spec.file)
        removed = []
        keep = {rel for pid, other in record.get("patches", {}).items() if pid != spec.id and isinstance(other, dict)
                for rel in [other.get("file"), *(other.get("siblings") or [])]}
        # every path the record names is checked before the first is removed: a record edited to name
        # /etc/... or ../.. removes nothing
        paths = {rel: _overlay_path(self.overlay, rel, f"{RECORD_NAME} names")
                 for rel in [spec.file, *entry.get("siblings", [])]}
        try:
            for rel, path in paths.items():
                if rel not in keep and remove_file(path):
                    removed.append(path)
            del record["patches"][spec.id]
            if record["patches"]:
                write_record(self.overlay / RECORD_NAME, record, label="overlay-record", strict=True)
            else:
                remove_file(self.overlay / RECORD_NAME, missing_ok=False)
                _remove_empty_dirs(self.overlay)
        except OSError as exc:
            raise EnvironmentProblem(f"cannot change the overlay {self.overlay} ({exc.strerror})",
                                     fix="check its permissions") from None
        return PatchOutcome(spec.id, "reverted", f"removed {spec.id} from the overlay {self.overlay}; "
                            "the ROCm root was never touched", file=source, written=tuple(removed))

    # -- in place ------------------------------------------------------------------------------------
    def _in_place_record(self, spec: PatchSpec) -> Path:
        key = sha256_text(str(self.rocm.path))[:12]
        return self.project.patch_records / f"{spec.id}-in-place-{key}.json"

    def _finish_in_place_record(self, spec: PatchSpec, source: Path, sha: str) -> None:
        """A run killed between writing the header and recording it left state 'applying': finish it."""
        path = self._in_place_record(spec)
        record = read_record(path, _IN_PLACE_RECORD)
        if record and record.get("state") == "applying" and record.get("sha256_after") == sha \
                and not self.request.check and not self.request.dry_run:
            record["state"] = "applied"
            try:
                write_record(path, record, label="in-place-record", strict=True)
            except OSError:
                pass

    def _write_in_place(self, spec: PatchSpec, source: Path, old: bytes, new: bytes, changes: tuple[Change, ...],
                        forced: bool) -> list[Path]:
        backup = source.with_name(source.name + BACKUP_SUFFIX)
        record_path = self._in_place_record(spec)
        record = {"patch": spec.id, "rocm_root": str(self.rocm.path), "file": str(source), "backup": str(backup),
                  "sha256_before": sha256_bytes(old), "sha256_after": sha256_bytes(new), "forced": forced,
                  "header_state": "unknown" if forced else "original",
                  "changes": [c.to_json() for c in changes], "state": "applying",
                  "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        try:
            mode = source.stat().st_mode & 0o7777
            if sha256_file(backup) != record["sha256_before"]:
                write_atomic(backup, old, mode=mode, label="backup")
            write_record(record_path, record, label="in-place-record", strict=True)
            write_atomic(source, new, mode=mode, label="patch")
            record["state"] = "applied"
            write_record(record_path, record, label="in-place-record", strict=True)
        except OSError as exc:
            raise EnvironmentProblem(f"cannot write {source} in place ({exc.strerror})",
                                     fix="run without --in-place (the overlay needs no root), or as the owner of "
                                         f"{self.rocm.path}") from None
        return [source, backup, record_path]

    def _revert_in_place(self, spec: PatchSpec, source: Path, data: bytes) -> PatchOutcome:
        sha = sha256_bytes(data)
        known = spec.classify(sha)
        record_path = self._in_place_record(spec)
        record = read_record(record_path, _IN_PLACE_RECORD) or {}
        base = dict(file=source, sha256_before=sha, header_state=known.state if known else "unknown")
        if record.get("sha256_before") == sha or (known and known.state != "fixed" and record.get("sha256_after") != sha):
            return PatchOutcome(spec.id, "not-needed", f"{source} is not fixed in place: nothing to revert",
                                sha256_after=sha, **base)
        expected_original = record.get("sha256_before") if record.get("sha256_after") == sha else \
            (known.original_sha256 if known and known.state == "fixed" else None)
        if expected_original is None:
            return PatchOutcome(spec.id, "refused", f"{source} changed since the fix (sha256 {sha[:12]}…) and no "
                                "record matches it; refusing to overwrite it", fix="restore it from your ROCm "
                                "packages (e.g. reinstall hip-dev)", **base)
        backup = source.with_name(source.name + BACKUP_SUFFIX)  # always beside the header, whatever a record says
        try:
            original = read_bytes_bounded(backup, limit=HEADER_LIMIT, what="the backup")
        except BadInput:
            return PatchOutcome(spec.id, "refused", f"the backup {backup} is missing", fix="restore the header from "
                                "your ROCm packages (e.g. reinstall hip-dev)", **base)
        if sha256_bytes(original) != expected_original:
            raise IntegrityError(f"the backup {backup} does not have the original's checksum {expected_original[:12]}…",
                                 fix="restore the header from your ROCm packages (e.g. reinstall hip-dev)")
        if self.request.dry_run or self.request.check:
            return PatchOutcome(spec.id, "needed", f"would restore {source} from {backup}", target=source,
                                sha256_after=expected_original, **base)
        try:
            write_atomic(source, original, mode=source.stat().st_mode & 0o7777, label="revert")
            if sha256_file(source) != expected_original:
                raise IntegrityError(f"{source} does not read back as the original after the revert",
                                     fix="restore it from your ROCm packages")
            remove_file(backup, missing_ok=False)
            if record:
                record.update(state="reverted", reverted=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
                write_record(record_path, record, label="in-place-record", strict=True)
        except OSError as exc:
            raise EnvironmentProblem(f"cannot restore {source} ({exc.strerror})",
                                     fix=f"run as the owner of {self.rocm.path}") from None
        return PatchOutcome(spec.id, "reverted", f"restored the original {source} byte for byte",
                            target=source, sha256_after=expected_original, written=(source,), **base)


def _changes_from(rows: object) -> tuple[Change, ...]:
    try:
        return tuple(Change(**row) for row in rows)  # type: ignore[union-attr]
    except TypeError:  # a hand-edited record: the changes are informative only
        return ()


def _tags(known: KnownHeader) -> str:
    if known.rocm:
        return "ROCm " + ", ".join(known.rocm)
    return ", ".join(known.tags) or f"sha256 {known.sha256[:12]}…"


def _remove_empty_dirs(top: Path) -> None:
    for folder in sorted((p for p in top.rglob("*") if p.is_dir() and not p.is_symlink()),
                         key=lambda p: len(p.parts), reverse=True):
        remove_empty_folder(folder)
    remove_empty_folder(top)
