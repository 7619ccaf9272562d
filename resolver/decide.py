"""decide: ``(HardwareProfile, Request, Knowledge) -> PlanOutcome``, a pure function that explains itself.

It walks the torch releases newest first and, inside each, the wheel variants newest toolkit first,
and takes the first candidate every rule accepts:

- Python and glibc inside the release's support; a Mamba kernel release for that torch and Python;
- CUDA: the runtime runs on the driver (minor-version compatibility floor of its major, or the
  driver's own CUDA version); every GPU is covered by the wheel's cubins (same major, equal or lower
  minor) or its PTX (at or below, JIT needs the toolkit's full driver floor); the kernels' nvcc
  (the variant's CUDA) can build every GPU's architecture;
- ROCm: the variant matches the installed ROCm major.minor (the kernels build with the system
  hipcc); ROCm below 6.0 is refused; every GPU's gfx target is in the wheel; header fixes listed;
- no GPU, macOS, or ``--target cpu``: a CPU plan, kernels "none" (the reference path).

Rows marked ``confirmed = false`` are never chosen on their own (an explicit ``--target`` may).
Every rule that fired or eliminated a candidate leaves a :class:`TraceStep`. A refusal names the
blocking fact and the way out. A target whose hardware is absent here is a plan for another
machine (``runnable_here = False``), not a refusal.

>>> from resolver.knowledge import Knowledge
>>> from resolver.profile import HardwareProfile
>>> from resolver.plan import Request, Target
>>> v100 = HardwareProfile.from_json({"platform": "linux-64", "glibc": "2.35", "python": "3.11.7",
...     "nvidia": {"driver_version": "580.82.07",
...                "gpus": [{"name": "Tesla V100-PCIE-16GB", "compute_capability": "7.0"}]},
...     "amd": None, "cuda_toolkit": None})
>>> k = Knowledge.load()
>>> plan = decide(v100, Request(), k).plan
>>> plan.torch.variant, plan.kernels.arch_list
('cu126', ('7.0',))
>>> print(decide(v100, Request(Target.parse("cuda13.0")), k).refusal.message)
CUDA 13.0 cannot target compute capability 7.0 (Tesla V100-PCIE-16GB): CUDA 13 dropped sm_70
"""

from __future__ import annotations

from typing import NamedTuple

from resolver.errors import Refusal
from resolver.knowledge import Knowledge, TorchRelease, TorchVariant, driver_text
from resolver.plan import (CondaChoice, KernelChoice, PatchRef, Plan, PlanOutcome, Request, TorchChoice,
                           TorchSource, TraceStep)
from resolver.profile import HardwareProfile
from resolver.versions import ComputeCapability, DottedVersion, GfxArch

KERNEL_PACKAGES = ("causal-conv1d", "mamba-ssm")
_MACHINES = {"linux-64": "x86_64", "linux-aarch64": "aarch64", "linux-ppc64le": "ppc64le"}
# How far a candidate got before a rule stopped it; the refusal reports the furthest one.
_STAGES = ("python", "glibc", "kernels", "confirmed", "toolkit", "driver", "nvcc-arch", "wheel-arch", "rocm")


class _Gpu(NamedTuple):
    name: str
    cc: ComputeCapability | None = None
    gfx: GfxArch | None = None

    @property
    def arch(self) -> str:
        return str(self.cc) if self.cc is not None else str(self.gfx)

    @property
    def short(self) -> str:
        return self.name.replace("NVIDIA ", "").replace("AMD ", "").strip() or self.name


class _Failure(NamedTuple):
    stage: str
    message: str  # the blocking fact, one sentence without the fix
    fix: str


class _Context:
    """The inputs of one decision and the trace and warnings it collects."""

    def __init__(self, profile: HardwareProfile, request: Request, k: Knowledge, python: DottedVersion) -> None:
        self.profile, self.request, self.k, self.python = profile, request, k, python
        self.trace: list[TraceStep] = []
        self.warnings: list[str] = []

    def step(self, rule: str, result: str, because: str) -> None:
        self.trace.append(TraceStep(rule, result, because))

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    @property
    def os(self) -> str:
        return self.profile.os

    @property
    def driver_os(self) -> str:
        """Whose driver floors apply: WSL runs CUDA on the Windows driver (its version is what it reports)."""
        return "win" if self.os == "win" or self.profile.wsl else "linux"

    @property
    def glibc(self) -> DottedVersion | None:
        return self.profile.glibc if self.os == "linux" else None


# Pythons tried, in order, when the machine's own Python rules out every build and --python was not given
# (the environment gets its own interpreter from conda-forge).
PYTHON_FALLBACKS = ("3.12", "3.11", "3.13", "3.10", "3.9")


def decide(profile: HardwareProfile, request: Request, knowledge: Knowledge) -> PlanOutcome:
    """Choose torch and the Mamba kernels for ``profile``; a refusal says which fact blocks it.

    The environment's Python is ``--python`` when given (respected or refused); otherwise the
    machine's own, unless that rules out every build, in which case the environment gets the first of
    :data:`PYTHON_FALLBACKS` that plans (with a warning)."""
    host = profile.python.truncate(2)
    first = _decide_for(profile, request, knowledge, (request.python or host).truncate(2),
                        "requested with --python" if request.python
                        else dict(profile.assumed).get("python", "the Python this machine runs"))
    if first.plan is not None or request.python is not None:
        return first
    for text in PYTHON_FALLBACKS:
        python = DottedVersion.parse(text)
        if python == host:
            continue
        second = _decide_for(profile, request, knowledge, python,
                             f"the Python here ({python_text(host)}) rules out every build: {first.refusal.message}; "
                             f"the environment gets its own Python {text}",
                             warning=f"Python {python_text(host)} here cannot run this plan ({first.refusal.message}); "
                                     f"the environment gets Python {text} from conda-forge (pass --python X.Y to choose)")
        if second.plan is not None:
            return second
    return first


