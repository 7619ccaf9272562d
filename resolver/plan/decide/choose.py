"""The decision: ``(HardwareProfile, Request, Knowledge) -> PlanOutcome``, a pure function that explains itself.

It walks the torch releases newest first and, inside each, the wheel variants newest toolkit first
(:mod:`~resolver.plan.decide.search`), and takes the first candidate every rule
(:mod:`~resolver.plan.decide.rules`) accepts:

- Python and glibc inside the release's support; a Mamba kernel release for that torch and Python;
- CUDA: the runtime runs on the driver (minor-version compatibility floor of its major, or the
  driver's own CUDA version); every GPU is covered by the wheel's cubins (same major, equal or lower
  minor) or its PTX (at or below, JIT needs the toolkit's full driver floor); the kernels' nvcc
  (the variant's CUDA) can build every GPU's architecture (:mod:`~resolver.plan.decide.cuda`);
- ROCm: the variant matches the installed ROCm major.minor (the kernels build with the system
  hipcc); ROCm below 6.0 is refused; every GPU's gfx target is in the wheel; header fixes listed
  (:mod:`~resolver.plan.decide.rocm`);
- no GPU, macOS, or ``--target cpu``: a CPU plan, kernels "none", the reference path
  (:mod:`~resolver.plan.decide.cpu`).

Rows marked ``confirmed = false`` are never chosen on their own (an explicit ``--target`` may).
Every rule that fired or eliminated a candidate leaves a :class:`TraceStep`; every candidate turned
down is a structured :class:`~resolver.plan.decide.rejection.Rejection`, and refusals are sentences made
from those (:mod:`~resolver.plan.decide.explain`). A target whose hardware is absent here is a plan for
another machine (``runnable_here = False``), not a refusal.

>>> from resolver.plan.knowledge import Knowledge
>>> from resolver.plan.probe.profile import HardwareProfile
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

from resolver.core.errors import Refusal
from resolver.core.model import Plan, PlanOutcome, Request, Target  # noqa: F401 - Target: the doctest above
from resolver.core.versions import DottedVersion
from resolver.plan.decide.context import Context, python_text
from resolver.plan.knowledge import Knowledge
from resolver.plan.probe.profile import HardwareProfile

# Pythons tried, in order, when the machine's own Python rules out every build and --python was not given
# (the environment gets its own interpreter from the conda channel).
PYTHON_FALLBACKS = ("3.12", "3.11", "3.13", "3.10", "3.9")


def decide(profile: HardwareProfile, request: Request, knowledge: Knowledge) -> PlanOutcome:
    """Choose torch and the Mamba kernels for ``profile``; a refusal says which fact blocks it.

    The environment's Python is ``--python`` when given (respected or refused); otherwise the
    machine's own when current torch (the newest release) supports it. Otherwise, or when the
    machine's own rules out every build, the environment gets the first of :data:`PYTHON_FALLBACKS`
    that plans (with a warning): it brings that Python itself from the conda channel."""
    host = profile.python.truncate(2)
    if request.torch is not None and knowledge.release(request.torch) is None:
        known = [r.name for r in knowledge.releases]
        refusal = Refusal(f"torch {request.torch} is not in the knowledge base (it knows torch {known[0]} to {known[-1]})",
                          fix=f"ask for one it knows, e.g. --torch {known[-1]}, or add the release to "
                              "resolver/plan/knowledge/data/torch.toml with its sources")
        return PlanOutcome(plan=None, refusal=refusal)
    if request.python is not None:
        return _decide_for(profile, request, knowledge, request.python.truncate(2), "requested with --python")
    newest = knowledge.release(request.torch) if request.torch is not None else knowledge.releases_newest_first()[0]
    why_host = dict(profile.assumed).get("python", "the Python this machine runs")
    first = None
    if newest.supports_python(host):
        first = _decide_for(profile, request, knowledge, host, why_host)
        if first.plan is not None:
            return first
        problem = f"it rules out every build: {first.refusal.message}"
    else:
        problem = f"current torch ({newest.name}) supports Python {', '.join(newest.python)} only"
    here = f"the Python here ({python_text(host)})"
    for text in PYTHON_FALLBACKS:
        python = DottedVersion.parse(text)
        if python == host:
            continue
        second = _decide_for(profile, request, knowledge, python,
                             f"{here}: {problem}; the environment gets its own Python {text}",
                             warning=f"Python {python_text(host)} here cannot run this plan ({problem}); the environment "
                                     f"gets Python {text} from conda-forge (pass --python X.Y to choose)")
        if second.plan is not None:
            return second
    return first or _decide_for(profile, request, knowledge, host, why_host)


def _decide_for(profile: HardwareProfile, request: Request, knowledge: Knowledge, python: DottedVersion,
                why: str, warning: str | None = None) -> PlanOutcome:
    ctx = Context(profile, request, knowledge, python)
    ctx.step("python", python_text(python), why)
    if request.torch is not None:
        ctx.step("torch-request", f"torch {request.torch.truncate(2)}", "requested: only this release's builds are "
                                                                        "candidates")
    if warning:
        ctx.warn(warning)
    # A profile from a pasted report (probe --from-report) lists what the report did not say.
    for field, assumption in profile.assumed:
        if not (field == "python" and request.python):
            ctx.warn(assumption)
    try:
        plan = _dispatch(ctx)
    except Refusal as refusal:
        return PlanOutcome(plan=None, refusal=refusal, trace=tuple(ctx.trace))
    return PlanOutcome(plan=plan, trace=plan.trace)


def _dispatch(ctx: Context) -> Plan:
    """Which backend plans: the request's, else what the hardware offers."""
    from resolver.plan.decide import explain
    from resolver.plan.decide.cpu import cpu_plan
    from resolver.plan.decide.cuda import cuda_plan, cuda_plan_elsewhere
    from resolver.plan.decide.rocm import no_rocm_build_text, rocm_plan, unserved_gfx

    profile, target = ctx.profile, ctx.request.target
    nvidia, amd = ctx.nvidia_gpus(), ctx.amd_gpus()
    ctx.step("platform", profile.platform, explain.describe_hardware(profile, nvidia, amd))

    if target.backend == "cpu":
        ctx.step("backend", "cpu", "requested with --target cpu")
        return cpu_plan(ctx, "--target cpu")
    unknown = profile.nvidia.unidentified_gpus if profile.nvidia else ()
    if unknown and target.backend in ("auto", "cuda") and not (target.backend == "auto" and amd and not nvidia):
        raise Refusal(f"the compute capability of NVIDIA GPU {unknown[0]!r} is unknown (no tool printed it and "
                      f"neither its name nor its PCI id is in the GPU tables), so no kernels can be chosen for it",
                      fix="run `nvidia-smi --query-gpu=name,compute_cap --format=csv` and pass what it prints: "
                          "--compute-capability X.Y (probe, plan and lock take it)")
    unknown_amd = profile.amd.unidentified_gpus if profile.amd else ()
    if unknown_amd and target.backend in ("auto", "rocm") and not (target.backend == "auto" and nvidia and not amd):
        raise Refusal(f"the gfx target of AMD GPU {unknown_amd[0]!r} is unknown (no tool printed it and neither its "
                      f"name nor its PCI id is in the GPU tables), so no kernels can be chosen for it",
                      fix="run `rocminfo | grep gfx` and pass what it prints: --gfx gfxNNN (probe, plan and lock take it)")
    if target.backend == "cuda":
        if ctx.os == "osx":
            raise Refusal(f"--target {target} cannot run on macOS: PyTorch publishes no CUDA builds for it",
                          fix="use --target cpu (or plan for a Linux machine with --profile FILE)")
        return cuda_plan(ctx, nvidia) if nvidia else cuda_plan_elsewhere(ctx)
    if target.backend == "rocm":
        if ctx.os != "linux":
            raise Refusal(f"--target {target} needs Linux: PyTorch publishes ROCm builds for Linux only",
                          fix="use --target cpu here, or plan for a Linux machine with --profile FILE")
        return rocm_plan(ctx, amd)

    # auto
    if ctx.os == "osx":
        ctx.step("backend", "cpu", "macOS has no CUDA or ROCm builds of PyTorch; the Mamba kernels are CUDA/ROCm only")
        return cpu_plan(ctx, "macOS")
    if nvidia:
        if amd:
            ctx.warn("NVIDIA and AMD GPUs in one machine: planning for the NVIDIA GPUs; "
                     "use --target rocmX.Y for the AMD ones")
        ctx.step("backend", "cuda", f"{len(nvidia)} NVIDIA GPU(s) found")
        return cuda_plan(ctx, nvidia)
    if amd:
        rocm = profile.amd.rocm_version if profile.amd else None
        unserved = unserved_gfx(ctx, amd)
        if rocm is None and len(unserved) == len(amd):  # installing ROCm would not help: say so, not "install ROCm"
            ctx.step("backend", "cpu", no_rocm_build_text(unserved))
            ctx.warn(f"{no_rocm_build_text(unserved)}: CPU plan")
            return cpu_plan(ctx, "no ROCm build for the GPU")
        if rocm is None:
            ctx.step("backend", "cpu", "AMD GPU(s) found but no ROCm installation")
            ctx.warn("AMD GPU found but ROCm is not installed: CPU plan. Install ROCm 6.1 or newer "
                     "(6.0 works with the bf16 header fix) and plan again.")
            return cpu_plan(ctx, "no ROCm")
        ctx.step("backend", "rocm", f"{len(amd)} AMD GPU(s) with ROCm {rocm}")
        return rocm_plan(ctx, amd)
    ctx.step("backend", "cpu", "no NVIDIA or AMD GPU found")
    return cpu_plan(ctx, "no GPU")
