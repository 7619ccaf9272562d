"""Our pixi.toml and pixi.lock read as pixi reads them (tests/support/pixi_rules.py, one check per rule):
the committed pixi.toml; a lock of ``--target cpu`` made here with a local conda channel holding
python; the same lock after ``--target cuda13.0`` is added. Each rule also gets a lock broken in
that one way, and its check must fail on it."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from support import REPO, cli, projects, shipped_manifest
from support import pixi_rules as rules

SCHEMA = REPO.parent / "shared" / "schemas" / "pixi-manifest.schema.json"


def workspace(root: Path) -> rules.Workspace:
    return rules.Workspace.read((root / "pixi.toml").read_text(), (root / "pixi.lock").read_text(), root)


@pytest.fixture(scope="module")
def cpu_locked(cpu_project) -> rules.Workspace:
    return workspace(cpu_project)


@pytest.fixture(scope="module")
def cuda_added(cpu_project, conda_channel, tmp_path_factory) -> rules.Workspace:
    root = tmp_path_factory.mktemp("cuda-added")
    shutil.copytree(cpu_project, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("envs", "verified"))
    done = cli.run("lock", "--target", "cuda13.0", "--channel", str(conda_channel), "--json", project=root,
                   timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert "cpu" in summary["carried_over"] and "default" in summary["carried_over"]
    # default (locked, its features name no platform) would take a new CUDA platform too: cuda13 is
    # locked on the workspace's linux-64 platform instead, and the lock says why
    assert any("would also be added to default" in note for note in summary["notes"]), summary["notes"]
    return workspace(root)


def test_the_committed_manifest_follows_pixis_form():
    text = shipped_manifest()
    ws = rules.Workspace.read(text, "version: 7\n", REPO)
    assert rules.manifest_form(ws) == []
    if not SCHEMA.is_file():
        pytest.skip(f"pixi's manifest schema is not here ({SCHEMA}); the form checks passed")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    assert not [e.message for e in jsonschema.validators.validator_for(schema)(schema).iter_errors(ws.raw_manifest)]


def test_every_rule_holds_for_a_cpu_lock_made_here(cpu_locked):
    assert rules.check(cpu_locked) == {name: [] for name in rules.RULES}


def test_every_rule_holds_after_cuda13_is_added(cuda_added):
    assert rules.check(cuda_added) == {name: [] for name in rules.RULES}
    assert set(cuda_added.lock["environments"]) == {"cpu", "cuda13", "default"}
    assert [p["name"] for p in cuda_added.lock["platforms"]] == ["p1"]  # one named platform, pixi's alias
    assert not [p for p in cuda_added.lock["platforms"] if any(v.startswith("__cuda=") for v in p["virtual-packages"])]


def test_a_fresh_cuda13_lock_declares_the_driver_on_a_named_platform(tmp_path, conda_channel):
    """Nothing locked yet: the CUDA platform is added, under pixi's alias, with pixi's virtual packages."""
    projects.project(tmp_path, toolchain=conda_channel)
    done = cli.run("lock", "--target", "cuda13.0", "--channel", str(conda_channel), "--no-pypi", "--json",
                   project=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "platform linux-64-glibc235-cuda13" in json.loads(done.stdout)["added"]
    ws = workspace(tmp_path)
    assert rules.virtual_packages(ws) == [] and rules.every_environment(ws) == []
    platforms = {p["name"]: p for p in ws.lock["platforms"]}
    assert platforms["p2"] == {"name": "p2", "subdir": "linux-64", "virtual-packages": [
        "__cuda=13", "__glibc=2.35", "__unix=0=0", "__linux=4.18", "__archspec=0=x86_64"]}


# ---------------------------------------------------------------------------- one breakage per rule
def _refs(lock: dict, env: str) -> list[dict]:
    (refs,) = lock["environments"][env]["packages"].values()
    return refs


def _record(lock: dict, name: str) -> dict:
    return next(p for p in lock["packages"] if p.get("name") == name or f"/{name}-" in p.get("conda", "x"))


def _move(lock: dict, old: str, new: str) -> None:
    for entry in lock["packages"]:
        for key in ("conda", "pypi"):
            if entry.get(key) == old:
                entry[key] = new
    for env in lock["environments"].values():
        for refs in (env.get("packages") or {}).values():
            for ref in refs:
                for key in ("conda", "pypi"):
                    if ref.get(key) == old:
                        ref[key] = new


def drop_environment(lock, manifest):
    del lock["environments"]["default"]


def mirror_channel(lock, manifest):
    lock["environments"]["cpu"]["channels"] = [{"url": "https://mirror.example/conda-forge/"}]


def host_virtual_packages(lock, manifest):
    lock["platforms"][0]["virtual-packages"] = ["__archspec=1=x86_64", "__glibc=2.36=0", "__linux=6.1=0", "__unix=0=0"]


def no_indexes(lock, manifest):
    del lock["environments"]["cpu"]["indexes"]


def no_conda_python(lock, manifest):
    refs = _refs(lock, "cpu")
    refs[:] = [r for r in refs if "/python-3" not in r.get("conda", "")]


def torch_without_its_index(lock, manifest):
    del _record(lock, "torch")["index"]


def numpy_needs_a_newer_python(lock, manifest):
    _record(lock, "numpy")["requires_python"] = ">=3.13"


def a_dependency_left_out(lock, manifest):
    refs = _refs(lock, "cpu")
    filelock = _record(lock, "filelock")["pypi"]
    refs[:] = [r for r in refs if r.get("pypi") != filelock]


def a_wheel_for_another_python(lock, manifest):
    old = _record(lock, "numpy")["pypi"]
    _move(lock, old, old.replace("cp311-cp311", "cp313-cp313"))


def a_hash_missing(lock, manifest):
    del _record(lock, "numpy")["sha256"]


def no_pypi_records_and_no_purls(lock, manifest):
    refs = _refs(lock, "cpu")
    refs[:] = [r for r in refs if "pypi" not in r]


def a_path_of_this_machine(lock, manifest):
    old = _record(lock, "torch")["pypi"]
    _move(lock, old, "file:///opt/wheels/" + old.rsplit("/", 1)[1])


def deprecated_system_requirements(lock, manifest):
    return manifest + '\n[feature.cpu.system-requirements]\ncuda = "12"\n'


BREAKAGES = {"every_environment": drop_environment, "channels": mirror_channel,
             "virtual_packages": host_virtual_packages, "indexes": no_indexes, "conda_python": no_conda_python,
             "index_pins": torch_without_its_index, "requires_python": numpy_needs_a_newer_python,
             "requires_dist": a_dependency_left_out, "wheel_tags": a_wheel_for_another_python, "hashes": a_hash_missing,
             "purls": no_pypi_records_and_no_purls, "shareable": a_path_of_this_machine,
             "manifest_form": deprecated_system_requirements}


def test_every_rule_has_a_breakage():
    assert set(BREAKAGES) == set(rules.RULES)


@pytest.mark.parametrize("rule", sorted(BREAKAGES))
def test_each_check_fails_on_a_lock_broken_its_way(cpu_locked, rule):
    lock = copy.deepcopy(cpu_locked.lock)
    manifest_text = (cpu_locked.root / "pixi.toml").read_text()
    changed = BREAKAGES[rule](lock, manifest_text)
    broken = rules.Workspace.read(changed or manifest_text, "version: 7\n", cpu_locked.root)
    broken = rules.Workspace(broken.manifest, broken.raw_manifest, lock, cpu_locked.root)
    assert rules.RULES[rule](cpu_locked) == []
    assert rules.RULES[rule](broken), f"{rule} did not notice: {BREAKAGES[rule].__name__}"
