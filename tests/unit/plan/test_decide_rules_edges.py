"""The edges of decide's rules that the table of machines (tests/unit/plan/test_decide.py) does not reach: a torch
release asked for by name whose CPU wheels are not confirmed, a CUDA plan for another machine that passes
over newer releases, the targets offered when a CUDA target plans nothing, and each rule's own reason
text at its boundary. Each test states what a user sees (the plan, the trace, the refusal and its fix)."""

from __future__ import annotations

from dataclasses import replace

from resolver.core.model import Plan, Request, Target, TraceStep
from resolver.core.versions import DottedVersion, driver_text
from resolver.plan.decide import decide
from resolver.plan.knowledge import Knowledge
from resolver.plan.probe.profile import HardwareProfile

K = Knowledge.load()
V = DottedVersion.parse


def cpu_box(python: str = "3.11.7", glibc: str | None = "2.36", platform: str = "linux-64") -> HardwareProfile:
    return HardwareProfile.from_json({"platform": platform, "glibc": glibc, "python": python, "nvidia": None,
                                      "amd": None, "cuda_toolkit": None})


def with_variant(k: Knowledge, release: str, tag: str, **changes) -> Knowledge:
    def changed(r):
        return r._replace(variants=tuple(v._replace(**changes) if v.tag == tag else v for v in r.variants))
    return replace(k, releases=tuple(changed(r) if r.name == release else r for r in k.releases))


# ------------------------------------------------- a requested release whose CPU wheels are not confirmed
def test_a_requested_release_without_confirmed_cpu_wheels_takes_pypis_own_wheel_on_linux_64():
    """torch 2.14's cpu row is not confirmed; PyPI's own linux-64 wheel (cu130, confirmed) runs on the CPU."""
    release = K.release("2.14")
    assert not next(v for v in release.variants if v.tag == "cpu").confirmed and release.pypi_default == "cu130"
    outcome = decide(cpu_box(), Request(torch=V("2.14")), K)
    plan = outcome.plan
    assert outcome.refusal is None and plan is not None
    assert (plan.backend, plan.backend_version, str(plan.python), plan.platform, plan.target) == \
        ("cpu", None, "3.11", "linux-64", "auto")
    assert (str(plan.torch.version), plan.torch.variant, plan.torch.source.kind, plan.torch.requirement) == \
        ("2.14.1", "cu130", "pypi", "torch==2.14.1")
    assert plan.torch.conda.channel == "conda-forge" and plan.torch.conda.spec == "pytorch 2.14.1 cpu*"
    assert plan.kernels.strategy == "none" and not plan.kernels.packages and not plan.kernels.arch_list
    assert (plan.glibc, plan.cuda_driver, plan.runnable_here, plan.patches) == ("2.36", None, True, ())
    assert dict(plan.conda_packages) == {"python": "3.11.*", "pip": "*"}
    assert plan.warnings == (
        "torch 2.14's CPU-only wheels are not confirmed by a second source, so the environment takes PyPI's torch "
        "2.14.1 (the cu130 build): it runs on the CPU here and brings CUDA 13.0 libraries (a few GB) that the CPU "
        "path does not use",)
    assert plan.summary == (
        "CPU plan (torch 2.14 asked for): torch 2.14.1 (PyPI's cu130 build, run on the CPU) for Python 3.11 on "
        "linux-64. Mamba's CUDA/ROCm kernels are not installed; models run on the reference path.")
    steps = [(t.rule, t.result, t.because) for t in plan.trace]
    chosen = steps.index(("torch-release", "2.14.1",
                          "torch 2.14 was asked for and its cpu wheels are not confirmed: PyPI's own linux-64 wheel "
                          "(cu130, confirmed) runs on the CPU when no GPU is visible"))
    assert steps[chosen - 1] == ("torch-release", "eliminated",
                                 "torch 2.14 cpu: its cpu wheels are not confirmed by a second source")
    assert steps[chosen + 1] == ("kernels", "none", "no CUDA/ROCm GPU to run the Mamba kernels: the reference "
                                                    "(pure PyTorch) path runs")
    assert plan.trace == outcome.trace and all(isinstance(t, TraceStep) for t in plan.trace)
    assert Plan.from_json(plan.to_json()) == plan


def test_a_requested_release_with_confirmed_cpu_wheels_keeps_them():
    plan = decide(cpu_box(), Request(torch=V("2.13")), K).plan
    assert (str(plan.torch.version), plan.torch.variant, plan.torch.source.kind) == ("2.13.0", "cpu", "pypi-index")
    assert plan.warnings == () and plan.summary.startswith("CPU plan (no GPU): torch 2.13.0 (cpu wheels)")
    assert not any(t.rule == "torch-release" and t.result == "eliminated" for t in plan.trace)


def test_pypis_wheel_stands_in_only_on_linux_64():
    """PyPI's default wheel is a linux-64 build: macOS and aarch64 get the refusal, not a CUDA wheel."""
    for platform, glibc in (("osx-arm64", None), ("linux-aarch64", "2.36")):
        outcome = decide(cpu_box(platform=platform, glibc=glibc), Request(torch=V("2.14")), K)
        assert outcome.plan is None, platform
        assert outcome.refusal.message == f"no torch release has CPU wheels for Python 3.11 on {platform}"
        assert outcome.refusal.because == "torch 2.14 cpu: its cpu wheels are not confirmed by a second source"
        assert outcome.refusal.fix == "ask for a release with confirmed CPU wheels here, e.g. --torch 2.13"


