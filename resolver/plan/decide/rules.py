"""The rules a candidate must pass, each returning None or the :class:`Rejection` that stops it.

Release rules (Python, glibc, a Mamba kernel release for that torch) come first; then, per CUDA
wheel variant: confirmed, the kernels' CUDA floor, the driver, nvcc's architectures, the wheel's
architectures. ROCm's gfx rule lives with the ROCm search (:mod:`resolver.plan.decide.rocm`).
"""

from __future__ import annotations

from resolver.core.versions import DottedVersion, driver_text
from resolver.plan.decide.context import Context, Gpu, python_text
from resolver.plan.decide.rejection import Rejection, Stage
from resolver.plan.knowledge import TorchRelease, TorchVariant


def release_rejection(ctx: Context, release: TorchRelease, kernels: bool) -> Rejection | None:
    """Why ``release`` cannot serve this machine at all (Python, glibc, kernels), or None."""
    py = python_text(ctx.python)
    if not release.supports_python(ctx.python):
        newest = [r for r in ctx.k.releases if r.supports_python(ctx.python)]
        if ctx.python < DottedVersion.parse(release.python[0]):
            why = f"torch {release.name} needs Python >= {release.python[0]} (it dropped {py})"
        else:
            why = f"torch {release.name} has no wheels for Python {py} (newest: {release.python[-1]})"
        fix = (f"use --python {release.python[-1] if ctx.python > DottedVersion.parse(release.python[-1]) else '3.11'}"
               if not newest else "pick a Python that torch supports with --python, e.g. --python 3.11")
        return Rejection(Stage.PYTHON, why, fix)
    if ctx.glibc is not None and ctx.glibc < release.glibc_min:
        return Rejection(Stage.GLIBC, f"torch {release.name} wheels need glibc >= {release.glibc_min} "
                                      f"(manylinux_{str(release.glibc_min).replace('.', '_')}), this system has {ctx.glibc}",
                         "use a newer Linux (glibc >= 2.28: RHEL/Rocky 8, Ubuntu 18.10+) or run in a container")
    if kernels:
        for package in ctx.kernel_packages:
            if ctx.k.kernel_release(package, release.version, ctx.python) is None:
                info = [r for r in ctx.k.kernel_releases if r.package == package]
                min_py = min((r.python_min for r in info), default=None)
                if min_py is not None and ctx.python < min_py:
                    return Rejection(Stage.KERNELS, f"{package} needs Python >= {python_text(min_py)}",
                                     f"use --python {python_text(min_py)} or newer")
                return Rejection(Stage.KERNELS, f"no {package} release supports torch {release.name}",
                                 "use a newer torch (drop --python) or --target cpu")
    return None


def confirmed(release: TorchRelease, variant: TorchVariant) -> bool:
    return variant.confirmed and release.confirmed


def driver_rejection(ctx: Context, cuda: DottedVersion) -> Rejection | None:
    """Does the driver run CUDA ``cuda``? (its major's minor-version compatibility floor, or the driver's
    own CUDA version when only that is known)."""
    driver, driver_cuda = ctx.driver()
    floor = ctx.k.mvc_floor(cuda.major, ctx.driver_os)
    if driver is not None and floor is not None:
        if driver >= floor:
            return None
        return Rejection(Stage.DRIVER, f"CUDA {cuda} needs NVIDIA driver >= {driver_text(floor)} (CUDA {cuda.major}.x "
                                       f"minor-version compatibility), this machine has {driver_text(driver)}",
                         f"upgrade the NVIDIA driver to {driver_text(floor)} or newer")
    if driver_cuda is not None:
        if driver_cuda.major >= cuda.major:
            return None
        return Rejection(Stage.DRIVER, f"CUDA {cuda} needs a driver for CUDA {cuda.major}.x, this driver supports "
                                       f"CUDA {driver_cuda}",
                         f"upgrade the NVIDIA driver (>= {driver_text(floor) if floor else 'a newer one'})")
    return None