def _decide_for(profile: HardwareProfile, request: Request, knowledge: Knowledge, python: DottedVersion,
                why: str, warning: str | None = None) -> PlanOutcome:
    ctx = _Context(profile, request, knowledge, python)
    ctx.step("python", python_text(python), why)
    if warning:
        ctx.warn(warning)
    # A profile from a pasted report (probe --from-report) lists what the report did not say.
    for field, assumption in profile.assumed:
        if not (field == "python" and request.python):
            ctx.warn(assumption)
    try:
        plan = _decide(ctx)
    except Refusal as refusal:
        return PlanOutcome(plan=None, refusal=refusal, trace=tuple(ctx.trace))
    return PlanOutcome(plan=plan, trace=plan.trace)


def plan_for(request: Request, profile: HardwareProfile | None = None) -> Plan:
    """Plan for ``profile`` (default: probe this machine); raises the :class:`Refusal` if refused."""
    if profile is None:
        profile = _probe_here()
    outcome = decide(profile, request, Knowledge.load())
    if outcome.plan is None:
        raise outcome.refusal
    return outcome.plan


def _probe_here() -> HardwareProfile:
    try:
        from resolver.probe import probe_machine
    except ImportError:  # the probe stage not installed: the minimum this interpreter knows
        import platform as _platform
        import sys

        machine = _platform.machine().lower()
        system = sys.platform
        subdir = {("linux", "x86_64"): "linux-64", ("linux", "aarch64"): "linux-aarch64",
                  ("darwin", "arm64"): "osx-arm64", ("darwin", "x86_64"): "osx-64",
                  ("win32", "amd64"): "win-64"}.get((system, machine), "linux-64")
        libc, version = _platform.libc_ver()
        return HardwareProfile(platform=subdir, python=DottedVersion.parse(_platform.python_version()),
                               glibc=DottedVersion.parse(version) if libc == "glibc" and version else None,
                               notes=("the probe stage is not installed: no GPU detection",))
    return probe_machine()


def python_text(python: DottedVersion) -> str:
    return f"{python.major}.{python.minor}"


# ----------------------------------------------------------------------------------------- dispatch


def _decide(ctx: _Context) -> Plan:
    profile, target = ctx.profile, ctx.request.target
    nvidia = [_Gpu(g.name, cc=g.compute_capability) for g in (profile.nvidia.gpus if profile.nvidia else ())]
    amd = [_Gpu(g.name, gfx=g.gfx_arch) for g in (profile.amd.gpus if profile.amd else ())]
    ctx.step("platform", profile.platform, _describe_hardware(profile, nvidia, amd))

    if target.backend == "cpu":
        ctx.step("backend", "cpu", "requested with --target cpu")
        return _cpu_plan(ctx, "--target cpu")
    if target.backend == "cuda":
        if ctx.os == "osx":
            raise Refusal(f"--target {target} cannot run on macOS: PyTorch publishes no CUDA builds for it",
                          fix="use --target cpu (or plan for a Linux machine with --profile FILE)")
        if not nvidia:
            return _cuda_plan_elsewhere(ctx)
        return _cuda_plan(ctx, nvidia)
    if target.backend == "rocm":
        if ctx.os != "linux":
            raise Refusal(f"--target {target} needs Linux: PyTorch publishes ROCm builds for Linux only",
                          fix="use --target cpu here, or plan for a Linux machine with --profile FILE")
        return _rocm_plan(ctx, amd)

    # auto
    if ctx.os == "osx":
        ctx.step("backend", "cpu", "macOS has no CUDA or ROCm builds of PyTorch; the Mamba kernels are CUDA/ROCm only")
        return _cpu_plan(ctx, "macOS")
    if nvidia:
        if amd:
            ctx.warn("NVIDIA and AMD GPUs in one machine: planning for the NVIDIA GPUs; "
                     "use --target rocmX.Y for the AMD ones")
        ctx.step("backend", "cuda", f"{len(nvidia)} NVIDIA GPU(s) found")
        return _cuda_plan(ctx, nvidia)
    if amd:
        rocm = profile.amd.rocm_version if profile.amd else None
        if rocm is None:
            ctx.step("backend", "cpu", "AMD GPU(s) found but no ROCm installation")
            ctx.warn("AMD GPU found but ROCm is not installed: CPU plan. Install ROCm 6.1 or newer "
                     "(6.0 works with the bf16 header fix) and plan again.")
            return _cpu_plan(ctx, "no ROCm")
        ctx.step("backend", "rocm", f"{len(amd)} AMD GPU(s) with ROCm {rocm}")
        return _rocm_plan(ctx, amd)
    ctx.step("backend", "cpu", "no NVIDIA or AMD GPU found")
    return _cpu_plan(ctx, "no GPU")


def _describe_hardware(profile: HardwareProfile, nvidia: list[_Gpu], amd: list[_Gpu]) -> str:
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


# -------------------------------------------------------------------------------- shared candidates


def _release_failure(ctx: _Context, release: TorchRelease, kernels: bool) -> _Failure | None:
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
        return _Failure("python", why, fix)
    if ctx.glibc is not None and ctx.glibc < release.glibc_min:
        return _Failure("glibc", f"torch {release.name} wheels need glibc >= {release.glibc_min} "
                                 f"(manylinux_{str(release.glibc_min).replace('.', '_')}), this system has {ctx.glibc}",
                        "use a newer Linux (glibc >= 2.28: RHEL/Rocky 8, Ubuntu 18.10+) or run in a container")
    if kernels:
        for package in KERNEL_PACKAGES:
            if ctx.k.kernel_release(package, release.version, ctx.python) is None:
                info = [r for r in ctx.k.kernel_releases if r.package == package]
                min_py = min((r.python_min for r in info), default=None)
                if min_py is not None and ctx.python < min_py:
                    return _Failure("kernels", f"{package} needs Python >= {python_text(min_py)}",
                                    f"use --python {python_text(min_py)} or newer")
                return _Failure("kernels", f"no {package} release supports torch {release.name}",
                                "use a newer torch (drop --python) or --target cpu")
    return None


def _kernel_versions(ctx: _Context, release: TorchRelease) -> tuple[tuple[str, str], ...]:
    out = []
    for package in KERNEL_PACKAGES:
        found = ctx.k.kernel_release(package, release.version, ctx.python)
        out.append((package, found.version))
    return tuple(out)