def test_pypis_wheel_must_pass_the_release_rules_too():
    """A glibc or Python the release cannot serve refuses, with the release's own reason."""
    old_glibc = decide(cpu_box(glibc="2.17"), Request(torch=V("2.14")), K)
    assert old_glibc.plan is None and old_glibc.refusal.because == (
        "torch 2.14: torch 2.14 wheels need glibc >= 2.28 (manylinux_2_28), this system has 2.17")
    assert old_glibc.refusal.fix == "ask for a release with confirmed CPU wheels here, e.g. --torch 2.5"
    too_new = decide(cpu_box(), Request(torch=V("2.14"), python=V("3.15")), K)
    assert too_new.plan is None and too_new.refusal.because == (
        "torch 2.14: torch 2.14 has no wheels for Python 3.15 (newest: 3.14)")
    assert too_new.refusal.message == "no torch release has CPU wheels for Python 3.15 on linux-64"
    assert too_new.refusal.fix == "use --python 3.11 (or another Python torch supports)"


def test_a_requested_release_no_release_can_replace_keeps_the_python_advice():
    """Only releases that pass the release rules and have confirmed CPU wheels here are offered."""
    none_confirmed = K
    for release in K.releases:
        none_confirmed = with_variant(none_confirmed, release.name, "cpu", confirmed=False)
    outcome = decide(cpu_box(platform="osx-arm64", glibc=None), Request(torch=V("2.14")), none_confirmed)
    assert outcome.plan is None and outcome.refusal.fix == "use --python 3.11 (or another Python torch supports)"
    without_a_request = decide(cpu_box(), Request(target=Target.parse("cpu"), python=V("3.15")), K)
    assert without_a_request.refusal.fix == "use --python 3.11 (or another Python torch supports)"


def test_pypis_wheel_must_be_confirmed_and_on_linux_64():
    unconfirmed = with_variant(K, "2.14", "cu130", confirmed=False)
    outcome = decide(cpu_box(), Request(torch=V("2.14")), unconfirmed)
    assert outcome.plan is None and "no torch release has CPU wheels" in outcome.refusal.message
    elsewhere = with_variant(K, "2.14", "cu130", platforms=("linux-aarch64",))
    outcome = decide(cpu_box(), Request(torch=V("2.14")), elsewhere)
    assert outcome.plan is None and "no torch release has CPU wheels" in outcome.refusal.message


# ------------------------------------------------------------- a CUDA target planned for another machine
def test_a_plan_for_another_machine_names_each_newer_release_it_passed_over():
    """--target cuda11.8 on a box without a GPU: torch 2.7 and 2.6 list cu118 only unconfirmed; 2.5 plans."""
    outcome = decide(cpu_box(), Request(target=Target.parse("cuda11.8")), K)
    plan = outcome.plan
    assert (plan.backend, str(plan.backend_version), str(plan.torch.version), plan.torch.variant, plan.runnable_here) == \
        ("cuda", "11.8", "2.5.1", "cu118", False)
    assert (plan.cuda_driver, plan.glibc, plan.target) == ("11.8", "2.36", "cuda11.8")
    steps = [(t.rule, t.result, t.because) for t in plan.trace]
    target = steps.index(("target", "cuda11.8", "no NVIDIA GPU here: planning for another machine with the requested "
                                                "CUDA"))
    assert steps[target + 1:target + 5] == [
        ("torch-release", "2.7 eliminated", "its cu118 wheels are not confirmed"),
        ("torch-release", "2.6 eliminated", "its cu118 wheels are not confirmed"),
        ("torch-release", "2.5.1", "the newest torch with cu118 wheels for Python 3.11"),
        ("kernels", "build", "for the cu118 wheel's architectures 3.7, 5.0, 6.0, 7.0, 7.5, 8.0, 8.6, 9.0 with nvcc 11.8")]
    kernels = plan.kernels
    assert (kernels.strategy, kernels.toolkit, kernels.toolkit_source, kernels.prebuilt_wheels) == \
        ("build", "nvcc 11.8", "target", ())
    assert kernels.arch_list == ("3.7", "5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")
    assert {name: str(version) for name, version in kernels.packages} == {"causal-conv1d": "1.6.1", "mamba-ssm": "2.3.1"}
    assert plan.warnings == (
        "no NVIDIA GPU here: this plan is for another machine (CUDA 11.8 needs driver >= 450.80.02 there); the "
        "kernels get built for the torch wheel's architectures (3.7, 5.0, 6.0, 7.0, 7.5, 8.0, 8.6, 9.0) or, on the "
        "target machine, for its own GPUs",)
    assert plan.summary.startswith("A plan for another machine: torch 2.5.1+cu118 (CUDA 11.8) for Python 3.11; no "
                                   "NVIDIA GPU here, so the driver and GPU checks happen on the target. ")


