"""Issue 14, items 3, 7 and 11 for `patch`: a hostile or careless overlay, ROCm tree or overlay record
never makes `patch` write or delete outside its overlay (only --in-place touches the ROCm root), never
hangs on a FIFO or device, and concurrent runs do not break each other. Real files, real links, real
FIFOs, real processes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support import cli, projects, records
from support.patch_support import HEADER, TABLE, make_rocm, run_patch, sha, tree_state


def _entries(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (links included, not followed) with what it is: the whole tree's state."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = f"link->{os.readlink(path)}" if path.is_symlink() else \
            ("dir" if path.is_dir() else sha(path) + f"@{path.stat().st_mtime_ns}")
    return out


def _one_error(err: str) -> str:
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    assert "Traceback" not in err
    return errors[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return projects.project(tmp_path / "project", "")


def test_overlay_equal_to_the_rocm_root_is_refused_and_nothing_is_touched(tmp_path, project):
    root = make_rocm(tmp_path)
    before = _entries(root)
    for extra in ((), ("--revert",), ("--check",)):
        code, data, err = run_patch(project, "--rocm-root", str(root), "--overlay", str(root), *extra)
        assert code == 3, err
        assert "ROCm root" in _one_error(err) and "--in-place" in data["fix"]
        assert _entries(root) == before


def test_overlay_inside_the_rocm_root_is_refused(tmp_path, project):
    root = make_rocm(tmp_path)
    before = _entries(root)
    code, _, err = run_patch(project, "--rocm-root", str(root), "--overlay", str(root / "include" / "overlay"))
    assert code == 3 and "inside the ROCm root" in _one_error(err)
    assert _entries(root) == before


def test_default_overlay_folder_that_links_to_the_rocm_root_is_refused(tmp_path, project):
    root = make_rocm(tmp_path)
    (project / ".resolver" / "overlay").mkdir(parents=True)
    (project / ".resolver" / "overlay" / "rocm-6.0.2").symlink_to(root)
    before = _entries(root)
    for extra in ((), ("--revert",)):
        code, data, err = run_patch(project, "--rocm-root", str(root), *extra)
        assert code == 3, err
        assert "ROCm root" in _one_error(err)
        assert _entries(root) == before
    # --in-place is the one way to write under the ROCm root, and it still works
    code, data, err = run_patch(project, "--rocm-root", str(root), "--in-place")
    assert code == 0 and data["status"] == "applied", err


def test_overlay_subfolder_linked_into_the_rocm_root_is_refused(tmp_path, project):
    root = make_rocm(tmp_path)
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "include").symlink_to(root / "include")
    before = _entries(root)
    code, _, err = run_patch(project, "--rocm-root", str(root), "--overlay", str(overlay))
    assert code == 3 and "outside the overlay" in _one_error(err)
    assert _entries(root) == before


def test_neighbour_header_including_an_absolute_path_never_turns_it_into_a_link(tmp_path, project):
    root = make_rocm(tmp_path)
    victim = tmp_path / "outside" / "victim.h"
    victim.parent.mkdir()
    victim.write_text("#pragma once\nint victim;\n")
    neighbour = root / "include" / "hip" / "amd_detail" / "amd_hip_vector_types.h"
    neighbour.write_text(neighbour.read_text() + f'\n#include "{victim}"\n#include "../../../../outside/victim.h"\n')
    outside_before = _entries(tmp_path / "outside")
    code, data, err = run_patch(project, "--rocm-root", str(root), "--force")
    assert code == 0, err
    assert _entries(tmp_path / "outside") == outside_before and not victim.is_symlink()
    assert victim.read_text() == "#pragma once\nint victim;\n"
    record = records.read(project / ".resolver" / "overlay" / "rocm-6.0.2" / "resolver-overlay.json")
    siblings = record["patches"]["rocm6.0-bf16-inline"]["siblings"]
    assert siblings and all(not s.startswith("/") and ".." not in s.split("/") for s in siblings)
    code, _, err = run_patch(project, "--rocm-root", str(root), "--revert")
    assert code == 0, err
    assert victim.read_text() == "#pragma once\nint victim;\n"


@pytest.mark.parametrize("planted", ["absolute", "dotdot"])
def test_revert_never_removes_a_path_the_overlay_record_points_outside(tmp_path, project, planted):
    root = make_rocm(tmp_path)
    code, _, err = run_patch(project, "--rocm-root", str(root))
    assert code == 0, err
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    overlay = project / ".resolver" / "overlay" / "rocm-6.0.2"
    record_path = overlay / "resolver-overlay.json"
    record = records.read(record_path)
    record["patches"]["rocm6.0-bf16-inline"]["siblings"].append(
        str(victim) if planted == "absolute" else "../../../../victim.txt")
    records.plant(record_path, record)
    overlay_before = _entries(overlay)
    code, data, err = run_patch(project, "--rocm-root", str(root), "--revert")
    assert code == 3, err
    assert "overlay" in _one_error(err)
    assert victim.read_text() == "keep me\n"
    assert _entries(overlay) == overlay_before  # refused before the first removal


def test_rocm_header_that_is_a_fifo_is_refused_without_hanging(tmp_path, project):
    root = make_rocm(tmp_path)
    (root / HEADER).unlink()
    os.mkfifo(root / HEADER)
    code, _, err = run_patch(project, "--rocm-root", str(root), in_process=False)  # a hang would time out
    assert code == 3 and "not a regular file" in _one_error(err)
    assert not (project / ".resolver" / "overlay").exists()


def test_rocm_header_that_is_dev_zero_is_refused(tmp_path, project):
    root = make_rocm(tmp_path)
    (root / HEADER).unlink()
    (root / HEADER).symlink_to("/dev/zero")
    code, _, err = run_patch(project, "--rocm-root", str(root), in_process=False)
    assert code == 3 and "not a regular file" in _one_error(err)


def test_a_fifo_as_the_rocm_version_file_does_not_hang(tmp_path, project):
    root = make_rocm(tmp_path)
    (root / ".info" / "version").unlink()
    os.mkfifo(root / ".info" / "version")
    code, data, err = run_patch(project, "--rocm-root", str(root), in_process=False)
    assert code == 0, err
    assert data["rocm_version"] == "6.0" and data["version_source"] == "include/hip/hip_version.h"


def test_rocm_root_that_is_a_file_is_not_called_missing(tmp_path, project):
    afile = tmp_path / "rocm-file"
    afile.write_text("")
    code, _, err = run_patch(project, "--rocm-root", str(afile))
    assert code == 3 and "is not a folder" in _one_error(err)


def test_twelve_concurrent_runs_all_succeed_and_leave_no_temporary_files(tmp_path, project):
    """Each run used to delete the others' temporary files (6 of 12 failed with a wrong fix)."""
    root = make_rocm(tmp_path)
    before = tree_state(root)
    env = {"RESOLVER_PATCH_TABLES": str(TABLE), "ROCM_PATH": None, "ROCM_HOME": None, "RESOLVER_CRASH_AT": None}
    children = [cli.start("patch", "--rocm-root", str(root), "--json", project=project, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(12)]
    results = [(child.wait(timeout=120), child.stderr.read()) for child in children]
    for child in children:
        child.stdout.close()
        child.stderr.close()
    assert [code for code, _ in results] == [0] * 12, [err for _, err in results if err]
    overlay = project / ".resolver" / "overlay" / "rocm-6.0.2"
    assert not [p for p in overlay.rglob("*") if ".resolver-tmp-" in p.name]
    code, data, err = run_patch(project, "--rocm-root", str(root), "--check")
    assert code == 0 and data["status"] == "already-applied", err
    assert tree_state(root) == before