def _torch_choice(ctx: _Context, release: TorchRelease, variant: TorchVariant,
                  conda: CondaChoice | None) -> TorchChoice:
    if ctx.os == "osx":
        return TorchChoice(version=release.latest, variant="cpu",
                           source=TorchSource("pypi", "https://pypi.org/simple"), conda=conda,
                           cxx11_abi=release.cxx11_abi, local_version=None)
    local: str | None = variant.tag
    if ctx.profile.platform == "linux-64" and variant.tag == release.pypi_default:
        # PyPI's linux-64 wheel of this release *is* this build, published without the +local label; a plain
        # ==X.Y.Z pin matches it and download.pytorch.org's X.Y.Z+tag alike (PEP 440 ignores the label).
        local = None
        ctx.step("torch-pin", f"torch=={release.latest}", f"{variant.tag} is PyPI's default linux-64 build of "
                                                          f"torch {release.name}: the plain pin matches PyPI and "
                                                          f"download.pytorch.org/whl/{variant.tag} alike")
    return TorchChoice(version=release.latest, variant=variant.tag,
                       source=TorchSource("pypi-index", f"https://download.pytorch.org/whl/{variant.tag}"),
                       conda=conda, cxx11_abi=release.cxx11_abi, local_version=local)


def _glibc_note(ctx: _Context) -> None:
    if ctx.os == "linux" and ctx.profile.glibc is None:
        ctx.warn("glibc version unknown: assumed new enough (torch 2.6+ wheels need glibc >= 2.28)")


def _cxx_note(ctx: _Context, release: TorchRelease) -> None:
    if release.cxx_standard > 17:
        ctx.step("cxx-standard", f"c++{release.cxx_standard}",
                 f"torch {release.name} headers need C++{release.cxx_standard}; upstream setup.py forces c++17, "
                 f"so the kernels are built with our fix (build_fix 'cxx20')")


# -------------------------------------------------------------------------------------------- CPU


def _cpu_plan(ctx: _Context, why: str) -> Plan:
    _glibc_note(ctx)
    rejected: list[str] = []
    for release in ctx.k.releases_newest_first():
        variants = [v for v in release.variants_for(ctx.profile.platform, "cpu")]
        if not variants:
            continue
        failure = _release_failure(ctx, release, kernels=False)
        if failure:
            rejected.append(f"torch {release.name}: {failure.message}")
            continue
        variant = variants[0]
        if not (variant.confirmed and release.confirmed):
            rejected.append(f"torch {release.name}: its cpu wheels are not confirmed by a second source")
            continue
        for line in rejected:
            ctx.step("torch-release", "eliminated", line)
        ctx.step("torch-release", release.latest, f"the newest torch with a confirmed cpu build for "
                                                  f"{ctx.profile.platform} and Python {python_text(ctx.python)}")
        ctx.step("kernels", "none", "no CUDA/ROCm GPU to run the Mamba kernels: the reference (pure PyTorch) path runs")
        conda = CondaChoice("conda-forge", f"pytorch {release.latest} cpu*")
        ctx.step("conda", conda.spec, "conda-forge builds pytorch for CPU on every platform "
                                      f"(the pytorch channel stopped after {ctx.k.conda_forge.pytorch_channel_last})")
        torch = _torch_choice(ctx, release, variant, conda)
        summary = (f"CPU plan ({why}): torch {release.latest} ({'PyPI' if ctx.os == 'osx' else 'cpu wheels'}) "
                   f"for Python {python_text(ctx.python)} on {ctx.profile.platform}. Mamba's CUDA/ROCm kernels are not "
                   f"installed; models run on the reference path.")
        return Plan(backend="cpu", backend_version=None, python=python_text(ctx.python), platform=ctx.profile.platform,
                    torch=torch, kernels=KernelChoice(strategy="none"), warnings=tuple(ctx.warnings),
                    trace=tuple(ctx.trace), glibc=_s(ctx.glibc), cuda_driver=None, runnable_here=True,
                    summary=summary, target=str(ctx.request.target))
    failure_lines = "; ".join(rejected[:2])
    raise Refusal(f"no torch release has CPU wheels for Python {python_text(ctx.python)} on {ctx.profile.platform}",
                  because=failure_lines or None, fix="use --python 3.11 (or another Python torch supports)")


# ------------------------------------------------------------------------------------------- CUDA


class _CudaPick(NamedTuple):
    release: TorchRelease
    variant: TorchVariant
    coverage: tuple[str, ...]  # how each GPU runs the wheel, for the trace


def _driver(ctx: _Context) -> tuple[DottedVersion | None, DottedVersion | None]:
    nvidia = ctx.profile.nvidia
    if nvidia is None:
        return None, None
    return nvidia.driver_version, nvidia.cuda_driver_version


def _driver_failure(ctx: _Context, cuda: DottedVersion) -> _Failure | None:
    driver, driver_cuda = _driver(ctx)
    os = ctx.driver_os
    floor = ctx.k.mvc_floor(cuda.major, os)
    if driver is not None and floor is not None:
        if driver >= floor:
            return None
        return _Failure("driver", f"CUDA {cuda} needs NVIDIA driver >= {driver_text(floor)} (CUDA {cuda.major}.x "
                                  f"minor-version compatibility), this machine has {driver_text(driver)}",
                        f"upgrade the NVIDIA driver to {driver_text(floor)} or newer")
    if driver_cuda is not None:
        if driver_cuda.major >= cuda.major:
            return None
        return _Failure("driver", f"CUDA {cuda} needs a driver for CUDA {cuda.major}.x, this driver supports CUDA {driver_cuda}",
                        f"upgrade the NVIDIA driver (>= {driver_text(floor) if floor else 'a newer one'})")
    return None


