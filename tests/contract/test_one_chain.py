"""The stage chain is written once (resolver/workflows/chain.py) and the stages do not reach sideways.

Read from the source with ``ast``: the order install → patch → kernels → verify, and calls into more than one
of those stages, appear only in the chain; the kernel build imports nothing of the patch stage, verify nothing
of doctor, and only the chain makes the header overlay. Then the chain itself, run dry (nothing written), in
its order whatever a workflow names, and the overlay it hands the build on a synthetic ROCm 6.0 tree.
"""

from __future__ import annotations

import ast

import pytest
from support import DATA, REPO
from support.patch_support import HEADER, TABLE, make_rocm

from resolver.workflows.chain import STEPS, Chain, ChainOptions, apply_patches, overlay_at, step_names

PACKAGE = REPO / "resolver"
CHAIN = PACKAGE / "workflows" / "chain.py"
# what each stage of the chain is entered by, as a name a module calls
ENTRIES = {"install": {"install_environment"}, "patch": {"ensure_overlay", "apply_patches"},
           "kernels": {"build_for_plan", "build_kernels", "build"}, "verify": {"verify_environment"}}


def modules(*under: str):
    for folder in under or ("",):
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def called_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def imported(tree: ast.AST) -> set[str]:
    """Every module a file imports, at its top or inside a function (``from resolver import patch`` as
    ``resolver.patch``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def chain_orders(tree: ast.AST) -> list[int]:
    """Lines of tuple or list literals that spell the chain's order: install, patch, kernels (or setup's
    name for it, build) and verify one after another."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List)):
            words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            words = ["kernels" if w == "build" else w for w in words]
            if any(words[i:i + 4] == list(STEPS) for i in range(len(words))):
                lines.append(node.lineno)
    return lines


def test_the_chain_order_is_spelled_only_in_the_chain():
    spelled = {str(path.relative_to(PACKAGE)): lines for path, tree in modules() if (lines := chain_orders(tree))}
    assert spelled == {"workflows/chain.py": [chain_orders(ast.parse(CHAIN.read_text()))[0]]}


def test_no_module_but_the_chain_enters_two_stages_of_it():
    """setup, upgrade, the fleet node and the fleet's variant build run the chain; none calls the stages itself.
    (The stages' own packages define the entries and are left out.)"""
    chaining = {}
    for path, tree in modules("workflows", "commands", "fleet", "doctor"):
        if path == CHAIN:
            continue
        stages = sorted(stage for stage, names in ENTRIES.items() if names & called_names(tree))
        if len(stages) > 1:
            chaining[str(path.relative_to(PACKAGE))] = stages
    assert chaining == {}


def test_only_the_chain_makes_the_overlay():
    callers = {str(path.relative_to(PACKAGE)) for path, tree in modules()
               if "ensure_overlay" in called_names(tree) and path.parent.name != "patch"}
    assert callers == {"workflows/chain.py"}


@pytest.mark.parametrize(("stage", "below"), [("kernels", "resolver.patch"), ("verify", "resolver.doctor"),
                                               ("fleet", "resolver.workflows"), ("commands", "resolver.patch.engine")])
def test_a_stage_does_not_import_its_neighbour(stage, below):
    reaching = {str(path.relative_to(PACKAGE)): sorted(m for m in imported(tree) if m == below or m.startswith(below + "."))
                for path, tree in modules(stage)}
    assert {k: v for k, v in reaching.items() if v} == {}


def test_commands_hold_no_lock_of_the_fleet():
    """``lock --fleet`` parses its flags and calls the fleet stage's one operation, which holds the project lock."""
    tree = ast.parse((PACKAGE / "commands" / "lock.py").read_text())
    assert not {"project_lock", "lock_plans", "plan_fleet", "write_fleet"} & called_names(tree)


def test_the_import_check_sees_a_planted_import():
    planted = ast.parse("def f():\n    from resolver import patch as patching\n    patching.ensure_overlay(None)\n")
    assert "resolver.patch" in imported(planted) and "ensure_overlay" in called_names(planted)
    assert chain_orders(ast.parse('NAMES = ("lock", "install", "patch", "build", "verify")')) == [1]


# -- the chain, run ----------------------------------------------------------------------------------
def test_a_dry_chain_runs_its_steps_in_order_and_writes_nothing(tmp_path):
    from resolver.core.model import Request, Target
    from resolver.plan.planning import plan_for
    from resolver.plan.probe.profile import HardwareProfile
    from resolver.project.paths import ProjectPaths

    cpu_box = HardwareProfile.from_json({"platform": "linux-64", "glibc": "2.36", "python": "3.11.7", "nvidia": None,
                                         "amd": None, "cuda_toolkit": None})
    plan = plan_for(Request(target=Target.parse("cpu")), cpu_box)
    project = ProjectPaths(tmp_path)
    seen = []

    def record(name, step):
        outcome = step()
        seen.append((name, outcome.status))
        return outcome

    Chain(project, plan, ChainOptions(dry_run=True), record).run()
    assert seen == [("install", "would-run"), ("patch", "not-needed"), ("kernels", "not-needed"),
                    ("verify", "would-run")]
    seen.clear()
    Chain(project, plan, ChainOptions(steps=("verify", "install"), dry_run=True), record).run()
    assert [name for name, _ in seen] == ["install", "verify"]
    assert list(tmp_path.iterdir()) == []
    assert step_names({"kernels": "build"}) == ("install", "patch", "build", "verify")


def test_the_overlay_the_build_gets_is_made_by_the_patch_stage_once(tmp_path, monkeypatch):
    from resolver.project.paths import ProjectPaths

    monkeypatch.setenv("RESOLVER_PATCH_TABLES", str(TABLE))
    project = ProjectPaths(tmp_path / "project")
    root = make_rocm(tmp_path)
    include = overlay_at(project, root)
    assert include == project.root / ".resolver" / "overlay" / "rocm-6.0.2" / "include"
    made = (include / HEADER.removeprefix("include/")).stat().st_mtime_ns
    assert overlay_at(project, root) == include
    assert (include / HEADER.removeprefix("include/")).stat().st_mtime_ns == made
    assert apply_patches(project, root)["status"] == "already-applied"
    newer = make_rocm(tmp_path / "b", version="6.1.2", header=DATA / "fixtures" / "rocm" /
                      "amd_hip_bf16-6.1.h")
    assert overlay_at(project, newer) is None
