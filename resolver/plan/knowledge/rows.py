"""The knowledge base's row types: one frozen value per kind of fact, as the TOML tables hold them."""

from __future__ import annotations

from typing import NamedTuple

from resolver.core.versions import ComputeCapability, CudaVariant, DottedVersion, GfxArch

# --------------------------------------------------------------------------------------------- torch


class TorchVariant(NamedTuple):
    """One wheel index of one torch release: ``cpu``, ``cu126``, ``rocm6.2.4`` on some platforms.

    ``archs`` are cubin compute capabilities (CUDA) or gfx targets (ROCm); ``ptx`` the compute
    capabilities also shipped as PTX.
    """

    tag: str
    platforms: tuple[str, ...]
    archs: tuple[str, ...]
    ptx: tuple[str, ...]
    confirmed: bool
    source: str
    notes: str = ""
    unconfirmed_archs: tuple[str, ...] = ()

    @property
    def parsed(self) -> CudaVariant:
        return CudaVariant.parse(self.tag)

    @property
    def backend(self) -> str:
        return self.parsed.backend

    @property
    def version(self) -> DottedVersion | None:
        """The CUDA (``12.6``) or ROCm (``6.2.4``) version of the variant; None for cpu."""
        return self.parsed.version

    @property
    def cubins(self) -> tuple[ComputeCapability, ...]:
        return tuple(ComputeCapability.parse(a) for a in self.archs) if self.backend == "cuda" else ()

    @property
    def ptx_targets(self) -> tuple[ComputeCapability, ...]:
        return tuple(ComputeCapability.parse(a) for a in self.ptx)

    def cubin_for(self, cc: ComputeCapability) -> ComputeCapability | None:
        """The best cubin that runs on ``cc``: same major, equal or lower minor (None if none)."""
        fitting = [c for c in self.cubins if c.major == cc.major and c.minor <= cc.minor]
        return max(fitting) if fitting else None

    def ptx_for(self, cc: ComputeCapability) -> ComputeCapability | None:
        """The best PTX the driver can JIT for ``cc``: any PTX at or below it (PTX runs forward)."""
        fitting = [c for c in self.ptx_targets if c <= cc]
        return max(fitting) if fitting else None

    @property
    def lowest_arch(self) -> str:
        if self.backend == "cuda":
            return min(self.cubins).sm if self.cubins else "none"
        return self.archs[0] if self.archs else "none"


class TorchRelease(NamedTuple):
    """One PyTorch major.minor line and its wheel variants."""

    version: DottedVersion  # major.minor
    latest: str  # the patch release plans pin
    released: str
    python: tuple[str, ...]
    glibc_min: DottedVersion
    cxx11_abi: bool
    cxx_standard: int
    pypi_default: str  # the variant PyPI's own linux-64 wheel is (published without the +local label)
    confirmed: bool
    source: str
    variants: tuple[TorchVariant, ...]
    notes: str = ""
    pypi_default_source: str = ""

    @property
    def name(self) -> str:
        return str(self.version)

    def supports_python(self, python: DottedVersion) -> bool:
        return f"{python.major}.{python.minor}" in self.python

    def variants_for(self, platform: str, backend: str) -> tuple[TorchVariant, ...]:
        """Variants of ``backend`` published for ``platform``, newest toolkit first."""
        found = [v for v in self.variants if v.backend == backend and platform in v.platforms]
        return tuple(sorted(found, key=lambda v: v.version or DottedVersion((0,)), reverse=True))


# ---------------------------------------------------------------------------------------------- cuda


class DriverFloor(NamedTuple):
    """The oldest driver that runs any toolkit of one CUDA major (minor-version compatibility)."""

    cuda_major: int
    linux: DottedVersion
    windows: DottedVersion
    source: str
    applies_from: DottedVersion | None = None  # first toolkit it covers (11.0 predates the scheme)


class ToolkitFloor(NamedTuple):
    """The full driver floor of one CUDA toolkit release."""

    version: DottedVersion
    linux: DottedVersion
    windows: DottedVersion | None
    confirmed: bool
    source: str


class ArchSupport(NamedTuple):
    """Which toolkits' nvcc can build native code for one compute capability."""

    compute_capability: ComputeCapability
    name: str
    first: DottedVersion
    last: DottedVersion | None
    confirmed: bool
    source: str
    stand_in: bool = True  # may be built in place of a newer same-major GPU (False for Tegra targets)

    def buildable_by(self, nvcc: DottedVersion) -> bool:
        return self.first <= nvcc and (self.last is None or nvcc.truncate(2) <= self.last)


# ---------------------------------------------------------------------------------------------- gpus


class NvidiaModel(NamedTuple):
    names: tuple[str, ...]
    compute_capability: ComputeCapability
    architecture: str
    confirmed: bool
    source: str


class AmdModel(NamedTuple):
    names: tuple[str, ...]
    gfx: GfxArch
    architecture: str
    confirmed: bool
    source: str


class NvidiaChip(NamedTuple):
    """GPU chips (``GA102``) of one compute capability: how a PCI device id becomes a capability."""

    chips: tuple[str, ...]
    compute_capability: ComputeCapability
    architecture: str
    source: str


class AmdChip(NamedTuple):
    """AMD code names (``Navi 31``) of one gfx target, as the PCI ID Repository spells them."""

    codenames: tuple[str, ...]
    gfx: GfxArch
    architecture: str
    source: str


# --------------------------------------------------------------------------------------------- mamba


class UpstreamKernel(NamedTuple):
    name: str  # "mamba-ssm"
    dist: str  # "mamba_ssm"
    repository: str
    wheel_url: str
    wheel_name: str
    min_cuda: DottedVersion
    min_rocm: DottedVersion
    upstream_archs_min: ComputeCapability
    source: str


