"""What a refused plan says, word for word, on the paths the machines of tests/unit/plan/test_decide.py do not take:
GPUs nothing could identify, a target no build exists for, a target for another operating system, a
torch release the tables do not know, a driver too old on Windows' floors, a mixed node, and the
Pythons tried when the machine's own cannot run a plan. A refusal is one sentence with its fix: the
user acts on the fix, so each is checked whole."""

from __future__ import annotations

import dataclasses

import pytest
from support.decisions import K, outcome, refusal
from support.profiles import GTX1080TI, H100, MI250X, MI300X, RTX5090, T4, V100, amd, cpu, nvidia

GB200 = ("NVIDIA GB200", "10.0")
GH200 = ("NVIDIA GH200 480GB", "9.0")
GTX680 = ("NVIDIA GeForce GTX 680", "3.0")  # Kepler sm_30: no torch wheel of the tables carries it


# ------------------------------------------------------------------------------------ unidentified GPUs

def unidentified_nvidia(*names: str, gpus: tuple[tuple[str, str], ...] = ()) -> dict:
    machine = nvidia(*gpus)
    machine["nvidia"]["unidentified_gpus"] = list(names)
    return machine


def unidentified_amd(*names: str, gpus: tuple[tuple[str, str], ...] = (), rocm: str = "6.2.0") -> dict:
    machine = amd(*gpus, rocm=rocm)
    machine["amd"]["unidentified_gpus"] = list(names)
    return machine


NVIDIA_UNKNOWN = ("the compute capability of NVIDIA GPU 'Mystery A' is unknown (no tool printed it and neither its "
                  "name nor its PCI id is in the GPU tables), so no kernels can be chosen for it")
NVIDIA_FIX = ("run `nvidia-smi --query-gpu=name,compute_cap --format=csv` and pass what it prints: "
              "--compute-capability X.Y (probe, plan and lock take it)")
AMD_UNKNOWN = ("the gfx target of AMD GPU 'AMD GPU 1002:13e9' is unknown (no tool printed it and neither its name "
               "nor its PCI id is in the GPU tables), so no kernels can be chosen for it")
AMD_FIX = "run `rocminfo | grep gfx` and pass what it prints: --gfx gfxNNN (probe, plan and lock take it)"


@pytest.mark.parametrize("target", ["auto", "cuda12.6"])
def test_an_nvidia_gpu_nothing_identified_is_refused_with_the_command_that_tells_its_capability(target):
    assert refusal(unidentified_nvidia("Mystery A", "Mystery B"), target) == (NVIDIA_UNKNOWN, NVIDIA_FIX,
                                                                               NVIDIA_UNKNOWN)


@pytest.mark.parametrize("target", ["auto", "rocm6.2"])
def test_an_amd_gpu_nothing_identified_is_refused_with_the_command_that_tells_its_gfx_target(target):
    assert refusal(unidentified_amd("AMD GPU 1002:13e9", "AMD GPU 1002:aaaa"), target) == (AMD_UNKNOWN, AMD_FIX,
                                                                                            AMD_UNKNOWN)


def test_an_unidentified_gpu_of_the_other_vendor_does_not_block_a_plan_for_the_known_ones():
    """auto plans for the vendor whose GPUs are known; a target of one vendor ignores the other's unknowns."""
    known_nvidia = unidentified_amd("AMD GPU 1002:13e9")
    known_nvidia["nvidia"] = nvidia(H100)["nvidia"]
    plan = outcome(known_nvidia).plan
    assert plan.backend == "cuda" and plan.kernels.arch_list == ("9.0",)
    assert outcome(unidentified_amd("AMD GPU 1002:13e9"), "cuda12.6").plan.runnable_here is False
    assert outcome(unidentified_amd("AMD GPU 1002:13e9"), "cpu").plan.backend == "cpu"
    known_amd = unidentified_nvidia("Mystery A")
    known_amd["nvidia"]["gpus"] = []
    known_amd["amd"] = amd(MI250X, rocm="6.2.0")["amd"]
    assert outcome(known_amd).plan.backend == "rocm"
    assert outcome(unidentified_nvidia("Mystery A"), "rocm6.2").plan.runnable_here is False


