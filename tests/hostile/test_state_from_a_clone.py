"""State that arrives with the working tree is never trusted: ``.resolver/state/`` committed in a pull
request (the "pixi.lock is current" answer, the plans behind pixi.lock) reads as absent in a clone, so
``lock --check`` checks again. Real git repositories, a real clone, the real CLI.

The class over every kind of record (a plain-JSON file as a clone brings it, one this user sealed for
another checkout, one another user's key sealed) is tests/hostile/test_cache_discipline.py's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import cli, records

from resolver.lock.current import _inputs_digest
from resolver.plan import locked
from resolver.project.manifest import Manifest
from resolver.project.paths import ProjectPaths

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

_STALENESS = Path(__file__).resolve().parents[1] / "unit" / "lock" / "test_staleness.py"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def _staleness():
    import importlib.util

    spec = importlib.util.spec_from_file_location("staleness_cases", _STALENESS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60, env={**os.environ, **GIT_ENV})


def repository(tmp_path: Path) -> tuple[ProjectPaths, Path]:
    """A project whose pixi.lock satisfies its pixi.toml, committed; and a clone of it."""
    cases = _staleness()
    origin = cases.project(tmp_path / "origin")
    git(origin.root, "init", "-q", "-b", "main")
    git(origin.root, "add", "-f", "pixi.toml", "pixi.lock")
    git(origin.root, "commit", "-q", "-m", "a current lock")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin.root), str(clone))
    return origin, clone


def check(root: Path) -> tuple[int, dict]:
    done = cli.run("lock", "--check", "--json", project=root)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("how", ["plain", "another-key"])
def test_a_current_answer_committed_in_a_pull_request_is_not_taken(tmp_path, monkeypatch, how):
    """The pull request asks for other packages in pixi.toml and commits a lock-check.json that says the
    lock is current, its digest forged for the path the clone will have (CI paths are predictable)."""
    origin, clone = repository(tmp_path)
    manifest = origin.manifest.read_text()
    origin.manifest.write_text(manifest.replace('numpy = "*"', 'numpy = ">=2.2"'))
    git(origin.root, "commit", "-q", "-am", "numpy >=2.2")
    git(clone, "pull", "-q", "origin", "main")
    forged = {"inputs_digest": _inputs_digest(ProjectPaths(clone), None), "value": True}
    stamp = origin.lock_check_stamp
    if how == "plain":
        records.unsealed(stamp, forged)
    else:  # sealed by the author's own resolver, with the key in the author's cache
        with monkeypatch.context() as author:
            author.setenv("XDG_CACHE_HOME", str(tmp_path / "authors-cache"))
            records.plant(stamp, forged, place=ProjectPaths(clone).lock_check_stamp)
    git(origin.root, "add", "-f", str(stamp.relative_to(origin.root)))
    git(origin.root, "commit", "-q", "-m", "the lock is current")
    git(clone, "pull", "-q", "origin", "main")
    assert (clone / ".resolver" / "state" / "lock-check.json").is_file()  # it came with the pull
    code, data = check(clone)
    assert code == 1 and data["current"] is False
    assert [(r["kind"], r["package"]) for r in data["reasons"]] == [("dependency-changed", "numpy")]


def test_the_plans_behind_pixi_lock_committed_with_the_project_are_not_taken(tmp_path):
    """Where the resolver locked, its plan record counts (here: a plan of another torch makes the lock
    stale); committed and cloned, the same record, and a plain-JSON one, read as absent."""
    cases = _staleness()
    origin, clone = repository(tmp_path)
    locked.save(origin, cases.cpu_plan(torch="2.14.0"), Manifest.load(origin.manifest))
    code, data = check(origin.root)
    assert code == 1 and [r["kind"] for r in data["reasons"]] != []  # where it was written, it is the plan
    git(origin.root, "add", "-f", ".resolver/state/plans")
    git(origin.root, "commit", "-q", "-m", "the plans")
    git(clone, "pull", "-q", "origin", "main")
    assert (clone / ".resolver" / "state" / "plans" / "cpu.json").is_file()
    assert locked.read(ProjectPaths(clone), "cpu") is None
    code, data = check(clone)
    assert code == 0 and data["current"] is True  # pixi.toml against pixi.lock, as with no plans
    saved = records.read(origin.plan_record("cpu"))
    records.unsealed(ProjectPaths(clone).plan_record("cpu"), saved)  # the same record as plain JSON
    assert locked.read(ProjectPaths(clone), "cpu") is None and check(clone)[0] == 0
