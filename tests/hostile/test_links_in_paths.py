"""Links anywhere in a path, not only at its last name: a folder of the project replaced by a link to
somewhere else, and links planted at the names the resolver will create (a run's log, the backup of an
unreadable pixi.lock). Each is refused in one sentence (exit 3) or stepped around (a new name), and
nothing outside the project changes."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest
from support import channel_factory as cf
from support import cli
from support.hostile import MANIFEST, one_error, tree, write_project_lock


@pytest.fixture()
def outside(tmp_path) -> Path:
    """A folder outside the project that a link points at, with what an attacker would want replaced."""
    folder = tmp_path / "outside"
    (folder / "cpu" / "bin").mkdir(parents=True)
    (folder / "cpu" / "bin" / "python").write_text("the victim's own environment\n")
    (folder / "project.lock").write_text("someone else's lock file\n")
    (folder / "victim.txt").write_text("someone else's file\n")
    return folder


def installable(project: Path, tmp_path: Path) -> dict[str, str]:
    """A project whose pixi.lock holds one wheel of a declared folder; the variables install needs."""
    wheels = tmp_path / "wheels"
    cf.build_wheelhouse(wheels)
    wheel = wheels / "rtpy-1.0.0-py3-none-any.whl"
    write_project_lock(project, str(wheel), hashlib.sha256(wheel.read_bytes()).hexdigest(),
                       wheel=("rtpy", "1.0.0"))
    return {"RESOLVER_FIND_LINKS": str(wheels), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def names_for_the_next(seconds: int, pattern: str) -> list[str]:
    """The names a run started in the next ``seconds`` gives a file stamped ``%Y%m%d-%H%M%S``."""
    now = time.time()
    return sorted({pattern.format(time.strftime("%Y%m%d-%H%M%S", time.localtime(now + s))) for s in range(seconds)})


def test_envs_folder_that_is_a_link_is_refused_by_install_and_nothing_outside_moves(tmp_path, outside):
    project = tmp_path / "project"
    env = installable(project, tmp_path)
    (project / ".resolver").mkdir()
    os.symlink(outside, project / ".resolver" / "envs")
    before = tree(outside)
    line = one_error(cli.run("install", "--env", "cpu", "--force", project=project, env=env, timeout=300), 3)
    assert "symbolic link" in line and ".resolver/envs" in line
    assert tree(outside) == before


def test_state_folder_that_is_a_link_is_refused_by_lock_and_no_lock_file_outside_is_touched(tmp_path, outside):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pixi.toml").write_text(MANIFEST)
    (project / ".resolver").mkdir()
    os.symlink(outside, project / ".resolver" / "state")
    before = tree(outside)
    line = one_error(cli.run("lock", "--target", "cpu", "--no-pypi", project=project, timeout=300), 3)
    assert "symbolic link" in line and ".resolver/state" in line
    assert tree(outside) == before


def test_an_environment_that_is_a_link_the_user_made_is_read_never_replaced(tmp_path, outside):
    project = tmp_path / "project"
    env = installable(project, tmp_path)
    (project / ".resolver" / "envs").mkdir(parents=True)
    os.symlink(outside / "cpu", project / ".resolver" / "envs" / "cpu")
    before = tree(outside)
    line = one_error(cli.run("install", "--env", "cpu", "--force", project=project, env=env, timeout=300), 3)
    assert "is a symbolic link" in line and "does not replace" in line
    assert tree(outside) == before and (project / ".resolver" / "envs" / "cpu").is_symlink()


def test_links_planted_at_the_setup_logs_name_are_never_written_through(tmp_path, outside):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pixi.toml").write_text(MANIFEST + '[environments]\n"../../x" = []\n')  # setup fails after its log
    logs = project / ".resolver" / "logs"
    logs.mkdir(parents=True)
    planted = names_for_the_next(60, "setup-{}.log")
    for name in planted:
        os.symlink(outside / "victim.txt", logs / name)
    before = tree(outside)
    done = cli.run("setup", "--target", "cpu", project=project, timeout=60)
    assert done.returncode in (2, 3) and "Traceback" not in done.stderr
    assert tree(outside) == before
    made = [p for p in logs.iterdir() if not p.is_symlink()]
    assert len(made) == 1 and made[0].name.startswith("setup-") and made[0].name.endswith("-2.log")
    assert "mamba-resolver setup in" in made[0].read_text()


def test_links_planted_at_the_backup_of_an_unreadable_lock_are_never_written_through(tmp_path, outside):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pixi.toml").write_text(MANIFEST)
    unreadable = "version: 7\nplatforms: [oops\n"
    (project / "pixi.lock").write_text(unreadable)
    for name in names_for_the_next(60, "pixi.lock.unreadable-{}"):
        os.symlink(outside / "victim.txt", project / name)
    before = tree(outside)
    done = cli.run("lock", "--target", "cpu", "--no-pypi", project=project, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert tree(outside) == before
    backups = [p for p in project.iterdir() if p.name.startswith("pixi.lock.unreadable-") and not p.is_symlink()]
    assert len(backups) == 1 and backups[0].read_text() == unreadable and backups[0].name.endswith("-2")