def test_a_rocm_target_with_an_unidentified_amd_gpu_is_refused_even_beside_a_known_nvidia_gpu():
    machine = unidentified_amd("AMD GPU 1002:13e9")
    machine["nvidia"] = nvidia(H100)["nvidia"]
    assert refusal(machine, "rocm6.2") == (AMD_UNKNOWN, AMD_FIX, AMD_UNKNOWN)


# ------------------------------------------------------------------------------------ targets

@pytest.mark.parametrize("platform", ["osx-arm64", "win-64"])
def test_a_rocm_target_off_linux_is_refused_with_the_way_out(platform):
    message = "--target rocm6.2 needs Linux: PyTorch publishes ROCm builds for Linux only"
    assert refusal(cpu(platform=platform, glibc=None), "rocm6.2") == (
        message, "use --target cpu here, or plan for a Linux machine with --profile FILE", message)


def test_a_cuda_target_no_build_exists_for_names_the_target_that_plans_here():
    message = "--target cuda12.5: PyTorch publishes no CUDA 12.5 wheels for linux-64"
    assert refusal(nvidia(H100), "cuda12.5") == (message, "Use --target cuda13.2", message)
    assert refusal(nvidia(V100), "cuda12.5") == (message, "Use --target cuda12.6", message)


def test_a_cuda_target_no_build_exists_for_lists_the_known_targets_when_nothing_plans_here():
    """A GPU no wheel carries: the fix lists the newest CUDA targets the tables know for this Python."""
    message = "--target cuda12.5: PyTorch publishes no CUDA 12.5 wheels for linux-64"
    assert refusal(nvidia(GTX680), "cuda12.5") == (
        message, "Use one of --target cuda12.8, cuda12.9, cuda13.0, cuda13.2", message)
    assert refusal(nvidia(GTX680, python="3.9.1"), "cuda12.5", python="3.9")[1] == \
        "Use one of --target cuda12.4, cuda12.6, cuda12.8, cuda12.9"


def test_a_refused_cuda_target_offers_an_unconfirmed_build_and_the_driver_upgrade():
    """GB200 on driver 570 asking for CUDA 13: the only build its driver runs rests on one unconfirmed
    source; both ways out are named."""
    gb200 = nvidia(GB200, driver="570.124.06", platform="linux-aarch64")
    message = ("CUDA 13.0 needs NVIDIA driver >= 580.65.06 (CUDA 13.x minor-version compatibility), this machine "
               "has 570.124.06")
    assert refusal(gb200, "cuda13.0") == (
        message, "Use --target cuda12.9 (torch 2.8.0; its cu129 arch list rests on one unconfirmed source) or upgrade "
                 "the NVIDIA driver to >= 580.65.06 for CUDA 13 builds", f"cuda13.0: {message}")


# ------------------------------------------------------------------------------------ mixed nodes

MIXED = ("no single PyTorch CUDA build has kernels for every GPU in this node: GeForce GTX 1080 Ti (sm_61) needs "
         "cu126 or a build like it; GeForce RTX 5090 (sm_120) needs cu132 or a build like it")
MIXED_FIX = ("plan for one kind of GPU at a time (CUDA_VISIBLE_DEVICES, and a --profile listing only those GPUs), "
             "or use --target cpu")


@pytest.mark.parametrize("target", ["auto", "cuda12.8"])
def test_a_mixed_node_names_the_build_each_kind_of_gpu_needs_and_keeps_its_own_fix(target):
    assert refusal(nvidia(GTX1080TI, RTX5090), target) == (MIXED, MIXED_FIX, f"{target}: {MIXED}")


def test_a_node_is_not_called_mixed_when_one_kind_of_gpu_has_no_confirmed_build_alone():
    """GB200 + GH200 on driver 570: the GB200 alone has only an unconfirmed build, so the refusal names
    the GB200's own blocking fact, not a mixed node."""
    message = "CUDA 12.6 cannot target compute capability 10.0 (GB200): sm_100 needs CUDA 12.8 or newer"
    assert refusal(nvidia(GB200, GH200, driver="570.124.06", platform="linux-aarch64")) == (
        message, "Use --target cuda12.9 (torch 2.8.0; its cu129 arch list rests on one unconfirmed source) or upgrade "
                 "the NVIDIA driver to >= 580.65.06 for CUDA 13 builds", f"auto: {message}")


