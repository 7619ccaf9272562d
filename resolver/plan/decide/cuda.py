"""CUDA plans: the newest torch whose wheel runs on the driver and carries code for every GPU, and the
kernels built for exactly those GPUs; or, without an NVIDIA GPU here, a plan for another machine."""

from __future__ import annotations

from typing import NamedTuple

from resolver.core.errors import Refusal
from resolver.core.model import CondaChoice, KernelChoice, Plan
from resolver.core.platforms import PLATFORMS
from resolver.core.versions import ComputeCapability, DottedVersion, driver_text
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
from resolver.plan.decide.rejection import ARCHITECTURE_STAGES, Rejected, Stage
from resolver.plan.decide.rules import (
    confirmed,
    coverage,
    cuda_variant_rejection,
    driver_rejection,
    matches,
    release_rejection,
    wheel_edge,
)
from resolver.plan.decide.search import newest_first
from resolver.plan.knowledge import TorchRelease, TorchVariant


class CudaPick(NamedTuple):
    release: TorchRelease
    variant: TorchVariant
    coverage: tuple[str, ...]  # how each GPU runs the wheel, for the trace


def search(ctx: Context, gpus: list[Gpu], wanted: DottedVersion | None, kernels: bool,
           allow_unconfirmed: bool) -> tuple[CudaPick | None, list[Rejected]]:
    """The newest (torch, CUDA variant) every rule accepts for ``gpus``."""
    found, rejected = newest_first(
        ctx, "cuda", variant_filter=lambda v: wanted is None or matches(v.version, wanted),
        release_rule=lambda release: release_rejection(ctx, release, kernels),
        variant_rule=lambda release, variant: cuda_variant_rejection(ctx, release, variant, gpus,
                                                                     allow_unconfirmed=allow_unconfirmed,
                                                                     kernels=kernels))
    if found is None:
        return None, rejected
    _, how = coverage(ctx, found.variant, gpus)
    return CudaPick(found.release, found.variant, how), rejected


def candidates(ctx: Context, gpus: list[Gpu], wanted: DottedVersion | None,
               kernels: bool) -> tuple[CudaPick | None, list[Rejected]]:
    """The first confirmed candidate, and every rejection. Unconfirmed rows count only for an explicit
    target that no confirmed row satisfies (with a warning)."""
    pick, rejected = search(ctx, gpus, wanted, kernels, allow_unconfirmed=False)
    if pick is None and wanted is not None:
        pick, _ = search(ctx, gpus, wanted, kernels, allow_unconfirmed=True)
        if pick is not None:
            ctx.warn(f"torch {pick.release.name} {pick.variant.tag} rests on one unconfirmed source "
                     f"({pick.variant.source.split(' (')[0].split(';')[0]}); chosen because --target asked for it")
    return pick, rejected


def cuda_plan(ctx: Context, gpus: list[Gpu]) -> Plan:
    """A plan for the NVIDIA GPUs of this machine (``auto`` or ``--target cudaX.Y``)."""
    glibc_note(ctx)
    wanted = ctx.request.target.version if ctx.request.target.backend == "cuda" else None
    kernels = ctx.os == "linux"
    if not kernels:
        ctx.warn("mamba-ssm and causal-conv1d publish no builds for this platform and their build scripts target "
                 "Linux: kernels 'none', the reference path runs (on the GPU through PyTorch)")
    driver, driver_cuda = ctx.driver()
    if driver is None and driver_cuda is None:
        ctx.warn("NVIDIA driver version unknown: assuming it runs the chosen CUDA; check `nvidia-smi`")
    pick, rejected = candidates(ctx, gpus, wanted, kernels)
    if pick is None:
        raise explain.cuda_refusal(ctx, gpus, wanted, rejected, kernels, search)
    _trace_rejections(ctx, pick.release, rejected)
    return _plan_from(ctx, pick, gpus, rejected, kernels)


def _trace_rejections(ctx: Context, chosen: TorchRelease, rejected: list[Rejected]) -> None:
    """One trace line per newer release (and per rejected variant of the chosen one)."""
    by_release: dict[str, list[str]] = {}
    for item in rejected:
        text = item.why.message if item.variant is None else f"{item.variant.tag}: {item.why.message}"
        reasons = by_release.setdefault(item.release.name, [])
        if text not in reasons:
            reasons.append(text)
    for name, reasons in by_release.items():
        if name == chosen.name:
            for reason in reasons:
                ctx.step("variant", "eliminated", f"torch {name} {reason}")
        else:
            ctx.step("torch-release", f"{name} eliminated", "; ".join(reasons[:3]) + (" …" if len(reasons) > 3 else ""))


