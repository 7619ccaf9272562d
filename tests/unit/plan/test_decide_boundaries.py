"""Every threshold a decision reads, tested at, just below and just above it, generated from the tables
themselves (resolver/plan/knowledge/data/): a new row gets its tests for free.

driver floors (CUDA minor-version compatibility, Linux and Windows/WSL), compute capability ranges
(the first and last toolkit whose nvcc builds each architecture), glibc floors of every torch release,
the kernels' ROCm and CUDA floors, the ROCm header-fix ranges and AMD's official gfx ranges.
"""

from __future__ import annotations

import pytest
from support.boundaries import above, below

from resolver.core.model import Request, Target
from resolver.core.versions import ComputeCapability, DottedVersion, driver_text
from resolver.plan.decide import decide
from resolver.plan.decide.context import Context, Gpu
from resolver.plan.decide.rejection import Stage
from resolver.plan.decide.rules import cuda_variant_rejection, driver_rejection, nvcc_rejection, release_rejection
from resolver.plan.knowledge import Knowledge, TorchVariant
from resolver.plan.probe.profile import HardwareProfile

K = Knowledge.load()


def test_below_and_above():
    assert (str(below(DottedVersion.parse("525.60.13"))), str(below(DottedVersion.parse("6.0"))),
            str(below(DottedVersion.parse("580"))), str(above(DottedVersion.parse("2.28")))) == \
        ("525.60.12", "5.99", "579", "2.29")


def machine(*, driver: str | None = None, cuda: str | None = None, gpus: tuple[tuple[str, str], ...] = (),
            glibc: str | None = "2.35", python: str = "3.11.7", wsl: bool = False, rocm: str | None = None,
            gfx: tuple[str, ...] = ()) -> HardwareProfile:
    data = {"platform": "linux-64", "glibc": glibc, "python": python, "cuda_toolkit": None, "wsl": wsl,
            "nvidia": {"driver_version": driver, "cuda_driver_version": cuda,
                       "gpus": [{"name": n, "compute_capability": c} for n, c in gpus]} if driver or gpus else None,
            "amd": {"rocm_version": rocm, "gpus": [{"name": f"AMD GPU ({g})", "gfx_arch": g} for g in gfx]}
            if rocm or gfx else None}
    return HardwareProfile.from_json(data)


def context(profile: HardwareProfile, python: str = "3.11") -> Context:
    return Context(profile, Request(), K, DottedVersion.parse(python))


# ------------------------------------------------------------------------------------------ driver floors
FLOORS = [(f.cuda_major, os, floor) for f in K.mvc_floors for os, floor in (("linux", f.linux), ("win", f.windows))]


@pytest.mark.parametrize("major,os,floor", FLOORS, ids=[f"cuda{m}-{os}-{f}" for m, os, f in FLOORS])
def test_driver_floor_at_below_and_above(major, os, floor):
    cuda = DottedVersion((major, 8))
    for driver, runs in ((floor, True), (below(floor), False), (above(floor), True)):
        ctx = context(machine(driver=str(driver), gpus=(("NVIDIA H100 80GB HBM3", "9.0"),), wsl=os == "win"))
        rejection = driver_rejection(ctx, cuda)
        assert (rejection is None) == runs, (driver, rejection)
        if not runs:
            assert rejection.stage == Stage.DRIVER and f"needs NVIDIA driver >= {driver_text(floor)} (CUDA {major}.x" \
                in rejection.message and rejection.message.endswith(f"this machine has {driver_text(driver)}")
            assert rejection.fix == f"upgrade the NVIDIA driver to {driver_text(floor)} or newer"


