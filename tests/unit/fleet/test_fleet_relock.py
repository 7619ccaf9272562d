"""A fleet locked again solves only the classes that changed, and writes the bytes a lock of the same fleet from
scratch writes.

Real solves: conda from the toolchain channel (tests/support/toolchain_channel.py: Python 3.11, the CUDA 13.0 toolchain)
standing in for conda-forge, plus the tests' package channel (tests/support/channel_factory.py: Python 3.12 for
linux-64, as metadata), so two node types make two classes: the H100 double (Python 3.11) and the A100 + T4
double given Python 3.12. The solves are counted in `lock --json` (`locked`: one entry per environment and
platform resolved), and each class's change is said (`fleet.changes`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import DATA, cli, projects

DOUBLES = DATA / "doubles"
H100, A100 = "cuda13-sm90", "cuda13-sm75-sm80"


@pytest.fixture(scope="module")
def package_channel(tmp_path_factory) -> Path:
    from support import channel_factory

    return channel_factory.build_channel(tmp_path_factory.mktemp("packages") / "channel")


@pytest.fixture(scope="module")
def nodes(tmp_path_factory) -> dict[str, Path]:
    """The node files: each double probed as the node probes itself; the A100 + T4 node on Python 3.12; the H100
    node again on Python 3.12."""
    folder = tmp_path_factory.mktemp("profiles")
    out = {}
    for double in ("h100-1x-driver580", "a100-t4-driver580"):
        probed = cli.run("probe", "--json", env={"RESOLVER_SYSROOT": str(DOUBLES / double)})
        assert probed.returncode == 0, probed.stderr[-2000:]
        out[double] = folder / f"{double}.json"
        out[double].write_text(probed.stdout)
    for name, double, python in (("a100-py312", "a100-t4-driver580", "3.12.4"), ("h100-py312", "h100-1x-driver580",
                                                                                   "3.12.4")):
        profile = json.loads(out[double].read_text())
        profile["python"] = python
        out[name] = folder / f"{name}.json"
        out[name].write_text(json.dumps(profile))
    return out


def _lock(project: Path, fleet: list[Path], toolchain: Path, tmp: Path) -> dict:
    folder = tmp / f"fleet-{len(list(tmp.glob('fleet-*')))}"
    folder.mkdir()
    for node in fleet:
        shutil.copy(node, folder / node.name)
    done = cli.run("lock", "--fleet", str(folder), "--target", "cuda13.0", "--no-pypi", "--json", project=project,
                   env={"RESOLVER_CONDA_CHANNELS": str(toolchain)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _files(project: Path) -> list[bytes]:
    return [(project / name).read_bytes() for name in ("pixi.toml", "pixi.lock")]


def _solved(result: dict) -> list[str]:
    return sorted({entry["environment"] for entry in result["locked"]})


def _changes(result: dict) -> dict[str, tuple[str, str]]:
    return {c["environment"]: (c["status"], c["why"]) for c in result["fleet"]["changes"]}


def test_a_relock_solves_only_the_classes_that_changed_and_writes_what_a_full_lock_writes(
        tmp_path, conda_channel, package_channel, nodes):
    def scratch(fleet: list[Path]) -> list[bytes]:
        fresh = projects.project(tmp_path / f"scratch-{len(list(tmp_path.glob('scratch-*')))}",
                                 toolchain=conda_channel, channels=(package_channel.as_uri(),))
        _lock(fresh, fleet, conda_channel, tmp_path)
        return _files(fresh)

    project = projects.project(tmp_path / "project", toolchain=conda_channel, channels=(package_channel.as_uri(),))
    first = _lock(project, [nodes["h100-1x-driver580"]], conda_channel, tmp_path)
    assert _solved(first) == [H100, "default"]
    assert _changes(first)[H100][0] == "new"

    # a node type joins: its class is solved, the other kept byte for byte
    joined = _lock(project, [nodes["h100-1x-driver580"], nodes["a100-py312"]], conda_channel, tmp_path)
    assert _solved(joined) == [A100]
    assert _changes(joined) == {A100: ("new", "a new class (1 node(s): a100-py312)"),
                                H100: ("kept", "unchanged (1 node(s): h100-1x-driver580)")}
    assert H100 in joined["carried_over"]
    both = _files(project)
    assert both == scratch([nodes["h100-1x-driver580"], nodes["a100-py312"]])

    # the same fleet again: nothing solved, nothing written differently
    again = _lock(project, [nodes["h100-1x-driver580"], nodes["a100-py312"]], conda_channel, tmp_path)
    assert _solved(again) == [] and {s for s, _ in _changes(again).values()} == {"kept"}
    assert _files(project) == both

    # a node type leaves: its class goes, environments and all; nothing is solved
    left = _lock(project, [nodes["a100-py312"]], conda_channel, tmp_path)
    assert _solved(left) == []
    assert _changes(left)[H100] == ("gone", "no node of the fleet is in it any more")
    assert _changes(left)[A100][0] == "kept"
    assert _files(project) == scratch([nodes["a100-py312"]])
    assert f"\n  {H100}:" not in (project / "pixi.lock").read_text()

    # a class whose nodes now plan another Python: solved again, the change named
    only_h100 = projects.project(tmp_path / "changed", toolchain=conda_channel, channels=(package_channel.as_uri(),))
    _lock(only_h100, [nodes["h100-1x-driver580"]], conda_channel, tmp_path)
    changed = _lock(only_h100, [nodes["h100-py312"]], conda_channel, tmp_path)
    assert _solved(changed) == [H100]
    status, why = _changes(changed)[H100]
    assert status == "changed" and "conda python 3.11.* → 3.12.*" in why
    assert _files(only_h100) == scratch([nodes["h100-py312"]])


def test_the_relock_says_what_happened_to_each_class(tmp_path, conda_channel, package_channel, nodes):
    project = projects.project(tmp_path / "project", toolchain=conda_channel, channels=(package_channel.as_uri(),))
    _lock(project, [nodes["h100-1x-driver580"]], conda_channel, tmp_path)
    folder = tmp_path / "both"
    folder.mkdir()
    for node in (nodes["h100-1x-driver580"], nodes["a100-py312"]):
        shutil.copy(node, folder)
    done = cli.run("lock", "--fleet", str(folder), "--target", "cuda13.0", "--no-pypi", project=project,
                   env={"RESOLVER_CONDA_CHANNELS": str(conda_channel)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"  class {A100}: solved: a new class (1 node(s): a100-py312)" in done.stdout
    assert f"  class {H100}: kept: unchanged (1 node(s): h100-1x-driver580)" in done.stdout
