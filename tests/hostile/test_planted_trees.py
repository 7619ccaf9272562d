"""Trees with a link, a FIFO or a device at a component of a root the resolver touches (the project and
its ``.resolver/``, the user's cache, a declared local folder, a channel folder, the folder packages are
published from): whatever is planted, the command that uses that path succeeds or refuses in one sentence
(exit 3), nothing outside changes, and nothing blocks past its bound.

The default run tries a sample of places and kinds (seconds each); ``pytest -m fuzz`` tries every place
with every kind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import channel_factory as cf
from support import cli
from support.hostile import MANIFEST, tree, write_project_lock

BOUND_S = 240  # a command that has not ended by then is blocked (a lock takes ~5 s here, an install ~15 s)
KINDS = ("link", "fifo", "device")


@dataclass(frozen=True)
class Place:
    root: str  # "project", "cache" (XDG_CACHE_HOME), "wheels" (a declared local folder), "site" (a channel), "artefacts"
    path: str  # below the root
    folder: bool  # what the resolver expects there: a folder (else a file)
    command: str  # of COMMANDS


PLACES = (
    Place("project", ".resolver", True, "lock"),
    Place("project", ".resolver/state", True, "lock"),
    Place("project", ".resolver/state/plans", True, "lock"),
    Place("project", ".resolver/state/plans/cpu.json", False, "lock"),
    Place("project", ".resolver/state/project.lock", False, "lock"),
    Place("project", ".resolver/state/lock-check.json", False, "lock"),
    Place("project", ".resolver/cache", True, "lock"),
    Place("project", "pixi.lock", False, "lock"),
    Place("project", "pixi.toml", False, "lock"),
    Place("project", ".resolver/logs", True, "setup"),
    Place("project", ".resolver/envs", True, "install"),
    Place("project", ".resolver/envs/cpu", True, "install"),
    Place("project", ".resolver/cache/envs", True, "install"),
    Place("cache", "mamba-resolver/verified", True, "install"),
    Place("wheels", "rtpy-1.0.0-py3-none-any.whl", False, "install"),
    Place("site", "linux-64", True, "publish"),
    Place("site", "noarch", True, "publish"),
    Place("site", "linux-64/repodata.json", False, "publish"),
    Place("artefacts", "linux-64", True, "publish"),
)
# the default run: every place once, its kind turning through the three (the fuzz run: all of them)
SAMPLE = [(place, KINDS[n % len(KINDS)]) for n, place in enumerate(PLACES)]
SAMPLE.append((next(p for p in PLACES if p.path == "linux-64/repodata.json"), "fifo"))  # what the full run found:
# rattler's indexer waited on a FIFO repodata.json
EVERY = [(place, kind) for place in PLACES for kind in KINDS]


@dataclass
class World:
    base: Path
    project: Path
    outside: Path
    env: dict[str, str]
    built: Path

    def root(self, name: str) -> Path:
        return self.base / name


def _world(tmp_path: Path, built: Path, command: str) -> World:
    base = tmp_path
    outside = base / "outside"
    for sub in ("", "cpu/bin", "linux-64", "noarch", "verified", "state", "plans"):
        (outside / sub).mkdir(parents=True, exist_ok=True)
    (outside / "cpu" / "bin" / "python").write_text("the victim's own environment\n")
    (outside / "victim.txt").write_text("someone else's file\n")
    (outside / "linux-64" / "repodata.json").write_text('{"packages": {}}\n')
    project = base / "project"
    wheels = base / "wheels"
    cf.build_wheelhouse(wheels)
    env = {"XDG_CACHE_HOME": str(base / "cache"), "RESOLVER_FIND_LINKS": str(wheels)}
    if command == "install":
        wheel = wheels / "rtpy-1.0.0-py3-none-any.whl"
        write_project_lock(project, str(wheel), hashlib.sha256(wheel.read_bytes()).hexdigest(),
                       wheel=("rtpy", "1.0.0"))
    else:
        project.mkdir()
        manifest = MANIFEST + ('[environments]\n"../../x" = []\n' if command == "setup" else "")
        (project / "pixi.toml").write_text(manifest)
    (base / "cache").mkdir()
    (base / "site").mkdir()
    shutil.copytree(built, base / "artefacts", ignore=shutil.ignore_patterns("repodata*"))
    return World(base, project, outside, env, built)


def _plant(world: World, place: Place, kind: str) -> Path:
    where = world.root(place.root) / place.path
    where.parent.mkdir(parents=True, exist_ok=True)
    if where.is_dir() and not where.is_symlink():
        shutil.rmtree(where)
    elif where.exists() or where.is_symlink():
        where.unlink()
    if kind == "link":
        target = world.outside / (Path(place.path).name if place.folder else "victim.txt")
        if place.folder:
            target = world.outside / {"envs": ".", "cpu": "cpu", "linux-64": "linux-64", "noarch": "noarch",
                                      "verified": "verified", "state": "state", "plans": "plans"}.get(where.name, ".")
        os.symlink(target, where)
    elif kind == "fifo":
        os.mkfifo(where)
    else:
        os.symlink("/dev/zero", where)
    return where


def _run(world: World, command: str) -> subprocess.CompletedProcess:
    if command == "lock":
        return cli.run("lock", "--target", "cpu", "--no-pypi", project=world.project, env=world.env, timeout=BOUND_S)
    if command == "install":
        return cli.run("install", "--env", "cpu", "--force", project=world.project, env=world.env, timeout=BOUND_S)
    if command == "setup":
        return cli.run("setup", "--target", "cpu", project=world.project, env=world.env, timeout=BOUND_S)
    return cli.run("channel", "publish", "--from", str(world.root("artefacts")), "--to", str(world.root("site")),
                   project=world.project, env=world.env, timeout=BOUND_S)


def _check(tmp_path: Path, built: Path, place: Place, kind: str) -> None:
    world = _world(tmp_path, built, place.command)
    _plant(world, place, kind)
    before = tree(world.outside)
    try:
        done = _run(world, place.command)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{place.command} blocked past {BOUND_S} s on a {kind} at {place.root}/{place.path}")
    allowed = {"setup": (2, 3),  # setup's manifest is refused after its log is made
               "wheels": (0, 3, 4)}.get(place.command if place.command == "setup" else place.root, (0, 3))
    # (a locked wheel replaced by a device is a bad artefact: exit 4)
    assert done.returncode in allowed, (place, kind, done.returncode, done.stderr[-1500:])
    assert "Traceback" not in done.stderr + done.stdout
    if done.returncode == 3:
        assert len([line for line in done.stderr.splitlines() if line.startswith("error:")]) == 1, done.stderr
    assert tree(world.outside) == before, f"{place.command} changed what a {kind} at {place.root}/{place.path} points to"


@pytest.mark.parametrize(("place", "kind"), SAMPLE, ids=[f"{p.root}/{p.path}-{k}" for p, k in SAMPLE])
def test_a_planted_link_fifo_or_device_changes_nothing_outside_and_blocks_nothing(tmp_path, built, place, kind):
    _check(tmp_path, built, place, kind)


@pytest.mark.fuzz
@pytest.mark.parametrize(("place", "kind"), EVERY, ids=[f"{p.root}/{p.path}-{k}" for p, k in EVERY])
def test_every_place_with_every_kind(tmp_path, built, place, kind):
    _check(tmp_path, built, place, kind)


def test_a_kernel_channel_whose_index_is_a_fifo_is_refused_without_waiting(tmp_path):
    """The fleet's kernel channel as a folder: its repodata.json a FIFO (or a link to /dev/zero) is refused at
    once instead of read forever."""
    from resolver.core.errors import BadInput
    from resolver.fleet.channel import read_index

    for kind in ("fifo", "device"):
        channel = tmp_path / kind
        (channel / "linux-64").mkdir(parents=True)
        if kind == "fifo":
            os.mkfifo(channel / "linux-64" / "repodata.json")
        else:
            os.symlink("/dev/zero", channel / "linux-64" / "repodata.json")
        outcome: list[object] = []

        def read(channel: Path = channel) -> None:
            try:
                read_index(str(channel), "linux-64")
                outcome.append("read")
            except BadInput as exc:
                outcome.append(exc)

        worker = threading.Thread(target=read, daemon=True)
        worker.start()
        worker.join(20)
        assert outcome and isinstance(outcome[0], BadInput) and outcome[0].code == 3, (kind, outcome)


def test_a_file_url_that_is_a_fifo_or_device_is_no_answer_and_never_waited_on(tmp_path):
    """file:// URLs (a local index, a channel, a find-links page) are answered through the same door."""
    from resolver.core.errors import BadInput
    from resolver.tools.net import fetch_bytes, probe_status

    os.mkfifo(tmp_path / "fifo")
    os.symlink("/dev/zero", tmp_path / "zero")
    (tmp_path / "page.html").write_text("<a href='x.whl'>x</a>")
    answers: list[object] = []

    def fetch() -> None:
        for name in ("fifo", "zero"):
            try:
                answers.append(fetch_bytes((tmp_path / name).as_uri(), limit=1 << 20))
            except BadInput as exc:
                answers.append(exc)
            answers.append(probe_status((tmp_path / name).as_uri()))
        answers.append(fetch_bytes((tmp_path / "page.html").as_uri()))

    worker = threading.Thread(target=fetch, daemon=True)
    worker.start()
    worker.join(20)
    assert len(answers) == 5, "a file:// read waited on a FIFO or read a device"
    for refused in (answers[0], answers[2]):  # no answer, or one sentence (exit 3)
        assert refused is None or (isinstance(refused, BadInput) and refused.code == 3), refused
    assert isinstance(answers[1], str) and isinstance(answers[3], str)  # the reason nothing answered
    assert answers[4] == b"<a href='x.whl'>x</a>"