@pytest.mark.parametrize("major", sorted({f.cuda_major for f in K.mvc_floors}))
def test_driver_known_only_by_its_cuda_version(major):
    """No driver version, only the CUDA version the driver reports (nvidia-smi's header): its major is the floor."""
    cuda = DottedVersion((major, 0))
    for reported, runs in ((f"{major}.0", True), (f"{major - 1}.9", False), (f"{major + 1}.0", True)):
        ctx = context(HardwareProfile.from_json({
            "platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "cuda_toolkit": None, "amd": None,
            "nvidia": {"driver_version": None, "cuda_driver_version": reported,
                       "gpus": [{"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]}}))
        rejection = driver_rejection(ctx, cuda)
        assert (rejection is None) == runs, (reported, rejection)
        if not runs:
            assert rejection.stage == Stage.DRIVER and f"supports CUDA {reported}" in rejection.message


def test_no_driver_facts_reject_nothing():
    assert driver_rejection(context(machine(gpus=(("NVIDIA H100 80GB HBM3", "9.0"),))), DottedVersion((13, 0))) is None


@pytest.mark.parametrize("major,os,floor", [row for row in FLOORS if row[1] == "linux"],
                         ids=[f"cuda{m}-{f}" for m, os, f in FLOORS if os == "linux"])
def test_a_plan_never_picks_a_cuda_its_driver_cannot_run(major, os, floor):
    """decide as a whole, on a driver exactly at a CUDA major's floor and just below it."""
    gpu = ("NVIDIA A100-SXM4-80GB", "8.0")
    newest = {DottedVersion.parse(v.tag[2:-1] + "." + v.tag[-1]).major for r in K.releases for v in r.variants
              if v.tag.startswith("cu")}
    if major not in newest:
        pytest.skip(f"no torch build for CUDA {major} in the tables")
    at = decide(machine(driver=str(floor), gpus=(gpu,)), Request(Target.parse(f"cuda{major}")), K)
    just_below = decide(machine(driver=str(below(floor)), gpus=(gpu,)), Request(Target.parse(f"cuda{major}")), K)
    if at.plan is not None:
        assert str(at.plan.backend_version).startswith(f"{major}.")
    assert just_below.plan is None and "driver" in str(just_below.refusal).lower()


# ------------------------------------------------------------------------- compute capability ranges
TOOLKITS = sorted({t.version.truncate(2) for t in K.toolkits})


def _previous(version: DottedVersion) -> DottedVersion | None:
    earlier = [t for t in TOOLKITS if t < version.truncate(2)]
    return earlier[-1] if earlier else None


def _next(version: DottedVersion) -> DottedVersion | None:
    later = [t for t in TOOLKITS if t > version.truncate(2)]
    return later[0] if later else None


ARCHS = [a for a in K.archs]


@pytest.mark.parametrize("arch", ARCHS, ids=[a.compute_capability.sm for a in ARCHS])
def test_nvcc_range_of_each_architecture(arch):
    cc = arch.compute_capability
    assert K.nvcc_can_build(arch.first, cc) and K.build_target(arch.first, cc) == cc
    before = _previous(arch.first)
    if before is not None:
        assert not K.nvcc_can_build(before, cc)
        assert K.build_target(before, cc) != cc  # at most a same-major stand-in below it
    if arch.last is not None:
        assert K.nvcc_can_build(arch.last, cc)
        assert K.nvcc_can_build(DottedVersion(arch.last.parts + (9,)), cc)  # any patch of the last minor
        after = _next(arch.last)
        if after is not None:
            assert not K.nvcc_can_build(after, cc) and K.build_target(after, cc) != cc  # a stand-in at most
    else:
        assert K.nvcc_can_build(TOOLKITS[-1], cc)


@pytest.mark.parametrize("arch", ARCHS, ids=[a.compute_capability.sm for a in ARCHS])
def test_nvcc_rule_follows_the_range(arch):
    cc = arch.compute_capability
    gpu = Gpu(f"GPU {cc.sm}", cc=cc)
    ctx = context(machine(driver="999.0", gpus=((gpu.name, str(cc)),)))
    assert nvcc_rejection(ctx, arch.first, [gpu]) is None
    before = _previous(arch.first)
    if before is not None and K.build_target(before, cc) is None:
        rejection = nvcc_rejection(ctx, before, [gpu])
        assert rejection.stage == Stage.NVCC_ARCH and f"needs CUDA {arch.first} or newer" in rejection.message
    if arch.last is not None and (after := _next(arch.last)) is not None and K.build_target(after, cc) is None:
        rejection = nvcc_rejection(ctx, after, [gpu])
        assert rejection.stage == Stage.NVCC_ARCH and f"CUDA {after.major} dropped {cc.sm}" in rejection.message


def test_a_stand_in_is_a_lower_minor_of_the_same_major_that_may_stand_in():
    for arch in ARCHS:
        cc = arch.compute_capability
        for nvcc in TOOLKITS:
            target = K.build_target(nvcc, cc)
            if target is not None and target != cc:
                stand_in = K.arch_support(target)
                assert target.major == cc.major and target.minor < cc.minor and stand_in.stand_in
                assert stand_in.buildable_by(nvcc) and not K.nvcc_can_build(nvcc, cc)


# --------------------------------------------------------------------------------- wheel architectures
CUDA_VARIANTS = [(r, v) for r in K.releases for v in r.variants if v.backend == "cuda" and v.cubins]


@pytest.mark.parametrize("release,variant", CUDA_VARIANTS, ids=[f"{r.name}-{v.tag}" for r, v in CUDA_VARIANTS])
def test_wheel_coverage_at_each_cubin_and_below_the_lowest(release, variant):
    for cubin in variant.cubins:
        assert variant.cubin_for(cubin) == cubin
        assert variant.cubin_for(ComputeCapability(cubin.major, cubin.minor + 1)) is not None  # a newer same-major GPU
    lowest = min(variant.cubins)
    if lowest.minor > 0 and not any(c.major == lowest.major and c.minor < lowest.minor for c in variant.cubins):
        assert variant.cubin_for(ComputeCapability(lowest.major, lowest.minor - 1)) is None
    assert variant.cubin_for(ComputeCapability(lowest.major - 1, 9)) in (None, *variant.cubins)
    for ptx in variant.ptx_targets:
        assert variant.ptx_for(ptx) == ptx and variant.ptx_for(ComputeCapability(ptx.major + 1, 0)) is not None
        below_ptx = [p for p in variant.ptx_targets if p < ptx]
        if not below_ptx and ptx.minor > 0:
            assert variant.ptx_for(ComputeCapability(ptx.major, ptx.minor - 1)) is None


# --------------------------------------------------------------------------------------- glibc floors
GLIBC = [r for r in K.releases if r.glibc_min is not None]


@pytest.mark.parametrize("release", GLIBC, ids=[f"torch{r.name}-glibc{r.glibc_min}" for r in GLIBC])
def test_glibc_floor_of_each_release(release):
    python = release.python[-1]
    for glibc, runs in ((release.glibc_min, True), (below(release.glibc_min), False), (above(release.glibc_min), True)):
        rejection = release_rejection(context(machine(glibc=str(glibc), python=python), python), release, False)
        if runs:
            assert rejection is None or rejection.stage != Stage.GLIBC, (glibc, rejection)
        else:
            assert rejection.stage == Stage.GLIBC and f"glibc >= {release.glibc_min}" in rejection.message
            assert f"has {glibc}" in rejection.message


@pytest.mark.parametrize("release", K.releases, ids=[f"torch{r.name}" for r in K.releases])
def test_python_range_of_each_release(release):
    first, last = DottedVersion.parse(release.python[0]), DottedVersion.parse(release.python[-1])
    for python, runs in ((first, True), (last, True), (below(first), False), (above(last), False)):
        rejection = release_rejection(context(machine(), f"{python.major}.{python.minor}"), release, False)
        assert (rejection is None or rejection.stage != Stage.PYTHON) == runs, (python, rejection)
    older = release_rejection(context(machine(), str(below(first))), release, False)
    assert f"needs Python >= {release.python[0]}" in older.message
    newer = release_rejection(context(machine(), str(above(last))), release, False)
    assert f"no wheels for Python {above(last)}" in newer.message


# ---------------------------------------------------------------------------------- the kernels' floors
def test_kernels_cuda_floor():
    floor = K.min_cuda()
    release = K.releases_newest_first()[0]
    gpu = Gpu("NVIDIA A100-SXM4-80GB", cc=ComputeCapability(8, 0))
    ctx = context(machine(driver="999.0", gpus=((gpu.name, "8.0"),)), release.python[-1])

    def variant(cuda: DottedVersion) -> TorchVariant:
        return TorchVariant(f"cu{cuda.major}{cuda.minor}", ("linux-64",), ("8.0",), (), True, "test")

    for cuda, runs in ((floor, True), (below(floor), False), (above(floor), True)):
        rejection = cuda_variant_rejection(ctx, release, variant(cuda), [gpu], allow_unconfirmed=False, kernels=True)
        if runs:
            assert rejection is None or rejection.stage != Stage.TOOLKIT, (cuda, rejection)
        else:
            assert rejection.stage == Stage.TOOLKIT and f"CUDA >= {floor}" in rejection.message
    # without the kernels the floor does not apply
    rejection = cuda_variant_rejection(ctx, release, variant(below(floor)), [gpu], allow_unconfirmed=False, kernels=False)
    assert rejection is None or rejection.stage != Stage.TOOLKIT


def test_kernels_rocm_floor():
    floor = K.min_rocm()
    at = decide(machine(rocm=str(floor), gfx=("gfx90a",)), Request(), K)
    just_below = decide(machine(rocm=str(below(floor)), gfx=("gfx90a",)), Request(), K)
    assert not (at.plan is None and "is older than" in str(at.refusal))
    assert just_below.plan is None and f"is older than {floor}" in just_below.refusal.message


# -------------------------------------------------------------------------------------- ROCm ranges
@pytest.mark.parametrize("fix", K.header_fixes, ids=[f.id for f in K.header_fixes])
def test_header_fix_range(fix):
    assert fix in K.header_fixes_for(fix.rocm_min) and fix in K.header_fixes_for(below(fix.rocm_below))
    assert fix not in K.header_fixes_for(below(fix.rocm_min)) and fix not in K.header_fixes_for(fix.rocm_below)


@pytest.mark.parametrize("row", K.official_gfx, ids=[str(r.rocm) for r in K.official_gfx])
def test_official_gfx_range(row):
    assert K.official_gfx_for(row.rocm) == row.gfx
    if row.until is not None:
        assert K.official_gfx_for(below(row.until)) == row.gfx and K.official_gfx_for(row.until) != row.gfx
    earlier = [r for r in K.official_gfx if r.rocm < row.rocm]
    assert K.official_gfx_for(below(row.rocm)) == (max(earlier, key=lambda r: r.rocm).gfx if earlier else None)