def _plan_from(ctx: Context, pick: CudaPick, gpus: list[Gpu], rejected: list[Rejected], kernels: bool) -> Plan:
    release, variant = pick.release, pick.variant
    cuda = variant.version
    ctx.step("torch-release", release.latest,
             "the newest torch for which mamba-ssm and causal-conv1d work on this machine" if kernels
             else "the newest torch whose wheels run here")
    driver, driver_cuda = ctx.driver()
    floor = ctx.k.mvc_floor(cuda.major, ctx.driver_os)
    if driver is not None:
        ctx.step("driver", "ok", f"driver {driver_text(driver)} >= {driver_text(floor)}, the CUDA {cuda.major}.x "
                                 f"minor-version compatibility floor")
    elif driver_cuda is not None:
        ctx.step("driver", "ok", f"the driver reports CUDA {driver_cuda}, which runs CUDA {cuda.major}.x")
    ctx.step("arch-coverage", variant.tag, "; ".join(pick.coverage))
    highlight = _not_newer_line(release, variant, rejected, gpus)
    if highlight:
        ctx.step("variant", f"{variant.tag}, not {highlight[0]}", highlight[1])
    conda = _conda_choice(ctx, release, cuda, gpus)
    torch = torch_choice(ctx, release, variant, conda)
    if kernels:
        kernel_choice = _kernels(ctx, release, cuda, gpus)
        cxx_note(ctx, release)
    else:
        kernel_choice = KernelChoice(strategy="none")
    packages = environment_packages(ctx, cuda if kernels else None)
    cuda_driver = driver_cuda or (ctx.k.newest_cuda_for_driver(driver, ctx.driver_os)
                                  if driver is not None else None) or cuda
    why = f"{highlight[0]} is out: {highlight[1]}. " if highlight else ""
    where = "PyPI" if torch.source.kind == "pypi" else "download.pytorch.org"
    summary = (f"torch {release.latest}+{variant.tag} (CUDA {cuda}) from {where} for {explain.gpu_summary(gpus)}"
               f"{' on driver ' + driver_text(driver) if driver else ''}: the newest PyTorch whose wheels carry kernels "
               f"for every GPU here and whose CUDA runtime this driver runs. {why}{explain.kernel_text(kernel_choice)}")
    return Plan(backend="cuda", backend_version=str(cuda), python=python_text(ctx.python), platform=ctx.profile.platform,
                torch=torch, kernels=kernel_choice, warnings=tuple(ctx.warnings), trace=tuple(ctx.trace),
                glibc=text_or_none(ctx.glibc), cuda_driver=str(cuda_driver.truncate(2)), runnable_here=True,
                summary=summary, target=str(ctx.request.target), conda_packages=packages)


def _not_newer_line(release: TorchRelease, variant: TorchVariant, rejected: list[Rejected],
                    gpus: list[Gpu]) -> tuple[str, str] | None:
    """"cu126, not cu128: GTX 1080 Ti is sm_61 and cu128 wheels start at sm_70" — the next newer variant
    of the chosen release, and why it lost (for arch reasons, phrased around the GPU)."""
    newer = sorted((item for item in rejected if item.release is release and item.variant is not None
                    and item.variant.version > variant.version and item.why.stage != Stage.CONFIRMED),
                   key=lambda item: item.variant.version)
    if not newer:
        return None
    other, why = newer[0].variant, newer[0].why
    if why.stage in ARCHITECTURE_STAGES:
        for gpu in gpus:
            if other.cubin_for(gpu.cc) is None and other.ptx_for(gpu.cc) is None:
                return other.tag, f"{gpu.short} is {gpu.cc.sm} and {other.tag} wheels {wheel_edge(other, gpu)}"
    return other.tag, why.message


