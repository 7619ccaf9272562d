"""The patch engine in this process (:func:`resolver.patch.run_patches`), one test per outcome of
each path: the whole outcome (every field), the files left with their bytes and modes, the backup,
the records, and the order of the writes (each atomic write passes its crash points in turn; a
recorder stands in for ``RESOLVER_CRASH_AT``, whose real kill the CLI tests exercise)."""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
import stat
import time
from pathlib import Path

import pytest
from support import projects, records
from support.patch_support import FIXTURES, HEADER, TABLE, make_rocm, sha, tree_state

from resolver.core.errors import BadInput, EnvironmentProblem, IntegrityError
from resolver.core.fs import sha256_text
from resolver.core.versions import DottedVersion
from resolver.patch import PatchRequest, load_registry, overlay_include_dir, run_patches
from resolver.patch.overlay import RECORD_NAME
from resolver.patch.registry import KnownHeader, Registry
from resolver.patch.report import PatchOutcome
from resolver.patch.transform import add_static_inline
from resolver.project.paths import ProjectPaths

PATCH_ID = "rocm6.0-bf16-inline"
REGISTRY = load_registry(extra_tables=[TABLE])
SPEC = REGISTRY.get(PATCH_ID)
ORIGINAL = (FIXTURES / "root-6.0" / HEADER).read_bytes()
ORIGINAL_SHA = sha(FIXTURES / "root-6.0" / HEADER)
_FIX = add_static_inline(ORIGINAL.decode("latin-1"), SPEC.fix.functions, SPEC.fix.insert)
FIXED = _FIX.text.encode("latin-1")
FIXED_SHA = SPEC.classify(ORIGINAL_SHA).fixed_sha256
APPLIED_TEXT = f"{', '.join(_FIX.changed_functions)} are now {SPEC.fix.insert}"
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
SIBLINGS = ["include/hip/amd_detail/amd_hip_vector_types.h", "include/hip/amd_detail/device_library_decls.h", "include/hip/amd_detail/host_defines.h",
            "include/hip/amd_detail/math_fwd.h"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return projects.project(tmp_path / "project", "")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_rocm(tmp_path).resolve()


@pytest.fixture
def crash_points(monkeypatch) -> list[str]:
    """Every crash point the atomic writes pass, in order."""
    seen: list[str] = []
    monkeypatch.setattr("resolver.core.fs.crash_point", seen.append)
    return seen


def _run(project: Path, root: Path | None, registry: Registry = REGISTRY, **asked):
    return run_patches(ProjectPaths(project), PatchRequest(rocm_root=root, **asked), registry)


def _one(project: Path, root: Path | None, registry: Registry = REGISTRY, **asked) -> PatchOutcome:
    (outcome,) = _run(project, root, registry, **asked).outcomes
    return outcome


def _record_path(project: Path, root: Path) -> Path:
    return project / ".resolver" / "state" / "patches" / f"{PATCH_ID}-in-place-{sha256_text(str(root))[:12]}.json"


def _json(path: Path) -> dict:
    return records.read(path)


def _temp_blocker(path: Path) -> None:
    """A non-empty folder where this process's temporary file for ``path`` goes: the write fails with
    EISDIR, as a real obstacle would (root ignores permissions, so a chmod could not make it fail)."""
    blocker = path.parent / f".{path.name}.resolver-tmp-{os.getpid()}"
    blocker.mkdir(parents=True)
    (blocker / "keep").write_text("")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _no_temps(folder: Path) -> bool:
    return not [p for p in folder.rglob("*") if ".resolver-tmp-" in p.name]


def _changes_json() -> list[dict]:
    return [c.to_json() for c in _FIX.changes]


# -- in place: apply ---------------------------------------------------------------------------------------


def test_in_place_apply_writes_backup_then_applying_record_then_header_and_reports_every_field(
        project, root, crash_points, monkeypatch):
    header = root / HEADER
    backup = header.with_name(header.name + ".resolver-orig")
    record_path = _record_path(project, root)
    header.chmod(0o640)
    at_header_write = {}

    def seen(label: str) -> None:
        crash_points.append(label)
        if label == "patch:after-temp":  # the header is about to be replaced: the record says so already
            at_header_write.update(_json(record_path))

    monkeypatch.setattr("resolver.core.fs.crash_point", seen)
    report = _run(project, root, in_place=True)
    assert (report.mode, report.action, report.overlay, report.dry_run, report.include_dir) == \
        ("in-place", "apply", None, False, None)
    (outcome,) = report.outcomes
    assert outcome == PatchOutcome(
        PATCH_ID, "applied", f"applied {PATCH_ID} in place: {APPLIED_TEXT}", file=header, target=header,
        sha256_before=ORIGINAL_SHA, sha256_after=FIXED_SHA, header_state="original", changes=_FIX.changes,
        written=(header, backup, record_path))
    assert crash_points == ["backup:after-temp", "backup:after-replace", "in-place-record:after-temp",
                            "in-place-record:after-replace", "patch:after-temp", "patch:after-replace",
                            "in-place-record:after-temp", "in-place-record:after-replace"]
    assert (header.read_bytes(), _mode(header)) == (FIXED, 0o640)
    assert (backup.read_bytes(), _mode(backup)) == (ORIGINAL, 0o640)
    record = _json(record_path)
    assert TIME.fullmatch(record.pop("time"))
    assert record == {"patch": PATCH_ID, "rocm_root": str(root), "file": str(header), "backup": str(backup),
                      "sha256_before": ORIGINAL_SHA, "sha256_after": FIXED_SHA, "forced": False,
                      "header_state": "original", "changes": _changes_json(), "state": "applied"}
    at_header_write.pop("time")
    assert at_header_write == dict(record, state="applying")
    assert list(record_path.parent.iterdir()) == [record_path]
    assert not (project / ".resolver" / "overlay").exists() and _no_temps(root)


def test_in_place_apply_of_an_unknown_header_when_forced_records_it_as_forced(project, root):
    header = root / HEADER
    edited = b"// a distribution's own line\n" + ORIGINAL
    header.write_bytes(edited)
    fix = add_static_inline(edited.decode("latin-1"), SPEC.fix.functions, SPEC.fix.insert)
    outcome = _one(project, root, in_place=True, force=True)
    backup = header.with_name(header.name + ".resolver-orig")
    assert outcome == PatchOutcome(
        PATCH_ID, "applied", f"applied {PATCH_ID} in place (forced on an unknown header): "
        f"{', '.join(fix.changed_functions)} are now {SPEC.fix.insert}", file=header, target=header,
        sha256_before=_sha_bytes(edited),
        sha256_after=_sha_bytes(fix.text.encode("latin-1")), header_state="unknown", changes=fix.changes,
        written=(header, backup, _record_path(project, root)))
    assert backup.read_bytes() == edited and header.read_bytes() == fix.text.encode("latin-1")
    record = _json(_record_path(project, root))
    assert (record["forced"], record["header_state"], record["state"]) == (True, "unknown", "applied")
    assert record["sha256_before"] == _sha_bytes(edited)


def _sha_bytes(data: bytes) -> str:
    import hashlib
    return hashlib.sha256(data).hexdigest()


def test_in_place_apply_keeps_a_backup_that_already_holds_the_original(project, root, crash_points):
    backup = root / (HEADER + ".resolver-orig")
    backup.write_bytes(ORIGINAL)
    inode = backup.stat().st_ino
    assert _one(project, root, in_place=True).status == "applied"
    assert backup.stat().st_ino == inode and backup.read_bytes() == ORIGINAL
    assert "backup:after-temp" not in crash_points


def test_in_place_apply_replaces_a_backup_of_other_bytes(project, root):
    backup = root / (HEADER + ".resolver-orig")
    backup.write_bytes(b"// a stale backup of another header\n")
    assert _one(project, root, in_place=True).status == "applied"
    assert backup.read_bytes() == ORIGINAL


def test_in_place_apply_that_cannot_write_says_to_use_the_overlay_and_changes_nothing(project, root):
    header = root / HEADER
    _temp_blocker(header.with_name(header.name + ".resolver-orig"))
    before = tree_state(root)
    with pytest.raises(EnvironmentProblem) as caught:
        _run(project, root, in_place=True)
    assert caught.value.message == f"cannot write {header} in place (Is a directory)"
    assert caught.value.fix == f"run without --in-place (the overlay needs no root), or as the owner of {root}"
    assert tree_state(root) == before and not _record_path(project, root).exists()


def test_in_place_apply_whose_record_cannot_be_written_leaves_the_header_as_it_was(project, root):
    """The record of an in-place fix is what a revert restores from: a header is never changed before
    its record is written."""
    header = root / HEADER
    _temp_blocker(_record_path(project, root))
    with pytest.raises(EnvironmentProblem) as caught:
        _run(project, root, in_place=True)
    assert caught.value.message == f"cannot write {header} in place (Is a directory)"
    assert header.read_bytes() == ORIGINAL and not _record_path(project, root).exists()


def test_overlay_apply_whose_record_cannot_be_written_is_an_error_not_applied(project, root):
    """A fixed header without its record would be rebuilt by every run, and the build stage would take
    an overlay the record does not vouch for: the run fails instead of saying applied."""
    overlay = _overlay(project)
    _temp_blocker(overlay / RECORD_NAME)
    with pytest.raises(EnvironmentProblem) as caught:
        _run(project, root)
    assert caught.value.message.startswith(f"cannot write the overlay {overlay} (Is a directory")
    assert not (overlay / RECORD_NAME).exists()


def test_in_place_run_finishes_a_record_left_applying(project, root, crash_points):
    _run(project, root, in_place=True)
    record_path = _record_path(project, root)
    record = _json(record_path)
    records.plant(record_path, dict(record, state="applying"))
    crash_points.clear()
    outcome = _one(project, root, in_place=True)
    assert crash_points == ["in-place-record:after-temp", "in-place-record:after-replace"]
    assert outcome == PatchOutcome(PATCH_ID, "already-applied", f"{root / HEADER} already holds {PATCH_ID} (fixed in place)",
                                   file=root / HEADER, target=root / HEADER, sha256_before=FIXED_SHA,
                                   sha256_after=FIXED_SHA, header_state="original")
    assert _json(record_path) == record


# -- in place: revert --------------------------------------------------------------------------------------


def test_in_place_revert_restores_bytes_and_mode_removes_the_backup_and_marks_the_record(project, root, crash_points):
    header = root / HEADER
    header.chmod(0o640)
    _run(project, root, in_place=True)
    applied = _json(_record_path(project, root))
    crash_points.clear()
    report = _run(project, root, in_place=True, revert=True)
    assert (report.mode, report.action, report.dry_run, report.include_dir) == ("in-place", "revert", False, None)
    (outcome,) = report.outcomes
    assert outcome == PatchOutcome(PATCH_ID, "reverted", f"restored the original {header} byte for byte",
                                   file=header, target=header, sha256_before=FIXED_SHA, sha256_after=ORIGINAL_SHA,
                                   header_state="fixed", written=(header,))
    assert (header.read_bytes(), _mode(header)) == (ORIGINAL, 0o640)
    assert not header.with_name(header.name + ".resolver-orig").exists() and _no_temps(root)
    assert crash_points == ["revert:after-temp", "revert:after-replace", "in-place-record:after-temp",
                            "in-place-record:after-replace"]
    record = _json(_record_path(project, root))
    assert TIME.fullmatch(record.pop("reverted"))
    assert record == dict(applied, state="reverted")


def test_in_place_revert_from_another_project_uses_the_backup_and_writes_no_record(tmp_path, project, root):
    _run(project, root, in_place=True)
    other = tmp_path / "other"
    other.mkdir()
    outcome = _one(other, root, in_place=True, revert=True)
    assert outcome.status == "reverted" and outcome.written == (root / HEADER,)
    assert (root / HEADER).read_bytes() == ORIGINAL
    assert not (other / ".resolver").exists()


def test_in_place_revert_of_an_original_header_is_not_needed(project, root):
    header = root / HEADER
    before = tree_state(root)
    assert _one(project, root, in_place=True, revert=True) == PatchOutcome(
        PATCH_ID, "not-needed", f"{header} is not fixed in place: nothing to revert", file=header,
        sha256_before=ORIGINAL_SHA, sha256_after=ORIGINAL_SHA, header_state="original")
    assert tree_state(root) == before and not (project / ".resolver").exists()


def test_in_place_revert_twice_of_a_forced_fix_is_not_needed_the_second_time(project, root):
    header = root / HEADER
    edited = ORIGINAL + b"// edited\n"
    header.write_bytes(edited)
    _run(project, root, in_place=True, force=True)
    assert _one(project, root, in_place=True, revert=True).status == "reverted"
    assert header.read_bytes() == edited
    assert _one(project, root, in_place=True, revert=True) == PatchOutcome(
        PATCH_ID, "not-needed", f"{header} is not fixed in place: nothing to revert", file=header,
        sha256_before=_sha_bytes(edited), sha256_after=_sha_bytes(edited), header_state="unknown")


def test_in_place_revert_of_a_header_changed_after_the_fix_is_refused(project, root):
    header = root / HEADER
    _run(project, root, in_place=True)
    with open(header, "ab") as handle:
        handle.write(b"// edited after the fix\n")
    edited = sha(header)
    before = tree_state(root)
    assert _one(project, root, in_place=True, revert=True) == PatchOutcome(
        PATCH_ID, "refused", f"{header} changed since the fix (sha256 {edited[:12]}…) and no record matches it; "
        "refusing to overwrite it", fix="restore it from your ROCm packages (e.g. reinstall hip-dev)", file=header,
        sha256_before=edited, header_state="unknown")
    assert tree_state(root) == before


def test_in_place_revert_without_the_backup_is_refused(project, root):
    header = root / HEADER
    header.write_bytes(FIXED)  # someone ran `sudo patch` earlier: fixed, no backup, no record
    backup = header.with_name(header.name + ".resolver-orig")
    assert _one(project, root, in_place=True, revert=True) == PatchOutcome(
        PATCH_ID, "refused", f"the backup {backup} is missing",
        fix="restore the header from your ROCm packages (e.g. reinstall hip-dev)", file=header,
        sha256_before=FIXED_SHA, header_state="fixed")
    assert header.read_bytes() == FIXED


def test_in_place_revert_with_a_backup_of_other_bytes_is_an_integrity_error(project, root):
    header = root / HEADER
    _run(project, root, in_place=True)
    backup = header.with_name(header.name + ".resolver-orig")
    backup.write_bytes(b"// not the original\n")
    with pytest.raises(IntegrityError) as caught:
        _run(project, root, in_place=True, revert=True)
    assert caught.value.message == f"the backup {backup} does not have the original's checksum {ORIGINAL_SHA[:12]}…"
    assert caught.value.fix == "restore the header from your ROCm packages (e.g. reinstall hip-dev)"
    assert header.read_bytes() == FIXED


@pytest.mark.parametrize("asked", [{"dry_run": True}, {"check": True}])
def test_in_place_revert_dry_run_or_check_says_what_it_would_restore(project, root, asked):
    header = root / HEADER
    _run(project, root, in_place=True)
    before, record = tree_state(root), _json(_record_path(project, root))
    assert _one(project, root, in_place=True, revert=True, **asked) == PatchOutcome(
        PATCH_ID, "needed", f"would restore {header} from {header}.resolver-orig", file=header, target=header,
        sha256_before=FIXED_SHA, sha256_after=ORIGINAL_SHA, header_state="fixed")
    assert tree_state(root) == before and _json(_record_path(project, root)) == record


def test_in_place_revert_that_cannot_write_says_whose_root_it_is(project, root):
    header = root / HEADER
    _run(project, root, in_place=True)
    _temp_blocker(header)
    with pytest.raises(EnvironmentProblem) as caught:
        _run(project, root, in_place=True, revert=True)
    assert caught.value.message == f"cannot restore {header} (Is a directory)"
    assert caught.value.fix == f"run as the owner of {root}"
    assert header.read_bytes() == FIXED and header.with_name(header.name + ".resolver-orig").read_bytes() == ORIGINAL


def test_in_place_revert_that_does_not_read_back_keeps_the_backup(project, root, monkeypatch):
    """A disk that drops the write without an error (what a full or failing file system can do)."""
    header = root / HEADER
    _run(project, root, in_place=True)
    monkeypatch.setattr("resolver.patch.engine.write_atomic", lambda *args, **kwargs: None)
    with pytest.raises(IntegrityError) as caught:
        _run(project, root, in_place=True, revert=True)
    assert caught.value.message == f"{header} does not read back as the original after the revert"
    assert caught.value.fix == "restore it from your ROCm packages"
    assert header.with_name(header.name + ".resolver-orig").read_bytes() == ORIGINAL
    assert _json(_record_path(project, root))["state"] == "applied"


# -- overlay: apply ----------------------------------------------------------------------------------------


def _overlay(project: Path, version: str = "6.0.2") -> Path:
    return project / ".resolver" / "overlay" / f"rocm-{version}"


def test_overlay_apply_writes_the_header_its_siblings_and_the_record(project, root, crash_points):
    overlay = _overlay(project)
    before = tree_state(root)
    report = _run(project, root)
    assert (report.mode, report.action, report.overlay, report.include_dir) == \
        ("overlay", "apply", overlay, overlay / "include")
    (outcome,) = report.outcomes
    assert outcome == PatchOutcome(
        PATCH_ID, "applied", f"applied {PATCH_ID} into the overlay: {APPLIED_TEXT}", file=root / HEADER,
        target=overlay / HEADER, sha256_before=ORIGINAL_SHA, sha256_after=FIXED_SHA, header_state="original",
        changes=_FIX.changes, written=(overlay / HEADER, *(overlay / s for s in SIBLINGS)))
    assert crash_points == ["overlay:after-temp", "overlay:after-replace", "overlay-record:after-temp",
                            "overlay-record:after-replace"]
    assert (overlay / HEADER).read_bytes() == FIXED
    assert all(os.readlink(overlay / s) == str(root / s) for s in SIBLINGS)
    record = _json(overlay / RECORD_NAME)
    assert TIME.fullmatch(record["patches"][PATCH_ID].pop("time"))
    assert record == {"format": 1, "rocm_root": str(root), "rocm_version": "6.0.2", "patches": {PATCH_ID: {
        "file": HEADER, "source_sha256": ORIGINAL_SHA, "sha256": FIXED_SHA, "siblings": SIBLINGS, "forced": False,
        "header_state": "original", "changes": _changes_json()}}}
    assert tree_state(root) == before and _no_temps(overlay)

    again = _one(project, root)  # the overlay's own record answers, with the changes it recorded
    assert again == PatchOutcome(
        PATCH_ID, "already-applied", f"already applied: the overlay {overlay} holds {PATCH_ID} for this header",
        file=root / HEADER, target=overlay / HEADER, sha256_before=ORIGINAL_SHA, sha256_after=FIXED_SHA,
        header_state="original", changes=_FIX.changes)


def test_overlay_apply_forced_on_an_unknown_header_of_an_unknown_release(tmp_path, project):
    root = make_rocm(tmp_path, version=None).resolve()
    (root / "include" / "hip" / "hip_version.h").unlink()
    edited = ORIGINAL + b"// edited\n"
    (root / HEADER).write_bytes(edited)
    overlay = _overlay(project, "unknown")
    outcome = _one(project, root, force=True)
    assert outcome.status == "applied" and outcome.header_state == "unknown"
    assert outcome.message.startswith(f"applied {PATCH_ID} into the overlay (forced on an unknown header): ")
    record = _json(overlay / RECORD_NAME)
    entry = record["patches"][PATCH_ID]
    assert (record["format"], record["rocm_version"], entry["forced"], entry["header_state"]) == (1, None, True, "unknown")
    assert entry["source_sha256"] == _sha_bytes(edited)


def test_overlay_record_of_another_rocm_root_is_replaced_and_one_of_this_root_is_merged(project, root):
    overlay = _overlay(project)
    overlay.mkdir(parents=True)
    other_entry = {"file": "include/other.h", "source_sha256": "a" * 64, "sha256": "b" * 64, "siblings": [],
                   "forced": False, "header_state": "original", "changes": [], "time": "2026-01-01T00:00:00Z"}
    foreign = {"format": 1, "rocm_root": "/opt/rocm-elsewhere", "rocm_version": "6.0.2",
               "patches": {"other-fix": other_entry}}
    records.plant(overlay / RECORD_NAME, foreign)
    _run(project, root)
    assert list(_json(overlay / RECORD_NAME)["patches"]) == [PATCH_ID]

    _run(project, root, revert=True)
    (overlay).mkdir(parents=True)
    records.plant(overlay / RECORD_NAME, dict(foreign, rocm_root=str(root)))
    _run(project, root)
    record = _json(overlay / RECORD_NAME)
    assert sorted(record["patches"]) == ["other-fix", PATCH_ID] and record["patches"]["other-fix"] == other_entry


def test_overlay_that_cannot_be_made_says_to_pass_a_writable_one(tmp_path, project, root):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(EnvironmentProblem) as caught:
        _run(project, root, overlay=blocker / "sub")
    assert caught.value.message == f"cannot write the overlay {blocker / 'sub'} (Not a directory)"
    assert caught.value.fix == "pass --overlay DIR on a writable disk"


def test_overlay_write_that_fails_otherwise_names_the_file_and_says_to_run_again(project, root):
    target = _overlay(project) / HEADER
    _temp_blocker(target)
    with pytest.raises(EnvironmentProblem) as caught:
        _run(project, root)
    temp = target.parent / f".{target.name}.resolver-tmp-{os.getpid()}"
    assert caught.value.message == f"cannot write the overlay {_overlay(project)} (Is a directory: {temp})"
    assert caught.value.fix == "run the same command again (another run may have changed the overlay meanwhile)"
    assert not (_overlay(project) / RECORD_NAME).exists()


def test_overlay_with_a_sibling_link_gone_or_changed_is_stale_and_rebuilt(project, root):
    overlay = _overlay(project)
    _run(project, root)
    link = overlay / SIBLINGS[-1]
    link.unlink()
    assert _one(project, root, check=True).status == "needed"
    link.symlink_to(root / SIBLINGS[0])  # a link to another file
    assert _one(project, root, check=True).status == "needed"
    assert _one(project, root).status == "applied" and os.readlink(link) == str(root / SIBLINGS[-1])


@pytest.mark.parametrize("planted", ["/etc/hostname", "../../outside.h"])
def test_overlay_record_naming_a_sibling_outside_is_not_trusted(project, root, planted):
    overlay = _overlay(project)
    _run(project, root)
    record = _json(overlay / RECORD_NAME)
    record["patches"][PATCH_ID]["siblings"].append(planted)
    records.plant(overlay / RECORD_NAME, record)
    assert _one(project, root, check=True).status == "needed"


def test_overlay_record_without_this_patch_is_not_an_entry(project, root):
    overlay = _overlay(project)
    overlay.mkdir(parents=True)
    records.plant(overlay / RECORD_NAME, {"format": 1, "rocm_root": str(root), "rocm_version": "6.0.2", "patches": {}})
    assert _one(project, root, check=True).status == "needed"
    assert _one(project, root, revert=True).status == "not-needed"


# -- overlay: revert ---------------------------------------------------------------------------------------


def test_overlay_revert_with_nothing_applied_is_not_needed_and_points_at_an_in_place_fix(project, root):
    header = root / HEADER
    nothing = PatchOutcome(PATCH_ID, "not-needed", f"no overlay holds {PATCH_ID} for {root}", file=header)
    assert _one(project, root, revert=True) == nothing
    _run(project, root, in_place=True)
    assert _one(project, root, revert=True) == dataclasses.replace(
        nothing, message=f"no overlay holds {PATCH_ID} for {root}; the system header was fixed in place: "
                         "use --in-place --revert")
    _run(project, root, in_place=True, revert=True)  # the record says "reverted" now: no hint
    assert _one(project, root, revert=True) == nothing


@pytest.mark.parametrize("asked", [{"dry_run": True}, {"check": True}])
def test_overlay_revert_dry_run_or_check_removes_nothing(project, root, asked):
    overlay = _overlay(project)
    _run(project, root)
    before = tree_state(overlay)
    report = _run(project, root, revert=True, **asked)
    assert report.include_dir is None
    assert report.outcomes == (PatchOutcome(PATCH_ID, "needed", f"would remove {PATCH_ID} from the overlay {overlay}",
                                            file=root / HEADER, target=overlay / HEADER),)
    assert tree_state(overlay) == before and all((overlay / s).is_symlink() for s in SIBLINGS)


def test_overlay_revert_removes_every_file_and_folder_it_made(project, root):
    overlay = _overlay(project)
    before = tree_state(root)
    _run(project, root)
    assert _one(project, root, revert=True) == PatchOutcome(
        PATCH_ID, "reverted", f"removed {PATCH_ID} from the overlay {overlay}; the ROCm root was never touched",
        file=root / HEADER, written=(overlay / HEADER, *(overlay / s for s in SIBLINGS)))
    assert not overlay.exists() and (project / ".resolver" / "overlay").is_dir()
    assert tree_state(root) == before


def test_overlay_revert_keeps_what_another_patch_of_the_record_uses(project, root, crash_points):
    overlay = _overlay(project)
    _run(project, root)
    record = _json(overlay / RECORD_NAME)
    shared = SIBLINGS[:2]
    other = {"file": SIBLINGS[2], "source_sha256": "a" * 64, "sha256": "b" * 64, "siblings": shared,
             "forced": False, "header_state": "original", "changes": [], "time": "2026-01-01T00:00:00Z"}
    record["patches"]["other-fix"] = other
    records.plant(overlay / RECORD_NAME, record)
    crash_points.clear()
    outcome = _one(project, root, revert=True)
    assert outcome.written == (overlay / HEADER, *(overlay / s for s in SIBLINGS[3:]))
    assert crash_points == ["overlay-record:after-temp", "overlay-record:after-replace"]
    assert all((overlay / s).is_symlink() for s in SIBLINGS[:3]) and not (overlay / HEADER).exists()
    assert _json(overlay / RECORD_NAME) == dict(record, patches={"other-fix": other})


def test_overlay_revert_that_cannot_remove_a_file_says_to_check_permissions(project, root):
    overlay = _overlay(project)
    _run(project, root)
    link = overlay / SIBLINGS[0]
    link.unlink()
    link.mkdir()
    (link / "keep").write_text("")
    with pytest.raises(EnvironmentProblem) as caught:
        _run(project, root, revert=True)
    assert caught.value.message == f"cannot change the overlay {overlay} (Is a directory)"
    assert caught.value.fix == "check its permissions"
    assert (overlay / RECORD_NAME).exists()


def test_overlay_revert_refuses_a_record_naming_a_path_outside(project, root):
    overlay = _overlay(project)
    _run(project, root)
    record = _json(overlay / RECORD_NAME)
    record["patches"][PATCH_ID]["siblings"].append("include/../../outside.h")
    records.plant(overlay / RECORD_NAME, record)
    with pytest.raises(BadInput) as caught:
        _run(project, root, revert=True)
    assert caught.value.message.startswith(f"{RECORD_NAME} names ")
    assert caught.value.fix == "run `python -m resolver patch --revert`, delete the overlay folder, and apply again"
    assert (overlay / HEADER).exists()


def test_overlay_folder_linked_out_of_the_overlay_is_refused_before_writing(tmp_path, project, root):
    overlay = tmp_path / "overlay"
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "hip" / "amd_detail").mkdir(parents=True)
    overlay.mkdir()
    (overlay / "include").symlink_to(elsewhere)
    with pytest.raises(BadInput) as caught:
        _run(project, root, overlay=overlay)
    assert caught.value.message == f"the fixed header {HEADER} leads outside the overlay {overlay}"
    assert caught.value.fix == "run `python -m resolver patch --revert`, delete the overlay folder, and apply again"
    assert not list((elsewhere / "hip" / "amd_detail").iterdir())