# ------------------------------------------------------------------------------------ drivers

def test_a_driver_too_old_under_wsl_is_measured_against_the_windows_floors():
    """451.00 is above Linux's CUDA 11 floor (450.80.02), below Windows' (452.39): under WSL it runs nothing."""
    assert outcome(nvidia(T4, driver="451.00")).plan.torch.variant == "cu118"
    assert refusal(nvidia(T4, driver="451.00", wsl=True)) == (
        "NVIDIA driver 451.00 is older than 452.39, the oldest driver that runs a PyTorch CUDA build these GPUs can use",
        "upgrade the NVIDIA driver (>= 528.33 for CUDA 12 or >= 580 for CUDA 13), or use --target cpu",
        "auto: NVIDIA driver 451.00 is older than 452.39, the oldest driver that runs a PyTorch CUDA build these GPUs "
        "can use")


def test_a_driver_known_only_by_its_cuda_version_is_named_by_it():
    message, fix, _ = refusal(nvidia(T4, driver=None, cuda="10.2"))
    assert message == ("NVIDIA driver a CUDA 10.2 driver is older than 450.80.02, the oldest driver that runs a "
                       "PyTorch CUDA build these GPUs can use")
    assert fix == "upgrade the NVIDIA driver (>= 525.60.13 for CUDA 12 or >= 580.65.06 for CUDA 13), or use --target cpu"


def test_the_driver_fix_names_only_cuda_majors_whose_confirmed_builds_failed_on_the_driver():
    """A CUDA 13 row that rests on one unconfirmed source is no reason to name CUDA 13's driver floor."""
    release = K.release("2.14")
    variants = tuple(v._replace(confirmed=False) if v.version is not None and v.version.major == 13 else v
                     for v in release.variants)
    knowledge = dataclasses.replace(K, releases=(release._replace(variants=variants),))
    message, fix, _ = refusal(nvidia(T4, driver="440.33"), knowledge=knowledge)
    assert message == ("NVIDIA driver 440.33 is older than 525.60.13, the oldest driver that runs a PyTorch CUDA "
                       "build these GPUs can use")
    assert fix == "upgrade the NVIDIA driver (>= 525.60.13 for CUDA 12), or use --target cpu"


# ------------------------------------------------------------------------------------ torch releases and Pythons

def test_a_torch_release_the_tables_do_not_know_is_refused_naming_the_ones_they_do():
    result = outcome(nvidia(H100), torch="1.0")
    names = [r.name for r in K.releases]
    oldest, newest = names[0], names[-1]
    assert (oldest, newest) == (min(K.releases, key=lambda r: r.version).name,
                                max(K.releases, key=lambda r: r.version).name)
    message = f"torch 1.0 is not in the knowledge base (it knows torch {oldest} to {newest})"
    assert (result.refusal.message, result.refusal.fix, result.trace) == (
        message, f"ask for one it knows, e.g. --torch {newest}, or add the release to "
                 "resolver/plan/knowledge/data/torch.toml with its sources", ())


def test_a_requested_torch_release_is_the_only_candidate_and_the_trace_says_so():
    plan = outcome(nvidia(H100), torch="2.8").plan
    assert str(plan.torch.version) == "2.8.0"
    assert [(t.rule, t.result, t.because) for t in plan.trace if t.rule == "torch-request"] == [
        ("torch-request", "torch 2.8", "requested: only this release's builds are candidates")]


def test_a_requested_release_that_lacks_the_machines_python_names_its_own_pythons():
    """Python 3.13 here and torch 2.4 asked for: 2.4 stops at 3.12, so the environment gets 3.12."""
    plan = outcome(nvidia(H100, python="3.13.1"), torch="2.4").plan
    problem = "current torch (2.4) supports Python 3.8, 3.9, 3.10, 3.11, 3.12 only"
    assert (str(plan.python), str(plan.torch.version)) == ("3.12", "2.4.1")
    assert plan.warnings[0] == (f"Python 3.13 here cannot run this plan ({problem}); the environment gets Python 3.12 "
                                "from conda-forge (pass --python X.Y to choose)")
    assert plan.trace[0].because == f"the Python here (3.13): {problem}; the environment gets its own Python 3.12"


