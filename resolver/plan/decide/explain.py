"""Sentences made from decisions: refusals (the blocking fact and the way out) and plan summaries.

Refusals are built from structured :class:`~resolver.plan.decide.rejection.Rejection` values: the candidate
that got furthest through the rules names the fact; a mixed node, an old Python or an old driver get
the sentence that fits them; the fix names what does work here.
"""

from __future__ import annotations

from typing import Callable

from resolver.core.errors import Refusal
from resolver.core.model import KernelChoice
from resolver.core.versions import DottedVersion, driver_text
from resolver.plan.decide.context import Context, Gpu, python_text
from resolver.plan.decide.rejection import ARCHITECTURE_STAGES, Rejected, Rejection, Stage
from resolver.plan.decide.rules import matches
from resolver.plan.knowledge import TorchRelease, TorchVariant
from resolver.plan.probe.profile import HardwareProfile

# (ctx, gpus, wanted, kernels, allow_unconfirmed) -> (pick with .release/.variant, rejections): decide.cuda.search
CudaSearch = Callable[..., tuple]


def unconfirmed(release: TorchRelease, variant: TorchVariant) -> Rejection:
    return Rejection(Stage.CONFIRMED, f"torch {release.name} {variant.tag} rests on one unconfirmed source")


def cuda_refusal(ctx: Context, gpus: list[Gpu], wanted: DottedVersion | None, rejected: list[Rejected],
                 kernels: bool, search: CudaSearch) -> Refusal:
    target = ctx.request.target
    if not rejected:
        return Refusal(f"--target {target}: PyTorch publishes no CUDA {wanted} wheels for {ctx.profile.platform}",
                       fix=_way_out(ctx, gpus, kernels, use_cuda_targets(ctx), search))
    # the candidate that got furthest (the latest rule) names the blocking fact
    why = max(rejected, key=lambda item: item.why.stage).why
    if why.stage in (Stage.PYTHON, Stage.KERNELS):
        why = _python_too_old(ctx, rejected) or why
    if why.stage == Stage.DRIVER and wanted is None:
        why = _driver_too_old(ctx, [item.variant for item in rejected
                                    if item.variant is not None and item.why.stage == Stage.DRIVER])
    if why.stage in ARCHITECTURE_STAGES and len({g.cc for g in gpus}) > 1:
        why = _mixed_node(ctx, gpus, kernels, search) or why
    for line in dict.fromkeys(item.line() for item in rejected[:6]):
        ctx.step("candidate", "eliminated", line)
    fix = why.fix
    if why.stage != Stage.MIXED_NODE and (wanted is not None or why.stage in (
            Stage.WHEEL_ARCH, Stage.NVCC_ARCH, Stage.CONFIRMED, Stage.TOOLKIT)):
        fix = _way_out(ctx, gpus, kernels, fix or "use --target cpu", search, rejected)
    return Refusal(why.message, fix=fix or "use --target cpu", because=f"{target}: {why.message}")


def _mixed_node(ctx: Context, gpus: list[Gpu], kernels: bool, search: CudaSearch) -> Rejection | None:
    """A mixed node whose GPUs each have a build, just not a common one."""
    picks = {}
    for cc in sorted({g.cc for g in gpus}):
        group = [g for g in gpus if g.cc == cc]
        alone, _ = search(ctx.fresh(), group, None, kernels, allow_unconfirmed=False)
        if alone is None:
            return None
        picks[group[0].short] = (cc, alone)
    parts = [f"{name} ({cc.sm}) needs {pick.variant.tag} or a build like it" for name, (cc, pick) in picks.items()]
    return Rejection(Stage.MIXED_NODE, "no single PyTorch CUDA build has kernels for every GPU in this node: "
                     + "; ".join(parts),
                     "plan for one kind of GPU at a time (CUDA_VISIBLE_DEVICES, and a --profile listing only "
                     "those GPUs), or use --target cpu")


def _python_too_old(ctx: Context, rejected: list[Rejected]) -> Rejection | None:
    """"Python 3.8: torch 2.5+ dropped it and the kernels need >= 3.9" from the per-release rejections."""
    py = python_text(ctx.python)
    dropped = [item.release for item in rejected
               if item.why.stage == Stage.PYTHON and ctx.python < DottedVersion.parse(item.release.python[0])]
    kernel = next((item.why.message for item in rejected if item.why.stage == Stage.KERNELS), None)
    if not dropped:
        return None
    first = min(dropped, key=lambda r: r.version)
    parts = [f"torch {first.name} and newer dropped Python {py}"] + ([kernel] if kernel else [])
    newest = max(dropped, key=lambda r: r.version)
    return Rejection(Stage.PYTHON, f"Python {py} is not supported: " + "; ".join(parts),
                     f"use --python {newest.python[0]} or newer")


def _driver_too_old(ctx: Context, variants: list[TorchVariant]) -> Rejection:
    driver, driver_cuda = ctx.driver()
    majors = sorted({v.version.major for v in variants})
    floors = [(m, ctx.k.mvc_floor(m, ctx.driver_os)) for m in majors]
    lowest = min(f for _, f in floors)
    have = driver_text(driver) if driver is not None else f"a CUDA {driver_cuda} driver"
    options = " or ".join(f">= {driver_text(f)} for CUDA {m}" for m, f in floors[-2:])
    return Rejection(Stage.DRIVER, f"NVIDIA driver {have} is older than {driver_text(lowest)}, the oldest driver that "
                                   f"runs a PyTorch CUDA build these GPUs can use",
                     f"upgrade the NVIDIA driver ({options}), or use --target cpu")


