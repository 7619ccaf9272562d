"""The parts of a plan every backend assembles the same way: the torch build and where it comes from,
the kernel releases, the kernels' compiler, and the notes every plan carries."""

from __future__ import annotations

from resolver.core.model import PYPI_SIMPLE, TORCH_FROM_PYPI_ON, CondaChoice, TorchChoice, TorchSource
from resolver.core.versions import DottedVersion
from resolver.plan.decide.context import Context, python_text
from resolver.plan.knowledge import TorchRelease, TorchVariant


def torch_choice(ctx: Context, release: TorchRelease, variant: TorchVariant, conda: CondaChoice | None) -> TorchChoice:
    """The exact torch build, and its source: PyPI when the variant is PyPI's own wheel, else the PyTorch index."""
    if ctx.os in TORCH_FROM_PYPI_ON:
        return TorchChoice(version=release.latest, variant="cpu", source=TorchSource("pypi", PYPI_SIMPLE), conda=conda,
                           cxx11_abi=release.cxx11_abi, local_version=None)
    if ctx.profile.platform == "linux-64" and variant.tag == release.pypi_default:
        # PyPI's own linux-64 wheel of this release *is* this build (published without the +local label):
        # taken from PyPI, it locks wherever PyPI or a PyPI mirror answers, no PyTorch index needed.
        ctx.step("torch-pin", f"torch=={release.latest}", f"{variant.tag} is PyPI's default linux-64 build of "
                                                          f"torch {release.name}: pinned without the +{variant.tag} "
                                                          f"label ({release.pypi_default_source.split(';')[0].strip()})")
        ctx.step("torch-source", "PyPI", f"torch {release.latest}+{variant.tag} comes from PyPI itself, so it locks "
                                         f"through PyPI or any PyPI mirror; download.pytorch.org/whl/{variant.tag} "
                                         f"serves the same build")
        return TorchChoice(version=release.latest, variant=variant.tag, source=TorchSource("pypi", PYPI_SIMPLE),
                           conda=conda, cxx11_abi=release.cxx11_abi, local_version=None)
    return TorchChoice(version=release.latest, variant=variant.tag,
                       source=TorchSource("pypi-index", f"https://download.pytorch.org/whl/{variant.tag}"),
                       conda=conda, cxx11_abi=release.cxx11_abi, local_version=variant.tag)


def kernel_versions(ctx: Context, release: TorchRelease) -> tuple[tuple[str, str], ...]:
    """(package, version) of each kernel package's newest release for this torch and Python."""
    return tuple((package, ctx.k.kernel_release(package, release.version, ctx.python).version)
                 for package in ctx.kernel_packages)


def kernel_compiler(ctx: Context, name: str, torch_version: DottedVersion,
                    system: DottedVersion | None) -> tuple[str, str]:
    """The compiler the kernels will be built with and where it comes from (``system`` or ``missing``).

    torch's extension builder refuses a compiler of another major than torch's CUDA/HIP, so a plan
    that builds here promises only a compiler the probe found; one missing is said now, before anything
    is installed, not at build time."""
    want = torch_version.major
    label = "ROCm" if name == "hipcc" else "CUDA"
    if system is not None and system.major == want:
        ctx.step("kernels-compiler", f"system {name} {system.truncate(2)}",
                 f"the {name} the probe found ({system}) matches torch's {label} {torch_version.truncate(2)} major")
        return f"{name} {system.truncate(2)}", "system"
    found = f"{name} {system}" if system is not None else f"no {name}"
    ctx.step("kernels-compiler", "missing", f"the kernels need {name} {want}.x to match torch's {label} "
                                            f"{torch_version.truncate(2)}; this machine has {found}")
    ctx.warn(f"the kernels need {name} {want}.x (torch is {label} {torch_version.truncate(2)}) and this machine has "
             f"{found}: install the {label} {want} toolkit (or point {'ROCM_PATH' if name == 'hipcc' else 'CUDA_HOME'} "
             f"at it) before building")
    return f"{name} {torch_version.truncate(2)}", "missing"


def environment_packages(ctx: Context, cuda: DottedVersion | None = None) -> tuple[tuple[str, str], ...]:
    """The environment's conda dependencies: its own Python, and with ``cuda`` the CUDA toolkit an extension
    build needs, pinned to torch's CUDA through ``cuda-version`` (the knowledge base's conda_forge.toml)."""
    # conda-forge's python has no pip inside; conda pairs them (add_pip_as_python_dependency) and users
    # expect `pip` in an environment (conda_forge.toml [[python_package]] python, pip)
    packages = [("python", f"{python_text(ctx.python)}.*"), ("pip", "*")]
    because = f"a conda environment with its own Python {python_text(ctx.python)} and pip, as conda pairs them"
    toolkit = ctx.k.conda_forge.toolkit_specs(cuda) if cuda is not None else ()
    if toolkit:
        packages += list(toolkit)
        because += (f", and the CUDA {cuda.truncate(2)} toolkit ({', '.join(n for n, _ in toolkit)}, pinned by "
                    f"cuda-version {cuda.truncate(2)}.*): the kernels compile with the environment's own nvcc, "
                    f"whatever this machine has installed")
    elif cuda is not None:
        because += (f"; conda-forge packages no CUDA {cuda.major} compiler, so the kernels compile with the nvcc "
                    f"{cuda.major}.x of the machine that builds them")
    ctx.step("environment", ", ".join(f"{n} {s}" for n, s in packages), because)
    return tuple(packages)


def glibc_note(ctx: Context) -> None:
    if ctx.os == "linux" and ctx.profile.glibc is None:
        ctx.warn("glibc version unknown: assumed new enough (torch 2.6+ wheels need glibc >= 2.28)")


def cxx_note(ctx: Context, release: TorchRelease) -> None:
    if release.cxx_standard > 17:
        ctx.step("cxx-standard", f"c++{release.cxx_standard}",
                 f"torch {release.name} headers need C++{release.cxx_standard}; upstream setup.py forces c++17, "
                 f"so the kernels are built with our fix (build_fix 'cxx20')")


__all__ = ["torch_choice", "kernel_versions", "kernel_compiler", "glibc_note", "cxx_note", "python_text"]