def _coverage_failure(ctx: _Context, variant: TorchVariant, gpus: list[_Gpu]) -> tuple[_Failure | None, tuple[str, ...]]:
    """Does every GPU find code in the wheel? (cubin of same major, lower-or-equal minor, or PTX)."""
    how = []
    driver, _ = _driver(ctx)
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
            return _Failure("wheel-arch", f"torch {variant.tag} wheels reach compute capability {gpu.cc} ({gpu.short}) "
                                          f"only through PTX, which needs driver >= {driver_text(full_floor)}",
                            f"upgrade the NVIDIA driver to {driver_text(full_floor)} or newer"), ()
        lowest = variant.lowest_arch
        highest = max(variant.cubins).sm if variant.cubins else "none"
        where = f"start at {lowest}" if gpu.cc < min(variant.cubins) else f"stop at {highest}"
        return _Failure("wheel-arch", f"{variant.tag} wheels have no kernels for compute capability {gpu.cc} "
                                      f"({gpu.short}): they {where}", ""), ()
    return None, tuple(how)


def _nvcc_failure(ctx: _Context, nvcc: DottedVersion, gpus: list[_Gpu]) -> _Failure | None:
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
        return _Failure("nvcc-arch", f"CUDA {nvcc} cannot target compute capability {gpu.cc} ({gpu.short}): {why}", "")
    return None


def _cuda_candidates(ctx: _Context, gpus: list[_Gpu], wanted: DottedVersion | None,
                     kernels: bool) -> tuple[_CudaPick | None, list[tuple[TorchRelease, TorchVariant | None, _Failure]]]:
    """The first (newest torch, newest CUDA) candidate every rule accepts, and all that were rejected.
    Unconfirmed rows count only for an explicit target that no confirmed row satisfies."""
    pick, rejected = _cuda_search(ctx, gpus, wanted, kernels, allow_unconfirmed=False)
    if pick is None and wanted is not None:
        pick, _ = _cuda_search(ctx, gpus, wanted, kernels, allow_unconfirmed=True)
        if pick is not None:
            ctx.warn(f"torch {pick.release.name} {pick.variant.tag} rests on one unconfirmed source "
                     f"({pick.variant.source.split(' (')[0].split(';')[0]}); chosen because --target asked for it")
    return pick, rejected


def _cuda_search(ctx: _Context, gpus: list[_Gpu], wanted: DottedVersion | None, kernels: bool,
                 allow_unconfirmed: bool):
    rejected: list[tuple[TorchRelease, TorchVariant | None, _Failure]] = []
    for release in ctx.k.releases_newest_first():
        variants = [v for v in release.variants_for(ctx.profile.platform, "cuda")
                    if wanted is None or _matches(v.version, wanted)]
        if not variants:
            continue
        failure = _release_failure(ctx, release, kernels)
        if failure:
            rejected.append((release, None, failure))
            continue
        for variant in variants:
            failure = _variant_failure(ctx, release, variant, gpus, explicit=allow_unconfirmed, kernels=kernels)
            if failure is not None:
                rejected.append((release, variant, failure))
                continue
            _, coverage = _coverage_failure(ctx, variant, gpus)
            return _CudaPick(release, variant, coverage), rejected
    return None, rejected


def _variant_failure(ctx: _Context, release: TorchRelease, variant: TorchVariant, gpus: list[_Gpu],
                     explicit: bool, kernels: bool) -> _Failure | None:
    if not (variant.confirmed and release.confirmed) and not explicit:
        return _Failure("confirmed", f"torch {release.name} {variant.tag} rests on one unconfirmed source", "")
    if kernels and variant.version < ctx.k.min_cuda():
        return _Failure("toolkit", f"the Mamba kernels need CUDA >= {ctx.k.min_cuda()}, {variant.tag} is CUDA {variant.version}", "")
    failure = _driver_failure(ctx, variant.version)
    if failure:
        return failure
    if kernels:
        failure = _nvcc_failure(ctx, variant.version, gpus)
        if failure:
            return failure
    failure, _ = _coverage_failure(ctx, variant, gpus)
    return failure


def _matches(version: DottedVersion | None, wanted: DottedVersion) -> bool:
    if version is None:
        return False
    if len(wanted.parts) == 1:
        return version.major == wanted.major
    return version.truncate(2) == wanted.truncate(2)


def _cuda_plan(ctx: _Context, gpus: list[_Gpu]) -> Plan:
    _glibc_note(ctx)
    wanted = ctx.request.target.version if ctx.request.target.backend == "cuda" else None
    kernels = ctx.os == "linux"
    if not kernels:
        ctx.warn("mamba-ssm and causal-conv1d publish no builds for this platform and their build scripts target "
                 "Linux: kernels 'none', the reference path runs (on the GPU through PyTorch)")
    driver, driver_cuda = _driver(ctx)
    if driver is None and driver_cuda is None:
        ctx.warn("NVIDIA driver version unknown: assuming it runs the chosen CUDA; check `nvidia-smi`")
    pick, rejected = _cuda_candidates(ctx, gpus, wanted, kernels)
    if pick is None:
        raise _cuda_refusal(ctx, gpus, wanted, rejected, kernels)
    _trace_rejections(ctx, pick.release, rejected)
    return _cuda_plan_from(ctx, pick, gpus, rejected, kernels)


def _trace_rejections(ctx: _Context, chosen: TorchRelease, rejected) -> None:
    """One trace line per newer release (and per rejected variant of the chosen one)."""
    by_release: dict[str, list[str]] = {}
    for release, variant, failure in rejected:
        key = release.name
        text = failure.message if variant is None else f"{variant.tag}: {failure.message}"
        by_release.setdefault(key, [])
        if text not in by_release[key]:
            by_release[key].append(text)
    for name, reasons in by_release.items():
        if name == chosen.name:
            for reason in reasons:
                ctx.step("variant", "eliminated", f"torch {name} {reason}")
        else:
            ctx.step("torch-release", f"{name} eliminated", "; ".join(reasons[:3]) + (" …" if len(reasons) > 3 else ""))


