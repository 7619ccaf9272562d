"""A GPU whose gfx target no PyTorch ROCm build in the tables carries (an RX 590, gfx803): the first
answer says so, with or without ROCm installed and for any ROCm target, instead of sending the user
to install a ROCm that would not help. The rule reads the tables: give one build that target and the
ROCm path opens again."""

from __future__ import annotations

import dataclasses

from support.decisions import K, outcome, refusal
from support.profiles import amd

RX590 = ("AMD Radeon RX 590", "gfx803")
NO_BUILD = ("no PyTorch ROCm build has kernels for gfx803 (Radeon RX 590): no release in the tables carries that "
            "gfx target, so no ROCm version would help")


def test_the_tables_carry_no_rocm_build_for_gfx803():
    assert not any("gfx803" in (*v.archs, *v.unconfirmed_archs) for r in K.releases for v in r.variants)


def test_without_rocm_the_plan_is_cpu_and_says_no_rocm_build_has_kernels_for_it():
    result = outcome(amd(RX590, rocm=None))
    assert result.plan.backend == "cpu"
    assert result.plan.warnings[0] == f"{NO_BUILD}: CPU plan"
    assert not any("Install ROCm" in w for w in result.plan.warnings)
    backend = [step for step in result.plan.trace if step.rule == "backend"]
    assert [(step.result, step.because) for step in backend] == [("cpu", NO_BUILD)]
    assert result.plan.summary.startswith("CPU plan (no ROCm build for the GPU): torch ")


def test_with_rocm_installed_or_a_rocm_target_the_refusal_says_the_same():
    for machine, target in ((amd(RX590, rocm="6.2.0"), "auto"), (amd(RX590, rocm="6.2.0"), "rocm6.2"),
                            (amd(RX590, rocm=None), "rocm6.1")):
        assert refusal(machine, target) == (NO_BUILD, "use --target cpu", "no ROCm build carries gfx803")


def test_a_gpu_another_rocm_release_serves_keeps_the_advice_to_change_rocm():
    message, fix, _ = refusal(amd(("AMD GPU X", "gfx1151"), rocm="6.2.0"))
    assert message.startswith("no PyTorch build for ROCm 6.2 has kernels") and "newer ROCm" in fix


def test_one_build_carrying_the_target_opens_the_rocm_path():
    release = K.release("2.4")
    widened = release._replace(variants=tuple(v._replace(archs=(*v.archs, "gfx803")) if v.tag.startswith("rocm") else v
                                              for v in release.variants))
    knowledge = dataclasses.replace(K, releases=tuple(widened if r is release else r for r in K.releases))
    result = outcome(amd(RX590, rocm=None), knowledge=knowledge)
    assert result.plan.backend == "cpu" and any("Install ROCm 6.1 or newer" in w for w in result.plan.warnings)
    message, _, _ = refusal(amd(RX590, rocm="6.2.0"), knowledge=knowledge)
    assert message != NO_BUILD


def test_a_node_with_one_served_gpu_is_not_refused_for_the_other_by_this_rule():
    result = outcome(amd(RX590, ("AMD Instinct MI210", "gfx90a"), rocm=None))
    assert not any(NO_BUILD in w for w in result.plan.warnings)


def test_two_gpus_no_build_serves_are_both_named_in_one_sentence():
    """An RX 590 and an RX 6400 (gfx1034: no build carries it either): the plan is CPU and its one sentence names
    both, in the machine's order, with the plural."""
    result = outcome(amd(RX590, ("AMD Radeon RX 6400", "gfx1034"), rocm=None))
    assert result.plan.backend == "cpu"
    assert result.plan.warnings[0] == ("no PyTorch ROCm build has kernels for gfx803 (Radeon RX 590), gfx1034 (Radeon RX "
                                       "6400): no release in the tables carries those gfx targets, so no ROCm version "
                                       "would help: CPU plan")