def test_a_plan_for_another_machine_gives_the_release_rules_reason_for_a_release_it_passed_over():
    """--target cuda12.9 with Python 3.14: torch 2.8 (the one cu129 release) has no Python 3.14 wheels."""
    outcome = decide(cpu_box(), Request(target=Target.parse("cuda12.9"), python=V("3.14")), K)
    assert outcome.plan is None
    assert outcome.refusal.message == ("--target cuda12.9: PyTorch publishes no confirmed CUDA 12.9 wheels usable "
                                       "with Python 3.14 on linux-64")
    assert outcome.refusal.fix == ("use --target cuda12.8 or cuda13.0 (the nearest; all that plan: cuda12.6, "
                                   "cuda12.8, cuda13.0, cuda13.2)")
    assert ("torch-release", "2.8 eliminated", "torch 2.8 has no wheels for Python 3.14 (newest: 3.13)") in \
        [(t.rule, t.result, t.because) for t in outcome.trace]


def test_an_unconfirmed_only_cuda_target_on_another_machine_offers_the_nearest_targets_that_plan():
    """linux-aarch64 lists cu129 only unconfirmed: the fix names the nearest targets on each side, all tried."""
    outcome = decide(cpu_box(platform="linux-aarch64"), Request(target=Target.parse("cuda12.9")), K)
    assert outcome.plan is None
    assert outcome.refusal.message == ("--target cuda12.9: PyTorch publishes no confirmed CUDA 12.9 wheels usable "
                                       "with Python 3.11 on linux-aarch64")
    assert outcome.refusal.fix == "use --target cuda12.6 or cuda13.0 (the nearest; all that plan: cuda12.6, cuda13.0)"
    assert ("torch-release", "2.8 eliminated", "its cu129 wheels are not confirmed") in \
        [(t.rule, t.result, t.because) for t in outcome.trace]
    # the side searches that found those targets leave no steps of their own
    assert sum(t.rule == "torch-release" for t in outcome.trace) == 1


def test_a_cuda_target_between_published_ones_offers_both_neighbours():
    outcome = decide(cpu_box(), Request(target=Target.parse("cuda12.5")), K)
    assert outcome.refusal.fix == ("use --target cuda12.4 or cuda12.6 (the nearest; all that plan: cuda11.7, cuda11.8, "
                                   "cuda12.1, cuda12.4, cuda12.6, cuda12.8, cuda12.9, cuda13.0, cuda13.2)")
    oldest = decide(cpu_box(), Request(target=Target.parse("cuda11.6")), K)
    assert oldest.refusal.fix.startswith("use --target cuda11.7 (the nearest; all that plan: cuda11.7, ")
    newest = decide(cpu_box(), Request(target=Target.parse("cuda13.9")), K)
    assert newest.refusal.fix.startswith("use --target cuda13.2 (the nearest; all that plan: cuda11.7, ")


def test_a_cuda_target_no_python_can_plan_says_so():
    outcome = decide(cpu_box(), Request(target=Target.parse("cuda12.5"), python=V("3.15")), K)
    assert outcome.refusal.message == ("--target cuda12.5: PyTorch publishes no confirmed CUDA 12.5 wheels usable "
                                       "with Python 3.15 on linux-64")
    assert outcome.refusal.fix == "use --target cpu, or another --python"


def test_the_kernels_cuda_floor_holds_for_a_plan_for_another_machine():
    """Were the kernels' CUDA floor 12.0, cu118 could not build them: refused, and not offered as a way out."""
    raised = replace(K, kernel_packages=tuple(p._replace(min_cuda=V("12.0")) for p in K.kernel_packages))
    old = decide(cpu_box(), Request(target=Target.parse("cuda11.8")), raised)
    assert old.plan is None and old.refusal.message == "the Mamba kernels need CUDA >= 12.0, cu118 is CUDA 11.8"
    assert old.refusal.fix == ("use --target cuda12.1 (the nearest; all that plan: cuda12.1, cuda12.4, cuda12.6, "
                               "cuda12.8, cuda12.9, cuda13.0, cuda13.2)")
    at_the_floor = replace(K, kernel_packages=tuple(p._replace(min_cuda=V("11.8")) for p in K.kernel_packages))
    assert decide(cpu_box(), Request(target=Target.parse("cuda11.8")), at_the_floor).plan.torch.variant == "cu118"
    # without the kernels (Windows) their floor does not apply
    windows = decide(cpu_box(platform="win-64", glibc=None), Request(target=Target.parse("cuda11.8")), raised)
    assert windows.plan is not None and windows.plan.torch.variant == "cu118"
    between = decide(cpu_box(), Request(target=Target.parse("cuda12.5")), raised)
    assert between.refusal.fix == ("use --target cuda12.4 or cuda12.6 (the nearest; all that plan: cuda12.1, "
                                   "cuda12.4, cuda12.6, cuda12.8, cuda12.9, cuda13.0, cuda13.2)")


# ------------------------------------------------------------------------------------------------- ROCm
def amd_box(*gpus: tuple[str, str], rocm: str, python: str = "3.11.7") -> HardwareProfile:
    return HardwareProfile.from_json({"platform": "linux-64", "glibc": "2.35", "python": python, "nvidia": None,
                                      "cuda_toolkit": None,
                                      "amd": {"rocm_version": rocm, "gpus": [{"name": n, "gfx_arch": g} for n, g in gpus]}})