def _cuda_plan_from(ctx: _Context, pick: _CudaPick, gpus: list[_Gpu], rejected, kernels: bool) -> Plan:
    release, variant = pick.release, pick.variant
    cuda = variant.version
    ctx.step("torch-release", release.latest,
             "the newest torch for which mamba-ssm and causal-conv1d work on this machine" if kernels
             else "the newest torch whose wheels run here")
    driver, driver_cuda = _driver(ctx)
    floor = ctx.k.mvc_floor(cuda.major, ctx.driver_os)
    if driver is not None:
        ctx.step("driver", "ok", f"driver {driver_text(driver)} >= {driver_text(floor)}, the CUDA {cuda.major}.x "
                                 f"minor-version compatibility floor")
    elif driver_cuda is not None:
        ctx.step("driver", "ok", f"the driver reports CUDA {driver_cuda}, which runs CUDA {cuda.major}.x")
    ctx.step("arch-coverage", variant.tag, "; ".join(pick.coverage))
    highlight = _not_newer_line(ctx, release, variant, rejected, gpus)
    if highlight:
        ctx.step("variant", f"{variant.tag}, not {highlight[0]}", highlight[1])
    conda = _conda_cuda(ctx, release, cuda, gpus)
    torch = _torch_choice(ctx, release, variant, conda)
    if kernels:
        kernel_choice = _cuda_kernels(ctx, release, cuda, gpus)
        _cxx_note(ctx, release)
    else:
        kernel_choice = KernelChoice(strategy="none")
    cuda_driver = driver_cuda or (ctx.k.newest_cuda_for_driver(driver, ctx.driver_os)
                                  if driver is not None else None) or cuda
    names = _gpu_summary(gpus)
    why = f"{highlight[0]} is out: {highlight[1]}. " if highlight else ""
    kernel_text = _kernel_text(kernel_choice)
    summary = (f"torch {release.latest}+{variant.tag} (CUDA {cuda}) from download.pytorch.org for {names}"
               f"{' on driver ' + driver_text(driver) if driver else ''}: the newest PyTorch whose wheels carry kernels "
               f"for every GPU here and whose CUDA runtime this driver runs. {why}{kernel_text}")
    return Plan(backend="cuda", backend_version=str(cuda), python=python_text(ctx.python), platform=ctx.profile.platform,
                torch=torch, kernels=kernel_choice, warnings=tuple(ctx.warnings), trace=tuple(ctx.trace),
                glibc=_s(ctx.glibc), cuda_driver=str(cuda_driver.truncate(2)), runnable_here=True,
                summary=summary, target=str(ctx.request.target))


def _not_newer_line(ctx: _Context, release: TorchRelease, variant: TorchVariant, rejected,
                    gpus: list[_Gpu]) -> tuple[str, str] | None:
    """"cu126, not cu128: GTX 1080 Ti is sm_61 and cu128 wheels start at sm_70" — the next newer variant
    of the chosen release, and why it lost (for arch reasons, phrased around the GPU)."""
    newer = [(v, f) for r, v, f in rejected if r is release and v is not None and v.version > variant.version
             and f.stage != "confirmed"]
    if not newer:
        return None
    newer.sort(key=lambda item: item[0].version)
    other, failure = newer[0]
    if failure.stage in ("wheel-arch", "nvcc-arch"):
        for gpu in gpus:
            if other.cubin_for(gpu.cc) is None and other.ptx_for(gpu.cc) is None:
                edge = f"start at {other.lowest_arch}" if gpu.cc < min(other.cubins) else f"stop at {max(other.cubins).sm}"
                return other.tag, f"{gpu.short} is {gpu.cc.sm} and {other.tag} wheels {edge}"
    return other.tag, failure.message


def _cuda_kernels(ctx: _Context, release: TorchRelease, cuda: DottedVersion, gpus: list[_Gpu]) -> KernelChoice:
    packages = _kernel_versions(ctx, release)
    archs: list[ComputeCapability] = []
    for gpu in gpus:
        build = ctx.k.build_target(cuda, gpu.cc)
        if build != gpu.cc:
            ctx.step("nvcc-arch", f"{build} for {gpu.cc}", f"nvcc {cuda} has no {gpu.cc.sm}; a {build.sm} cubin runs "
                                                          f"on {gpu.short} (same major, lower minor)")
        archs.append(build)
    for fix in ctx.k.fixes_for():
        if fix.avoid_arch and cuda.major >= 13:
            avoid = ComputeCapability.parse(fix.avoid_arch)
            if avoid in archs:
                instead = ComputeCapability.parse(fix.use_instead)
                archs = [instead if a == avoid else a for a in archs]
                ctx.step("nvcc-arch", f"{instead} instead of {avoid}", f"{fix.what} ({fix.source.split(';')[0]})")
    arch_list = tuple(str(a) for a in sorted(set(archs)))
    ctx.step("kernels-arch", ",".join(arch_list), "the union of the GPUs' own architectures (not upstream's full list)")
    upstream_min = min(ctx.k.kernel_package(p).upstream_archs_min for p in KERNEL_PACKAGES)
    below = [g for g in gpus if g.cc < upstream_min]
    if below:
        ctx.warn(f"{', '.join(sorted({g.short for g in below}))}: {below[0].cc.sm} is below the architectures upstream "
                 f"builds and tests (>= {upstream_min.sm}); the kernels are built for it, but upstream does not test it")
    machine = _MACHINES.get(ctx.profile.platform)
    wheels = []
    uncovered: list[str] = []
    for package, version in packages:
        found = ctx.k.prebuilt_wheel(package, version, release.name, cuda.major, release.cxx11_abi,
                                     python_text(ctx.python), machine or "")
        if not found:
            continue
        kernel = ctx.k.kernel_release(package, release.version, ctx.python)
        cubins = kernel.wheel_cubins(cuda.major)
        missing = [g for g in gpus if not any(c.major == g.cc.major and c.minor <= g.cc.minor for c in cubins)]
        if missing:
            uncovered.append(f"{found[0]} has no kernels for {missing[0].cc.sm} ({missing[0].short}): it carries "
                             f"{', '.join(c.sm for c in cubins)}")
            continue
        wheels.append((package, found[0]))
    toolkit = f"nvcc {cuda}"
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
    system = ctx.profile.cuda_toolkit
    if system is not None and system.major != cuda.major:
        ctx.warn(f"the system nvcc is CUDA {system}, torch is CUDA {cuda}: the kernels need nvcc {cuda.major}.x "
                 f"(the environment gets its own cuda-nvcc {cuda})")
    return KernelChoice(strategy=strategy, arch_list=arch_list, packages=packages, toolkit=toolkit,
                        prebuilt_wheels=tuple(wheels))


