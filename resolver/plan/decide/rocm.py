"""ROCm plans: the torch build whose ROCm major.minor is the installed one (the kernels compile with the
system hipcc), with kernels in the wheel for every GPU's gfx target, and the header fixes it needs."""

from __future__ import annotations

from resolver.core.errors import Refusal
from resolver.core.model import KernelChoice, PatchRef, Plan
from resolver.core.versions import DottedVersion
from resolver.plan.decide import explain
from resolver.plan.decide.choices import (
    cxx_note,
    environment_packages,
    glibc_note,
    kernel_compiler,
    kernel_versions,
    torch_choice,
)
from resolver.plan.decide.context import Context, Gpu, python_text, text_or_none
from resolver.plan.decide.rejection import Rejected, Rejection, Stage
from resolver.plan.decide.rules import confirmed, release_rejection
from resolver.plan.decide.search import Candidate, newest_first
from resolver.plan.knowledge import TorchRelease, TorchVariant


def unserved_gfx(ctx: Context, gpus: list[Gpu]) -> list[Gpu]:
    """The GPUs whose gfx target no PyTorch ROCm build of any release in the tables carries (confirmed or
    not): no ROCm version, installed or not, gives them kernels."""
    served = {arch for release in ctx.k.releases_newest_first() for v in release.variants if v.backend == "rocm"
              for arch in (*v.archs, *v.unconfirmed_archs)}
    return [g for g in gpus if g.gfx is not None and str(g.gfx) not in served]


def no_rocm_build_text(gpus: list[Gpu]) -> str:
    names = ", ".join(f"{g.gfx} ({g.short})" for g in gpus)
    return (f"no PyTorch ROCm build has kernels for {names}: no release in the tables carries "
            f"{'that gfx target' if len(gpus) == 1 else 'those gfx targets'}, so no ROCm version would help")


def rocm_plan(ctx: Context, gpus: list[Gpu]) -> Plan:
    glibc_note(ctx)
    unserved = unserved_gfx(ctx, gpus)
    if gpus and len(unserved) == len(gpus):
        ctx.step("arch-coverage", "refused", no_rocm_build_text(unserved))
        raise Refusal(no_rocm_build_text(unserved), fix="use --target cpu",
                      because=f"no ROCm build carries {unserved[0].gfx}")
    target = ctx.request.target
    wanted = target.version  # a rocm target names its version; auto comes here only with ROCm installed
    installed = ctx.profile.amd.rocm_version if ctx.profile.amd else None
    here = bool(gpus)
    minimum = ctx.k.min_rocm()
    rocm = installed if installed is not None else wanted
    if wanted is not None and installed is not None and here and wanted.truncate(2) != installed.truncate(2):
        raise Refusal(f"--target {target} needs ROCm {wanted.truncate(2)} installed (the kernels compile with the "
                      f"system hipcc), this machine has ROCm {installed}",
                      fix=f"Use --target rocm{installed.truncate(2)}", because=f"installed ROCm {installed}")
    if wanted is not None and len(wanted.parts) == 3 and installed is not None and wanted != installed and here:
        ctx.warn(f"--target {target}: the installed ROCm is {installed}; the wheel variant is matched on "
                 f"{installed.truncate(2)}")
    if rocm < minimum:
        ctx.step("rocm-version", "refused", f"ROCm {rocm} < {minimum}")
        raise Refusal(f"ROCm {rocm} is older than {minimum}, the oldest ROCm that mamba-ssm and causal-conv1d build on",
                      fix="upgrade ROCm to 6.1 or newer (6.0 needs the bf16 header fix), or use --target cpu",
                      because=f"mamba-ssm and causal-conv1d refuse ROCm < {minimum}")
    ctx.step("rocm-version", str(rocm), f"ROCm {'installed here' if installed is not None else 'requested'}; "
                                        f">= {minimum}, the Mamba kernels' floor")
    if not here:
        ctx.step("target", f"rocm{rocm}", "no AMD GPU here: planning for another machine with this ROCm")
    found, rejected = _search(ctx, gpus, rocm, allow_unconfirmed=False)
    if found is None and wanted is not None:
        found, risky_rejected = _search(ctx, gpus, rocm, allow_unconfirmed=True)
        if found is not None:
            ctx.warn(f"torch {found.release.name} {found.variant.tag} rests on one unconfirmed source; chosen because "
                     "--target asked for it")
        else:
            rejected = risky_rejected
    if found is None:
        raise explain.rocm_refusal(ctx, rocm, wanted, minimum, rejected)
    for item in rejected:
        ctx.step("torch-release", "eliminated", item.line())
    return _plan_from(ctx, found.release, found.variant, gpus, rocm, here)