# -- where the overlay may be ------------------------------------------------------------------------------


def test_overlay_in_the_rocm_root_is_refused_with_where_it_lies(tmp_path, project, root):
    fix = ("pass --overlay DIR outside the ROCm installation (the default is .resolver/overlay/ in the project; "
           "remove a link there that points into ROCm), or --in-place to fix the ROCm header itself with a backup")
    for overlay, expected in ((root, f"--overlay {root} is the ROCm root {root}"),
                              (root / "include" / "ov", f"--overlay {root / 'include' / 'ov'} lies inside the ROCm root {root}")):
        with pytest.raises(BadInput) as caught:
            _run(project, root, overlay=overlay)
        assert (caught.value.message, caught.value.fix) == (expected, fix)
    default = _overlay(project)
    default.parent.mkdir(parents=True)
    default.symlink_to(root)
    with pytest.raises(BadInput) as caught:
        _run(project, root)
    assert caught.value.message == f"the overlay folder {default} is the ROCm root {root} (it leads to {root})"


# -- what is not needed, and why ---------------------------------------------------------------------------


def _registry_with(*headers: KnownHeader) -> Registry:
    return Registry((dataclasses.replace(SPEC, headers=SPEC.headers + headers),))


def test_no_rocm_says_where_it_looked(project, monkeypatch, tmp_path):
    for name in ("ROCM_PATH", "ROCM_HOME"):
        monkeypatch.delenv(name, raising=False)
    cases = [({"ROCM_PATH": str(tmp_path / "none")}, f"$ROCM_PATH={tmp_path / 'none'}"),
             ({"ROCM_PATH": " ", "ROCM_HOME": str(tmp_path / "home")}, f"$ROCM_HOME={tmp_path / 'home'}"),
             ({"ROCM_HOME": str(tmp_path / "home")}, f"$ROCM_HOME={tmp_path / 'home'}")]
    for env, looked in cases:
        for name in ("ROCM_PATH", "ROCM_HOME"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        report = _run(project, None)
        assert (report.mode, report.action, report.rocm, report.overlay, report.dry_run) == \
            ("overlay", "apply", None, None, False)
        assert report.outcomes == (PatchOutcome(PATCH_ID, "not-needed",
                                                f"no ROCm installation found ({looked}): nothing to fix"),)
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.delenv("ROCM_HOME", raising=False)
    if os.path.isdir("/opt/rocm"):
        pytest.skip("this machine has /opt/rocm")
    report = _run(project, None, in_place=True, check=True, dry_run=True)
    assert (report.mode, report.action, report.dry_run) == ("in-place", "check", True)
    assert _one(project, None).message == ("no ROCm installation found (/opt/rocm; set ROCM_PATH or pass "
                                           "--rocm-root if it is elsewhere): nothing to fix")


def test_known_headers_that_need_nothing_say_which_release_they_are(tmp_path, project):
    cases = [(KnownHeader("", "older-affected", rocm=("5.7.0", "5.7.1")),
              "this header (ROCm 5.7.0, 5.7.1) has the same defect, but {id} is for ROCm 6.0 and mamba-ssm needs "
              "ROCm 6.0 or newer"),
             (KnownHeader("", "upstream-fixed", tags=("rocm-6.2.0", "rocm-6.2.1")),
              "this header (rocm-6.2.0, rocm-6.2.1) is fixed upstream: {id} is not needed"),
             (KnownHeader("", "upstream-fixed"), "this header (sha256 {sha12}…) is fixed upstream: {id} is not needed")]
    for number, (known, text) in enumerate(cases):
        root = make_rocm(tmp_path / str(number)).resolve()
        data = ORIGINAL + f"// variant {number}\n".encode()
        (root / HEADER).write_bytes(data)
        digest = _sha_bytes(data)
        outcome = _one(project, root, _registry_with(dataclasses.replace(known, sha256=digest)), force=True)
        assert outcome == PatchOutcome(PATCH_ID, "not-needed", text.format(id=PATCH_ID, sha12=digest[:12]),
                                       file=root / HEADER, sha256_before=digest, header_state=known.state)


@pytest.mark.parametrize("version,text", [
    ("5.7.1", "ROCm 5.7.1 is older than the 6.0.x this fix is for: {id} is not needed"),
    ("6.2.0", "ROCm 6.2.0 does not need {id} (fixed upstream in 6.1.0)")])
def test_unknown_header_of_another_release_is_not_needed(tmp_path, project, version, text):
    root = make_rocm(tmp_path, version=version).resolve()
    data = ORIGINAL + b"//\n"
    (root / HEADER).write_bytes(data)
    assert _one(project, root) == PatchOutcome(PATCH_ID, "not-needed", text.format(id=PATCH_ID), file=root / HEADER,
                                               sha256_before=_sha_bytes(data), header_state="unknown")
    without = Registry((dataclasses.replace(SPEC, fixed_upstream_in=None),))
    if version == "6.2.0":
        assert _one(project, root, without).message == f"ROCm 6.2.0 does not need {PATCH_ID}"


def test_fixed_in_place_by_hand_is_already_applied_with_its_release(project, root):
    (root / HEADER).write_bytes(FIXED)
    assert _one(project, root) == PatchOutcome(
        PATCH_ID, "already-applied", f"{root / HEADER} is already fixed in place (ROCm 6.0.2 (synthetic))",
        file=root / HEADER, target=root / HEADER, sha256_before=FIXED_SHA, sha256_after=FIXED_SHA,
        header_state="fixed")


def test_the_build_is_told_which_fix_is_missing(project, root):
    with pytest.raises(EnvironmentProblem) as caught:
        overlay_include_dir(ProjectPaths(project), root, registry=REGISTRY)
    assert caught.value.message == f"ROCm 6.0.2 needs the header fix {PATCH_ID}, which is not in the overlay"
    assert caught.value.fix == "run `python -m resolver patch`"
    unknown_release = make_rocm(project / "no-release", version=None).resolve()
    (unknown_release / "include" / "hip" / "hip_version.h").unlink()
    with pytest.raises(EnvironmentProblem) as caught:
        overlay_include_dir(ProjectPaths(project), unknown_release, registry=REGISTRY)
    assert caught.value.message == (f"the ROCm at {unknown_release} needs the header fix {PATCH_ID}, which is not "
                                    "in the overlay")
    elsewhere = project / "elsewhere-overlay"
    _run(project, root, overlay=elsewhere)
    assert overlay_include_dir(ProjectPaths(project), root, overlay=elsewhere, registry=REGISTRY) == elsewhere / "include"
    with pytest.raises(EnvironmentProblem):
        overlay_include_dir(ProjectPaths(project), root, registry=REGISTRY)
    data = ORIGINAL + b"// fixed upstream\n"
    (root / HEADER).write_bytes(data)
    upstream = _registry_with(KnownHeader(_sha_bytes(data), "upstream-fixed"))
    assert overlay_include_dir(ProjectPaths(project), root, registry=upstream) is None


# -- records keep UTC times ----------------------------------------------------------------------------------


@pytest.fixture
def far_time_zone(monkeypatch):
    """A local zone 5 h 30 min east of UTC for the test's duration."""
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _is_now_in_utc(stamp: str) -> bool:
    when = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    return abs((datetime.datetime.now(datetime.timezone.utc) - when).total_seconds()) < 120


def test_records_keep_their_times_in_utc_whatever_the_local_zone(project, root, far_time_zone):
    assert time.strftime("%H:%M", time.localtime(0)) == "05:30"
    _run(project, root)
    _run(project, root, in_place=True)
    assert _is_now_in_utc(_json(_overlay(project) / RECORD_NAME)["patches"][PATCH_ID]["time"])
    assert _is_now_in_utc(_json(_record_path(project, root))["time"])
    _run(project, root, in_place=True, revert=True)
    assert _is_now_in_utc(_json(_record_path(project, root))["reverted"])


# -- more than one patch or series ---------------------------------------------------------------------------


def test_the_build_is_told_every_missing_fix(project, root):
    both = Registry((SPEC, dataclasses.replace(SPEC, id="rocm6.0-other-fix")))
    with pytest.raises(EnvironmentProblem) as caught:
        overlay_include_dir(ProjectPaths(project), root, registry=both)
    assert caught.value.message == f"ROCm 6.0.2 needs the header fix {PATCH_ID}, rocm6.0-other-fix, which is not in the overlay"


def test_a_fix_for_two_series_names_both(tmp_path, project):
    two = dataclasses.replace(SPEC, rocm_versions=(DottedVersion.parse("6.0"), DottedVersion.parse("6.1")))
    root = make_rocm(tmp_path / "a", version="5.7.1").resolve()
    data = ORIGINAL + b"//\n"
    (root / HEADER).write_bytes(data)
    assert _one(project, root, Registry((two,))).message == \
        f"ROCm 5.7.1 is older than the 6.0.x, 6.1.x this fix is for: {PATCH_ID} is not needed"
    older = dataclasses.replace(two, headers=two.headers + (KnownHeader(_sha_bytes(data), "older-affected"),))
    assert _one(project, root, Registry((older,))).message == \
        (f"this header (sha256 {_sha_bytes(data)[:12]}…) has the same defect, but {PATCH_ID} is for ROCm 6.0, 6.1 "
         "and mamba-ssm needs ROCm 6.0 or newer")


def test_in_place_revert_follows_the_record_even_when_the_fixed_bytes_are_a_known_header(project, root):
    """A forced fix whose result the table later lists (as fixed upstream, say) is still ours to revert."""
    header = root / HEADER
    edited = ORIGINAL + b"// a distribution's variant\n"
    header.write_bytes(edited)
    _run(project, root, in_place=True, force=True)
    listed = _registry_with(KnownHeader(sha(header), "upstream-fixed"))
    outcome = _one(project, root, listed, in_place=True, revert=True)
    assert (outcome.status, outcome.header_state) == ("reverted", "upstream-fixed")
    assert header.read_bytes() == edited


def test_a_sibling_folder_linked_out_of_the_overlay_is_refused_before_the_first_write(tmp_path, project, root):
    (root / "include" / "hip" / "extra").mkdir()
    (root / "include" / "hip" / "extra" / "more.h").write_text("#pragma once\n")
    neighbour = root / SIBLINGS[0]
    neighbour.write_text(neighbour.read_text() + '\n#include "../extra/more.h"\n')
    overlay, elsewhere = tmp_path / "overlay", tmp_path / "elsewhere"
    (overlay / "include" / "hip").mkdir(parents=True)
    elsewhere.mkdir()
    (overlay / "include" / "hip" / "extra").symlink_to(elsewhere)
    with pytest.raises(BadInput) as caught:
        _run(project, root, overlay=overlay)
    assert caught.value.message == f"the sibling header include/hip/extra/more.h leads outside the overlay {overlay}"
    assert not (overlay / HEADER).exists() and not list(elsewhere.iterdir())


def test_a_fix_inserts_the_words_its_patch_names(project, root):
    header = root / HEADER
    edited = ORIGINAL + b"//\n"
    header.write_bytes(edited)
    other_words = dataclasses.replace(SPEC, fix=dataclasses.replace(SPEC.fix, insert="static __inline__"))
    outcome = _one(project, root, Registry((other_words,)), force=True, in_place=True)
    assert outcome.changes and all("static __inline__" in c.after for c in outcome.changes)
    assert outcome.message.endswith("are now static __inline__")
    assert header.read_bytes() == add_static_inline(edited.decode("latin-1"), SPEC.fix.functions,
                                                    "static __inline__").text.encode("latin-1")


def test_a_known_original_whose_fix_gives_another_checksum_is_an_integrity_error(project, root):
    wrong = KnownHeader(ORIGINAL_SHA, "original", rocm=("6.0.2",), fixed_sha256="0" * 64)
    registry = Registry((dataclasses.replace(SPEC, headers=(wrong,)),))
    before = tree_state(root)
    with pytest.raises(IntegrityError) as caught:
        _run(project, root, registry)
    assert caught.value.message == f"the fix of {root / HEADER} (ROCm 6.0.2) did not give the recorded checksum 000000000000…"
    assert caught.value.fix == "report it: patches/ and the transformation disagree"
    assert tree_state(root) == before and not (project / ".resolver").exists()


def test_setup_is_refused_an_unknown_header_with_the_outcomes_fix(project, root):
    from resolver.core.errors import Refusal
    from resolver.patch import ensure_overlay
    header = root / HEADER
    header.write_bytes(ORIGINAL + b"//\n")
    outcome = _one(project, root)
    with pytest.raises(Refusal) as caught:
        ensure_overlay(ProjectPaths(project), None, rocm_root=root, registry=REGISTRY)
    assert (caught.value.message, caught.value.fix) == (outcome.message, outcome.fix)
    assert outcome.fix.startswith("compare it with a ROCm 6.0 header")


# -- apply: what a check, a dry run and an unknown header answer ----------------------------------------------


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("dry_run", [False, True])
def test_check_and_dry_run_say_what_would_be_written_and_write_nothing(project, root, in_place, dry_run):
    header = root / HEADER
    target = header if in_place else _overlay(project) / HEADER
    label = "in place" if in_place else "into the overlay"
    before = tree_state(root)
    report = _run(project, root, in_place=in_place, **({"dry_run": True} if dry_run else {"check": True}))
    verb = "would write" if dry_run else "needs"
    assert report.outcomes == (PatchOutcome(
        PATCH_ID, "needed", f"{header} {verb} the fix {PATCH_ID} {label}" + (f" ({target})" if dry_run else ""),
        file=header, target=target, sha256_before=ORIGINAL_SHA, sha256_after=FIXED_SHA, header_state="original",
        changes=_FIX.changes, fix="run `python -m resolver patch`" + (" --in-place" if in_place else "")),)
    assert report.action == ("apply" if dry_run else "check") and report.dry_run is dry_run
    assert tree_state(root) == before and not (project / ".resolver").exists()


REFUSAL_FIX = ("compare it with a ROCm 6.0 header, then run `python -m resolver patch --force` to apply the structural "
               "fix (it reports every line it changes)")


@pytest.mark.parametrize("check", [False, True])
def test_an_unknown_header_is_refused_and_a_check_calls_it_needed(project, root, check):
    header = root / HEADER
    header.write_bytes(ORIGINAL + b"// a local edit\n")
    digest = sha(header)
    assert _one(project, root, check=check) == PatchOutcome(
        PATCH_ID, "needed" if check else "refused", f"{header} (ROCm 6.0.2) has sha256 {digest[:12]}…, which is "
        f"neither a known original nor a known fixed result of {PATCH_ID}; refusing to guess", fix=REFUSAL_FIX,
        file=header, sha256_before=digest, header_state="unknown")
    assert not (project / ".resolver").exists()


def test_an_unknown_header_of_an_unknown_release_is_refused_naming_the_root(tmp_path, project):
    root = make_rocm(tmp_path, version=None).resolve()
    (root / "include" / "hip" / "hip_version.h").unlink()
    header = root / HEADER
    header.write_bytes(ORIGINAL + b"// a local edit\n")
    outcome = _one(project, root)
    assert (outcome.status, outcome.fix) == ("refused", REFUSAL_FIX)
    assert outcome.message.startswith(f"{header} (ROCm at {root}) has sha256 {sha(header)[:12]}…, ")


def test_an_unknown_header_with_nothing_to_fix_is_not_needed(project, root):
    header = root / HEADER
    header.write_bytes((FIXTURES / "amd_hip_bf16-6.1.h").read_bytes() + b"// a local edit\n")
    digest = sha(header)
    for forced in (False, True):
        assert _one(project, root, force=forced) == PatchOutcome(
            PATCH_ID, "not-needed", f"{header} is not a header we know (sha256 {digest[:12]}…), but none of "
            f"{', '.join(SPEC.fix.functions)} lacks inline: nothing to fix", file=header, sha256_before=digest,
            header_state="unknown")
    assert not (project / ".resolver").exists()


def test_a_rocm_root_without_the_header_needs_nothing(project, root):
    (root / HEADER).unlink()
    for asked in ({}, {"in_place": True}, {"revert": True}, {"in_place": True, "revert": True}):
        assert _one(project, root, **asked) == PatchOutcome(
            PATCH_ID, "not-needed", f"ROCm at {root} has no {HEADER}: nothing to fix", file=root / HEADER)
    assert not (project / ".resolver").exists()


def test_stale_temporary_files_in_the_rocm_root_are_removed_only_by_an_in_place_write(project, root):
    header = root / HEADER
    stale = [header.parent / f".{name}.resolver-tmp-999999999" for name in (header.name, header.name + ".resolver-orig")]
    for path in stale:
        path.write_bytes(b"left by a killed run")
    for asked in ({}, {"check": True}, {"in_place": True, "check": True}, {"in_place": True, "dry_run": True}):
        _run(project, root, **asked)
        assert all(path.exists() for path in stale), asked
    _run(project, root, in_place=True)
    assert not any(path.exists() for path in stale)