def _conda_cuda(ctx: _Context, release: TorchRelease, cuda: DottedVersion, gpus: list[_Gpu]) -> CondaChoice:
    builds = ctx.k.conda_forge.cuda_builds(release.latest, ctx.profile.platform)
    if builds:
        usable = []
        for build in sorted(builds, reverse=True):
            lists = ctx.k.conda_forge.archs_of(build)
            if build.major != cuda.major or lists is None or _driver_failure(ctx, build):
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


def _cuda_refusal(ctx: _Context, gpus: list[_Gpu], wanted: DottedVersion | None, rejected, kernels: bool) -> Refusal:
    target = ctx.request.target
    if not rejected:
        return Refusal(f"--target {target}: PyTorch publishes no CUDA {wanted} wheels for {ctx.profile.platform}",
                       fix=_way_out(ctx, gpus, kernels, f"use one of {_cuda_targets(ctx)}"))
    # the candidate that got furthest (latest rule) names the blocking fact
    release, variant, failure = max(rejected, key=lambda item: _STAGES.index(item[2].stage))
    if failure.stage in ("python", "kernels"):
        failure = _python_too_old(ctx, rejected) or failure
    if failure.stage == "driver" and wanted is None:
        failure = _driver_too_old(ctx, [v for _, v, f in rejected if v is not None and f.stage == "driver"])
    if failure.stage in ("wheel-arch", "nvcc-arch") and len({g.cc for g in gpus}) > 1:
        failure = _mixed_failure(ctx, gpus, kernels) or failure
    for line in {f"torch {r.name} {v.tag if v else ''}: {f.message}" for r, v, f in rejected[:6]}:
        ctx.step("candidate", "eliminated", line)
    fix = failure.fix
    if (wanted is not None or failure.stage in ("wheel-arch", "nvcc-arch", "confirmed", "toolkit")) \
            and not failure.message.startswith("no single PyTorch CUDA build"):
        fix = _way_out(ctx, gpus, kernels, fix or "use --target cpu", rejected)
    return Refusal(failure.message, fix=fix or "use --target cpu",
                   because=f"{target}: {failure.message}")


def _mixed_failure(ctx: _Context, gpus: list[_Gpu], kernels: bool) -> _Failure | None:
    """A mixed node whose GPUs each have a build, just not a common one."""
    picks = {}
    for cc in sorted({g.cc for g in gpus}):
        group = [g for g in gpus if g.cc == cc]
        alone, _ = _cuda_search(_Context(ctx.profile, ctx.request, ctx.k, ctx.python), group, None, kernels,
                                allow_unconfirmed=False)
        if alone is None:
            return None
        picks[group[0].short] = (cc, alone)
    parts = [f"{name} ({cc.sm}) needs {pick.variant.tag} or a build like it" for name, (cc, pick) in picks.items()]
    return _Failure("wheel-arch", "no single PyTorch CUDA build has kernels for every GPU in this node: "
                    + "; ".join(parts),
                    "plan for one kind of GPU at a time (CUDA_VISIBLE_DEVICES, and a --profile listing only "
                    "those GPUs), or use --target cpu")


def _python_too_old(ctx: _Context, rejected) -> _Failure | None:
    """"Python 3.8: torch 2.5+ dropped it and the kernels need >= 3.9" from the per-release rejections."""
    py = python_text(ctx.python)
    dropped = [r for r, _, f in rejected if f.stage == "python" and ctx.python < DottedVersion.parse(r.python[0])]
    kernel = next((f.message for _, _, f in rejected if f.stage == "kernels"), None)
    if not dropped:
        return None
    first = min(dropped, key=lambda r: r.version)
    parts = [f"torch {first.name} and newer dropped Python {py}"]
    if kernel:
        parts.append(kernel)
    newest = max(dropped, key=lambda r: r.version)
    return _Failure("python", f"Python {py} is not supported: " + "; ".join(parts),
                    f"use --python {newest.python[0]} or newer")


def _driver_too_old(ctx: _Context, variants: list[TorchVariant]) -> _Failure:
    driver, driver_cuda = _driver(ctx)
    os = ctx.driver_os
    majors = sorted({v.version.major for v in variants})
    floors = [(m, ctx.k.mvc_floor(m, os)) for m in majors]
    lowest = min(f for _, f in floors)
    have = driver_text(driver) if driver is not None else f"a CUDA {driver_cuda} driver"
    options = " or ".join(f">= {driver_text(f)} for CUDA {m}" for m, f in floors[-2:])
    return _Failure("driver", f"NVIDIA driver {have} is older than {driver_text(lowest)}, the oldest driver that runs "
                              f"a PyTorch CUDA build these GPUs can use", f"upgrade the NVIDIA driver ({options}), "
                                                                          f"or use --target cpu")


def _way_out(ctx: _Context, gpus: list[_Gpu], kernels: bool, fallback: str, rejected=()) -> str:
    """What does work here: a target found by an untargeted search (no trace left behind), else one
    only an unconfirmed row allows, plus a driver upgrade when newer CUDA majors failed on the driver."""
    probe = _Context(ctx.profile, ctx.request, ctx.k, ctx.python)
    asked = ctx.request.target.version
    pick, _ = _cuda_candidates(probe, gpus, None, kernels)
    if pick is not None and (asked is None or not _matches(pick.variant.version, asked)):
        return f"Use --target cuda{pick.variant.version}"
    options = []
    risky, _ = _cuda_search(probe, gpus, None, kernels, allow_unconfirmed=True)
    if risky is not None and (asked is None or not _matches(risky.variant.version, asked)):
        options.append(f"use --target cuda{risky.variant.version} (torch {risky.release.latest}; its "
                       f"{risky.variant.tag} arch list rests on one unconfirmed source)")
    driver_majors = sorted({v.version.major for _, v, f in rejected if v is not None and f.stage == "driver"})
    if driver_majors:
        floor = ctx.k.mvc_floor(driver_majors[0], ctx.driver_os)
        options.append(f"upgrade the NVIDIA driver to >= {driver_text(floor)} for CUDA {driver_majors[0]} builds")
    if options:
        text = " or ".join(options)
        return text[:1].upper() + text[1:]
    return fallback[:1].upper() + fallback[1:] if fallback else "Use --target cpu"


