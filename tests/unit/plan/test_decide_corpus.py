"""decide over the probe corpus: every captured machine in tests/data/machines/ (public bug reports,
replayed with ``probe --sysroot``) gets the plan or the one-sentence refusal its rules demand, never a
crash; every plan also meets what the tables demand of any plan (its architectures are the GPUs', its
CUDA runs on the driver)."""

from __future__ import annotations

import pytest
from support.corpus import MACHINES, NAMES

from resolver.core.model import Request
from resolver.core.versions import DottedVersion
from resolver.plan.decide import decide
from resolver.plan.knowledge import Knowledge

KNOWLEDGE = Knowledge.load()

# machine -> (torch variant or "refused", kernel arch list, patches): what the rules demand of each
# captured machine. A machine added to the corpus states its answer here too.
EXPECTED = {
    # no driver version (nvidia-smi -L only): no driver rule can apply, so the newest build
    "a100-4x-mig-nvidia-smi-L-only": ("cu132", ("8.0",), ()),
    # driver 575 runs CUDA 12.x (minor-version compatibility), not 13: the newest torch's CUDA 12 build
    "a100-gcp-ubuntu2404": ("cu126", ("8.0",), ()),
    # driver 470 runs CUDA 11.x only: the newest torch with a CUDA 11 build
    "a100-nvidia-smi-q-only": ("cu118", ("8.0",), ()),
    "b200-driver610-kmd-header": ("cu132", ("10.0",), ()),
    "container-rtx2080ti-no-smi": ("cu118", ("7.5",), ()),
    "cpu-only-ubuntu2410": ("cpu", (), ()),
    # driver 570 rules out CUDA 13; the only aarch64 CUDA 12.8+ build we know (2.8 cu129) is unconfirmed
    "gb200-4x-aarch64": ("refused", None, None),
    "gfx1100-rocm6.0.2-kfd": ("rocm6.0", ("gfx1100",), ("rocm6.0-bf16-inline",)),
    "gh200-aarch64-ubuntu2204": ("cu126", ("9.0",), ()),
    # Pascal (sm_61) and driver 460: CUDA 11
    "gtx1080ti-driver460-ubuntu2004": ("cu118", ("6.1",), ()),
    "h100-8x-ubuntu2204": ("cu126", ("9.0",), ()),
    # a Jetson: 35.3.1 is an L4T release, not a desktop driver, and there is no nvidia-smi: no GPU, CPU
    "jetson-orin-nx-l4t35": ("cpu", (), ()),
    "l4-plain-nvidia-smi-only": ("cu126", ("8.9",), ()),
    "macos-arm64-m2max": ("cpu", (), ()),
    "mi210-k8s-rocm6.2": ("rocm6.2.4", ("gfx90a",), ()),
    "mi250x-rocm6.2-kfd-only": ("rocm6.2.4", ("gfx90a",), ()),
    "mi300x-rocm6.3-amdsmi": ("rocm6.3", ("gfx942",), ()),
    "mi300xvf-8x-rocminfo-excerpt": ("rocm6.2.4", ("gfx942",), ()),
    "mi300xvf-rocm7.1.1-amdsmi-version": ("rocm7.1", ("gfx942",), ()),
    # sm_120 needs CUDA 12.8+, driver 595 runs 13.x: one build for both GPUs
    "rtx3090-rtx5070ti-mixed-cachyos": ("cu132", ("8.6", "12.0"), ()),
    # sm_120 needs CUDA 12.8+ and driver 570 runs 12.x only: the newest torch with a cu128 build
    "rtx5090d-ubuntu2410": ("cu128", ("12.0",), ()),
    "rx6750xt-rocm5.7-ubuntu2004": ("refused", None, None),
    "rx7900xtx-rocm6.1": ("rocm6.1", ("gfx1100",), ()),
    "rx9070xt-2x-rocm7.1.1-amdsmi-table": ("rocm7.1", ("gfx1201",), ()),
    # Volta (sm_70) beside Ada: CUDA 12 still builds sm_70, CUDA 13 does not
    "titanv-rtx5880ada-mixed": ("cu126", ("7.0", "8.9"), ()),
    # glibc 2.17 (CentOS 7): the last torch with manylinux2014 wheels
    "v100-4x-centos7-glibc217": ("cu124", ("7.0",), ()),
    "v100-8x-aws-ubuntu1804": ("cu118", ("7.0",), ()),
    "wsl2-rtx4070-laptop": ("cu126", ("8.9",), ()),
}


@pytest.mark.skipif(not NAMES, reason="no probe corpus in tests/data/machines")
def test_every_corpus_machine_states_its_answer() -> None:
    assert sorted(EXPECTED) == NAMES


@pytest.mark.skipif(not NAMES, reason="no probe corpus in tests/data/machines")
@pytest.mark.parametrize("name", NAMES)
def test_every_corpus_machine_gets_the_answer_its_rules_demand(name: str) -> None:
    from resolver.plan.probe import probe_machine

    profile = probe_machine(MACHINES / name)
    outcome = decide(profile, Request(), KNOWLEDGE)
    assert outcome.trace
    variant, archs, patches = EXPECTED[name]
    if outcome.plan is None:
        assert outcome.refusal.message and "\n" not in str(outcome.refusal)
        assert variant == "refused", f"{name} refused: {outcome.refusal}"
        return
    plan = outcome.plan
    assert variant != "refused", f"{name} should be refused, got {plan.summary}"
    assert (plan.torch.variant, plan.kernels.arch_list, tuple(p.id for p in plan.patches)) == (variant, archs, patches)
    # what the tables demand of any plan, checked apart from the rules that made it
    if profile.nvidia and profile.nvidia.gpus and plan.backend == "cuda":
        assert archs == tuple(sorted({str(g.compute_capability) for g in profile.nvidia.gpus},
                                     key=lambda cc: tuple(map(int, cc.split(".")))))
        driver = profile.nvidia.driver_version
        floor = KNOWLEDGE.mvc_floor(int(str(plan.backend_version).split(".")[0]))
        if driver is not None and floor is not None:
            assert DottedVersion.parse(str(driver)) >= floor, f"{name}: driver {driver} is below the floor {floor}"
    if profile.amd and profile.amd.gpus and plan.backend == "rocm":
        assert archs == tuple(sorted({str(g.gfx_arch) for g in profile.amd.gpus}))


@pytest.mark.skipif(not NAMES, reason="no probe corpus in tests/data/machines")
def test_gpu_table_agrees_with_the_corpus() -> None:
    """Every NVIDIA product name the corpus machines report is in gpus.toml with the compute capability
    the machine itself reported; AMD names too (bare KFD nodes report no product name)."""
    from resolver.plan.probe import probe_machine

    checked = 0
    for name in NAMES:
        profile = probe_machine(MACHINES / name)
        for gpu in profile.nvidia.gpus if profile.nvidia else ():
            model = KNOWLEDGE.nvidia_model(gpu.name)
            assert model is not None, f"{name}: {gpu.name!r} is not in gpus.toml"
            assert model.compute_capability == gpu.compute_capability, (name, gpu.name)
            checked += 1
        for gpu in profile.amd.gpus if profile.amd else ():
            model = KNOWLEDGE.amd_model(gpu.name)
            if model is None:
                assert gpu.name.startswith("AMD GPU ("), f"{name}: {gpu.name!r} is not in gpus.toml"
                continue
            assert model.gfx == gpu.gfx_arch, (name, gpu.name)
            checked += 1
    assert checked >= 10