def _kernels(ctx: Context, release: TorchRelease, cuda: DottedVersion, gpus: list[Gpu]) -> KernelChoice:
    packages = kernel_versions(ctx, release)
    archs: list[ComputeCapability] = []
    for gpu in gpus:
        build = ctx.k.build_target(cuda, gpu.cc)
        if build != gpu.cc:
            ctx.step("nvcc-arch", f"{build} for {gpu.cc}", f"nvcc {cuda} has no {gpu.cc.sm}; a {build.sm} cubin runs "
                                                          f"on {gpu.short} (same major, lower minor)")
        archs.append(build)
    for fix in ctx.k.fixes_for():
        if fix.avoid_arch and fix.holds_for_nvcc(cuda):
            avoid = ComputeCapability.parse(fix.avoid_arch)
            if avoid in archs:
                instead = ComputeCapability.parse(fix.use_instead)
                archs = [instead if a == avoid else a for a in archs]
                ctx.step("nvcc-arch", f"{instead} instead of {avoid}", f"{fix.what} ({fix.source.split(';')[0]})")
    arch_list = tuple(str(a) for a in sorted(set(archs)))
    ctx.step("kernels-arch", ",".join(arch_list), "the union of the GPUs' own architectures (not upstream's full list)")
    upstream_min = min(ctx.k.upstream_kernel(p).upstream_archs_min for p in ctx.kernel_packages)
    below = [g for g in gpus if g.cc < upstream_min]
    if below:
        ctx.warn(f"{', '.join(sorted({g.short for g in below}))}: {below[0].cc.sm} is below the architectures upstream "
                 f"builds and tests (>= {upstream_min.sm}); the kernels are built for it, but upstream does not test it")
    wheels, uncovered = _prebuilt_wheels(ctx, release, cuda, gpus, packages)
    if ctx.k.conda_forge.toolkit_specs(cuda):
        toolkit, toolkit_source = f"nvcc {cuda.truncate(2)}", "environment"
        ctx.step("kernels-compiler", f"the environment's nvcc {cuda.truncate(2)}",
                 f"the environment gets cuda-nvcc pinned to torch's CUDA {cuda.truncate(2)} (cuda-version), so the "
                 f"kernels do not depend on this machine's nvcc ({ctx.profile.cuda_toolkit or 'none'})")
    else:  # conda-forge packages no nvcc of this CUDA major: the kernels need this machine's
        toolkit, toolkit_source = kernel_compiler(ctx, "nvcc", cuda, ctx.profile.cuda_toolkit)
    for line in uncovered:
        ctx.step("prebuilt", "unusable", line)
    if len(wheels) == len(packages):
        ctx.step("kernels", "prebuilt", f"upstream ships {', '.join(w for _, w in wheels)}; the build stage uses them "
                                        f"when reachable and compiles with {toolkit} otherwise")
        strategy = "prebuilt"
    else:
        missing = [p for p, _ in packages if p not in dict(wheels)]
        ctx.step("kernels", "build", f"no usable upstream wheel for {', '.join(missing)} with torch {release.name}, "
                                     f"cu{cuda.major}, cxx11abi{str(release.cxx11_abi).upper()}, "
                                     f"cp{python_text(ctx.python).replace('.', '')}: compile with {toolkit}")
        strategy = "build"
        wheels = []
    return KernelChoice(strategy=strategy, arch_list=arch_list, packages=packages, toolkit=toolkit,
                        prebuilt_wheels=tuple(wheels), toolkit_source=toolkit_source)


def _prebuilt_wheels(ctx: Context, release: TorchRelease, cuda: DottedVersion, gpus: list[Gpu],
                     packages: tuple[tuple[str, str], ...]) -> tuple[list[tuple[str, str]], list[str]]:
    """Upstream's wheels that fit this combination and carry kernels for every GPU; and why others do not."""
    machine = PLATFORMS[ctx.profile.platform].wheel_machine
    wheels, uncovered = [], []
    for package, version in packages:
        found = ctx.k.prebuilt_wheel(package, version, release.name, cuda.major, release.cxx11_abi,
                                     python_text(ctx.python), machine)
        if not found:
            continue
        cubins = ctx.k.kernel_release(package, release.version, ctx.python).wheel_cubins(cuda.major)
        missing = [g for g in gpus if not any(c.major == g.cc.major and c.minor <= g.cc.minor for c in cubins)]
        if missing:
            uncovered.append(f"{found[0]} has no kernels for {missing[0].cc.sm} ({missing[0].short}): it carries "
                             f"{', '.join(c.sm for c in cubins)}")
            continue
        wheels.append((package, found[0]))
    return wheels, uncovered


