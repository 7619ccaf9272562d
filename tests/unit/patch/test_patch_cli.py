"""`python -m resolver patch` end to end on synthetic ROCm roots (real files, real subprocesses)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from support import cli, projects
from support.patch_support import (
    FIXTURES,
    HEADER,
    SIX,
    make_rocm,
    run_patch,
    sha,
    tree_state,
)

from resolver.core.errors import EnvironmentProblem
from resolver.patch import PatchRequest, load_registry, overlay_include_dir, run_patches
from resolver.patch.overlay import RECORD_NAME
from resolver.project.paths import ProjectPaths

ORIGINAL_60 = sha(FIXTURES / "root-6.0" / HEADER)
ORIGINAL_61 = sha(FIXTURES / "amd_hip_bf16-6.1.h")


def _fixed_sha() -> str:
    from support.patch_support import TABLE
    return load_registry(extra_tables=[TABLE]).get("rocm6.0-bf16-inline").classify(ORIGINAL_60).fixed_sha256


FIXED_60 = _fixed_sha()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return projects.project(tmp_path / "project", "")


def _overlay_header(project: Path, version: str = "6.0.2") -> Path:
    return project / ".resolver" / "overlay" / f"rocm-{version}" / HEADER


def test_overlay_apply_leaves_rocm_untouched_and_second_run_is_idempotent(tmp_path, project):
    root = make_rocm(tmp_path)
    before = tree_state(root)
    code, data, err = run_patch(project, "--rocm-root", str(root))
    assert code == 0, err
    assert data["status"] == "applied" and data["rocm_version"] == "6.0.2" and data["mode"] == "overlay"
    assert data["sha256_before"] == ORIGINAL_60 and data["sha256_after"] == FIXED_60
    assert data["changed_functions"] == list(SIX)
    target = _overlay_header(project)
    assert sha(target) == FIXED_60
    assert data["include_dir"] == str(project / ".resolver" / "overlay" / "rocm-6.0.2" / "include")
    assert tree_state(root) == before
    stamp = target.stat().st_mtime_ns

    code, data, err = run_patch(project, "--rocm-root", str(root))
    assert code == 0 and data["status"] == "already-applied", err
    assert "already applied" in data["patches"][0]["message"]
    assert target.stat().st_mtime_ns == stamp
    code, _, _ = run_patch(project, "--rocm-root", str(root), "--check")
    assert code == 0


def test_human_output_says_already_applied(tmp_path, project):
    root = make_rocm(tmp_path)
    run_patch(project, "--rocm-root", str(root))
    out = cli.run("patch", "--rocm-root", str(root), project=project, timeout=60,
                  env={"RESOLVER_PATCH_TABLES": str(FIXTURES / "known-headers.toml")})
    assert out.returncode == 0 and "already applied" in out.stdout


def test_rocm_root_from_environment_variable(tmp_path, project):
    root = make_rocm(tmp_path)
    code, data, _ = run_patch(project, "--check", env={"ROCM_HOME": str(root)})
    assert code == 1 and data["status"] == "needed" and data["rocm_root"] == str(root)
    code, data, _ = run_patch(project, "--check", env={"ROCM_PATH": str(root), "ROCM_HOME": "/nonexistent"})
    assert code == 1 and data["rocm_root"] == str(root)


def test_in_place_apply_then_revert_restores_bytes(tmp_path, project):
    root = make_rocm(tmp_path)
    header = root / HEADER
    original = header.read_bytes()
    header.chmod(0o640)
    code, data, err = run_patch(project, "--rocm-root", str(root), "--in-place")
    assert code == 0 and data["status"] == "applied", err
    assert sha(header) == FIXED_60
    assert stat.S_IMODE(header.stat().st_mode) == 0o640
    backup = header.with_name(header.name + ".resolver-orig")
    assert backup.read_bytes() == original
    records = list((project / ".resolver" / "state" / "patches").glob("*.json"))
    assert len(records) == 1 and '"state": "applied"' in records[0].read_text()
    assert not (project / ".resolver" / "overlay").exists()

    code, data, _ = run_patch(project, "--rocm-root", str(root), "--in-place")
    assert code == 0 and data["status"] == "already-applied"
    code, data, _ = run_patch(project, "--rocm-root", str(root), "--check")  # the overlay is not needed now
    assert code == 0 and data["status"] == "already-applied" and data["include_dir"] is None

    code, data, err = run_patch(project, "--rocm-root", str(root), "--in-place", "--revert")
    assert code == 0 and data["status"] == "reverted", err
    assert header.read_bytes() == original
    assert stat.S_IMODE(header.stat().st_mode) == 0o640
    assert not backup.exists()
    code, data, _ = run_patch(project, "--rocm-root", str(root), "--in-place", "--revert")
    assert code == 0 and data["status"] == "not-needed"


def test_revert_of_the_overlay_removes_only_the_overlay(tmp_path, project):
    root = make_rocm(tmp_path)
    before = tree_state(root)
    run_patch(project, "--rocm-root", str(root))
    code, data, _ = run_patch(project, "--rocm-root", str(root), "--revert")
    assert code == 0 and data["status"] == "reverted"
    assert not (project / ".resolver" / "overlay" / "rocm-6.0.2").exists()
    assert tree_state(root) == before
    code, _, _ = run_patch(project, "--rocm-root", str(root), "--check")
    assert code == 1


def test_unknown_header_is_refused_with_one_sentence(tmp_path, project):
    root = make_rocm(tmp_path)
    with open(root / HEADER, "a") as handle:
        handle.write("// a local edit\n")
    code, data, err = run_patch(project, "--rocm-root", str(root), in_process=False)
    assert code == 2
    assert data["status"] == "refused" and "--force" in data["fix"]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "neither a known original" in errors[0] and "Traceback" not in err
    assert not (project / ".resolver").exists()
    code, data, _ = run_patch(project, "--rocm-root", str(root), "--check")
    assert code == 1 and data["status"] == "needed"


def test_force_applies_the_structural_fix_and_reports_each_change(tmp_path, project):
    root = make_rocm(tmp_path)
    text = (root / HEADER).read_text()
    edited = "// two lines a distribution added\n// before everything\n" + text
    (root / HEADER).write_text(edited)
    code, data, err = run_patch(project, "--rocm-root", str(root), "--force")
    assert code == 0 and data["status"] == "applied", err
    assert data["changed_functions"] == list(SIX)
    lines = edited.splitlines()
    for change in data["patches"][0]["changes"]:
        assert lines[change["line"] - 1] == change["before"]
        assert change["after"] == change["before"].replace("__HOST_DEVICE__", "__HOST_DEVICE__ static inline", 1)
    fixed = _overlay_header(project).read_text().splitlines()
    assert [i + 1 for i, (a, b) in enumerate(zip(lines, fixed)) if a != b] == \
        [c["line"] for c in data["patches"][0]["changes"]]
    code, data, _ = run_patch(project, "--rocm-root", str(root))  # accepted once: not refused again
    assert code == 0 and data["status"] == "already-applied"


def test_force_on_a_6_1_header_never_doubles_static_inline(tmp_path, project):
    root = make_rocm(tmp_path, version="6.0.2-1", header=FIXTURES / "amd_hip_bf16-6.1.h")
    with open(root / HEADER, "a") as handle:
        handle.write("// unknown variant\n")
    code, data, err = run_patch(project, "--rocm-root", str(root), "--force")
    assert code == 0 and data["status"] == "not-needed", err
    assert not (project / ".resolver").exists()


@pytest.mark.parametrize("version", ["6.1.2-119", "6.2.0"])
def test_rocm_6_1_and_later_need_nothing(tmp_path, project, version):
    root = make_rocm(tmp_path, version=version, header=FIXTURES / "amd_hip_bf16-6.1.h")
    before = tree_state(root)
    for args in ((), ("--check",), ("--in-place",)):
        code, data, err = run_patch(project, "--rocm-root", str(root), *args)
        assert code == 0 and data["status"] == "not-needed", err
        assert data["rocm_version"] == version.split("-")[0]
    assert not (project / ".resolver").exists()
    assert tree_state(root) == before


def test_version_says_6_1_but_header_unknown_is_not_needed(tmp_path, project):
    root = make_rocm(tmp_path, version="6.1.0")
    with open(root / HEADER, "a") as handle:
        handle.write("//\n")
    code, data, _ = run_patch(project, "--rocm-root", str(root))
    assert code == 0 and data["status"] == "not-needed" and "does not need" in data["patches"][0]["message"]


def test_no_rocm_is_not_needed(tmp_path, project):
    code, data, err = run_patch(project, env={"ROCM_PATH": str(tmp_path / "none")})
    assert code == 0 and data["status"] == "not-needed" and data["rocm_root"] is None, err
    code, data, _ = run_patch(project, "--check", env={"ROCM_PATH": str(tmp_path / "none")})
    assert code == 0
    assert not (project / ".resolver").exists()


def test_rocm_root_without_the_header_is_not_needed(tmp_path, project):
    root = make_rocm(tmp_path)
    (root / HEADER).unlink()
    code, data, _ = run_patch(project, "--rocm-root", str(root))
    assert code == 0 and data["status"] == "not-needed"


def test_explicit_missing_rocm_root_is_an_error(tmp_path, project):
    code, data, err = run_patch(project, "--rocm-root", str(tmp_path / "typo"), in_process=False)
    assert code == 3 and "does not exist" in data["error"]
    assert len([l for l in err.splitlines() if l.startswith("error:")]) == 1


def test_version_from_hip_version_header_when_info_is_missing(tmp_path, project):
    root = make_rocm(tmp_path, version=None)
    code, data, _ = run_patch(project, "--rocm-root", str(root))
    assert code == 0 and data["status"] == "applied"
    assert data["rocm_version"] == "6.0" and data["version_source"] == "include/hip/hip_version.h"


def test_dry_run_writes_nothing(tmp_path, project):
    root = make_rocm(tmp_path)
    before = tree_state(root)
    for args in ((), ("--in-place",)):
        code, data, _ = run_patch(project, "--rocm-root", str(root), "--dry-run", *args)
        assert code == 0 and data["status"] == "needed" and data["dry_run"] is True
        assert data["sha256_after"] == FIXED_60 and data["patches"][0]["target"]
    assert not (project / ".resolver").exists()
    assert tree_state(root) == before


def test_check_and_revert_together_is_refused(tmp_path, project):
    code, data, err = run_patch(project, "--check", "--revert")
    assert code == 2 and "cannot be combined" in data["error"]


def test_explicit_overlay_folder_and_unwritable_overlay(tmp_path, project):
    root = make_rocm(tmp_path)
    overlay = tmp_path / "my-overlay"
    code, data, _ = run_patch(project, "--rocm-root", str(root), "--overlay", str(overlay))
    assert code == 0 and sha(overlay / HEADER) == FIXED_60 and data["overlay"] == str(overlay)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, data, err = run_patch(project, "--rocm-root", str(root), "--overlay", str(blocker / "sub"))
    assert code == 7 and "cannot write the overlay" in data["error"]
    assert len([l for l in err.splitlines() if l.startswith("error:")]) == 1


def test_stale_overlay_is_rebuilt_when_the_rocm_header_changes(tmp_path, project):
    root = make_rocm(tmp_path)
    run_patch(project, "--rocm-root", str(root))
    os.unlink(_overlay_header(project))
    code, data, _ = run_patch(project, "--rocm-root", str(root), "--check")
    assert code == 1 and data["status"] == "needed"
    code, data, _ = run_patch(project, "--rocm-root", str(root))
    assert code == 0 and data["status"] == "applied" and sha(_overlay_header(project)) == FIXED_60


def _read_only_prefix(folder: Path) -> list[str] | None:
    """Run a command with ``folder`` as a real read-only mount (root), or chmod it (others)."""
    if os.geteuid() != 0:  # pragma: no cover - CI runs as root
        for path in [folder, *folder.rglob("*")]:
            if path.is_dir():
                path.chmod(0o555)
        return []
    if shutil.which("unshare") is None:
        return None
    script = f'mount --bind "{folder}" "{folder}" && mount -o remount,ro,bind "{folder}" && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, "sh"]


def test_read_only_rocm_root_works_through_the_overlay(tmp_path, project):
    root = make_rocm(tmp_path)
    before = tree_state(root)
    prefix = _read_only_prefix(root)
    if prefix is None:
        pytest.skip("needs unshare to make a read-only mount as root")
    code, data, err = run_patch(project, "--rocm-root", str(root), command_prefix=prefix)
    assert code == 0 and data["status"] == "applied", err
    assert sha(_overlay_header(project)) == FIXED_60
    code, data, err = run_patch(project, "--rocm-root", str(root), "--in-place", command_prefix=prefix)
    assert code == 7 and "cannot write" in data["error"] and "without --in-place" in data["error"], err
    assert tree_state(root) == before


@pytest.mark.parametrize("crash_at,expected", [("patch:after-temp", "original"), ("patch:after-replace", "fixed"),
                                               ("backup:after-temp", "original")])
def test_in_place_run_killed_mid_way_leaves_old_or_new_file(tmp_path, project, crash_at, expected):
    root = make_rocm(tmp_path)
    header = root / HEADER
    original = header.read_bytes()
    code, _, _ = run_patch(project, "--rocm-root", str(root), "--in-place", env={"RESOLVER_CRASH_AT": crash_at})
    assert code == 137
    assert sha(header) == (ORIGINAL_60 if expected == "original" else FIXED_60)
    code, data, err = run_patch(project, "--rocm-root", str(root), "--in-place")
    assert code == 0 and data["status"] == ("applied" if expected == "original" else "already-applied"), err
    assert sha(header) == FIXED_60
    assert not [p for p in header.parent.iterdir() if ".resolver-tmp-" in p.name]
    record = next((project / ".resolver" / "state" / "patches").glob("*.json")).read_text()
    assert '"state": "applied"' in record
    code, data, _ = run_patch(project, "--rocm-root", str(root), "--in-place", "--revert")
    assert code == 0 and data["status"] == "reverted" and header.read_bytes() == original


def test_overlay_run_killed_mid_way_never_leaves_a_torn_overlay(tmp_path, project):
    root = make_rocm(tmp_path)
    code, _, _ = run_patch(project, "--rocm-root", str(root), env={"RESOLVER_CRASH_AT": "overlay:after-temp"})
    assert code == 137
    assert not _overlay_header(project).exists()
    code, data, _ = run_patch(project, "--rocm-root", str(root), "--check")
    assert code == 1
    code, _, _ = run_patch(project, "--rocm-root", str(root), env={"RESOLVER_CRASH_AT": "overlay-record:after-temp"})
    assert code == 137 and sha(_overlay_header(project)) == FIXED_60
    code, data, _ = run_patch(project, "--rocm-root", str(root))
    assert code == 0 and data["status"] == "applied"
    assert not [p for p in _overlay_header(project).parent.iterdir() if ".resolver-tmp-" in p.name]


def test_overlay_include_dir_for_the_build(tmp_path, project, monkeypatch):
    from support.patch_support import TABLE
    registry = load_registry(extra_tables=[TABLE])
    paths = ProjectPaths(project)
    root = make_rocm(tmp_path)
    with pytest.raises(EnvironmentProblem, match="resolver patch"):
        overlay_include_dir(paths, root, registry=registry)
    run_patches(paths, PatchRequest(rocm_root=root), registry)
    assert overlay_include_dir(paths, root, registry=registry) == project / ".resolver" / "overlay" / "rocm-6.0.2" / "include"
    newer = make_rocm(tmp_path / "b", version="6.1.2", header=FIXTURES / "amd_hip_bf16-6.1.h")
    assert overlay_include_dir(paths, newer, registry=registry) is None
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "none"))
    assert overlay_include_dir(paths, registry=registry) is None


def test_ensure_overlay_for_setup(tmp_path, project):
    from support.patch_support import TABLE

    from resolver.core.errors import Refusal
    from resolver.patch import ensure_overlay
    registry = load_registry(extra_tables=[TABLE])
    root = make_rocm(tmp_path)
    report = ensure_overlay(ProjectPaths(project), None, rocm_root=root, registry=registry)
    assert report["status"] == "applied" and report["include_dir"]
    with open(root / HEADER, "a") as handle:
        handle.write("//\n")
    with pytest.raises(Refusal):
        ensure_overlay(ProjectPaths(project), None, rocm_root=root, registry=registry)


def test_patch_id_selection(tmp_path, project):
    root = make_rocm(tmp_path)
    code, data, _ = run_patch(project, "--rocm-root", str(root), "--id", "rocm6.0-bf16-inline", "--check")
    assert code == 1 and [p["id"] for p in data["patches"]] == ["rocm6.0-bf16-inline"]
    code, data, err = run_patch(project, "--rocm-root", str(root), "--id", "rocm9-nothing")
    assert code == 3 and "rocm6.0-bf16-inline" in data["fix"]


def test_corrupt_overlay_record_is_rebuilt_not_trusted(tmp_path, project):
    root = make_rocm(tmp_path)
    run_patch(project, "--rocm-root", str(root))
    record = project / ".resolver" / "overlay" / "rocm-6.0.2" / "resolver-overlay.json"
    for garbage in ("{not json", '{"rocm_root": "%s", "patches": {"rocm6.0-bf16-inline": "x"}}' % root, "[]"):
        record.write_text(garbage)
        code, data, err = run_patch(project, "--rocm-root", str(root))
        assert code == 0 and data["status"] == "applied", err
        assert sha(_overlay_header(project)) == FIXED_60


def test_header_already_fixed_by_the_seeds_sudo_patch_is_recognised(tmp_path, project):
    """Someone ran `sudo patch` earlier: the header has the fixed checksum, there is no backup or record."""
    from resolver.patch.transform import add_static_inline
    root = make_rocm(tmp_path)
    header = root / HEADER
    header.write_bytes(add_static_inline(header.read_bytes().decode("latin-1"), SIX).text.encode("latin-1"))
    assert sha(header) == FIXED_60
    code, data, _ = run_patch(project, "--rocm-root", str(root))
    assert code == 0 and data["status"] == "already-applied" and data["include_dir"] is None
    assert data["patches"][0]["header_state"] == "fixed"
    assert not (project / ".resolver" / "overlay").exists()
    code, data, err = run_patch(project, "--rocm-root", str(root), "--in-place", "--revert")
    assert code == 2 and "backup" in data["error"] and sha(header) == FIXED_60, err


def test_in_place_revert_from_another_project_uses_the_backup_beside_the_header(tmp_path, project):
    root = make_rocm(tmp_path)
    original = (root / HEADER).read_bytes()
    assert run_patch(project, "--rocm-root", str(root), "--in-place")[0] == 0
    other = tmp_path / "other-project"
    other.mkdir()
    code, data, err = run_patch(other, "--rocm-root", str(root), "--in-place", "--revert")
    assert code == 0 and data["status"] == "reverted", err
    assert (root / HEADER).read_bytes() == original


def test_in_place_revert_refuses_when_the_header_changed_after_the_fix(tmp_path, project):
    root = make_rocm(tmp_path)
    run_patch(project, "--rocm-root", str(root), "--in-place")
    with open(root / HEADER, "a") as handle:
        handle.write("// edited after the fix\n")
    edited = sha(root / HEADER)
    code, data, _ = run_patch(project, "--rocm-root", str(root), "--in-place", "--revert")
    assert code == 2 and data["status"] == "refused" and sha(root / HEADER) == edited


def test_checksum_decides_before_the_version(tmp_path, project):
    root = make_rocm(tmp_path, version="6.1.0")  # a 6.0 original under a 6.1 label is still the broken header
    code, data, _ = run_patch(project, "--rocm-root", str(root), "--check")
    assert code == 1 and data["status"] == "needed" and data["patches"][0]["header_state"] == "original"


def test_unknown_version_falls_back_to_the_checksum(tmp_path, project):
    root = make_rocm(tmp_path / "a", version=None)
    (root / "include" / "hip" / "hip_version.h").unlink()
    code, data, _ = run_patch(project, "--rocm-root", str(root))
    assert code == 0 and data["status"] == "applied" and data["rocm_version"] is None
    assert data["overlay"].endswith("rocm-unknown")
    with open(root / HEADER, "a") as handle:
        handle.write("//\n")
    code, data, _ = run_patch(project, "--rocm-root", str(root))
    assert code == 2 and data["status"] == "refused"


def test_help_lists_every_flag():
    out = cli.run("patch", "--help", timeout=60)
    assert out.returncode == 0
    for flag in ("--rocm-root", "--overlay", "--in-place", "--check", "--revert", "--dry-run", "--force", "--json"):
        assert flag in out.stdout


PATCH_ID = "rocm6.0-bf16-inline"


def _outcome(project: Path, *args: str) -> tuple[int, dict]:
    code, data, err = run_patch(project, *args)
    assert data is not None, err
    (outcome,) = data["patches"]
    return code, outcome


def test_revert_with_nothing_in_the_overlay_says_so_and_where_the_fix_is(tmp_path, project):
    root = make_rocm(tmp_path)
    code, outcome = _outcome(project, "--rocm-root", str(root), "--revert")
    assert code == 0 and outcome["status"] == "not-needed" and outcome["file"] == str(root / HEADER)
    assert outcome["id"] == PATCH_ID and outcome["message"] == f"no overlay holds {PATCH_ID} for {root}"
    run_patch(project, "--rocm-root", str(root), "--in-place")
    _, outcome = _outcome(project, "--rocm-root", str(root), "--revert")
    assert outcome["message"] == (f"no overlay holds {PATCH_ID} for {root}; the system header was fixed in place: "
                                  "use --in-place --revert")


def test_revert_dry_run_says_what_it_would_remove_and_removes_nothing(tmp_path, project):
    root = make_rocm(tmp_path)
    run_patch(project, "--rocm-root", str(root))
    overlay = project / ".resolver" / "overlay" / "rocm-6.0.2"
    before = tree_state(overlay)
    code, outcome = _outcome(project, "--rocm-root", str(root), "--revert", "--dry-run")
    assert code == 0 and outcome["status"] == "needed" and outcome["id"] == PATCH_ID
    assert outcome["message"] == f"would remove {PATCH_ID} from the overlay {overlay}"
    assert (outcome["file"], outcome["target"]) == (str(root / HEADER), str(overlay / HEADER))
    assert tree_state(overlay) == before


def test_revert_reports_every_file_it_removed(tmp_path, project):
    root = make_rocm(tmp_path)
    run_patch(project, "--rocm-root", str(root))
    overlay = project / ".resolver" / "overlay" / "rocm-6.0.2"
    in_overlay = sorted(str(p) for p in overlay.rglob("*") if p.is_file() or p.is_symlink())
    code, outcome = _outcome(project, "--rocm-root", str(root), "--revert")
    assert code == 0 and outcome["status"] == "reverted" and outcome["id"] == PATCH_ID
    assert outcome["message"] == f"removed {PATCH_ID} from the overlay {overlay}; the ROCm root was never touched"
    assert outcome["file"] == str(root / HEADER) and outcome["written"][0] == str(overlay / HEADER)
    assert sorted(outcome["written"]) == [p for p in in_overlay if p != str(overlay / RECORD_NAME)]
    assert not overlay.exists()