def test_when_the_machines_python_rules_out_every_build_the_warning_says_why():
    plan = outcome(amd(MI250X, rocm="6.0.2", python="3.13.2")).plan
    assert (str(plan.python), plan.torch.variant) == ("3.12", "rocm6.0")
    assert plan.warnings[0] == (
        "Python 3.13 here cannot run this plan (it rules out every build: no PyTorch build for ROCm 6.0 fits this "
        "machine: torch 2.4: torch 2.4 has no wheels for Python 3.13 (newest: 3.12)); the environment gets Python "
        "3.12 from conda-forge (pass --python X.Y to choose)")


def test_the_machines_own_python_is_skipped_among_the_fallbacks_not_the_end_of_them():
    """Python 3.12 here, the first fallback: when it rules out every build the next fallbacks are still tried."""
    knowledge = dataclasses.replace(K, releases=(K.release("2.0"), K.release("2.14")))
    plan = outcome(cpu(python="3.12.3", glibc="2.17"), knowledge=knowledge).plan
    assert (str(plan.python), str(plan.torch.version)) == ("3.11", K.release("2.0").latest)
    assert plan.warnings[0].startswith("Python 3.12 here cannot run this plan (it rules out every build: ")


def test_what_a_pasted_report_left_out_is_warned_and_says_why_the_python_is_the_machines():
    assumed = {"python": "the report did not say; assumed 3.11", "glibc": "glibc not in the report: assumed 2.35"}
    plan = outcome({**cpu(), "assumed": assumed}).plan
    assert plan.trace[0].because == assumed["python"]
    assert list(plan.warnings) == [assumed["python"], assumed["glibc"]]
    asked = outcome({**cpu(), "assumed": assumed}, python="3.12").plan
    assert asked.trace[0].because == "requested with --python" and list(asked.warnings) == [assumed["glibc"]]


def test_the_way_out_of_a_cuda_target_counts_only_builds_the_kernels_exist_for():
    """Python 3.8: torch 2.4 still has cu124 wheels for it, but no Mamba kernel release does, so no target is
    offered as working; the fix lists the targets the tables know, or asks for another Python."""
    message = "--target cuda12.5: PyTorch publishes no CUDA 12.5 wheels for linux-64"
    assert refusal(nvidia(H100), "cuda12.5", python="3.8") == (
        message, "Use one of --target cuda11.7, cuda11.8, cuda12.1, cuda12.4", message)
    message = "Python 3.8 is not supported: torch 2.6 and newer dropped Python 3.8"
    assert refusal(nvidia(H100), "cuda12.6", python="3.8") == (message, "Use --python 3.10 or newer",
                                                                f"cuda12.6: {message}")


# ------------------------------------------------------------------------------------ ROCm refusals

def test_a_gpu_no_rocm_build_carries_is_refused_naming_the_newest_builds_targets():
    message = ("no PyTorch build for ROCm 6.2 has kernels for these GPUs (no kernels for gfx1151 (GPU X); it has "
               "gfx900, gfx906, gfx908, gfx90a, gfx942, gfx1030, gfx1100, gfx1101, gfx1102, gfx1200, gfx1201)")
    assert refusal(amd(("AMD GPU X", "gfx1151"), rocm="6.2.0")) == (
        message, "use a newer ROCm that supports the GPU, or --target cpu", message)


def test_a_rocm_refusal_with_no_other_way_out_offers_the_cpu_alone():
    message = ("no PyTorch build for ROCm 7.14 fits this machine: torch 2.14: torch 2.14 wheels need glibc >= 2.28 "
               "(manylinux_2_28), this system has 2.17")
    assert refusal(amd(MI300X, rocm="7.14.0", glibc="2.17")) == (message, "use --target cpu", message)