def _conda_choice(ctx: Context, release: TorchRelease, cuda: DottedVersion, gpus: list[Gpu]) -> CondaChoice:
    builds = ctx.k.conda_forge.cuda_builds(release.latest, ctx.profile.platform)
    if builds:
        usable = []
        for build in sorted(builds, reverse=True):
            lists = ctx.k.conda_forge.archs_of(build)
            if build.major != cuda.major or lists is None or driver_rejection(ctx, build):
                continue
            cubins = [ComputeCapability.parse(a) for a in lists[0]]
            if all(any(c.major == g.cc.major and c.minor <= g.cc.minor for c in cubins) for g in gpus):
                usable.append(build)
        if usable:
            build = usable[0]
            spec = f"pytorch {release.latest} cuda{build.major}{build.minor}*"
            ctx.step("conda", spec, f"conda-forge builds pytorch {release.latest} with CUDA "
                                    f"{', '.join(str(b) for b in builds)}; CUDA {build} covers these GPUs")
            return CondaChoice("conda-forge", spec)
    spec = f"pytorch {release.latest} cuda{cuda.major}*"
    ctx.step("conda", spec, f"conda-forge's CUDA {cuda.major}.x build of pytorch {release.latest} (the exact CUDA "
                            f"minor is the solver's; the pytorch channel stopped after {ctx.k.conda_forge.pytorch_channel_last})")
    return CondaChoice("conda-forge", spec)


def cuda_plan_elsewhere(ctx: Context) -> Plan:
    """``--target cudaX.Y`` without an NVIDIA GPU here: a plan for the machine that has one."""
    wanted = ctx.request.target.version
    glibc_note(ctx)
    ctx.step("target", f"cuda{wanted}", "no NVIDIA GPU here: planning for another machine with the requested CUDA")
    kernels = ctx.os == "linux"
    found, rejected = _elsewhere_search(ctx, wanted, kernels)
    for name, items in _by_release(rejected).items():
        if any(item.variant is None for item in items):
            ctx.step("torch-release", f"{name} eliminated", items[0].why.message)
        elif found is None or name != found.release.name:
            ctx.step("torch-release", f"{name} eliminated", f"its {items[0].variant.tag} wheels are not confirmed")
    if found is None:
        raise Refusal(f"--target {ctx.request.target}: PyTorch publishes no confirmed CUDA {wanted} wheels usable with "
                      f"Python {python_text(ctx.python)} on {ctx.profile.platform}",
                      fix=_targets_that_plan_elsewhere(ctx, wanted, kernels))
    release, variant = found
    cuda = variant.version
    if kernels and cuda < ctx.k.min_cuda():
        raise Refusal(f"the Mamba kernels need CUDA >= {ctx.k.min_cuda()}, {variant.tag} is CUDA {cuda}",
                      fix=_targets_that_plan_elsewhere(ctx, wanted, kernels))
    ctx.step("torch-release", release.latest, f"the newest torch with {variant.tag} wheels for "
                                              f"Python {python_text(ctx.python)}")
    builds = [ctx.k.build_target(cuda, c) for c in variant.cubins]
    archs = sorted({b for b in builds if b is not None})
    for fix in ctx.k.fixes_for():  # the same per-arch rule the GPU plans apply (e.g. no sm_103 with nvcc 13)
        if fix.avoid_arch and fix.holds_for_nvcc(cuda):
            archs = sorted({ComputeCapability.parse(fix.use_instead) if str(a) == fix.avoid_arch else a for a in archs})
    arch_list = tuple(str(a) for a in archs)
    there = f"no NVIDIA GPU here: this plan is for another machine (CUDA {cuda} needs driver >= " \
            f"{driver_text(ctx.k.mvc_floor(cuda.major, ctx.driver_os))} there)"
    if kernels:
        ctx.warn(f"{there}; the kernels get built for the torch wheel's architectures ({', '.join(arch_list)}) or, "
                 "on the target machine, for its own GPUs")
        ctx.step("kernels", "build", f"for the {variant.tag} wheel's architectures {', '.join(arch_list)} with "
                                     f"nvcc {cuda}")
    else:
        ctx.warn(f"{there}; mamba-ssm and causal-conv1d publish no builds for this platform and their build "
                 "scripts target Linux: kernels 'none', the reference path runs (on the GPU through PyTorch)")
        ctx.step("kernels", "none", f"mamba-ssm and causal-conv1d build on Linux only, not on {ctx.profile.platform}: "
                                    "the reference path runs")
    packages = kernel_versions(ctx, release) if kernels else ()
    if kernels:
        cxx_note(ctx, release)
    conda = _conda_choice(ctx, release, cuda, [])
    torch = torch_choice(ctx, release, variant, conda)
    kernel_choice = KernelChoice(strategy="build" if kernels else "none", arch_list=arch_list if kernels else (),
                                 packages=packages, toolkit=f"nvcc {cuda.truncate(2)}" if kernels else None,
                                 toolkit_source=(None if not kernels else "environment"
                                                 if ctx.k.conda_forge.toolkit_specs(cuda) else "target"))
    environment = environment_packages(ctx, cuda if kernels else None)
    summary = (f"A plan for another machine: torch {release.latest}+{variant.tag} (CUDA {cuda}) for Python "
               f"{python_text(ctx.python)}; no NVIDIA GPU here, so the driver and GPU checks happen on the target. "
               + explain.kernel_text(kernel_choice))
    return Plan(backend="cuda", backend_version=str(cuda), python=python_text(ctx.python),
                platform=ctx.profile.platform, torch=torch, kernels=kernel_choice, warnings=tuple(ctx.warnings),
                trace=tuple(ctx.trace), glibc=text_or_none(ctx.glibc), cuda_driver=str(cuda), runnable_here=False,
                summary=summary, target=str(ctx.request.target), conda_packages=environment)


