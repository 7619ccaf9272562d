"""`setup` as a whole: another machine's target stops after a real lock; concurrency; resumption."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from support import channel_factory as cf  # noqa: E402
from support import cli, projects


def test_rocm60_target_here_plans_locks_and_names_what_remains(tmp_path):
    """The PyTorch ROCm index is out of reach here, as on an air-gapped cluster: a local mirror of it
    (a wheelhouse with the pinned torch build) makes the lock real; the rest is left to the ROCm machine."""
    planned = cli.run("plan", "--target", "rocm6.0", "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    version, label = plan["torch"]["version"], plan["torch"]["variant"]
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    mirror = tmp_path / "rocm-mirror"
    wheel = cf.write_wheel(mirror, "torch", f"{version}+{label}", {"torch/__init__.py": f'__version__ = "{version}+{label}"\n'})
    wheel.rename(mirror / f"torch-{version}+{label}-{tag}-{tag}-linux_x86_64.whl")
    project = projects.project(tmp_path / "p")
    done = cli.run("setup", "--target", "rocm6.0", "--json", env={"RESOLVER_FIND_LINKS": str(mirror)}, timeout=600,
                   project=project)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert not report["complete"]
    assert [p["id"] for p in report["plan"]["patches"]] == ["rocm6.0-bf16-inline"]
    steps = {s["name"]: s["status"] for s in report["steps"]}
    assert steps["lock"] == "done"
    lock_detail = next(s["detail"] for s in report["steps"] if s["name"] == "lock")
    assert "added to pixi.toml: environment rocm6 (its own feature rocm6, no default feature)" in lock_detail
    assert [steps[s] for s in ("install", "patch", "build", "verify")] == ["deferred"] * 4
    assert any("rocm6.0-bf16-inline" in line for line in report["remaining"])
    lock_text = (project / "pixi.lock").read_text()
    assert f"torch-{version}+{label}" in lock_text or f"torch-{version}%2B{label}" in lock_text
    # the human form says what remains, in words
    again = cli.run("setup", "--target", "rocm6.0", env={"RESOLVER_FIND_LINKS": str(mirror)}, timeout=600,
                    project=project)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "lock     skipped" in again.stdout and "to finish on the target machine" in again.stdout


def test_rocm60_without_a_mirror_says_the_index_is_out_of_reach(tmp_path):
    project = projects.project(tmp_path / "p")
    done = cli.run("setup", "--target", "rocm6.0", timeout=600, project=project)
    assert done.returncode == 3
    error = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "cannot be reached from here" in error[0] and "--find-links" in error[0]


def test_concurrent_setup_waits_or_refuses(tmp_path):
    project = projects.project(tmp_path / "p")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from resolver.workflows.steps import project_lock\n"
                               f"with project_lock(Path({str(project / '.resolver' / 'state')!r})):\n"
                               "    print('held', flush=True); time.sleep(3)"],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    busy = cli.run("setup", "--dry-run", "--no-wait", timeout=60, project=project)
    assert busy.returncode == 6 and "another resolver run holds the project" in busy.stderr
    started = time.monotonic()
    waited = cli.run("setup", "--dry-run", timeout=60, project=project)
    holder.wait()
    assert waited.returncode == 0, waited.stderr
    assert "waiting for another resolver run" in waited.stdout + waited.stderr
    assert time.monotonic() - started > 1.0


def test_dry_run_changes_nothing(tmp_path):
    project = projects.project(tmp_path / "p")
    before = sorted(p.name for p in project.iterdir())
    done = cli.run("setup", "--dry-run", "--json", timeout=120, project=project)
    assert done.returncode == 0, done.stderr
    steps = {s["name"]: s["status"] for s in json.loads(done.stdout)["steps"]}
    assert steps["lock"] == "would-run" and steps["install"] == "would-run"
    assert not (project / "pixi.lock").exists() and not (project / ".resolver" / "envs").exists()
    assert sorted(p.name for p in project.iterdir() if p.name != ".resolver") == before


@pytest.mark.parametrize("target", ["cuda99.0", "rocm5.7"])
def test_targets_that_cannot_be_planned_are_refused_before_anything_is_written(tmp_path, target):
    project = projects.project(tmp_path / "p")
    done = cli.run("setup", "--target", target, timeout=120, project=project)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert not (project / "pixi.lock").exists()
