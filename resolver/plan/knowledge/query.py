"""The knowledge base as one frozen value with its questions (``Knowledge.load()`` reads the tables).

>>> k = Knowledge.load()
>>> k.release("2.9").latest
'2.9.1'
>>> str(k.mvc_floor(12))
'525.60.13'
>>> k.nvcc_can_build(DottedVersion.parse("13.0"), ComputeCapability.parse("7.0"))
False
>>> k.nvidia_model("Tesla V100-PCIE-16GB").compute_capability
ComputeCapability(major=7, minor=0)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from resolver.core.versions import ComputeCapability, DottedVersion
from resolver.plan.knowledge.rows import (
    AmdChip,
    AmdModel,
    ApiChange,
    ArchSupport,
    BuildFix,
    CondaForge,
    DriverFloor,
    HeaderFix,
    KernelRelease,
    KnownBad,
    NvidiaChip,
    NvidiaModel,
    OfficialGfx,
    ToolkitFloor,
    TorchRelease,
    UpstreamKernel,
    WheelSet,
)


@dataclass(frozen=True)
class Knowledge:
    """All tables, validated. Build it with :meth:`load`."""

    releases: tuple[TorchRelease, ...]  # oldest first
    mvc_floors: tuple[DriverFloor, ...]
    toolkits: tuple[ToolkitFloor, ...]
    archs: tuple[ArchSupport, ...]
    nvidia_models: tuple[NvidiaModel, ...]
    amd_models: tuple[AmdModel, ...]
    kernel_packages: tuple[UpstreamKernel, ...]
    kernel_releases: tuple[KernelRelease, ...]
    wheels: tuple[WheelSet, ...]
    build_fixes: tuple[BuildFix, ...]
    header_fixes: tuple[HeaderFix, ...]
    official_gfx: tuple[OfficialGfx, ...]
    conda_forge: CondaForge
    api_changes: tuple[ApiChange, ...] = ()  # torch API changes that touched the kernel packages (mamba.toml)
    known_bad: tuple[KnownBad, ...] = ()  # combinations known to fail (mamba.toml)
    nvidia_chips: tuple[NvidiaChip, ...] = ()
    amd_chips: tuple[AmdChip, ...] = ()

    @classmethod
    def load(cls, folder: str | Path | None = None) -> "Knowledge":
        """Read and validate every table in ``folder`` (default: the package's ``data/``). A ``plan`` that
        finds its answer remembered (:class:`resolver.plan.planning.PlanMemo`) loads none."""
        from resolver.plan.knowledge.load import load_tables

        return load_tables(cls, folder)

    # ---- torch

    def release(self, version: str | DottedVersion) -> TorchRelease | None:
        wanted = (version if isinstance(version, DottedVersion) else DottedVersion.parse(version)).truncate(2)
        return next((r for r in self.releases if r.version == wanted), None)

    def releases_newest_first(self) -> tuple[TorchRelease, ...]:
        return tuple(reversed(self.releases))

    # ---- drivers

    def mvc_floor(self, cuda_major: int, os: str = "linux") -> DottedVersion | None:
        for floor in self.mvc_floors:
            if floor.cuda_major == cuda_major:
                return floor.windows if os == "win" else floor.linux
        return None

    def toolkit_floor(self, cuda: DottedVersion, os: str = "linux") -> DottedVersion | None:
        """The full driver floor of toolkit ``major.minor`` (its earliest patch release)."""
        mm = cuda.truncate(2)
        rows = [t for t in self.toolkits if t.version.truncate(2) == mm]
        floors = [t.windows if os == "win" else t.linux for t in rows]
        floors = [f for f in floors if f is not None]
        return min(floors) if floors else None

    def newest_cuda_for_driver(self, driver: DottedVersion, os: str = "linux") -> DottedVersion | None:
        """The newest toolkit (major.minor) whose full driver floor ``driver`` meets."""
        best = None
        for toolkit in self.toolkits:
            floor = toolkit.windows if os == "win" else toolkit.linux
            if floor is not None and floor <= driver:
                mm = toolkit.version.truncate(2)
                best = mm if best is None or best < mm else best
        return best

    # ---- architectures

    def arch_support(self, cc: ComputeCapability) -> ArchSupport | None:
        return next((a for a in self.archs if a.compute_capability == cc), None)

    def nvcc_can_build(self, nvcc: DottedVersion, cc: ComputeCapability) -> bool:
        support = self.arch_support(cc)
        return support is not None and support.buildable_by(nvcc)

    def build_target(self, nvcc: DottedVersion, cc: ComputeCapability) -> ComputeCapability | None:
        """The arch to compile for ``cc`` with ``nvcc``: ``cc`` itself when nvcc knows it, else the
        highest same-major capability it knows below it (its cubin runs on ``cc``); None if none."""
        options = [a.compute_capability for a in self.archs
                   if a.compute_capability.major == cc.major and a.compute_capability.minor <= cc.minor
                   and a.buildable_by(nvcc) and (a.stand_in or a.compute_capability == cc)]
        return max(options) if options else None

    def arch_name(self, cc: ComputeCapability) -> str:
        support = self.arch_support(cc)
        return support.name if support else f"compute capability {cc}"

    # ---- gpus

    def nvidia_model(self, name: str) -> NvidiaModel | None:
        return _best_name_match(name, ((n, m) for m in self.nvidia_models for n in m.names))

    def amd_model(self, name: str) -> AmdModel | None:
        return _best_name_match(name, ((n, m) for m in self.amd_models for n in m.names))

    def nvidia_chip(self, token: str) -> NvidiaChip | None:
        """The row of the longest listed chip ``token`` starts with (``GA107GLM`` → GA107; ``GB10B`` is its own).

        >>> str(Knowledge.load().nvidia_chip("GA107GLM").compute_capability), Knowledge.load().nvidia_chip("NV43")
        ('8.6', None)
        """
        best, best_len = None, 0
        for row in self.nvidia_chips:
            for chip in row.chips:
                if token.upper().startswith(chip.upper()) and len(chip) > best_len:
                    best, best_len = row, len(chip)
        return best

    def amd_chip(self, name: str) -> AmdChip | None:
        """The row of the longest listed code name ``name`` starts with, as a whole word (``Navi 31 XT``).

        >>> str(Knowledge.load().amd_chip("Navi 31 [Radeon RX 7900 XT/7900 XTX]").gfx)
        'gfx1100'
        """
        best, best_len = None, 0
        lowered = name.lower()
        for row in self.amd_chips:
            for codename in row.codenames:
                c = codename.lower()
                if lowered.startswith(c) and (len(lowered) == len(c) or not lowered[len(c)].isalnum()) \
                        and len(c) > best_len:
                    best, best_len = row, len(c)
        return best

    # ---- mamba

    def upstream_kernel(self, name: str) -> UpstreamKernel:
        return next(p for p in self.kernel_packages if p.name == name)

    def kernel_package_names(self) -> tuple[str, ...]:
        """The kernel packages, in build order (mamba-ssm's Python side imports causal_conv1d): the one list."""
        return tuple(p.name for p in self.kernel_packages)

    def kernel_release(self, package: str, torch: DottedVersion, python: DottedVersion) -> KernelRelease | None:
        """The newest release of ``package`` usable with ``torch`` (major.minor) and ``python``."""
        fitting = [r for r in self.kernel_releases if r.package == package and r.supports_torch(torch)
                   and r.python_min <= python.truncate(2)]
        return max(fitting, key=lambda r: _release_key(r.version)) if fitting else None

    def prebuilt_wheel(self, package: str, version: str, torch_mm: str, cuda_major: int, abi: bool,
                       python_mm: str, machine: str) -> tuple[str, str] | None:
        """``(file name, url)`` of the upstream wheel for this combination, if one was shipped."""
        info = self.upstream_kernel(package)
        for wheels in self.wheels:
            if wheels.package == package and wheels.version == version and \
                    wheels.has(torch_mm, cuda_major, abi, python_mm, machine):
                py = python_mm.replace(".", "")
                name = info.wheel_name.format(dist=info.dist, version=version, cuda_major=cuda_major, torch=torch_mm,
                                              abi=str(abi).upper(), py=py, machine=machine)
                return name, info.wheel_url.format(tag=wheels.tag, wheel=name.replace("+", "%2B"))
        return None

    def fixes_for(self, package: str | None = None) -> tuple[BuildFix, ...]:
        return tuple(f for f in self.build_fixes if package is None or f.package in (None, package))

    # ---- rocm

    def header_fixes_for(self, rocm: DottedVersion) -> tuple[HeaderFix, ...]:
        return tuple(f for f in self.header_fixes if f.applies_to(rocm))

    def official_gfx_for(self, rocm: DottedVersion) -> tuple[str, ...] | None:
        for row in self.official_gfx:
            if row.rocm <= rocm and (row.until is None or rocm < row.until):
                return row.gfx
        return None

    def min_rocm(self) -> DottedVersion:
        return max(p.min_rocm for p in self.kernel_packages)

    def min_cuda(self) -> DottedVersion:
        return max(p.min_cuda for p in self.kernel_packages)

    # ---- consistency

    def problems(self) -> list[str]:
        """Internal inconsistencies between the tables (empty when the data is sound)."""
        from resolver.plan.knowledge.consistency import problems

        return problems(self)


if TYPE_CHECKING:
    from packaging.version import Version




def _release_key(version: str) -> tuple[bool, Version]:
    """Newest first as pip picks: by PEP 440 order, a final release before any pre-release."""
    from packaging.version import Version

    parsed = Version(version)
    return not parsed.is_prerelease, parsed


def _best_name_match(name: str, candidates: Iterable[tuple[str, Any]]) -> Any | None:
    """The model whose name occurs in ``name`` as whole words; the longest such name wins."""
    text = " " + re.sub(r"[^a-z0-9]+", " ", name.lower()) + " "
    best, best_len = None, 0
    for candidate, model in candidates:
        needle = " " + re.sub(r"[^a-z0-9]+", " ", candidate.lower()).strip() + " "
        if needle in text and len(needle) > best_len:
            best, best_len = model, len(needle)
    return best