RX7800XT = ("AMD Radeon RX 7800 XT", "gfx1101")  # in the rocm6.1 wheels only by one unconfirmed source


def test_a_gfx_target_only_one_source_lists_counts_only_on_an_explicit_target():
    assert all("gfx1101" not in v.archs and "gfx1101" in v.unconfirmed_archs
               for r in K.releases for v in r.variants if v.tag == "rocm6.1" and r.name in ("2.4", "2.5", "2.6"))
    auto = decide(amd_box(RX7800XT, rocm="6.1.3"), Request(), K)
    assert auto.plan is None
    assert auto.refusal.message == ("no PyTorch build for ROCm 6.1 has kernels for these GPUs (no kernels for gfx1101 "
                                    "(Radeon RX 7800 XT); it has gfx900, gfx906, gfx908, gfx90a, gfx942, gfx1030, "
                                    "gfx1100)")
    assert auto.refusal.fix == "use a newer ROCm that supports the GPU, or --target cpu"
    targeted = decide(amd_box(RX7800XT, rocm="6.1.3"), Request(target=Target.parse("rocm6.1")), K).plan
    assert (str(targeted.torch.version), targeted.torch.variant, targeted.kernels.arch_list) == \
        ("2.6.0", "rocm6.1", ("gfx1101",))
    assert "torch 2.6 rocm6.1 rests on one unconfirmed source; chosen because --target asked for it" in \
        targeted.warnings
    assert ("arch-coverage", "rocm6.1", "Radeon RX 7800 XT: gfx1101 is in the wheel") in \
        [(t.rule, t.result, t.because) for t in targeted.trace]


def test_a_rocm_plan_needs_a_kernel_release_for_its_python():
    """torch 2.4 and 2.3 have rocm6.0 wheels for Python 3.8, but mamba-ssm and causal-conv1d need 3.9."""
    outcome = decide(amd_box(("AMD Instinct MI250X", "gfx90a"), rocm="6.0.2"), Request(python=V("3.8")), K)
    assert outcome.plan is None
    assert outcome.refusal.message == ("no PyTorch build for ROCm 6.0 fits this machine: torch 2.4: causal-conv1d "
                                       "needs Python >= 3.9")
    assert [t.because for t in outcome.trace if t.rule == "torch-release"] == [
        "torch 2.4: causal-conv1d needs Python >= 3.9", "torch 2.3: causal-conv1d needs Python >= 3.9"]


def test_a_rocm_arch_rejection_names_the_gpu_it_concerns():
    from resolver.plan.decide.context import Context
    from resolver.plan.decide.rocm import _search

    profile = amd_box(("AMD Instinct MI300X", "gfx942"), RX7800XT, rocm="6.1.3")
    ctx = Context(profile, Request(), K, V("3.11"))
    gpus = ctx.amd_gpus()
    found, rejected = _search(ctx, gpus, V("6.1"), allow_unconfirmed=False)
    assert found is None and rejected
    assert all(item.why.gpu == gpus[1] and item.why.concerns_architecture for item in rejected)


def test_a_plan_for_another_windows_machine_builds_no_kernels_and_quotes_the_windows_driver_floor():
    outcome = decide(cpu_box(platform="win-64", glibc=None), Request(target=Target.parse("cuda12.6")), K)
    plan = outcome.plan
    assert (str(plan.torch.version), plan.torch.variant, plan.runnable_here, plan.glibc) == ("2.14.1", "cu126", False, None)
    assert (plan.kernels.strategy, plan.kernels.arch_list, plan.kernels.packages, plan.kernels.toolkit,
            plan.kernels.toolkit_source) == ("none", (), (), None, None)
    windows_floor = driver_text(K.mvc_floor(12, "win"))
    assert windows_floor != driver_text(K.mvc_floor(12, "linux"))
    assert plan.warnings == (
        f"no NVIDIA GPU here: this plan is for another machine (CUDA 12.6 needs driver >= {windows_floor} there); "
        "mamba-ssm and causal-conv1d publish no builds for this platform and their build scripts target Linux: "
        "kernels 'none', the reference path runs (on the GPU through PyTorch)",)
    assert ("kernels", "none", "mamba-ssm and causal-conv1d build on Linux only, not on win-64: the reference path "
                               "runs") in [(t.rule, t.result, t.because) for t in plan.trace]
    assert dict(plan.conda_packages) == {"python": "3.11.*", "pip": "*"}  # no CUDA compiler packages
    assert plan.summary.endswith("No Mamba kernels: the reference path runs.")


# ----------------------------------------------------------------------- a wheel's architectures, one GPU
def test_a_gpu_past_the_wheels_newest_cubin_without_ptx_is_told_where_the_wheel_stops():
    from resolver.core.versions import ComputeCapability
    from resolver.plan.decide.context import Context, Gpu
    from resolver.plan.decide.rejection import Stage
    from resolver.plan.decide.rules import coverage
    from resolver.plan.knowledge import TorchVariant

    ctx = Context(cpu_box(), Request(), K, V("3.11"))
    wheel = TorchVariant("cu126", ("linux-64",), ("7.5", "8.0"), (), True, "test")
    h100, t4, v100 = (Gpu("NVIDIA H100", cc=ComputeCapability(9, 0)), Gpu("Tesla T4", cc=ComputeCapability(7, 5)),
                      Gpu("Tesla V100", cc=ComputeCapability(7, 0)))
    rejection, how = coverage(ctx, wheel, [t4, h100])
    assert how == () and rejection.stage == Stage.WHEEL_ARCH and rejection.gpu == h100 and rejection.fix == ""
    assert rejection.message == "cu126 wheels have no kernels for compute capability 9.0 (H100): they stop at sm_80"
    rejection, _ = coverage(ctx, wheel, [v100])
    assert rejection.message == ("cu126 wheels have no kernels for compute capability 7.0 (Tesla V100): they start "
                                 "at sm_75")
    assert coverage(ctx, wheel, [t4]) == (None, ("Tesla T4: sm_75 cubin",))