class KernelRelease(NamedTuple):
    package: str
    version: str
    python_min: DottedVersion
    torch_min: DottedVersion
    torch_max: DottedVersion | None
    confirmed: bool
    source: str
    wheel_archs: tuple[tuple[int, tuple[str, ...]], ...] = ()  # (CUDA major, cubins) of upstream's wheels

    def wheel_cubins(self, cuda_major: int) -> tuple[ComputeCapability, ...]:
        for major, archs in self.wheel_archs:
            if major == cuda_major:
                return tuple(ComputeCapability.parse(a) for a in archs)
        return ()

    def supports_torch(self, torch: DottedVersion) -> bool:
        mm = torch.truncate(2)
        return self.torch_min <= mm and (self.torch_max is None or mm <= self.torch_max)


class WheelSet(NamedTuple):
    """Prebuilt wheels one release shipped: every combination of the lists."""

    package: str
    version: str
    tag: str
    torch: tuple[str, ...]
    cuda_major: tuple[int, ...]
    cxx11_abi: tuple[bool, ...]
    python: tuple[str, ...]
    machine: tuple[str, ...]
    confirmed: bool
    source: str

    def has(self, torch_mm: str, cuda_major: int, abi: bool, python_mm: str, machine: str) -> bool:
        return (torch_mm in self.torch and cuda_major in self.cuda_major and abi in self.cxx11_abi
                and python_mm in self.python and machine in self.machine)


class BuildFix(NamedTuple):
    """A change our recipes make for a combination; ``avoid_arch`` ones say which nvcc versions they hold for."""

    id: str
    package: str | None
    applies: str
    what: str
    avoid_arch: str | None
    use_instead: str | None
    source: str
    nvcc_min: DottedVersion | None = None
    nvcc_below: DottedVersion | None = None

    def holds_for_nvcc(self, nvcc: DottedVersion) -> bool:
        """Whether this fix applies to a build with nvcc ``nvcc`` (no range: always)."""
        mm = nvcc.truncate(2)
        return (self.nvcc_min is None or self.nvcc_min <= mm) and (self.nvcc_below is None or mm < self.nvcc_below)


class ApiChange(NamedTuple):
    """A torch API change that touched a kernel package's code: the release that made it, and what it does there."""

    id: str
    torch: DottedVersion  # major.minor of the release that made the change
    package: str
    what: str
    effect: str
    warning: str | None  # text the warning it raises contains (to recognise it), if it raises one
    confirmed: bool
    source: str

    def crossed_by(self, old: DottedVersion, new: DottedVersion) -> bool:
        """Whether going from torch ``old`` to ``new`` crosses the release that made the change."""
        return old.truncate(2) < self.torch <= new.truncate(2)


KNOWN_BAD_WHEN = ("torch-release", "cuda-major", "cxx11-abi")


class KnownBad(NamedTuple):
    """A combination known to fail; ``when`` is the change of an upgrade that brings it up (KNOWN_BAD_WHEN)."""

    id: str
    when: str
    what: str
    fix: str
    confirmed: bool
    source: str


# ---------------------------------------------------------------------------------------------- rocm


class HeaderFix(NamedTuple):
    """A ROCm header the kernels cannot build against until it is fixed (see ``patches/``)."""

    id: str
    rocm_min: DottedVersion
    rocm_below: DottedVersion
    file: str
    why: str
    source: str

    def applies_to(self, rocm: DottedVersion) -> bool:
        return self.rocm_min <= rocm < self.rocm_below


class OfficialGfx(NamedTuple):
    rocm: DottedVersion
    until: DottedVersion | None
    gfx: tuple[str, ...]
    source: str


# --------------------------------------------------------------------------------------- conda-forge


class CondaForgeBuild(NamedTuple):
    version: str
    platform: str
    cuda: tuple[DottedVersion, ...]
    source: str


class ToolkitPackage(NamedTuple):
    """A conda-forge package of the CUDA toolkit an extension build takes from the environment."""

    name: str
    role: str
    cuda_majors: tuple[int, ...]
    ask: str | None  # the spec an environment asks for, with {X.Y} for torch's CUDA; None: not asked for
    confirmed: bool
    source: str

    def spec_for(self, cuda: DottedVersion) -> str:
        """``ask`` for CUDA ``cuda``: ``13.0.*`` for cuda-version, ``*`` for the rest."""
        return (self.ask or "*").replace("{X.Y}", str(cuda.truncate(2)))


class CondaForge(NamedTuple):
    rocm_builds: bool
    pytorch_channel_last: str
    builds: tuple[CondaForgeBuild, ...]
    cuda_archs: tuple[tuple[DottedVersion, tuple[str, ...], tuple[str, ...]], ...]  # (cuda, archs, ptx)
    source: str
    toolkit: tuple[ToolkitPackage, ...] = ()

    def toolkit_specs(self, cuda: DottedVersion) -> tuple[tuple[str, str], ...]:
        """The (name, spec) pairs a CUDA ``cuda`` environment asks for, e.g. ``("cuda-version", "13.0.*")``."""
        return tuple((p.name, p.spec_for(cuda)) for p in self.toolkit if p.ask and cuda.major in p.cuda_majors)

    def cuda_builds(self, version: str, platform: str) -> tuple[DottedVersion, ...] | None:
        """The CUDA versions conda-forge built ``pytorch version`` with on ``platform`` (None: not recorded)."""
        for build in self.builds:
            if build.version == version and build.platform == platform:
                return build.cuda
        return None

    def archs_of(self, cuda: DottedVersion) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        for version, archs, ptx in self.cuda_archs:
            if version == cuda.truncate(2):
                return archs, ptx
        return None

def is_release_version(version: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        Version(version)
    except InvalidVersion:
        return False
    return True
