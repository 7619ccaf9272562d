"""The inputs of one decision, the GPUs as decide sees them, and the trace and warnings it collects."""

from __future__ import annotations

from typing import NamedTuple

from resolver.core.model import TraceStep
from resolver.core.versions import ComputeCapability, DottedVersion, GfxArch
from resolver.plan.knowledge import Knowledge
from resolver.plan.probe.profile import HardwareProfile


class Gpu(NamedTuple):
    name: str
    cc: ComputeCapability | None = None
    gfx: GfxArch | None = None

    @property
    def arch(self) -> str:
        return str(self.cc) if self.cc is not None else str(self.gfx)

    @property
    def short(self) -> str:
        return self.name.replace("NVIDIA ", "").replace("AMD ", "").strip() or self.name


class Context:
    """One decision's inputs and the trace and warnings it collects."""

    def __init__(self, profile: HardwareProfile, request, k: Knowledge, python: DottedVersion) -> None:
        self.profile, self.request, self.k, self.python = profile, request, k, python
        self.trace: list[TraceStep] = []
        self.warnings: list[str] = []

    def fresh(self) -> "Context":
        """The same inputs with an empty trace: for a side search whose steps must not show."""
        return Context(self.profile, self.request, self.k, self.python)

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

    @property
    def kernel_packages(self) -> tuple[str, ...]:
        return self.k.kernel_package_names()

    def nvidia_gpus(self) -> list[Gpu]:
        return [Gpu(g.name, cc=g.compute_capability) for g in (self.profile.nvidia.gpus if self.profile.nvidia else ())]

    def amd_gpus(self) -> list[Gpu]:
        return [Gpu(g.name, gfx=g.gfx_arch) for g in (self.profile.amd.gpus if self.profile.amd else ())]

    def driver(self) -> tuple[DottedVersion | None, DottedVersion | None]:
        """(driver version, the CUDA version the driver reports)."""
        nvidia = self.profile.nvidia
        return (nvidia.driver_version, nvidia.cuda_driver_version) if nvidia else (None, None)


def python_text(python: DottedVersion) -> str:
    return f"{python.major}.{python.minor}"


def text_or_none(value: object | None) -> str | None:
    return None if value is None else str(value)
