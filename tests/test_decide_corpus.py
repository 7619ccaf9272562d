"""decide over the probe corpus: every captured machine in tests/machines/ (public bug reports,
replayed with ``probe --sysroot``) gets a plan or a one-sentence refusal, never a crash, and the
machines that exercise a rule get the answer that rule demands."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolver.decide import decide
from resolver.decide.model import Request
from resolver.knowledge import Knowledge

MACHINES = Path(__file__).parent / "machines"
NAMES = sorted(p.name for p in MACHINES.iterdir() if p.is_dir()) if MACHINES.is_dir() else []
KNOWLEDGE = Knowledge.load()

# machine -> (torch variant or "refused", arch_list, patches); None = not checked
EXPECTED = {
    "gfx1100-rocm6.0.2-kfd": ("rocm6.0", ("gfx1100",), ("rocm6.0-bf16-inline",)),
    "rx7900xtx-rocm6.1": ("rocm6.1", ("gfx1100",), ()),
    "rx6750xt-rocm5.7-ubuntu2004": ("refused", None, None),
    "mi250x-rocm6.2-kfd-only": (None, ("gfx90a",), ()),
    "rtx3090-rtx5070ti-mixed-cachyos": (None, ("8.6", "12.0"), ()),
    "titanv-rtx5880ada-mixed": ("cu126", ("7.0", "8.9"), ()),
    "cpu-only-ubuntu2410": ("cpu", (), ()),
    "macos-arm64-m2max": ("cpu", (), ()),
    "h100-8x-ubuntu2204": (None, ("9.0",), ()),
    # driver 570 rules out CUDA 13; the only aarch64 CUDA 12.8+ build we know (2.8 cu129) is unconfirmed
    "gb200-4x-aarch64": ("refused", None, None),
}


@pytest.mark.skipif(not NAMES, reason="no probe corpus in tests/machines")
@pytest.mark.parametrize("name", NAMES)
def test_every_corpus_machine_plans_or_refuses(name: str) -> None:
    from resolver.probe import probe_machine

    profile = probe_machine(MACHINES / name)
    outcome = decide(profile, Request(), KNOWLEDGE)
    assert outcome.trace
    expected = EXPECTED.get(name)
    if outcome.plan is None:
        assert outcome.refusal.message and "\n" not in str(outcome.refusal)
        assert expected is not None and expected[0] == "refused", f"{name} refused: {outcome.refusal}"
        return
    plan = outcome.plan
    if profile.has_gpu and profile.os == "linux" and plan.backend != "cpu":
        assert plan.kernels.arch_list, name
    if expected:
        variant, archs, patches = expected
        assert variant != "refused", f"{name} should be refused, got {plan.summary}"
        if variant is not None:
            assert plan.torch.variant == variant
        if archs is not None:
            assert plan.kernels.arch_list == archs
        if patches is not None:
            assert tuple(p.id for p in plan.patches) == patches


@pytest.mark.skipif(not NAMES, reason="no probe corpus in tests/machines")
def test_gpu_table_agrees_with_the_corpus() -> None:
    """Every NVIDIA product name the corpus machines report is in gpus.toml with the compute capability
    the machine itself reported; AMD names too (bare KFD nodes report no product name)."""
    from resolver.probe import probe_machine

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
