"""CPU plans: no GPU, macOS, AMD without ROCm, or ``--target cpu``. Kernels "none": the reference path runs.

A torch release asked for by name (``upgrade --torch X.Y``) whose cpu wheels are not confirmed is
served, on linux-64, by PyPI's own wheel of that release when that one is confirmed: a CUDA build,
which runs on the CPU when no GPU is visible (it brings CUDA libraries the CPU path does not use;
the plan warns). Without such a request the newest confirmed cpu build is chosen, as before.
"""

from __future__ import annotations

from resolver.core.errors import Refusal
from resolver.core.model import CondaChoice, KernelChoice, Plan
from resolver.plan.decide.choices import environment_packages, glibc_note, torch_choice
from resolver.plan.decide.context import Context, python_text, text_or_none
from resolver.plan.decide.rejection import Rejection, Stage
from resolver.plan.decide.rules import confirmed, release_rejection
from resolver.plan.decide.search import newest_first


def cpu_plan(ctx: Context, why: str) -> Plan:
    glibc_note(ctx)

    def variant_rule(release, variant):
        if confirmed(release, variant):
            return None
        return Rejection(Stage.CONFIRMED, "its cpu wheels are not confirmed by a second source")

    found, rejected = newest_first(ctx, "cpu", release_rule=lambda release: release_rejection(ctx, release, False),
                                   variant_rule=variant_rule)
    if found is None and ctx.request.torch is not None:
        pypi = _pypi_wheel_on_cpu(ctx, rejected)
        if pypi is not None:
            return pypi
    if found is None:
        lines = "; ".join(r.line() for r in rejected[:2])
        raise Refusal(f"no torch release has CPU wheels for Python {python_text(ctx.python)} on {ctx.profile.platform}",
                      because=lines or None, fix=_way_out(ctx, rejected))
    release, variant = found
    for item in rejected:
        ctx.step("torch-release", "eliminated", item.line())
    ctx.step("torch-release", release.latest, f"the newest torch with a confirmed cpu build for "
                                              f"{ctx.profile.platform} and Python {python_text(ctx.python)}")
    ctx.step("kernels", "none", "no CUDA/ROCm GPU to run the Mamba kernels: the reference (pure PyTorch) path runs")
    conda = CondaChoice("conda-forge", f"pytorch {release.latest} cpu*")
    ctx.step("conda", conda.spec, "conda-forge builds pytorch for CPU on every platform "
                                  f"(the pytorch channel stopped after {ctx.k.conda_forge.pytorch_channel_last})")
    torch = torch_choice(ctx, release, variant, conda)
    packages = environment_packages(ctx)
    summary = (f"CPU plan ({why}): torch {release.latest} ({'PyPI' if ctx.os == 'osx' else 'cpu wheels'}) "
               f"for Python {python_text(ctx.python)} on {ctx.profile.platform}. Mamba's CUDA/ROCm kernels are not "
               f"installed; models run on the reference path.")
    return Plan(backend="cpu", backend_version=None, python=python_text(ctx.python), platform=ctx.profile.platform,
                torch=torch, kernels=KernelChoice(strategy="none"), warnings=tuple(ctx.warnings),
                trace=tuple(ctx.trace), glibc=text_or_none(ctx.glibc), cuda_driver=None, runnable_here=True,
                summary=summary, target=str(ctx.request.target), conda_packages=packages)


def _way_out(ctx: Context, rejected: list) -> str:
    """Another Python; or, for a release asked for by name that this Python could run (its CPU wheels unconfirmed
    or too new for this glibc), the newest release whose CPU wheels serve here."""
    if ctx.request.torch is not None and rejected and all(item.why.stage != Stage.PYTHON for item in rejected):
        for release in ctx.k.releases_newest_first():
            if release_rejection(ctx, release, False) is None and any(
                    confirmed(release, v) for v in release.variants_for(ctx.profile.platform, "cpu")):
                return f"ask for a release with confirmed CPU wheels here, e.g. --torch {release.name}"
    return "use --python 3.11 (or another Python torch supports)"


def _pypi_wheel_on_cpu(ctx: Context, rejected: list) -> Plan | None:
    """The requested release through PyPI's own linux-64 wheel (a CUDA build), when its cpu wheels are not
    confirmed but that wheel is; None otherwise."""
    release = ctx.k.release(ctx.request.torch)
    if release is None or ctx.profile.platform != "linux-64" or release_rejection(ctx, release, False) is not None:
        return None
    variant = next((v for v in release.variants if v.tag == release.pypi_default and "linux-64" in v.platforms), None)
    if variant is None or not confirmed(release, variant):
        return None
    for item in rejected:
        ctx.step("torch-release", "eliminated", item.line())
    ctx.step("torch-release", release.latest, f"torch {release.name} was asked for and its cpu wheels are not confirmed: "
                                              f"PyPI's own linux-64 wheel ({variant.tag}, confirmed) runs on the CPU "
                                              "when no GPU is visible")
    ctx.warn(f"torch {release.name}'s CPU-only wheels are not confirmed by a second source, so the environment takes "
             f"PyPI's torch {release.latest} (the {variant.tag} build): it runs on the CPU here and brings CUDA "
             f"{variant.version} libraries (a few GB) that the CPU path does not use")
    ctx.step("kernels", "none", "no CUDA/ROCm GPU to run the Mamba kernels: the reference (pure PyTorch) path runs")
    conda = CondaChoice("conda-forge", f"pytorch {release.latest} cpu*")
    torch = torch_choice(ctx, release, variant, conda)
    packages = environment_packages(ctx)
    summary = (f"CPU plan (torch {release.name} asked for): torch {release.latest} (PyPI's {variant.tag} build, run on "
               f"the CPU) for Python {python_text(ctx.python)} on {ctx.profile.platform}. Mamba's CUDA/ROCm kernels "
               "are not installed; models run on the reference path.")
    return Plan(backend="cpu", backend_version=None, python=python_text(ctx.python), platform=ctx.profile.platform,
                torch=torch, kernels=KernelChoice(strategy="none"), warnings=tuple(ctx.warnings),
                trace=tuple(ctx.trace), glibc=text_or_none(ctx.glibc), cuda_driver=None, runnable_here=True,
                summary=summary, target=str(ctx.request.target), conda_packages=packages)
