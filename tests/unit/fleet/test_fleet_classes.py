"""resolver/fleet/classes.py in detail: which fields tell nodes apart, how a class's plan is merged, how
classes are named; the plans come from decide on made-up machines."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from resolver.core.model import PatchRef, Request, TorchSource
from resolver.core.names import ENV_NAME_MAX, is_env_name
from resolver.fleet import classes
from resolver.fleet.nodes import Node
from resolver.plan.decide import decide
from resolver.plan.knowledge import Knowledge
from resolver.plan.probe.profile import HardwareProfile

K = Knowledge.load()


def nvidia(*gpus: tuple[str, str], driver: str = "580.65.06", glibc: str = "2.35", python: str = "3.11.7",
           uuid: str | None = None, memory: int | None = None) -> HardwareProfile:
    return HardwareProfile.from_json({
        "platform": "linux-64", "glibc": glibc, "python": python, "amd": None, "cuda_toolkit": None,
        "nvidia": {"driver_version": driver, "cuda_driver_version": None,
                   "gpus": [{"name": n, "compute_capability": c, "uuid": uuid, "memory_mib": memory} for n, c in gpus]}})


A100, L4, H100 = ("NVIDIA A100-SXM4-80GB", "8.0"), ("NVIDIA L4", "8.9"), ("NVIDIA H100 80GB HBM3", "9.0")


def plan_of(profile: HardwareProfile):
    outcome = decide(profile, Request(), K)
    assert outcome.plan is not None, outcome.refusal
    return outcome.plan


def node(name: str, profile: HardwareProfile) -> Node:
    return Node(name, Path(f"/fleet/{name}.json"), profile)


BASE = plan_of(nvidia(A100))


@pytest.mark.parametrize("change", [
    lambda p: replace(p, platform="linux-aarch64"),
    lambda p: replace(p, backend="rocm"),
    lambda p: replace(p, backend_version="12.8"),
    lambda p: replace(p, python="3.12"),
    lambda p: replace(p, torch=replace(p.torch, version="2.13.0")),
    lambda p: replace(p, torch=replace(p.torch, variant="cu128")),
    lambda p: replace(p, torch=replace(p.torch, source=TorchSource(p.torch.source.kind, "https://mirror/whl/cu126"))),
    lambda p: replace(p, conda_packages=p.conda_packages + (("cuda-nvcc", "12.6.*"),)),
    lambda p: replace(p, patches=(PatchRef("rocm6.0-bf16-inline", "x.h"),)),
    lambda p: replace(p, kernels=replace(p.kernels, toolkit="nvcc 12.8")),
    lambda p: replace(p, kernels=replace(p.kernels, toolkit_source="system")),
    lambda p: replace(p, kernels=replace(p.kernels, strategy="none")),
], ids=["platform", "backend", "backend-version", "python", "torch-version", "variant", "index", "conda", "patches",
        "toolkit", "toolkit-source", "no-kernels"])
def test_each_field_of_the_environment_tells_classes_apart(change):
    assert classes.class_key(change(BASE)) != classes.class_key(BASE)


@pytest.mark.parametrize("change", [
    lambda p: replace(p, kernels=replace(p.kernels, arch_list=("9.0",))),
    lambda p: replace(p, kernels=replace(p.kernels, strategy="prebuilt")),
    lambda p: replace(p, glibc="2.17", cuda_driver="12.0", warnings=("w",), runnable_here=False, summary="s"),
    lambda p: replace(p, conda_packages=tuple(reversed(p.conda_packages))),
], ids=["archs", "build-or-prebuilt", "per-node-facts", "conda-order"])
def test_what_a_class_merges_does_not_split_it(change):
    assert classes.class_key(change(BASE)) == classes.class_key(BASE)


def test_decision_inputs_drop_only_what_decide_does_not_read():
    one = nvidia(A100, uuid="GPU-1", memory=81920)
    other = nvidia(A100, uuid="GPU-2", memory=40960)
    assert classes.decision_inputs(one) == classes.decision_inputs(other)
    assert classes.decision_inputs(one) != classes.decision_inputs(nvidia(A100, driver="550.54.15"))
    assert classes.decision_inputs(one) != classes.decision_inputs(nvidia(H100))
    assert classes.decision_inputs(one) != classes.decision_inputs(nvidia(A100, glibc="2.28"))
    kept = classes.decision_inputs(one)
    assert kept.nvidia.gpus[0].compute_capability == one.nvidia.gpus[0].compute_capability
    assert kept.nvidia.gpus[0].uuid is None and kept.nvidia.gpus[0].memory_mib is None
    assert kept.notes == () and kept.sources == () and kept.cpu_count is None and not kept.container
    cpu = HardwareProfile.from_json({"platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "nvidia": None,
                                     "amd": None, "cuda_toolkit": None})
    assert classes.decision_inputs(cpu).nvidia is None and classes.decision_inputs(cpu).amd is None


def test_a_class_builds_for_the_union_and_installs_on_its_oldest_node():
    fleet = classes.plan_fleet((node("b-l4", nvidia(L4, glibc="2.39", driver="590.10")),
                                node("a-a100", nvidia(A100, glibc="2.28", driver="580.65.06")),
                                node("c-a100", nvidia(A100, glibc="2.35", driver="600.1"))), knowledge=K)
    assert len(fleet.classes) == 1 and fleet.unserved == ()
    only = fleet.classes[0]
    assert only.nodes == ("a-a100", "b-l4", "c-a100")
    assert only.plan.kernels.arch_list == ("8.0", "8.9") and only.plan.kernels.strategy == "build"
    assert only.plan.glibc == "2.28" and only.plan.runnable_here is False
    drivers = [plan_of(nvidia(A100, driver=d)).cuda_driver for d in ("580.65.06", "590.10", "600.1")]
    assert only.plan.cuda_driver == min(drivers, key=classes._version_key)
    assert only.name == "cuda13-sm80-sm89" and only.plan.env_name == only.name
    assert only.why == (f"3 node(s) share torch {only.plan.torch.requirement.split('==')[1]} ({only.plan.torch.variant}) "
                        "for Python 3.11 on linux-64; kernels for 8.0, 8.9, the union of their GPUs")
    assert only.plan.trace[-1].rule == "fleet" and only.plan.trace[-1].result == "3 node(s)"
    assert "the union of a-a100, b-l4, c-a100" in only.plan.trace[-1].because
    assert fleet.membership == (("a-a100", only.name), ("b-l4", only.name), ("c-a100", only.name))
    assert json.loads(json.dumps(fleet.to_json()))["nodes"] == {"a-a100": only.name, "b-l4": only.name,
                                                                "c-a100": only.name}


def test_nodes_of_one_kind_share_a_class_whose_why_names_no_union():
    fleet = classes.plan_fleet((node("n1", nvidia(H100, uuid="GPU-1")), node("n2", nvidia(H100, uuid="GPU-2"))),
                               knowledge=K)
    assert [c.nodes for c in fleet.classes] == [("n1", "n2")]
    assert fleet.classes[0].why.endswith("; kernels for 9.0") and "union" not in fleet.classes[0].why


def test_a_refused_node_is_listed_with_its_reason_and_fix():
    fleet = classes.plan_fleet((node("old", nvidia(A100, driver="400.1")), node("ok", nvidia(A100))), knowledge=K)
    assert [c.nodes for c in fleet.classes] == [("ok",)]
    (unserved,) = fleet.unserved
    refusal = decide(nvidia(A100, driver="400.1"), Request(), K).refusal
    assert unserved == classes.Unserved("old", "/fleet/old.json", refusal.message, refusal.fix)
    assert unserved.to_json() == {"node": "old", "file": "/fleet/old.json", "reason": refusal.message, "fix": refusal.fix}


def test_classes_differ_by_driver_generation():
    fleet = classes.plan_fleet((node("new", nvidia(A100)), node("old", nvidia(A100, driver="550.54.15"))), knowledge=K)
    assert sorted(c.name for c in fleet.classes) == ["cuda12-sm80", "cuda13-sm80"]


def test_class_names_are_qualified_only_where_they_clash():
    cu126 = replace(BASE, backend="cuda", backend_version="12.6", torch=replace(BASE.torch, variant="cu126"))
    cu128 = replace(cu126, backend_version="12.8", torch=replace(BASE.torch, variant="cu128"))
    py312 = replace(cu126, python="3.12")
    other = replace(cu126, kernels=replace(cu126.kernels, arch_list=("9.0",)))
    assert classes.class_names([cu126, other]) == ["cuda12-sm80", "cuda12-sm90"]
    assert classes.class_names([cu126, cu128, other]) == ["cuda12-sm80-cu126", "cuda12-sm80-cu128", "cuda12-sm90"]
    # each qualifier is added in turn while names still clash: the build, then the Python, then the version
    assert classes.class_names([cu126, py312]) == ["cuda12-sm80-cu126-py311", "cuda12-sm80-cu126-py312"]
    v1 = replace(cu126, backend_version="12.6.1")
    assert classes.class_names([cu126, v1]) == ["cuda12-sm80-cu126-py311-v126", "cuda12-sm80-cu126-py311-v1261"]
    twin = replace(cu126, conda_packages=cu126.conda_packages + (("extra", "*"),))
    named = classes.class_names([cu126, twin])
    prefix = "cuda12-sm80-cu126-py311-v126-"
    assert len(set(named)) == 2 and all(n.startswith(prefix) and len(n) == len(prefix) + 6 for n in named)
    aarch64 = replace(cu126, platform="linux-aarch64")
    assert classes.class_names([aarch64]) == ["cuda12-aarch64-sm80"]
    cpu = replace(cu126, backend="cpu", backend_version=None, kernels=replace(cu126.kernels, arch_list=()))
    assert classes.class_names([cpu]) == ["cpu"]


def test_names_are_valid_and_bounded():
    assert classes._name(["CUDA12", "", "sm 80.1", "-x-"]) == "cuda12-sm-80-1--x"
    long = classes._name(["cuda12", *[f"sm{i}" for i in range(60, 100)]])
    assert len(long) == ENV_NAME_MAX and is_env_name(long) and long.startswith("cuda12-sm60-")
    assert classes._name(["a" * ENV_NAME_MAX]) == "a" * ENV_NAME_MAX
    cut = classes._name(["a" * (ENV_NAME_MAX + 1)])
    assert len(cut) == ENV_NAME_MAX and cut[:ENV_NAME_MAX - 9] == "a" * (ENV_NAME_MAX - 9) and cut[ENV_NAME_MAX - 9] == "-"
    assert classes._name(["a" * (ENV_NAME_MAX + 1)]) != classes._name(["a" * (ENV_NAME_MAX + 2)])


def test_arch_tags_and_order():
    assert [classes.arch_tag(a) for a in ("8.0", "12.0", "gfx90a", "GFX942")] == ["sm80", "sm120", "gfx90a", "gfx942"]
    assert classes.sort_archs({"12.0", "8.9", "8.0", "10.0", "gfx90a", "gfx1100"}) == \
        ("8.0", "8.9", "10.0", "12.0", "gfx1100", "gfx90a")
    assert classes._version_key("580.65.06") == (580, 65, 6) and classes._version_key("2.x") == (2, 0)


def cpu_profile(python: str = "3.11.7") -> HardwareProfile:
    return HardwareProfile.from_json({"platform": "linux-64", "glibc": "2.35", "python": python, "nvidia": None,
                                      "amd": None, "cuda_toolkit": None})


def amd_profile(sources: tuple[str, ...] = (), container: bool = False) -> HardwareProfile:
    return HardwareProfile.from_json({"platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "nvidia": None,
                                      "cuda_toolkit": None, "container": container,
                                      "amd": {"rocm_version": "6.2.0", "sources": list(sources),
                                              "gpus": [{"name": "AMD Instinct MI210", "gfx_arch": "gfx90a"}]}})


def test_fleet_json_names_every_part():
    fleet = classes.plan_fleet((node("a-old", nvidia(A100, driver="400.1")), node("b", nvidia(H100))), knowledge=K)
    data = fleet.to_json()
    assert sorted(data) == ["classes", "nodes", "unserved"]
    (cls,) = data["classes"]
    assert sorted(cls) == ["environment", "nodes", "plan", "why"]
    assert cls["environment"] == "cuda13-sm90" and cls["nodes"] == ["b"] and cls["why"] == fleet.classes[0].why
    assert cls["plan"] == fleet.classes[0].plan.to_json() and cls["plan"]["environment"] == "cuda13-sm90"
    assert [u["node"] for u in data["unserved"]] == ["a-old"]  # a refused node does not stop the ones after it
    assert data["nodes"] == {"b": "cuda13-sm90"}


def test_the_shipped_tables_are_the_default():
    assert classes.plan_fleet((node("b", nvidia(H100)),)).to_json() == \
        classes.plan_fleet((node("b", nvidia(H100)),), knowledge=K).to_json()


def test_one_decision_per_kind_of_node(monkeypatch):
    import resolver.plan.decide

    calls = []
    real = resolver.plan.decide.decide
    monkeypatch.setattr(resolver.plan.decide, "decide", lambda *a, **kw: calls.append(a[0]) or real(*a, **kw))
    nodes = tuple(node(f"n{i}", nvidia(A100, uuid=f"GPU-{i}", memory=80000 + i)) for i in range(5))
    fleet = classes.plan_fleet(nodes + (node("h", nvidia(H100)),), knowledge=K)
    assert len(calls) == 2 and [len(c.nodes) for c in fleet.classes] == [6]


def test_decision_inputs_leave_out_notes_sources_and_counts():
    base = nvidia(A100)
    other = replace(base, notes=("a note",), sources=("nvidia-smi",), cpu_count=64, memory_available_mib=1000,
                    nvidia=replace(base.nvidia, sources=("nvml",)))
    assert classes.decision_inputs(other) == classes.decision_inputs(base)


def test_decision_inputs_of_amd_nodes_and_containers():
    assert classes.decision_inputs(amd_profile(("rocminfo",))) == classes.decision_inputs(amd_profile(("amd-smi",)))
    assert classes.decision_inputs(amd_profile(container=True)) == classes.decision_inputs(amd_profile())
    kept = classes.decision_inputs(amd_profile(("rocminfo",), container=True))
    assert kept.amd.gpus == amd_profile().amd.gpus and kept.amd.rocm_version == amd_profile().amd.rocm_version
    assert kept.amd.sources == () and kept.container is False
    assert classes.decision_inputs(nvidia(A100)).nvidia.sources == ()
    assert classes.decision_inputs(amd_profile()).memory_available_mib is None


def _merged(*members):
    group = classes._Members()
    for name, plan in members:
        group.add(name, plan)
    return group.merged()


def test_merge_takes_build_over_prebuilt_and_the_oldest_versions_by_number():
    # the first node by name ('a') gives the class its plan; the oldest glibc and driver come from 'b'
    prebuilt = replace(BASE, kernels=replace(BASE.kernels, strategy="prebuilt"), glibc="2.17", cuda_driver="12.10",
                       warnings=("w1",))
    built = replace(BASE, kernels=replace(BASE.kernels, strategy="build"), glibc="2.9", cuda_driver="12.9",
                    warnings=("w2", "w1"))
    plan, nodes, why = _merged(("b", built), ("a", prebuilt))
    assert nodes == ("a", "b") and plan.kernels.strategy == "build"
    assert plan.glibc == "2.9" and plan.cuda_driver == "12.9"  # by number: 2.9 < 2.17, 12.9 < 12.10
    assert plan.warnings == ("w1", "w2")
    assert plan.trace[-1].because == "kernels for 8.0: the union of a, b"
    only_prebuilt, _, _ = _merged(("a", prebuilt), ("c", prebuilt))
    assert only_prebuilt.kernels.strategy == "prebuilt"
    none, _, _ = _merged(("a", replace(BASE, glibc=None, cuda_driver=None)))
    assert none.glibc is None and none.cuda_driver is None


def test_a_cpu_class_has_no_kernels_and_says_so():
    fleet = classes.plan_fleet((node("c1", cpu_profile()), node("c2", cpu_profile())), knowledge=K)
    (only,) = fleet.classes
    assert only.name == "cpu" and only.plan.kernels.arch_list == ()
    assert only.why.endswith("; no kernels")
    assert only.plan.trace[-1].because == "kernels for no GPU: the union of c1, c2"


def test_rocm_classes_clashing_on_name_are_told_apart_by_their_build():
    rocm = replace(BASE, backend="rocm", backend_version="6.2.4", torch=replace(BASE.torch, variant="rocm6.2.4"),
                   kernels=replace(BASE.kernels, arch_list=("gfx90a",)))
    other = replace(rocm, backend_version="6.2.3", torch=replace(BASE.torch, variant="rocm6.2.3"))
    assert classes.class_names([rocm, other]) == ["rocm6-gfx90a-rocm624", "rocm6-gfx90a-rocm623"]


def test_cpu_classes_clashing_on_everything_named_end_with_a_digest():
    one = replace(BASE, backend="cpu", backend_version=None, torch=replace(BASE.torch, variant="cpu"),
                  kernels=replace(BASE.kernels, arch_list=()))
    two = replace(one, conda_packages=one.conda_packages + (("extra", "*"),))
    named = classes.class_names([one, two])
    assert all(n.startswith("cpu-cpu-py311-v-") and len(n) == len("cpu-cpu-py311-v-") + 6 for n in named)


def test_a_name_cut_at_a_dash_does_not_end_in_two():
    cut = classes._name(["a" * (ENV_NAME_MAX - 10), "b" * 20])  # the cut falls just after the joining '-'
    assert "--" not in cut and cut.startswith("a" * (ENV_NAME_MAX - 10) + "-") and len(cut) == ENV_NAME_MAX - 1


def test_the_decision_inputs_of_one_profile_object_are_worked_out_once(monkeypatch):
    # nodes of one kind read from one file share one profile object: 100,000 of them cost one look-up each
    calls = []
    real = classes.decision_inputs
    monkeypatch.setattr(classes, "decision_inputs", lambda profile: calls.append(profile) or real(profile))
    shared = nvidia(A100)
    fleet = classes.plan_fleet([node(f"n{i}", shared) for i in range(4)] + [node("twin", nvidia(A100))], knowledge=K)
    assert len(calls) == 2 and [len(c.nodes) for c in fleet.classes] == [5]


def test_refused_nodes_are_listed_by_name():
    fleet = classes.plan_fleet((node("z-old", nvidia(A100, driver="400.1")), node("m-ok", nvidia(A100)),
                                node("a-old", nvidia(A100, driver="400.2"))), knowledge=K)
    assert [u.node for u in fleet.unserved] == ["a-old", "z-old"]


def test_the_class_plan_is_that_of_its_first_node_by_name_whatever_the_order_read():
    first, other = replace(BASE, summary="first"), replace(BASE, summary="other")
    plan, nodes, _ = _merged(("a1", first), ("m5", other), ("z9", first))
    assert plan.summary == "first" and nodes == ("a1", "m5", "z9")
    plan, nodes, _ = _merged(("z9", first), ("m5", other), ("c", first), ("b", first), ("a1", first))
    assert plan.summary == "first" and nodes == ("a1", "b", "c", "m5", "z9")


def test_the_fleet_trace_names_every_architecture_of_the_union():
    l4 = replace(BASE, kernels=replace(BASE.kernels, arch_list=("8.9",)))
    plan, _, why = _merged(("a", BASE), ("b", l4))
    assert plan.trace[-1].because == "kernels for 8.0, 8.9: the union of a, b"
    assert why.endswith("; kernels for 8.0, 8.9, the union of their GPUs")


def test_a_brief_list_names_eight_and_counts_the_rest():
    names = [f"n{i}" for i in range(10)]
    assert classes.brief_list(names[:8]) == "n0, n1, n2, n3, n4, n5, n6, n7"
    assert classes.brief_list(names[:9]) == "n0, n1, n2, n3, n4, n5, n6, n7 and 1 more"
    assert classes.brief_list(names[:3], limit=3) == "n0, n1, n2" and classes.brief_list([]) == ""