def _elsewhere_search(ctx: Context, wanted: DottedVersion, kernels: bool):
    return newest_first(
        ctx, "cuda", variant_filter=lambda v: matches(v.version, wanted),
        release_rule=lambda release: release_rejection(ctx, release, kernels),
        variant_rule=lambda release, variant: None if confirmed(release, variant) else
        explain.unconfirmed(release, variant))


def _targets_that_plan_elsewhere(ctx: Context, wanted: DottedVersion, kernels: bool) -> str:
    """The way out of a CUDA target nothing plans for: the targets the same search does plan (each one
    tried, so every target named plans), the nearest first.

    >>> from resolver.plan.decide.context import Context
    >>> from resolver.core.model import Request, Target
    >>> from resolver.plan.knowledge import Knowledge
    >>> from resolver.plan.probe.profile import HardwareProfile
    >>> cpu = HardwareProfile.from_json({"platform": "linux-64", "glibc": "2.36", "python": "3.11.7",
    ...                                  "nvidia": None, "amd": None, "cuda_toolkit": None})
    >>> ctx = Context(cpu, Request(target=Target.parse("cuda12.5")), Knowledge.load(), cpu.python.truncate(2))
    >>> _targets_that_plan_elsewhere(ctx, DottedVersion.parse("12.5"), True)  # doctest: +ELLIPSIS
    'use --target cuda12.4 or cuda12.6 (the nearest; all that plan: cuda11.7, cuda11.8, cuda12.1, cuda12.4, ...)'
    """
    candidates = sorted({v.version.truncate(2) for release in ctx.k.releases
                         for v in release.variants_for(ctx.profile.platform, "cuda") if v.version is not None})
    planned = []
    for version in candidates:
        found, _ = _elsewhere_search(ctx.fresh(), version, kernels)
        if found is not None and (not kernels or found.variant.version >= ctx.k.min_cuda()):
            planned.append(version)
    if not planned:
        return "use --target cpu, or another --python"
    below = [v for v in planned if v < wanted]
    above = [v for v in planned if v > wanted]
    nearest = [v for v in (below[-1:] + above[:1])]
    return (f"use --target {' or '.join(f'cuda{v}' for v in nearest)} (the nearest; all that plan: "
            f"{', '.join(f'cuda{v}' for v in planned)})")


def _by_release(rejected: list[Rejected]) -> dict[str, list[Rejected]]:
    grouped: dict[str, list[Rejected]] = {}
    for item in rejected:
        grouped.setdefault(item.release.name, []).append(item)
    return grouped