# ------------------------------------------------------------------- rules a CPU plan or a far plan applies
def test_a_requested_release_refused_for_its_python_gets_the_python_advice():
    """torch 2.14 does not serve Python 3.9: another Python is the way out, though torch 2.8 would serve 3.9."""
    outcome = decide(cpu_box(), Request(torch=V("2.14"), python=V("3.9")), K)
    assert outcome.plan is None and outcome.refusal.fix == "use --python 3.11 (or another Python torch supports)"


def test_a_cpu_plan_judges_releases_without_the_kernels_python_floor():
    """No kernels on the CPU path: torch 2.4 and 2.3 serve Python 3.8 though mamba-ssm needs 3.9."""
    unconfirmed_cpu = with_variant(K, "2.4", "cpu", confirmed=False)
    plan = decide(cpu_box(), Request(torch=V("2.4"), python=V("3.8")), unconfirmed_cpu).plan
    assert (str(plan.torch.version), plan.torch.variant, str(plan.python)) == ("2.4.1", "cu121", "3.8")
    outcome = decide(cpu_box(platform="osx-arm64", glibc=None), Request(torch=V("2.4"), python=V("3.8")),
                     unconfirmed_cpu)
    assert outcome.plan is None and outcome.refusal.fix == (
        "ask for a release with confirmed CPU wheels here, e.g. --torch 2.3")


def test_a_cpu_plan_keeps_the_requested_target():
    plan = decide(cpu_box(), Request(torch=V("2.14"), target=Target.parse("cpu")), K).plan
    assert (plan.target, plan.torch.variant) == ("cpu", "cu130")


def test_a_plan_for_another_machine_needs_a_kernel_release_for_its_python():
    """cu118 wheels of torch 2.0 to 2.4 serve Python 3.8; mamba-ssm and causal-conv1d need 3.9."""
    outcome = decide(cpu_box(), Request(target=Target.parse("cuda11.8"), python=V("3.8")), K)
    assert outcome.plan is None and outcome.refusal.fix == "use --target cpu, or another --python"
    eliminated = [(t.result, t.because) for t in outcome.trace if t.rule == "torch-release"]
    assert eliminated[2:4] == [("2.5 eliminated", "torch 2.5 needs Python >= 3.9 (it dropped 3.8)"),
                               ("2.4 eliminated", "causal-conv1d needs Python >= 3.9")]


def test_a_plan_for_another_machine_applies_the_per_arch_build_fix():
    """Were sm_103 in the cu130 wheels, nvcc 13 would build sm_100 for it (the GPU plans' fix), not sm_103."""
    with_sm103 = with_variant(K, "2.14", "cu130", archs=("7.5", "8.0", "8.6", "9.0", "10.0", "10.3", "12.0"))
    plan = decide(cpu_box(), Request(target=Target.parse("cuda13.0")), with_sm103).plan
    assert plan.kernels.arch_list == ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0")


def test_a_plan_for_another_machine_takes_conda_forges_newest_build_of_the_cuda_major():
    """conda-forge builds pytorch 2.13.0 with CUDA 12.9 and 13.0: no GPU here to rule one out."""
    assert [str(b) for b in K.conda_forge.cuda_builds("2.13.0", "linux-64")] == ["12.9", "13.0"]
    plan = decide(cpu_box(), Request(target=Target.parse("cuda12.6"), torch=V("2.13")), K).plan
    assert (str(plan.torch.version), plan.torch.variant, plan.torch.conda.spec) == ("2.13.0", "cu126", "pytorch 2.13.0 cuda129*")


