"""The sources are part of staleness, and the fix ``lock`` prints works when followed.

A project whose torch comes from this machine's wheelhouse (pip's configuration here) and whose
``[tool.resolver.mirrors]`` is empty: ``lock`` records a path of this machine and prints the mirrors entry
that would record torch's canonical address. Following it (support/fixes.py writes the entry into
pixi.toml), ``lock --check`` says stale until ``lock`` runs, and ``lock`` relocks: the path leaves
pixi.lock. Real conda channel, real wheelhouse, the real CLI."""

from __future__ import annotations

import json

import pytest
from support import cli, fixes, projects


def test_the_mirrors_entry_lock_prints_makes_the_next_lock_record_the_canonical_address(tmp_path, conda_channel):
    mirror = projects.torch_cpu_mirror()
    if mirror is None:
        pytest.skip("pip's configuration here names no local wheelhouse with torch 2.13.0+cpu")
    root = projects.project(tmp_path / "p", toolchain=conda_channel)  # no mirrors entry
    first = cli.run("lock", "--target", "cpu", "--channel", str(conda_channel), project=root, timeout=3600)
    assert first.returncode == 0, first.stderr[-3000:]
    machine_path = mirror.resolve().as_uri()
    assert machine_path in (root / "pixi.lock").read_text()
    printed = [f for f in fixes.printed_fixes(first.stdout + first.stderr) if "[tool.resolver.mirrors]" in f]
    assert printed, first.stdout + first.stderr
    commands = fixes.apply(printed[0], root)
    assert commands == [["lock"]]

    check = cli.run("lock", "--check", "--json", project=root)  # the sources changed: stale until locked again
    data = json.loads(check.stdout)
    assert check.returncode == 1 and not data["current"], check.stdout + check.stderr
    assert {r["kind"] for r in data["reasons"]} == {"location-not-canonical"}
    assert all(r["canonical"].startswith("https://download.pytorch.org/whl/cpu/") for r in data["reasons"])

    for argv in commands:
        done = cli.run(*argv, "--channel", str(conda_channel), project=root, timeout=3600)
        assert done.returncode == 0, done.stderr[-3000:]
        out = done.stdout + done.stderr
        assert "is stale" in out and "location-not-canonical" not in out  # the reason is said in words
        assert not [f for f in fixes.printed_fixes(out) if "[tool.resolver.mirrors]" in f]  # nothing left to map
    text = (root / "pixi.lock").read_text()
    assert machine_path not in text and "https://download.pytorch.org/whl/cpu/torch-2.13.0" in text
    again = cli.run("lock", "--check", "--json", project=root)
    assert again.returncode == 0 and json.loads(again.stdout)["current"] is True, again.stdout
