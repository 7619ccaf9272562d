"""A fleet (issue 17): tests/data/machines as one cluster, planned into classes, locked into one environment per
class, its kernel variants as a CI matrix; bad input is one sentence naming the file, and writes nothing.

The fleet folder holds `probe --json` of every captured machine (probed in-process from its sysroot, as
`probe --sysroot DIR --json` prints it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import DATA, REPO, cli, shipped_manifest
from support.fleet_profiles import machine_profiles

from resolver.core.names import is_env_name
from resolver.fleet.classes import plan_fleet
from resolver.fleet.nodes import read_nodes

MACHINES = DATA / "machines"


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fleet") / "nodes"
    machine_profiles(folder)
    return folder


def one_error(done: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


def test_tests_machines_as_a_fleet_plan_into_classes(fleet_dir):
    done = cli.run("plan", "--fleet", str(fleet_dir), "--json")
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
    assert "no PyTorch ROCm build has kernels for gfx1031" in unserved["rx6750xt-rocm5.7-ubuntu2004"]
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
            own = cli.run("plan", "--profile", str(fleet_dir / f"{node}.json"),
                          "--json") if node == c["nodes"][0] else None
            if own is not None:
                mine = json.loads(own.stdout)
                assert mine["torch"]["requirement"] == c["plan"]["torch"]["requirement"]
                assert set(mine["kernels"]["arch_list"]) <= set(c["plan"]["kernels"]["arch_list"])
    # AMD nodes never share a class with NVIDIA ones; MI300X and RX 9070 XT on ROCm 7.1 share one
    assert by_node["mi300xvf-rocm7.1.1-amdsmi-version"] is by_node["rx9070xt-2x-rocm7.1.1-amdsmi-table"]
    assert by_node["mi300xvf-rocm7.1.1-amdsmi-version"]["plan"]["kernels"]["arch_list"] == ["gfx1201", "gfx942"]
    human = cli.run("plan", "--fleet", str(fleet_dir))
    assert human.returncode == 0
    assert f"{len(names)} class(es) for {len(placed)} node(s); 2 node(s) no class can serve" in human.stdout
    assert "gb200-4x-aarch64" in human.stdout.split("no class can serve:")[1]
    assert f"  {'a100-gcp-ubuntu2404':<32} {shared['environment']}" in human.stdout


def test_classes_are_deterministic_and_python_can_be_chosen_for_the_whole_fleet(fleet_dir):
    nodes = read_nodes(fleet_dir)
    first, second = plan_fleet(nodes), plan_fleet(tuple(reversed(nodes)))
    assert first.to_json() == second.to_json()
    from resolver.core.model import Request
    from resolver.core.versions import DottedVersion

    one_python = plan_fleet(nodes, Request(python=DottedVersion.parse("3.12")))
    assert {str(c.plan.python) for c in one_python.classes} == {"3.12"}
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
    (project / "pixi.toml").write_text(shipped_manifest())
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
        done = cli.run(*command, "--fleet", str(fleet), *extra, "--json", project=project, timeout=120)
        assert done.returncode == 3, (command, done.returncode, done.stderr[-2000:])
        error = one_error(done)
        for word in words:
            assert word in error, (word, error)
        assert json.loads(done.stdout)["id"] == "bad-input"
        assert (project / "pixi.toml").read_bytes() == before
        assert not (project / "pixi.lock").exists() and not (project / ".resolver").exists()
    assert named.exists() or case == "missing"


def _lock_envs(project: Path) -> list[str]:
    import yaml

    return sorted(yaml.safe_load((project / "pixi.lock").read_text())["environments"])


def test_lock_fleet_writes_one_environment_per_class_and_the_matrix_lists_each_variant_once(fleet_dir, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = cli.run("lock", "--fleet", str(fleet_dir), "--no-conda", "--no-pypi", "--json", project=project)
    assert done.returncode == 0, done.stderr[-3000:]
    fleet = json.loads(done.stdout)["fleet"]
    classes = [c["environment"] for c in fleet["classes"]]
    assert _lock_envs(project) == sorted({*classes, "default"})
    from resolver.fleet.record import read_classes
    from resolver.project.manifest import Manifest

    manifest = Manifest.load(project / "pixi.toml")
    stored = read_classes(manifest)
    assert sorted(stored) == sorted(classes)
    for c in fleet["classes"]:
        spec = manifest.environment(c["environment"])
        assert dict(spec.pypi)["torch"]["version"] == "==" + c["plan"]["torch"]["requirement"].split("==")[1]
        assert list(stored[c["environment"]].archs) == c["plan"]["kernels"]["arch_list"]
        assert list(stored[c["environment"]].nodes) == c["nodes"]
    # deterministic: the same fleet locks to the same bytes
    first = [(project / n).read_bytes() for n in ("pixi.toml", "pixi.lock")]
    again = cli.run("lock", "--fleet", str(fleet_dir), "--no-conda", "--no-pypi", "--json", project=project)
    assert again.returncode == 0, again.stderr[-2000:]
    assert [(project / n).read_bytes() for n in ("pixi.toml", "pixi.lock")] == first
    # the matrix: one entry per kernel package per class that builds kernels, each once
    matrix = cli.run("build", "--matrix", "--json", project=project)
    assert matrix.returncode == 0, matrix.stderr[-2000:]
    include = json.loads(matrix.stdout)["include"]
    building = [c for c in fleet["classes"] if c["plan"]["kernels"]["strategy"] != "none"]
    packages = ["causal-conv1d", "mamba-ssm"]
    assert sorted(e["variant"] for e in include) == sorted(f"{p}@{c['environment']}" for c in building for p in packages)
    assert len({e["variant"] for e in include}) == len(include)
    for entry in include:
        assert entry["command"] == f"python -m resolver build --variant {entry['variant']}"
        assert entry["runs-on"] and entry["toolkit"] and entry["archs"]
    cuda = next(e for e in include if e["environment"].startswith("cuda12-sm70-sm80"))
    assert cuda["runs-on"] == "ubuntu-latest" and "no GPU" in cuda["requires"]
    # a smaller fleet drops the classes that are gone, environments and all
    small = tmp_path / "small"
    small.mkdir()
    shutil.copy(fleet_dir / "h100-8x-ubuntu2204.json", small)
    done = cli.run("lock", "--fleet", str(small), "--no-conda", "--no-pypi", "--json", project=project)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _lock_envs(project) == ["cuda12-sm90", "default"]
    assert sorted(read_classes(Manifest.load(project / "pixi.toml"))) == ["cuda12-sm90"]


def test_a_variant_the_lock_does_not_hold_is_one_sentence(fleet_dir, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = cli.run("build", "--matrix", project=project)
    assert done.returncode == 2 and "records no fleet" in one_error(done)
    assert cli.run("lock", "--fleet", str(fleet_dir), "--no-conda", "--no-pypi", project=project).returncode == 0
    done = cli.run("build", "--variant", "mamba-ssm@cuda99-sm1", project=project)
    assert done.returncode == 2
    assert "--variant 'mamba-ssm@cuda99-sm1' names no class of the fleet" in one_error(done)
    assert not (project / ".resolver" / "envs").exists()


def test_several_profiles_without_a_folder_are_a_fleet_too(fleet_dir):
    done = cli.run("plan", "--profile", str(fleet_dir / "a100-gcp-ubuntu2404.json"), "--profile",
                   str(fleet_dir / "l4-plain-nvidia-smi-only.json"), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    fleet = json.loads(done.stdout)
    (only,) = fleet["classes"]
    assert only["nodes"] == ["a100-gcp-ubuntu2404", "l4-plain-nvidia-smi-only"]
    assert set(only["plan"]["kernels"]["arch_list"]) == {"8.0", "8.9"}


def test_a_thousand_node_profiles_plan_and_lock_in_seconds(tmp_path):
    """benchmarks/fleet_scale.py's fleet (1,000 profiles made from tests/data/machines, no two alike): `plan --fleet`
    and `lock --fleet` (without the solves, which are per class) as processes, well under a minute each."""
    import time

    sys.path.insert(0, str(REPO / "benchmarks"))
    import fleet_scale

    fleet = tmp_path / "fleet"
    fleet_scale.generate(fleet, fleet_scale.machine_profiles("machines"), 1000)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    for command in (["plan", "--fleet", str(fleet), "--json"],
                    ["lock", "--fleet", str(fleet), "--no-conda", "--no-pypi", "--json"]):
        started = time.monotonic()
        done = cli.run(*command, project=project)
        seconds = time.monotonic() - started
        assert done.returncode == 0, done.stderr[-2000:]
        assert seconds < 20, (command[0], seconds)
        data = json.loads(done.stdout)
        fleet_json = data if command[0] == "plan" else data["fleet"]
        assert len(fleet_json["nodes"]) + len(fleet_json["unserved"]) == 1000
    assert _lock_envs(project) == sorted({c["environment"] for c in fleet_json["classes"]} | {"default"})