def _search(ctx: Context, gpus: list[Gpu], rocm: DottedVersion,
            allow_unconfirmed: bool) -> tuple[Candidate | None, list[Rejected]]:
    def variant_rule(release: TorchRelease, variant: TorchVariant) -> Rejection | None:
        if not confirmed(release, variant) and not allow_unconfirmed:
            return Rejection(Stage.CONFIRMED, "rests on one unconfirmed source")
        archs = variant.archs + (variant.unconfirmed_archs if allow_unconfirmed else ())
        missing = [g for g in gpus if str(g.gfx) not in archs]
        if missing:
            return Rejection(Stage.ROCM_ARCH, f"no kernels for {missing[0].gfx} ({missing[0].short}); it has "
                                              f"{', '.join(archs)}", gpu=missing[0])
        return None

    return newest_first(ctx, "rocm", variant_filter=lambda v: v.version.truncate(2) == rocm.truncate(2),
                        release_rule=lambda release: release_rejection(ctx, release, True), variant_rule=variant_rule)


def _plan_from(ctx: Context, release: TorchRelease, variant: TorchVariant, gpus: list[Gpu], rocm: DottedVersion,
               here: bool) -> Plan:
    ctx.step("torch-release", release.latest, f"the newest torch with a {variant.tag} build (matches ROCm "
                                              f"{rocm.truncate(2)}) for which mamba-ssm and causal-conv1d work")
    if gpus:
        ctx.step("arch-coverage", variant.tag, "; ".join(f"{g.short}: {g.gfx} is in the wheel" for g in gpus))
        official = ctx.k.official_gfx_for(rocm)
        unofficial = [g for g in gpus if official is not None and str(g.gfx) not in official]
        if unofficial:
            ctx.warn(f"{unofficial[0].gfx} ({unofficial[0].short}) is compiled into the PyTorch wheel but not on AMD's "
                     f"official support list for ROCm {rocm.truncate(2)}")
    patches = []
    for fix in ctx.k.header_fixes_for(rocm):
        patches.append(PatchRef(fix.id, fix.file))
        ctx.step("rocm-patch", fix.id, f"ROCm {rocm} needs {fix.file} fixed: {fix.why}")
    if not patches:
        ctx.step("rocm-patch", "none", f"ROCm {rocm} headers build the kernels as shipped")
    arch_list = tuple(sorted({str(g.gfx) for g in gpus})) if gpus else variant.archs
    if not here:
        ctx.warn(f"no AMD GPU here: this plan is for another machine with ROCm {rocm}; the kernels get built on it "
                 f"(or for {', '.join(arch_list)})")
    packages = kernel_versions(ctx, release)
    if here:
        toolkit, toolkit_source = kernel_compiler(ctx, "hipcc", rocm, ctx.profile.rocm_toolkit)
    else:
        toolkit, toolkit_source = f"hipcc {rocm.truncate(2)}", "target"
    ctx.step("kernels", "build", f"upstream ships no ROCm wheels; compile with the system {toolkit} for "
                                 f"{', '.join(arch_list)}")
    cxx_note(ctx, release)
    ctx.step("conda", "none", "conda-forge has no ROCm builds of pytorch; torch comes from "
                              f"download.pytorch.org/whl/{variant.tag}")
    torch = torch_choice(ctx, release, variant, None)
    environment = environment_packages(ctx)
    kernels = KernelChoice(strategy="build", arch_list=arch_list, packages=packages, toolkit=toolkit,
                           toolkit_source=toolkit_source)
    patch_text = f" ROCm {rocm} needs the header fix {patches[0].id} ({patches[0].file}) before the build." if patches else ""
    machines = explain.gpu_summary(gpus) if gpus else "another machine"
    summary = (f"torch {release.latest}+{variant.tag} for {machines} with ROCm {rocm}: the wheel variant must match the "
               f"installed ROCm because the kernels compile with its hipcc.{patch_text} {explain.kernel_text(kernels)}")
    return Plan(backend="rocm", backend_version=str(rocm), python=python_text(ctx.python),
                platform=ctx.profile.platform, torch=torch, kernels=kernels, patches=tuple(patches),
                warnings=tuple(ctx.warnings), trace=tuple(ctx.trace), glibc=text_or_none(ctx.glibc), cuda_driver=None,
                runnable_here=here, summary=summary, target=str(ctx.request.target), conda_packages=environment)