def _cuda_plan_elsewhere(ctx: _Context) -> Plan:
    """``--target cudaX.Y`` without an NVIDIA GPU here: a plan for the machine that has one."""
    wanted = ctx.request.target.version
    _glibc_note(ctx)
    ctx.step("target", f"cuda{wanted}", "no NVIDIA GPU here: planning for another machine with the requested CUDA")
    for release in ctx.k.releases_newest_first():
        variants = [v for v in release.variants_for(ctx.profile.platform, "cuda") if _matches(v.version, wanted)]
        if not variants:
            continue
        failure = _release_failure(ctx, release, kernels=ctx.os == "linux")
        if failure:
            ctx.step("torch-release", f"{release.name} eliminated", failure.message)
            continue
        confirmed = [v for v in variants if v.confirmed and release.confirmed]
        if not confirmed:
            ctx.step("torch-release", f"{release.name} eliminated", f"its {variants[0].tag} wheels are not confirmed")
            continue
        variant = confirmed[0]
        cuda = variant.version
        if cuda < ctx.k.min_cuda():
            raise Refusal(f"the Mamba kernels need CUDA >= {ctx.k.min_cuda()}, {variant.tag} is CUDA {cuda}",
                          fix="use --target cuda12.6 or newer")
        ctx.step("torch-release", release.latest, f"the newest torch with {variant.tag} wheels for "
                                                  f"Python {python_text(ctx.python)}")
        builds = [ctx.k.build_target(cuda, c) for c in variant.cubins]
        archs = sorted({b for b in builds if b is not None})
        if cuda.major >= 13:
            archs = [a for a in archs if str(a) != "10.3"]
        arch_list = tuple(str(a) for a in archs)
        kernels = ctx.os == "linux"
        ctx.warn(f"no NVIDIA GPU here: this plan is for another machine (CUDA {cuda} needs driver >= "
                 f"{driver_text(ctx.k.mvc_floor(cuda.major))} there); the kernels get built for the torch wheel's "
                 f"architectures ({', '.join(arch_list)}) or, on the target machine, for its own GPUs")
        packages = _kernel_versions(ctx, release) if kernels else ()
        ctx.step("kernels", "build" if kernels else "none",
                 f"for the {variant.tag} wheel's architectures {', '.join(arch_list)} with nvcc {cuda}")
        if kernels:
            _cxx_note(ctx, release)
        conda = _conda_cuda(ctx, release, cuda, [])
        torch = _torch_choice(ctx, release, variant, conda)
        kernel_choice = KernelChoice(strategy="build" if kernels else "none", arch_list=arch_list if kernels else (),
                                     packages=packages, toolkit=f"nvcc {cuda}" if kernels else None)
        summary = (f"A plan for another machine: torch {release.latest}+{variant.tag} (CUDA {cuda}) for Python "
                   f"{python_text(ctx.python)}; no NVIDIA GPU here, so the driver and GPU checks happen on the target. "
                   + _kernel_text(kernel_choice))
        return Plan(backend="cuda", backend_version=str(cuda), python=python_text(ctx.python),
                    platform=ctx.profile.platform, torch=torch, kernels=kernel_choice, warnings=tuple(ctx.warnings),
                    trace=tuple(ctx.trace), glibc=_s(ctx.glibc), cuda_driver=str(cuda), runnable_here=False,
                    summary=summary, target=str(ctx.request.target))
    raise Refusal(f"--target {ctx.request.target}: PyTorch publishes no confirmed CUDA {wanted} wheels usable with "
                  f"Python {python_text(ctx.python)} on {ctx.profile.platform}",
                  fix=f"use one of {_cuda_targets(ctx)} (or check --python)")


def _cuda_targets(ctx: _Context) -> str:
    """The CUDA targets the tables know for this platform and Python, e.g. ``--target cuda12.6, cuda13.0``."""
    versions = sorted({v.version.truncate(2) for r in ctx.k.releases if r.supports_python(ctx.python)
                       for v in r.variants_for(ctx.profile.platform, "cuda") if v.confirmed and r.confirmed
                       and v.version >= ctx.k.min_cuda()})
    return "--target " + ", ".join(f"cuda{v}" for v in versions[-4:]) if versions else "--target cpu"


# ------------------------------------------------------------------------------------------- ROCm


def _rocm_plan(ctx: _Context, gpus: list[_Gpu]) -> Plan:
    _glibc_note(ctx)
    target = ctx.request.target
    wanted = target.version if target.backend == "rocm" else None
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
    if rocm is None:
        raise Refusal("ROCm version unknown", fix="install ROCm 6.1 or newer, or pass --target rocmX.Y")
    if rocm < minimum:
        ctx.step("rocm-version", "refused", f"ROCm {rocm} < {minimum}")
        raise Refusal(f"ROCm {rocm} is older than {minimum}, the oldest ROCm that mamba-ssm and causal-conv1d build on",
                      fix="upgrade ROCm to 6.1 or newer (6.0 needs the bf16 header fix), or use --target cpu",
                      because=f"mamba-ssm and causal-conv1d refuse ROCm < {minimum}")
    ctx.step("rocm-version", str(rocm), f"ROCm {'installed here' if installed is not None else 'requested'}; "
                                        f">= {minimum}, the Mamba kernels' floor")
    if not here:
        ctx.step("target", f"rocm{rocm}", "no AMD GPU here: planning for another machine with this ROCm")
    found = _rocm_search(ctx, gpus, rocm, wanted, allow_unconfirmed=False)
    if found is None and wanted is not None:
        found = _rocm_search(ctx, gpus, rocm, wanted, allow_unconfirmed=True)
        if found is not None:
            ctx.warn(f"torch {found[0].name} {found[1].tag} rests on one unconfirmed source; chosen because --target "
                     "asked for it")
    if found is not None:
        for line in found[2]:
            ctx.step("torch-release", "eliminated", line)
        return _rocm_plan_from(ctx, found[0], found[1], gpus, rocm, here)
    _rocm_refusal(ctx, gpus, rocm, wanted, minimum)