def _way_out(ctx: Context, gpus: list[Gpu], kernels: bool, fallback: str, search: CudaSearch,
             rejected: list[Rejected] = ()) -> str:
    """What does work here: a target found by an untargeted search (no trace left behind), else one
    only an unconfirmed row allows, plus a driver upgrade when newer CUDA majors failed on the driver."""
    asked = ctx.request.target.version
    pick, _ = search(ctx.fresh(), gpus, None, kernels, allow_unconfirmed=False)
    if pick is not None and (asked is None or not matches(pick.variant.version, asked)):
        return f"Use --target cuda{pick.variant.version}"
    options = []
    risky, _ = search(ctx.fresh(), gpus, None, kernels, allow_unconfirmed=True)
    if risky is not None and (asked is None or not matches(risky.variant.version, asked)):
        options.append(f"use --target cuda{risky.variant.version} (torch {risky.release.latest}; its "
                       f"{risky.variant.tag} arch list rests on one unconfirmed source)")
    driver_majors = sorted({item.variant.version.major for item in rejected
                            if item.variant is not None and item.why.stage == Stage.DRIVER})
    if driver_majors:
        floor = ctx.k.mvc_floor(driver_majors[0], ctx.driver_os)
        options.append(f"upgrade the NVIDIA driver to >= {driver_text(floor)} for CUDA {driver_majors[0]} builds")
    if options:
        text = " or ".join(options)
        return text[:1].upper() + text[1:]
    return fallback[:1].upper() + fallback[1:] if fallback else "Use --target cpu"


def use_cuda_targets(ctx: Context) -> str:
    """The CUDA targets the tables know for this platform and Python, as advice: ``use one of --target
    cuda12.6, cuda13.0``, ``use --target cuda12.6``, or the CPU when there is none."""
    versions = sorted({v.version.truncate(2) for r in ctx.k.releases if r.supports_python(ctx.python)
                       for v in r.variants_for(ctx.profile.platform, "cuda") if v.confirmed and r.confirmed
                       and v.version >= ctx.k.min_cuda()})
    if not versions:
        return (f"use --target cpu (no confirmed CUDA build of PyTorch serves {ctx.profile.platform} with Python "
                f"{ctx.python})")
    named = ", ".join(f"cuda{v}" for v in versions[-4:])
    return f"use one of --target {named}" if len(versions) > 1 else f"use --target {named}"


def rocm_refusal(ctx: Context, rocm: DottedVersion, wanted: DottedVersion | None, minimum: DottedVersion,
                 rejected: list[Rejected]) -> Refusal:
    for item in rejected:
        ctx.step("torch-release", "eliminated", item.line())
    if not rejected:
        available = sorted({v.version.truncate(2) for r in ctx.k.releases for v in r.variants
                            if v.backend == "rocm" and v.version >= minimum and v.confirmed and r.confirmed})
        prefix = f"--target {ctx.request.target}: " if wanted is not None else ""
        return Refusal(f"{prefix}PyTorch publishes no wheels for ROCm {rocm.truncate(2)}",
                       fix=f"install one of ROCm {', '.join(str(v) for v in available)} (or use --target cpu)")
    no_kernels = [item for item in rejected if item.why.stage == Stage.ROCM_ARCH]
    if no_kernels:
        return Refusal(f"no PyTorch build for ROCm {rocm.truncate(2)} has kernels for these GPUs "
                       f"({no_kernels[0].why.message})", fix="use a newer ROCm that supports the GPU, or --target cpu")
    stages = {item.why.stage for item in rejected}
    options = [f"pass --target rocm{rocm.truncate(2)} to accept an unconfirmed build"] \
        if Stage.CONFIRMED in stages and wanted is None else []
    options += ["change --python"] if Stage.PYTHON in stages else []
    options += ["use --target cpu"]
    return Refusal(f"no PyTorch build for ROCm {rocm.truncate(2)} fits this machine: {rejected[0].line()}",
                   fix=", ".join(options[:-1]) + (", or " if len(options) > 1 else "") + options[-1])


# ------------------------------------------------------------------------------------- plan texts


def describe_hardware(profile: HardwareProfile, nvidia: list[Gpu], amd: list[Gpu]) -> str:
    parts = []
    if nvidia:
        parts.append(", ".join(f"{g.short} (sm_{g.cc.major}{g.cc.minor})" for g in nvidia))
        if profile.nvidia and profile.nvidia.driver_version:
            parts.append(f"driver {driver_text(profile.nvidia.driver_version)}")
    if amd:
        parts.append(", ".join(f"{g.short} ({g.gfx})" for g in amd))
        if profile.amd and profile.amd.rocm_version:
            parts.append(f"ROCm {profile.amd.rocm_version}")
    if profile.glibc:
        parts.append(f"glibc {profile.glibc}")
    return "; ".join(parts) or "no GPU"


def gpu_summary(gpus: list[Gpu]) -> str:
    counts: dict[str, int] = {}
    for gpu in gpus:
        key = f"{gpu.short} ({gpu.cc.sm if gpu.cc else gpu.gfx})"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n}x {name}" for name, n in counts.items())


def kernel_text(kernels: KernelChoice) -> str:
    if kernels.strategy == "none":
        return "No Mamba kernels: the reference path runs."
    packages = ", ".join(f"{n} {v}" for n, v in kernels.packages)
    how = "installed from upstream's prebuilt wheels when reachable, else built" if kernels.strategy == "prebuilt" \
        else "built"
    where = {"system": f"this machine's {kernels.toolkit}", "environment": f"the environment's own {kernels.toolkit}",
             "target": f"{kernels.toolkit} on the target machine",
             "missing": f"{kernels.toolkit}, which this machine lacks (see the warning)"}.get(
        kernels.toolkit_source or "", str(kernels.toolkit))
    return f"Mamba kernels ({packages}) are {how} with {where} for {', '.join(kernels.arch_list)} only."