def test_a_rocm_refusal_lists_every_way_out_in_one_sentence():
    """ROCm 7.14, Python 3.9: the newest build dropped 3.9, an older one (here made up) rests on one
    unconfirmed source: accept it, change Python, or take the CPU."""
    newest = K.release("2.14")
    rocm = next(v for v in newest.variants if v.tag == "rocm7.14")
    assert not rocm.confirmed
    knowledge = dataclasses.replace(K, releases=(K.release("2.4")._replace(variants=(rocm,)), newest))
    message = ("no PyTorch build for ROCm 7.14 fits this machine: torch 2.14: torch 2.14 needs Python >= 3.10 "
               "(it dropped 3.9)")
    assert refusal(amd(MI300X, rocm="7.14.0", python="3.9.1"), knowledge=knowledge) == (
        message, "pass --target rocm7.14 to accept an unconfirmed build, change --python, or use --target cpu", message)


def test_a_gpu_no_build_serves_is_sent_to_the_cpu():
    message = "CUDA 13.2 cannot target compute capability 3.0 (GeForce GTX 680): CUDA 13 dropped sm_30"
    assert refusal(nvidia(GTX680)) == (message, "Use --target cpu", f"auto: {message}")


def test_a_node_is_mixed_only_when_each_kind_of_gpu_has_a_build_its_kernels_compile_for():
    """A cu126 wheel that (here, made up) carries sm_35 still cannot serve a K40 alone: nvcc 12.6 no longer
    builds sm_35, so the K40 + RTX 5090 node is refused for the K40, not called mixed."""
    release = K.release("2.14")
    cu126 = next(v for v in release.variants if v.tag == "cu126")
    widened = release._replace(variants=tuple(v._replace(archs=("3.5", *v.archs)) if v is cu126 else v
                                              for v in release.variants))
    knowledge = dataclasses.replace(K, releases=tuple(widened if r is release else r for r in K.releases))
    message = "CUDA 13.2 cannot target compute capability 3.5 (Tesla K40m): CUDA 13 dropped sm_35"
    assert refusal(nvidia(("Tesla K40m", "3.5"), RTX5090), knowledge=knowledge) == (
        message, "Use --target cpu", f"auto: {message}")


def test_the_known_cuda_targets_listed_are_the_confirmed_ones_for_this_platform_and_python():
    """linux-aarch64: torch 2.8's cu129 rests on one unconfirmed source and is not listed; for Python 3.8 no
    aarch64 CUDA build exists at all, so only the CPU is left."""
    message = "--target cuda12.5: PyTorch publishes no CUDA 12.5 wheels for linux-aarch64"
    arm = nvidia(GTX680, platform="linux-aarch64")
    assert refusal(arm, "cuda12.5") == (message, "Use one of --target cuda12.6, cuda13.0", message)
    assert refusal(arm, "cuda12.5", python="3.8")[1] == \
        "Use --target cpu (no confirmed CUDA build of PyTorch serves linux-aarch64 with Python 3.8)"


def test_the_driver_upgrade_a_refused_target_names_is_wsls_windows_floor():
    """An RTX 5090 under WSL on driver 527.00 (below Windows' CUDA 12 floor, 528.33): no build runs, and the
    CUDA 13 floor named is Windows' (580), not Linux's (580.65.06)."""
    message = "CUDA 13.0 needs NVIDIA driver >= 580 (CUDA 13.x minor-version compatibility), this machine has 527.00"
    assert refusal(nvidia(RTX5090, driver="527.00", wsl=True), "cuda13.0") == (
        message, "Upgrade the NVIDIA driver to >= 580 for CUDA 13 builds", f"cuda13.0: {message}")
    assert refusal(nvidia(RTX5090, driver="527.00"), "cuda13.0")[1] == "Use --target cuda12.8"


def test_a_cuda_target_at_the_kernels_cuda_floor_is_listed():
    """The kernels build from CUDA 11.6 on: a (made-up) release whose only CUDA build is 11.6 is offered."""
    floor = K.min_cuda()
    release = K.release("2.0")
    cu117 = next(v for v in release.variants if v.tag == "cu117")
    at_floor = cu117._replace(tag=f"cu{floor.major}{floor.minor}")
    knowledge = dataclasses.replace(K, releases=(release._replace(variants=(at_floor,)),))
    assert refusal(nvidia(GTX680), "cuda12.5", knowledge=knowledge)[1] == f"Use --target cuda{floor}"