def _rocm_search(ctx: _Context, gpus: list[_Gpu], rocm: DottedVersion, wanted: DottedVersion | None,
                 allow_unconfirmed: bool) -> tuple[TorchRelease, TorchVariant, list[str]] | None:
    for release, variant, rejected in _rocm_walk(ctx, gpus, rocm, allow_unconfirmed):
        if variant is not None:
            return release, variant, rejected
    return None


def _rocm_walk(ctx: _Context, gpus: list[_Gpu], rocm: DottedVersion, allow_unconfirmed: bool):
    """Yield (release, variant, rejected-so-far) for the first fit, then (None, None, all rejections)."""
    rejected: list[str] = []
    for release in ctx.k.releases_newest_first():
        variants = [v for v in release.variants_for(ctx.profile.platform, "rocm")
                    if v.version.truncate(2) == rocm.truncate(2)]
        if not variants:
            continue
        failure = _release_failure(ctx, release, kernels=True)
        if failure:
            rejected.append(f"torch {release.name}: {failure.message}")
            continue
        for variant in variants:
            if not (variant.confirmed and release.confirmed) and not allow_unconfirmed:
                rejected.append(f"torch {release.name} {variant.tag}: rests on one unconfirmed source")
                continue
            archs = variant.archs + (variant.unconfirmed_archs if allow_unconfirmed else ())
            missing = [g for g in gpus if str(g.gfx) not in archs]
            if missing:
                rejected.append(f"torch {release.name} {variant.tag}: no kernels for {missing[0].gfx} "
                                f"({missing[0].short}); it has {', '.join(archs)}")
                continue
            yield release, variant, rejected
            return
    yield None, None, rejected


def _rocm_refusal(ctx: _Context, gpus: list[_Gpu], rocm: DottedVersion, wanted: DottedVersion | None,
                  minimum: DottedVersion) -> None:
    *_, (_, _, rejected) = _rocm_walk(ctx, gpus, rocm, allow_unconfirmed=wanted is not None)
    for line in rejected:
        ctx.step("torch-release", "eliminated", line)
    if not rejected:
        available = sorted({v.version.truncate(2) for r in ctx.k.releases for v in r.variants
                            if v.backend == "rocm" and v.version >= minimum and v.confirmed and r.confirmed})
        prefix = f"--target {ctx.request.target}: " if wanted is not None else ""
        raise Refusal(f"{prefix}PyTorch publishes no wheels for ROCm {rocm.truncate(2)}",
                      fix=f"install one of ROCm {', '.join(str(v) for v in available)} (or use --target cpu)")
    gpu_lines = [line for line in rejected if "no kernels for" in line]
    if gpu_lines:
        raise Refusal(f"no PyTorch build for ROCm {rocm.truncate(2)} has kernels for these GPUs "
                      f"({gpu_lines[0].split(': ', 1)[1]})",
                      fix="use a newer ROCm that supports the GPU, or --target cpu")
    raise Refusal(f"no PyTorch build for ROCm {rocm.truncate(2)} fits this machine: {rejected[0]}",
                  fix=f"pass --target rocm{rocm.truncate(2)} to accept an unconfirmed build, change --python, "
                      "or use --target cpu")


def _rocm_plan_from(ctx: _Context, release: TorchRelease, variant: TorchVariant, gpus: list[_Gpu],
                    rocm: DottedVersion, here: bool) -> Plan:
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
    packages = _kernel_versions(ctx, release)
    toolkit = f"hipcc {rocm.truncate(2)}"
    ctx.step("kernels", "build", f"upstream ships no ROCm wheels; compile with the system {toolkit} for "
                                 f"{', '.join(arch_list)}")
    _cxx_note(ctx, release)
    ctx.step("conda", "none", "conda-forge has no ROCm builds of pytorch; torch comes from "
                              f"download.pytorch.org/whl/{variant.tag}")
    torch = _torch_choice(ctx, release, variant, None)
    kernels = KernelChoice(strategy="build", arch_list=arch_list, packages=packages, toolkit=toolkit)
    patch_text = f" ROCm {rocm} needs the header fix {patches[0].id} ({patches[0].file}) before the build." if patches else ""
    summary = (f"torch {release.latest}+{variant.tag} for {_gpu_summary(gpus) if gpus else 'another machine'} with ROCm "
               f"{rocm}: the wheel variant must match the installed ROCm because the kernels compile with its hipcc."
               f"{patch_text} {_kernel_text(kernels)}")
    return Plan(backend="rocm", backend_version=str(rocm), python=python_text(ctx.python),
                platform=ctx.profile.platform, torch=torch, kernels=kernels, patches=tuple(patches),
                warnings=tuple(ctx.warnings), trace=tuple(ctx.trace), glibc=_s(ctx.glibc), cuda_driver=None,
                runnable_here=here, summary=summary, target=str(ctx.request.target))


# ---------------------------------------------------------------------------------------- helpers


def _gpu_summary(gpus: list[_Gpu]) -> str:
    counts: dict[str, int] = {}
    for gpu in gpus:
        key = f"{gpu.short} ({gpu.cc.sm if gpu.cc else gpu.gfx})"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n}x {name}" for name, n in counts.items())


def _kernel_text(kernels: KernelChoice) -> str:
    if kernels.strategy == "none":
        return "No Mamba kernels: the reference path runs."
    packages = ", ".join(f"{n} {v}" for n, v in kernels.packages)
    how = "installed from upstream's prebuilt wheels when reachable, else built" if kernels.strategy == "prebuilt" \
        else "built"
    return f"Mamba kernels ({packages}) are {how} with {kernels.toolkit} for {', '.join(kernels.arch_list)} only."


def _s(value: object | None) -> str | None:
    return None if value is None else str(value)
