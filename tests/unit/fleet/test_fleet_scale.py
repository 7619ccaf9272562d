"""A fleet at scale: profile files are read one at a time (what stays per node is its name and its class), a
node of a kind already seen is checked exactly as `plan --profile` checks it, and a large fleet's class table
stays readable (counts in pixi.toml, every node in fleet-nodes.tsv beside it).

The timing at 1,000 / 10,000 / 100,000 nodes is benchmarks/fleet_scale.py's (docs/fleet.md quotes it)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tracemalloc
from pathlib import Path

import pytest
from support import REPO, shipped_manifest

from resolver.core.errors import BadInput
from resolver.fleet.classes import plan_fleet
from resolver.fleet.nodes import decision_inputs, iter_nodes, read_nodes
from resolver.plan.probe.profile import HardwareProfile

sys.path.insert(0, str(REPO / "benchmarks"))

import fleet_scale  # noqa: E402  (benchmarks/ is no package)
from support import cli


def _h100(uuid: str | None, **extra) -> dict:
    return {"platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "amd": None, "cuda_toolkit": None,
            "cpu_count": 64, "memory_available_mib": 512000,
            "nvidia": {"driver_version": "580.65.06", "cuda_driver_version": "13.0",
                       "gpus": [{"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "uuid": uuid,
                                 "memory_mib": 81559}]}, **extra}


def _profile_error(path: Path) -> str:
    with pytest.raises(BadInput) as caught:
        HardwareProfile.from_file(path)
    return caught.value.message


@pytest.mark.parametrize("field, value", [("uuid", 7), ("memory_mib", "80 GiB"), ("memory_mib", True),
                                          ("cpu_count", 6.5), ("memory_available_mib", [1])])
def test_a_node_of_a_known_kind_is_checked_as_plan_profile_checks_it(tmp_path, field, value):
    """The second file is of the first one's kind but for one value of its own, which has the wrong type: it is
    refused with `plan --profile`'s sentence, though its kind was checked already."""
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    (fleet / "h100-01.json").write_text(json.dumps(_h100("GPU-1")))
    bad = _h100("GPU-2")
    if field in ("uuid", "memory_mib"):
        bad["nvidia"]["gpus"][0][field] = value
    else:
        bad[field] = value
    (fleet / "h100-02.json").write_text(json.dumps(bad))
    with pytest.raises(BadInput) as caught:
        read_nodes(fleet)
    assert caught.value.message == _profile_error(fleet / "h100-02.json")
    assert f"'{field}'" in caught.value.message


def test_nodes_of_one_kind_share_one_profile_and_one_decision(tmp_path):
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for k in range(5):
        (fleet / f"h100-{k:02d}.json").write_text(json.dumps(_h100(f"GPU-{k}", cpu_count=32 + k)))
    (fleet / "h100-odd.json").write_text(json.dumps(_h100("GPU-odd", notes=["nvidia-smi was slow"])))
    nodes = read_nodes(fleet)
    assert len({id(n.profile) for n in nodes}) == 2  # the notes make another kind (checked in full again)
    assert nodes[0].profile == decision_inputs(HardwareProfile.from_json(_h100("GPU-0", cpu_count=32)))
    (only,) = plan_fleet(iter_nodes(fleet)).classes
    assert only.nodes == tuple(n.name for n in nodes)


def test_a_link_in_the_fleet_folder_is_refused_naming_it(tmp_path):
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    (tmp_path / "elsewhere.json").write_text(json.dumps(_h100("GPU-1")))
    os.symlink(tmp_path / "elsewhere.json", fleet / "h100-01.json")
    with pytest.raises(BadInput) as caught:
        read_nodes(fleet)
    assert caught.value.message == f"profile file {fleet / 'h100-01.json'} is a symbolic link"
    # named one by one (--profile), a file is the user's choice: followed
    (node,) = read_nodes(None, (fleet / "h100-01.json",))
    assert node.name == "h100-01"


def test_planning_streams_the_files_what_stays_per_node_is_small(tmp_path):
    """Planning 4,000 nodes holds far less than their profiles: the memory it needs grows by well under the size
    of one profile per node (3.2 KiB each as HardwareProfile objects, measured; planning holds about 0.5 KiB per
    node: its name, its file, its GPUs' UUIDs)."""
    bases = fleet_scale.machine_profiles("machines")

    def peak(count: int) -> int:
        folder = tmp_path / f"fleet-{count}"
        fleet_scale.generate(folder, bases, count)
        tracemalloc.start()
        try:
            fleet = plan_fleet(iter_nodes(folder))
            assert len(fleet.membership) + len(fleet.unserved) == count
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(500), peak(4000)
    per_node = (large - small) / 3500
    assert per_node < 1500, f"{per_node:.0f} bytes held per node"


def _toml(path: Path) -> dict:
    from resolver.core.toml import parse_toml

    return parse_toml(path.read_text(), what=str(path), fix="")


def test_a_large_fleet_is_counted_in_pixi_toml_and_listed_beside_it(tmp_path):
    fleet = tmp_path / "fleet"
    fleet_scale.generate(fleet, fleet_scale.machine_profiles("machines"), 300)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = cli.run("lock", "--fleet", str(fleet), "--no-conda", "--no-pypi", "--json", project=project)
    assert done.returncode == 0, done.stderr[-2000:]
    planned = json.loads(done.stdout)["fleet"]
    table = _toml(project / "pixi.toml")["tool"]["resolver"]["fleet"]
    assert table["node-list"] == "fleet-nodes.tsv"
    for c in planned["classes"]:
        entry = table["classes"][c["environment"]]
        assert entry["node-count"] == len(c["nodes"]) and "nodes" not in entry
    listed = (project / "fleet-nodes.tsv").read_text().splitlines()
    assert listed[0].startswith("#")
    assert [tuple(line.split("\t")) for line in listed[1:]] == sorted(planned["nodes"].items())
    # the human answer stays a page whatever the fleet's size
    human = cli.run("plan", "--fleet", str(fleet), project=project)
    assert human.returncode == 0
    assert len(human.stdout.splitlines()) < 20 * len(planned["classes"]) + 20
    assert f"{len(planned['nodes']):,} nodes (every one in `--json`" in human.stdout
    locked = cli.run("lock", "--fleet", str(fleet), "--no-conda", "--no-pypi", project=project)
    assert locked.returncode == 0 and f"every node's class: {project / 'fleet-nodes.tsv'}" in locked.stdout
    assert len(locked.stdout.splitlines()) < 8 * len(planned["classes"]) + 20  # per class, not per node
    # a fleet small enough to list in pixi.toml takes the side file away
    small = tmp_path / "small"
    small.mkdir()
    shutil.copy(fleet / "node-00000.json", small)
    assert cli.run("lock", "--fleet", str(small), "--no-conda", "--no-pypi", project=project).returncode == 0
    assert not (project / "fleet-nodes.tsv").exists()
    table = _toml(project / "pixi.toml")["tool"]["resolver"]["fleet"]
    assert "node-list" not in table
    (entry,) = table["classes"].values()
    assert entry["nodes"] == ["node-00000"] and entry["node-count"] == 1

