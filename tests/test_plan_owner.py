"""Each fact about plans has one owner: ``planning.plan_of`` is the only caller of ``decide``; the plans
behind pixi.lock are read and written by ``resolver.plan.locked`` alone; the kernel build takes the plan its
environment was locked from and plans nothing itself; a ``Plan`` holds typed versions, and its JSON form
reads back to the same bytes."""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path

import pytest

from resolver.core.errors import BadInput
from resolver.core.model import Plan, Request, Target
from resolver.core.versions import DottedVersion, ReleaseVersion
from resolver.kernels.driver import _requested_archs, _with_locked_plan
from resolver.kernels.summary import BuildOptions
from resolver.plan import locked
from resolver.plan.planning import plan_of
from resolver.plan.probe import probe_machine
from resolver.project.manifest import Manifest
from resolver.project.paths import ProjectPaths

PACKAGE = Path(__file__).resolve().parents[1] / "resolver"
MACHINES = Path(__file__).parent / "machines"


def _modules(folder: Path = PACKAGE):
    for path in sorted(folder.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def test_decide_is_called_by_plan_of_alone():
    callers = []
    for path, tree in _modules():
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                callers += [(path.relative_to(PACKAGE).as_posix(), function.name) for call in ast.walk(function)
                            if isinstance(call, ast.Call) and _called_name(call) == "decide"]
    assert callers == [("plan/planning.py", "plan_of")]


def test_the_plan_stage_never_imports_the_lock_stage():
    found = []
    for path, tree in _modules(PACKAGE / "plan"):
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [(path.name, n) for n in names if n == "resolver.lock" or n.startswith("resolver.lock.")]
    assert found == []


def test_the_plan_records_are_read_and_written_in_resolver_plan_locked_alone():
    """``plan_record`` (the records' path) and the plans' folder are named in the module that owns them."""
    users = sorted({path.relative_to(PACKAGE).as_posix() for path, tree in _modules() for node in ast.walk(tree)
                    if isinstance(node, ast.Attribute) and node.attr in ("plan_record", "plans")
                    and not (isinstance(node.value, ast.Name) and node.value.id == "self")})
    assert users == ["plan/locked.py"]


def test_the_kernel_build_plans_nothing():
    planners = {"plan_of", "plan_for", "plans_for", "plan_document", "decide", "probe_machine", "probe_here"}
    found = [(path.name, _called_name(node)) for path, tree in _modules(PACKAGE / "kernels") for node in ast.walk(tree)
             if isinstance(node, ast.Call) and _called_name(node) in planners]
    assert found == []


@pytest.fixture
def locked_for_another_machine(tmp_path) -> tuple[ProjectPaths, Plan]:
    """A project whose environment was locked for an A100 node (sm 8.0), whatever this machine has."""
    node = probe_machine(sysroot=MACHINES / "a100-gcp-ubuntu2404")
    plan = plan_of(node, Request(Target.parse("cuda12.6")))
    assert plan.kernels.arch_list == ("8.0",) and plan.kernels.strategy != "none"
    project = ProjectPaths(tmp_path)
    manifest = Manifest.new("owner", project.manifest)
    manifest.ensure_environment(plan)
    manifest.save(project.manifest)
    locked.save(project, plan, Manifest.load(project.manifest))
    return project, plan


def test_building_for_an_environment_takes_its_locked_plan(locked_for_another_machine):
    project, plan = locked_for_another_machine
    here = probe_machine()
    try:
        auto_here = plan_of(here, Request()).kernels.arch_list
    except Exception:  # noqa: BLE001 - no plan here at all: certainly not the A100's
        auto_here = ()
    assert auto_here != plan.kernels.arch_list or here.has_gpu  # an A100 here would plan the same
    options = _with_locked_plan(project, BuildOptions(env_name=plan.env_name), plan.env_name)
    assert (options.plan_archs, options.plan_strategy, options.plan_toolkit) == \
        (plan.kernels.arch_list, plan.kernels.strategy, plan.kernels.toolkit)
    assert _requested_archs(options, plan.env_name, "cuda", "12.6") == ("8.0",)
    # what a caller hands in (setup's plan, --arch) wins over the locked one
    handed = BuildOptions(env_name=plan.env_name, plan_archs=("9.0",), plan_strategy="build")
    assert _with_locked_plan(project, handed, plan.env_name) is handed
    assert _requested_archs(replace(options, arch="7.5"), plan.env_name, "cuda", "12.6") == ("7.5",)


def test_building_without_a_locked_plan_or_arch_is_one_sentence_with_the_fix(tmp_path):
    project = ProjectPaths(tmp_path)
    options = _with_locked_plan(project, BuildOptions(env_name="cuda12"), "cuda12")
    with pytest.raises(BadInput) as refused:
        _requested_archs(options, "cuda12", "cuda", "12.6")
    assert refused.value.message == "environment 'cuda12' has no locked plan here to take the GPU architectures from"
    assert "lock --target cuda12" in refused.value.fix and "--arch" in refused.value.fix


def _plans() -> list[Plan]:
    cpu = plan_of(probe_machine(sysroot=MACHINES / "cpu-only-ubuntu2410"), Request())
    cuda = plan_of(probe_machine(sysroot=MACHINES / "h100-8x-ubuntu2204"), Request())
    rocm = plan_of(probe_machine(sysroot=MACHINES / "mi300x-rocm6.3-amdsmi"), Request())
    other = plan_of(probe_machine(sysroot=MACHINES / "cpu-only-ubuntu2410"), Request(Target.parse("cuda12.6")))
    return [cpu, cuda, rocm, other, replace(cuda, environment="cuda12-sm90")]


@pytest.mark.parametrize("index", range(5))
def test_a_plan_reads_back_from_its_json_byte_for_byte_with_typed_versions(index):
    plan = _plans()[index]
    text = json.dumps(plan.to_json())
    again = Plan.from_json(json.loads(text))
    assert json.dumps(again.to_json()) == text and again == plan
    assert isinstance(again.python, DottedVersion) and isinstance(again.torch.version, DottedVersion)
    assert again.backend_version is None if again.backend == "cpu" else isinstance(again.backend_version, DottedVersion)
    assert all(isinstance(v, ReleaseVersion) for _, v in again.kernels.packages)
    data = json.loads(text)
    assert data["python"] == str(again.python) and data["torch"]["version"] == str(again.torch.version)


def test_a_kernel_release_with_a_suffix_keeps_its_text():
    plan = _plans()[1]
    data = plan.to_json()
    data["kernels"]["packages"] = {"causal-conv1d": "1.6.1", "mamba-ssm": "2.3.2.post1"}
    again = Plan.from_json(data)
    assert dict(again.kernels.packages)["mamba-ssm"] == ReleaseVersion(DottedVersion((2, 3, 2)), ".post1")
    assert again.to_json()["kernels"]["packages"] == data["kernels"]["packages"]


@pytest.mark.parametrize("field,value", [("python", "3.11abc"), ("backend_version", "twelve"),
                                         ("python", "v3.11"), ("backend_version", 12.6)])
def test_a_stored_plan_whose_version_is_not_one_is_refused_as_malformed(field, value):
    data = _plans()[1].to_json()
    data[field] = value
    with pytest.raises(BadInput) as refused:
        Plan.from_json(data)
    assert "stored plan is malformed" in refused.value.message


def test_a_locked_plan_reads_back_as_it_was_saved(locked_for_another_machine):
    project, plan = locked_for_another_machine
    assert locked.read(project, plan.env_name).to_json() == plan.to_json()  # (the record's keys are sorted)
    assert [p.to_json() for p in locked.read_all(project)] == [plan.to_json()]
    assert [p.name for p in locked.files(project)] == [f"{plan.env_name}.json"]
    assert locked.record(project, plan.env_name)["key"] == locked.plan_key(plan)