def coverage(ctx: Context, variant: TorchVariant, gpus: list[Gpu]) -> tuple[Rejection | None, tuple[str, ...]]:
    """Does every GPU find code in the wheel? (a cubin of the same major with a lower-or-equal minor,
    or PTX at or below it); the rejection, or how each GPU runs it (for the trace)."""
    how = []
    driver, _ = ctx.driver()
    full_floor = ctx.k.toolkit_floor(variant.version, ctx.driver_os)
    for gpu in gpus:
        cubin = variant.cubin_for(gpu.cc)
        if cubin is not None:
            how.append(f"{gpu.short}: {cubin.sm} cubin" + ("" if cubin == gpu.cc else f" (runs on sm_{gpu.cc.major}{gpu.cc.minor})"))
            continue
        ptx = variant.ptx_for(gpu.cc)
        if ptx is not None and (driver is None or full_floor is None or driver >= full_floor):
            how.append(f"{gpu.short}: compute_{ptx.major}{ptx.minor} PTX, JIT-compiled by the driver")
            continue
        if ptx is not None:
            return Rejection(Stage.WHEEL_ARCH, f"torch {variant.tag} wheels reach compute capability {gpu.cc} "
                                               f"({gpu.short}) only through PTX, which needs driver >= "
                                               f"{driver_text(full_floor)}",
                             f"upgrade the NVIDIA driver to {driver_text(full_floor)} or newer", gpu), ()
        return Rejection(Stage.WHEEL_ARCH, f"{variant.tag} wheels have no kernels for compute capability {gpu.cc} "
                                           f"({gpu.short}): they {wheel_edge(variant, gpu)}", "", gpu), ()
    return None, tuple(how)


def wheel_edge(variant: TorchVariant, gpu: Gpu) -> str:
    """Where the wheel's architectures end, seen from ``gpu``: ``start at sm_75`` / ``stop at sm_90``."""
    if gpu.cc < min(variant.cubins):  # every CUDA variant lists its cubins (the tables' consistency check)
        return f"start at {variant.lowest_arch}"
    return f"stop at {max(variant.cubins).sm}"


def nvcc_rejection(ctx: Context, nvcc: DottedVersion, gpus: list[Gpu]) -> Rejection | None:
    """Can nvcc ``nvcc`` compile every GPU's architecture (itself, or a same-major stand-in)?"""
    for gpu in gpus:
        if ctx.k.build_target(nvcc, gpu.cc) is not None:
            continue
        support = ctx.k.arch_support(gpu.cc)
        if support is not None and support.last is not None and nvcc > support.last:
            why = f"CUDA {nvcc.major} dropped {gpu.cc.sm}"
        elif support is not None and nvcc < support.first:
            why = f"{gpu.cc.sm} needs CUDA {support.first} or newer"
        else:
            why = f"no CUDA toolkit in the tables builds {gpu.cc.sm}"
        return Rejection(Stage.NVCC_ARCH, f"CUDA {nvcc} cannot target compute capability {gpu.cc} ({gpu.short}): {why}",
                         "", gpu)
    return None


def cuda_variant_rejection(ctx: Context, release: TorchRelease, variant: TorchVariant, gpus: list[Gpu], *,
                           allow_unconfirmed: bool, kernels: bool) -> Rejection | None:
    """Every per-variant CUDA rule, in order."""
    if not confirmed(release, variant) and not allow_unconfirmed:
        return Rejection(Stage.CONFIRMED, f"torch {release.name} {variant.tag} rests on one unconfirmed source")
    if kernels and variant.version < ctx.k.min_cuda():
        return Rejection(Stage.TOOLKIT, f"the Mamba kernels need CUDA >= {ctx.k.min_cuda()}, {variant.tag} is CUDA "
                                        f"{variant.version}")
    rejection = driver_rejection(ctx, variant.version)
    if rejection is None and kernels:
        rejection = nvcc_rejection(ctx, variant.version, gpus)
    if rejection is None:
        rejection, _ = coverage(ctx, variant, gpus)
    return rejection


def matches(version: DottedVersion, wanted: DottedVersion) -> bool:
    """Does a CUDA variant's version satisfy ``--target cudaX[.Y]``? (``13`` matches any 13.x)."""
    if len(wanted.parts) == 1:
        return version.major == wanted.major
    return version.truncate(2) == wanted.truncate(2)
