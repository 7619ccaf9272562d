"""A fleet (issue 17): tests/machines as one cluster, planned into classes, locked into one environment per
class, its kernel variants as a CI matrix; bad input is one sentence naming the file, and writes nothing.

The fleet folder holds `probe --json` of every captured machine (probed in-process from its sysroot, as
`probe --sysroot DIR --json` prints it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from resolver.fleet.classes import plan_fleet
from resolver.fleet.nodes import read_nodes
from resolver.names import is_env_name

REPO = Path(__file__).resolve().parent.parent
MACHINES = Path(__file__).parent / "machines"


def machine_profiles(folder: Path) -> list[str]:
    """``probe --json`` of every captured machine of tests/machines into ``folder``; the node names."""
    from resolver.probe import probe_machine

    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for machine in sorted(p for p in MACHINES.iterdir() if p.is_dir()):
        profile = probe_machine(sysroot=machine)
        (folder / f"{machine.name}.json").write_text(json.dumps(profile.to_json(), indent=1))
        names.append(machine.name)
    return names


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fleet") / "nodes"
    machine_profiles(folder)
    return folder


def cli(*args: str, project: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if project is not None:
        env["RESOLVER_PROJECT"] = str(project)
    return subprocess.run([sys.executable, "-m", "resolver", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def one_error(done: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


def test_tests_machines_as_a_fleet_plan_into_classes(fleet_dir):
    done = cli("plan", "--fleet", str(fleet_dir), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    fleet = json.loads(done.stdout)
    names = [c["environment"] for c in fleet["classes"]]
    assert names == sorted(names) and len(set(names)) == len(names) and all(is_env_name(n) for n in names)
    nodes = sorted(p.stem for p in fleet_dir.glob("*.json"))
    # every node is in exactly one class, or listed with the fact that blocks it
    placed = [n for c in fleet["classes"] for n in c["nodes"]]
    unserved = {u["node"]: u["reason"] for u in fleet["unserved"]}
    assert sorted(placed + list(unserved)) == nodes and len(placed) == len(set(placed))
    assert fleet["nodes"] == {n: c["environment"] for c in fleet["classes"] for n in c["nodes"]}
    assert "sm_100 needs CUDA 12.8 or newer" in unserved["gb200-4x-aarch64"]
    assert "older than 6.0" in unserved["rx6750xt-rocm5.7-ubuntu2004"]
    by_node = {n: c for c in fleet["classes"] for n in c["nodes"]}
    # an A100 and an L4 share a torch build: one class, kernels for both GPUs (the union)
    shared = by_node["a100-gcp-ubuntu2404"]
    assert shared is by_node["l4-plain-nvidia-smi-only"]
    assert {"8.0", "8.9"} <= set(shared["plan"]["kernels"]["arch_list"])
    assert shared["environment"].startswith("cuda12-") and "sm80" in shared["environment"]
    assert "the union of their GPUs" in shared["why"]
    # a class is one torch build: every member's own plan names it
    for c in fleet["classes"]:
        assert c["plan"]["environment"] == c["environment"]
        for node in c["nodes"]:
            own = cli("plan", "--profile", str(fleet_dir / f"{node}.json"), "--json") if node == c["nodes"][0] else None
            if own is not None:
                mine = json.loads(own.stdout)
                assert mine["torch"]["requirement"] == c["plan"]["torch"]["requirement"]
                assert set(mine["kernels"]["arch_list"]) <= set(c["plan"]["kernels"]["arch_list"])
    # AMD nodes never share a class with NVIDIA ones; MI300X and RX 9070 XT on ROCm 7.1 share one
    assert by_node["mi300xvf-rocm7.1.1-amdsmi-version"] is by_node["rx9070xt-2x-rocm7.1.1-amdsmi-table"]
    assert by_node["mi300xvf-rocm7.1.1-amdsmi-version"]["plan"]["kernels"]["arch_list"] == ["gfx1201", "gfx942"]
    human = cli("plan", "--fleet", str(fleet_dir))
    assert human.returncode == 0
    assert f"{len(names)} class(es) for {len(placed)} node(s); 2 node(s) no class can serve" in human.stdout
    assert "gb200-4x-aarch64" in human.stdout.split("no class can serve:")[1]
    assert f"  {'a100-gcp-ubuntu2404':<32} {shared['environment']}" in human.stdout


def test_classes_are_deterministic_and_python_can_be_chosen_for_the_whole_fleet(fleet_dir):
    nodes = read_nodes(fleet_dir)
    first, second = plan_fleet(nodes), plan_fleet(tuple(reversed(nodes)))
    assert first.to_json() == second.to_json()
    from resolver.decide.model import Request
    from resolver.versions import DottedVersion

    one_python = plan_fleet(nodes, Request(python=DottedVersion.parse("3.12")))
    assert {c.plan.python for c in one_python.classes} == {"3.12"}
    assert len(one_python.classes) <= len(first.classes)


def _write(path: Path, data) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _h100(uuid: str | None = "GPU-5d1e1a4b") -> dict:
    return {"platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "amd": None, "cuda_toolkit": None,
            "nvidia": {"driver_version": "580.65.06", "cuda_driver_version": "13.0",
                       "gpus": [{"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "uuid": uuid}]}}


@pytest.mark.parametrize("case", ["wrong-shape", "not-json", "same-gpu", "same-name", "empty", "missing"])
def test_bad_fleet_input_is_one_sentence_naming_the_file_and_writes_nothing(tmp_path, case):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPO / "pixi.toml", project / "pixi.toml")
    before = (project / "pixi.toml").read_bytes()
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    _write(fleet / "h100-01.json", _h100())
    extra: list[str] = []
    if case == "wrong-shape":
        named = _write(fleet / "a100-07.json", {**_h100(None), "nvidia": {"gpus": "A100"}})
        words = ["a100-07.json", "'nvidia.gpus' must be a list of objects"]
    elif case == "not-json":
        named = _write(fleet / "a100-07.json", "nvidia-smi: command not found\n")
        words = ["a100-07.json"]
    elif case == "same-gpu":
        named = _write(fleet / "h100-01-again.json", _h100())
        words = ["h100-01.json and h100-01-again.json describe the same node", "GPU-5d1e1a4b"]
    elif case == "same-name":
        other = tmp_path / "elsewhere"
        other.mkdir()
        named = _write(other / "h100-01.json", _h100("GPU-other"))
        extra = ["--profile", str(named)]
        words = [str(fleet / "h100-01.json"), str(named), "two files for node 'h100-01'"]
    elif case == "empty":
        (fleet / "h100-01.json").unlink()
        named = fleet
        words = [f"fleet folder {fleet} holds no *.json profile"]
    else:
        named = tmp_path / "nowhere"
        fleet = named
        words = [f"fleet folder {named} does not exist"]
    for command in (["plan"], ["lock"]):
        done = cli(*command, "--fleet", str(fleet), *extra, "--json", project=project, timeout=120)
        assert done.returncode == 3, (command, done.returncode, done.stderr[-2000:])
        error = one_error(done)
        for word in words:
            assert word in error, (word, error)
        assert json.loads(done.stdout)["id"] == "bad-input"
        assert (project / "pixi.toml").read_bytes() == before
        assert not (project / "pixi.lock").exists() and not (project / ".resolver").exists()
    assert named.exists() or case == "missing"