def test_the_per_arch_build_fix_replaces_only_the_arch_it_names():
    """B300 (sm_103) beside an H100 on nvcc 13: sm_100 for the B300, sm_90 for the H100 stays."""
    profile = HardwareProfile.from_json({
        "platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "amd": None, "cuda_toolkit": None,
        "nvidia": {"driver_version": "580.82.07", "cuda_driver_version": None,
                   "gpus": [{"name": "NVIDIA B300", "compute_capability": "10.3"},
                            {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]}})
    plan = decide(profile, Request(), K).plan
    assert plan.torch.variant == "cu132" and plan.kernels.arch_list == ("9.0", "10.0")
    assert ("nvcc-arch", "10.0 instead of 10.3") in [(t.rule, t.result) for t in plan.trace]


def nvidia_box(*gpus: tuple[str, str], driver: str = "580.82.07", wsl: bool = False) -> HardwareProfile:
    return HardwareProfile.from_json({
        "platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "amd": None, "cuda_toolkit": None, "wsl": wsl,
        "nvidia": {"driver_version": driver, "cuda_driver_version": None,
                   "gpus": [{"name": n, "compute_capability": c} for n, c in gpus]}})


GTX1080TI = ("NVIDIA GeForce GTX 1080 Ti", "6.1")


def with_variants(k: Knowledge, release: str, variants) -> Knowledge:
    return replace(k, releases=tuple(r._replace(variants=tuple(variants)) if r.name == release else r
                                     for r in k.releases))


def test_a_release_passed_over_shows_its_first_three_reasons_then_an_ellipsis():
    """Were torch 2.14 published as cu128, cu129, cu130 and cu132 (none for sm_61), its trace line keeps three."""
    cu130 = next(v for v in K.release("2.14").variants if v.tag == "cu130")
    four = [v for v in K.release("2.14").variants if v.tag != "cu126"] + \
        [cu130._replace(tag="cu128"), cu130._replace(tag="cu129")]
    plan = decide(nvidia_box(GTX1080TI), Request(), with_variants(K, "2.14", four)).plan
    assert (str(plan.torch.version), plan.torch.variant) == ("2.13.0", "cu126")
    (line,) = [t.because for t in plan.trace if t.rule == "torch-release" and t.result == "2.14 eliminated"]
    dropped = "CUDA 13 dropped sm_61"
    assert line == (f"cu132: CUDA 13.2 cannot target compute capability 6.1 (GeForce GTX 1080 Ti): {dropped}; "
                    f"cu130: CUDA 13.0 cannot target compute capability 6.1 (GeForce GTX 1080 Ti): {dropped}; "
                    "cu129: cu129 wheels have no kernels for compute capability 6.1 (GeForce GTX 1080 Ti): they start "
                    "at sm_75 …")
    three = decide(nvidia_box(GTX1080TI), Request(), with_variants(K, "2.14", four[:-1])).plan
    (line,) = [t.because for t in three.trace if t.rule == "torch-release" and t.result == "2.14 eliminated"]
    assert line.endswith("they start at sm_75") and line.count("; ") == 2


def test_the_drivers_cuda_on_wsl_follows_the_windows_driver_table():
    """Driver 560.35.03 runs CUDA 12.6 on Linux, but 12.6 needs 560.76 on Windows: WSL's driver is Windows'."""
    rtx4090 = ("NVIDIA GeForce RTX 4090", "8.9")
    assert decide(nvidia_box(rtx4090, driver="560.35.03"), Request(), K).plan.cuda_driver == "12.6"
    assert decide(nvidia_box(rtx4090, driver="560.35.03", wsl=True), Request(), K).plan.cuda_driver == "12.5"


def test_a_newer_variants_ptx_above_the_gpu_still_leaves_it_without_code():
    """cu130 with compute_120 PTX: PTX runs forward only, so sm_61 still has nothing in it."""
    with_ptx = with_variants(K, "2.14", [v._replace(ptx=("12.0",)) if v.tag == "cu130" else v
                                         for v in K.release("2.14").variants])
    plan = decide(nvidia_box(GTX1080TI), Request(), with_ptx).plan
    assert ("cu126, not cu130", "GeForce GTX 1080 Ti is sm_61 and cu130 wheels start at sm_75") in \
        [(t.result, t.because) for t in plan.trace if t.rule == "variant"]


def test_gpus_below_upstreams_architectures_are_named_together():
    plan = decide(nvidia_box(GTX1080TI, ("Tesla V100-PCIE-16GB", "7.0"), ("NVIDIA A100-SXM4-80GB", "8.0")),
                  Request(), K).plan
    assert plan.warnings == ("GeForce GTX 1080 Ti, Tesla V100-PCIE-16GB: sm_61 is below the architectures upstream "
                             "builds and tests (>= sm_75); the kernels are built for it, but upstream does not test it",)


def test_a_build_fix_is_cited_by_its_first_source():
    fix = next(f for f in K.build_fixes if f.avoid_arch)
    two_sources = replace(K, build_fixes=tuple(f._replace(source=f"{f.source}; a second source") if f == fix else f
                                               for f in K.build_fixes))
    plan = decide(nvidia_box(("NVIDIA B300", "10.3")), Request(), two_sources).plan
    (step,) = [t for t in plan.trace if t.rule == "nvcc-arch" and "instead of" in t.result]
    assert step.because == f"{fix.what} ({fix.source})"


def test_each_kernel_package_gets_its_own_prebuilt_verdict():
    """No causal-conv1d wheel at all does not hide why mamba-ssm's wheel cannot serve a V100."""
    from resolver.core.model import Target

    no_conv_wheels = replace(K, wheels=tuple(w for w in K.wheels if w.package != "causal-conv1d"))
    plan = decide(nvidia_box(("Tesla V100-PCIE-16GB", "7.0")), Request(target=Target.parse("cuda12.8")),
                  no_conv_wheels).plan
    assert plan.kernels.strategy == "build" and [p for p, _ in plan.kernels.packages] == ["causal-conv1d", "mamba-ssm"]
    assert [t.because for t in plan.trace if t.rule == "prebuilt"] == [
        "mamba_ssm-2.3.2.post1+cu12torch2.10cxx11abiTRUE-cp311-cp311-linux_x86_64.whl has no kernels for sm_70 "
        "(Tesla V100-PCIE-16GB): it carries sm_75, sm_80, sm_87, sm_90, sm_100, sm_120"]


# ----------------------------------------------- the per-variant rules as values (stage, fact, fix, GPU)
def _rule_context(driver: str | None, *, wsl: bool = False, cuda: str | None = None):
    from resolver.plan.decide.context import Context

    profile = HardwareProfile.from_json({
        "platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "amd": None, "cuda_toolkit": None, "wsl": wsl,
        "nvidia": {"driver_version": driver, "cuda_driver_version": cuda,
                   "gpus": [{"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]}})
    return Context(profile, Request(), K, V("3.11"))


def test_ptx_runs_a_gpu_only_on_a_driver_at_the_toolkits_full_floor():
    """A cu126 wheel with sm_80 cubins and compute_90 PTX: an H100 runs it through the driver's JIT, which needs
    the driver of CUDA 12.6's first release (Linux and Windows/WSL floors differ)."""
    from support.boundaries import above, below

    from resolver.core.versions import ComputeCapability
    from resolver.plan.decide.context import Gpu
    from resolver.plan.decide.rejection import Rejection, Stage
    from resolver.plan.decide.rules import coverage
    from resolver.plan.knowledge import TorchVariant

    wheel = TorchVariant("cu126", ("linux-64",), ("8.0",), ("9.0",), True, "test")
    h100 = Gpu("NVIDIA H100 80GB HBM3", cc=ComputeCapability(9, 0))
    linux, windows = K.toolkit_floor(V("12.6"), "linux"), K.toolkit_floor(V("12.6"), "win")
    assert linux < windows
    jit = (None, ("H100 80GB HBM3: compute_90 PTX, JIT-compiled by the driver",))
    for driver in (linux, above(linux)):
        assert coverage(_rule_context(str(driver)), wheel, [h100]) == jit
    assert coverage(_rule_context(None, cuda="12.6"), wheel, [h100]) == jit  # driver unknown: assumed to JIT
    assert coverage(_rule_context(str(below(linux))), wheel, [h100]) == (Rejection(
        Stage.WHEEL_ARCH, f"torch cu126 wheels reach compute capability 9.0 (H100 80GB HBM3) only through PTX, which "
                          f"needs driver >= {driver_text(linux)}",
        f"upgrade the NVIDIA driver to {driver_text(linux)} or newer", h100), ())
    wsl = coverage(_rule_context(str(linux), wsl=True), wheel, [h100])[0]
    assert wsl.fix == f"upgrade the NVIDIA driver to {driver_text(windows)} or newer"
    assert coverage(_rule_context(str(windows), wsl=True), wheel, [h100]) == jit
    # every GPU is checked: a V100 after the H100 finds neither an sm_7x cubin nor PTX at or below 7.0
    v100 = Gpu("Tesla V100-PCIE-16GB", cc=ComputeCapability(7, 0))
    rejection, how = coverage(_rule_context(str(linux)), wheel, [h100, v100])
    assert how == () and rejection.gpu == v100 and "they start at sm_80" in rejection.message


def test_the_nvcc_rule_names_the_fact_and_the_gpu_and_leaves_the_fix_to_the_refusal():
    from resolver.core.versions import ComputeCapability
    from resolver.plan.decide.context import Gpu
    from resolver.plan.decide.rejection import Rejection, Stage
    from resolver.plan.decide.rules import nvcc_rejection

    ctx = _rule_context("580.82.07")
    p100 = Gpu("Tesla P100-PCIE-16GB", cc=ComputeCapability(6, 0))
    assert nvcc_rejection(ctx, V("13.0"), [p100]) == Rejection(
        Stage.NVCC_ARCH, "CUDA 13.0 cannot target compute capability 6.0 (Tesla P100-PCIE-16GB): CUDA 13 dropped sm_60",
        "", p100)
    future = Gpu("NVIDIA Future", cc=ComputeCapability(15, 0))
    assert K.arch_support(future.cc) is None
    assert nvcc_rejection(ctx, V("13.2"), [future]) == Rejection(
        Stage.NVCC_ARCH, "CUDA 13.2 cannot target compute capability 15.0 (Future): no CUDA toolkit in the tables "
                         "builds sm_150", "", future)


def test_the_release_rules_name_the_fact_and_a_fix():
    from resolver.plan.decide.context import Context
    from resolver.plan.decide.rejection import Rejection, Stage
    from resolver.plan.decide.rules import release_rejection

    def ctx(python: str, glibc: str = "2.35"):
        return Context(cpu_box(glibc=glibc), Request(), K, V(python))

    # a Python no release supports: the newest for a Python past them all, 3.11 for one before them all
    assert release_rejection(ctx("3.15"), K.release("2.14"), False) == Rejection(
        Stage.PYTHON, "torch 2.14 has no wheels for Python 3.15 (newest: 3.14)", "use --python 3.14")
    assert release_rejection(ctx("3.7"), K.release("2.14"), False) == Rejection(
        Stage.PYTHON, "torch 2.14 needs Python >= 3.10 (it dropped 3.7)", "use --python 3.11")
    # a Python other releases support
    assert release_rejection(ctx("3.14"), K.release("2.8"), False) == Rejection(
        Stage.PYTHON, "torch 2.8 has no wheels for Python 3.14 (newest: 3.13)",
        "pick a Python that torch supports with --python, e.g. --python 3.11")
    assert release_rejection(ctx("3.11", glibc="2.17"), K.release("2.14"), False) == Rejection(
        Stage.GLIBC, "torch 2.14 wheels need glibc >= 2.28 (manylinux_2_28), this system has 2.17",
        "use a newer Linux (glibc >= 2.28: RHEL/Rocky 8, Ubuntu 18.10+) or run in a container")


def test_a_driver_known_only_by_its_cuda_version_is_told_the_floor_to_reach():
    from resolver.plan.decide.rejection import Rejection, Stage
    from resolver.plan.decide.rules import driver_rejection

    ctx = _rule_context(None, cuda="12.4")
    floor = driver_text(K.mvc_floor(13))
    assert driver_rejection(ctx, V("13.0")) == Rejection(
        Stage.DRIVER, "CUDA 13.0 needs a driver for CUDA 13.x, this driver supports CUDA 12.4",
        f"upgrade the NVIDIA driver (>= {floor})")
    assert K.mvc_floor(14) is None
    assert driver_rejection(ctx, V("14.0")).fix == "upgrade the NVIDIA driver (>= a newer one)"


def test_the_kernels_rule_tells_a_torch_no_kernel_release_supports_from_a_python_too_old_for_them():
    from resolver.plan.decide.context import Context
    from resolver.plan.decide.rejection import Rejection, Stage
    from resolver.plan.decide.rules import release_rejection

    def ctx(python: str):
        return Context(cpu_box(), Request(), K, V(python))

    no_torch = Rejection(Stage.KERNELS, "no mamba-ssm release supports torch 2.8",
                         "use a newer torch (drop --python) or --target cpu")
    newer_mamba_only = replace(K, kernel_releases=tuple(
        r for r in K.kernel_releases if r.package != "mamba-ssm" or r.torch_min >= V("2.9")))
    assert release_rejection(ctx("3.9"), K.release("2.8"), True) is None
    assert release_rejection(ctx("3.9"), K.release("2.8"), False) is None
    assert release_rejection(Context(cpu_box(), Request(), newer_mamba_only, V("3.9")), K.release("2.8"), True) == \
        no_torch
    assert release_rejection(Context(cpu_box(), Request(), newer_mamba_only, V("3.9")), K.release("2.8"), False) \
        is None  # a plan without kernels does not ask
    no_mamba = replace(K, kernel_releases=tuple(r for r in K.kernel_releases if r.package != "mamba-ssm"))
    assert release_rejection(Context(cpu_box(), Request(), no_mamba, V("3.11")), K.release("2.8"), True) == no_torch
    # a Python below the floor of that package's own releases (not another package's)
    conv_needs_310 = replace(K, kernel_releases=tuple(
        r._replace(python_min=V("3.10")) if r.package == "causal-conv1d" else r for r in K.kernel_releases))
    assert release_rejection(Context(cpu_box(), Request(), conv_needs_310, V("3.9")), K.release("2.8"), True) == \
        Rejection(Stage.KERNELS, "causal-conv1d needs Python >= 3.10", "use --python 3.10 or newer")


def test_a_requested_torch_release_may_name_its_patch_release():
    plan = decide(cpu_box(), Request(torch=V("2.14.1")), K).plan
    assert (str(plan.torch.version), plan.torch.variant) == ("2.14.1", "cu130")


def test_a_cuda_target_at_the_kernels_floor_is_offered():
    at_the_floor = replace(K, kernel_packages=tuple(p._replace(min_cuda=V("11.8")) for p in K.kernel_packages))
    outcome = decide(cpu_box(), Request(target=Target.parse("cuda12.5")), at_the_floor)
    assert outcome.refusal.fix == ("use --target cuda12.4 or cuda12.6 (the nearest; all that plan: cuda11.8, cuda12.1, "
                                   "cuda12.4, cuda12.6, cuda12.8, cuda12.9, cuda13.0, cuda13.2)")


def test_an_unconfirmed_cuda_row_chosen_by_target_cites_its_first_source():
    """GB200 on linux-aarch64 with --target cuda12.9: only torch 2.8's unconfirmed cu129 row serves it."""
    row = next(v for v in K.release("2.8").variants if v.tag == "cu129" and not v.confirmed)
    first = row.source.split(" (")[0].split(";")[0]
    two = with_variants(K, "2.8", [v._replace(source=f"{first}; a second note") if v == row else v
                                   for v in K.release("2.8").variants])
    profile = HardwareProfile.from_json({
        "platform": "linux-aarch64", "glibc": "2.35", "python": "3.11.7", "amd": None, "cuda_toolkit": None,
        "nvidia": {"driver_version": "570.124.06", "cuda_driver_version": None,
                   "gpus": [{"name": "NVIDIA GB200", "compute_capability": "10.0"}]}})
    plan = decide(profile, Request(target=Target.parse("cuda12.9")), two).plan
    assert f"torch 2.8 cu129 rests on one unconfirmed source ({first}); chosen because --target asked for it" in \
        plan.warnings
