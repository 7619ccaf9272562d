"""Each fact about plans has one owner: ``planning.plan_of`` is the only caller of ``decide``; the plans
behind pixi.lock are read and written by ``resolver.plan.locked`` alone; the kernel build takes the plan its
environment was locked from and plans nothing itself. (That a ``Plan`` holds typed versions and reads back
from its JSON to the same bytes is tested with its other fields, in ``test_decide_plan_fields.py``.)"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest
from support import DATA, REPO

from resolver.core.errors import BadInput
from resolver.core.model import Plan, Request, Target
from resolver.kernels.driver import _requested_archs, _with_locked_plan
from resolver.kernels.summary import BuildOptions
from resolver.plan import locked
from resolver.plan.planning import plan_of
from resolver.plan.probe import probe_machine
from resolver.project.manifest import Manifest
from resolver.project.paths import ProjectPaths

PACKAGE = REPO / "resolver"
MACHINES = DATA / "machines"


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


def test_a_locked_plan_reads_back_as_it_was_saved(locked_for_another_machine):
    project, plan = locked_for_another_machine
    assert locked.read(project, plan.env_name).to_json() == plan.to_json()  # (the record's keys are sorted)
    assert [p.to_json() for p in locked.read_all(project)] == [plan.to_json()]
    assert [p.name for p in locked.files(project)] == [f"{plan.env_name}.json"]
    assert locked.record(project, plan.env_name)["key"] == locked.plan_key(plan)
