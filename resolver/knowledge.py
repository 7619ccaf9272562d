"""The knowledge base: sourced TOML tables in ``resolver/data/`` read into frozen values.

Everything ``decide`` knows about PyTorch wheels, CUDA drivers and toolkits, GPU architectures, the
Mamba kernel packages, ROCm header fixes and conda-forge lives in those tables, one row per fact,
each with its ``source`` (and ``confirmed = false`` where only one secondary source backs it).
Adding a PyTorch release is a data edit: a ``[[release]]`` block in ``torch.toml``.

:meth:`Knowledge.load` reads and validates the tables each time it is called (a few milliseconds:
the parsed TOML is kept as JSON in the user's cache folder, keyed by the tables' checksums); callers
that plan many times keep the instance. There is no module-level state.

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

import json
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from resolver.errors import InternalError
from resolver.fs import write_text_atomic
from resolver.versions import ComputeCapability, CudaVariant, DottedVersion, GfxArch

DATA_DIR = Path(__file__).resolve().parent / "data"
TABLE_FILES = ("torch.toml", "cuda.toml", "gpus.toml", "mamba.toml", "rocm.toml", "conda_forge.toml")


class KnowledgeError(InternalError):
    """A data table is malformed: a bug in the shipped data (or a bad local edit)."""

    id = "knowledge-data"


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


# --------------------------------------------------------------------------------------------- mamba


class KernelPackage(NamedTuple):
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
    id: str
    package: str | None
    applies: str
    what: str
    avoid_arch: str | None
    use_instead: str | None
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


class CondaForge(NamedTuple):
    rocm_builds: bool
    pytorch_channel_last: str
    builds: tuple[CondaForgeBuild, ...]
    cuda_archs: tuple[tuple[DottedVersion, tuple[str, ...], tuple[str, ...]], ...]  # (cuda, archs, ptx)
    source: str

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


# ---------------------------------------------------------------------------------------- Knowledge


@dataclass(frozen=True)
class Knowledge:
    """All tables, validated. Build it with :meth:`load`."""

    releases: tuple[TorchRelease, ...]  # oldest first
    mvc_floors: tuple[DriverFloor, ...]
    toolkits: tuple[ToolkitFloor, ...]
    archs: tuple[ArchSupport, ...]
    nvidia_models: tuple[NvidiaModel, ...]
    amd_models: tuple[AmdModel, ...]
    kernel_packages: tuple[KernelPackage, ...]
    kernel_releases: tuple[KernelRelease, ...]
    wheels: tuple[WheelSet, ...]
    build_fixes: tuple[BuildFix, ...]
    header_fixes: tuple[HeaderFix, ...]
    official_gfx: tuple[OfficialGfx, ...]
    conda_forge: CondaForge

    @classmethod
    def load(cls, folder: str | Path | None = None, *, cache: bool = True) -> "Knowledge":
        """Read and validate every table in ``folder`` (default: the package's ``data/``).

        Parsing TOML costs ~30 ms per process, most of a ``plan``; the parsed tables are kept as JSON
        in the user's cache folder under a name derived from the tables' bytes (like Python's bytecode
        cache), so an edited table is simply parsed again. ``cache=False`` never reads or writes it.
        """
        folder = Path(folder) if folder is not None else DATA_DIR
        return _build(_read_tables(folder, cache))

    # ---- torch

    def release(self, version: str | DottedVersion) -> TorchRelease | None:
        wanted = DottedVersion.parse(str(version)).truncate(2)
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

    # ---- mamba

    def kernel_package(self, name: str) -> KernelPackage:
        return next(p for p in self.kernel_packages if p.name == name)

    def kernel_release(self, package: str, torch: DottedVersion, python: DottedVersion) -> KernelRelease | None:
        """The newest release of ``package`` usable with ``torch`` (major.minor) and ``python``."""
        fitting = [r for r in self.kernel_releases if r.package == package and r.supports_torch(torch)
                   and r.python_min <= python.truncate(2)]
        return max(fitting, key=lambda r: _release_key(r.version)) if fitting else None

    def prebuilt_wheel(self, package: str, version: str, torch_mm: str, cuda_major: int, abi: bool,
                       python_mm: str, machine: str) -> tuple[str, str] | None:
        """``(file name, url)`` of the upstream wheel for this combination, if one was shipped."""
        info = self.kernel_package(package)
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
        found: list[str] = []
        known_ccs = {a.compute_capability for a in self.archs}
        versions = [r.version for r in self.releases]
        if versions != sorted(versions) or len(set(versions)) != len(versions):
            found.append("torch.toml: releases are not in ascending order or repeat")
        for release in self.releases:
            if not DottedVersion.parse(release.latest).truncate(2) == release.version:
                found.append(f"torch {release.name}: latest {release.latest} is not a {release.name}.x release")
            if not any(v.tag == "cpu" for v in release.variants):
                found.append(f"torch {release.name}: no cpu variant")
            seen = set()
            for variant in release.variants:
                for platform in variant.platforms:
                    if (variant.tag, platform) in seen:
                        found.append(f"torch {release.name}: variant {variant.tag} listed twice for {platform}")
                    seen.add((variant.tag, platform))
                if variant.backend != "cpu" and not variant.archs:
                    found.append(f"torch {release.name} {variant.tag}: no arch list")
                if variant.backend == "cuda":
                    for cc in variant.cubins + variant.ptx_targets:
                        if cc not in known_ccs:
                            found.append(f"torch {release.name} {variant.tag}: {cc} is not in cuda.toml [[arch]]")
                        elif not self.nvcc_can_build(variant.version, cc):
                            found.append(f"torch {release.name} {variant.tag}: CUDA {variant.version} cannot build {cc.sm}")
                    for cc in variant.ptx_targets:
                        if cc not in variant.cubins:
                            found.append(f"torch {release.name} {variant.tag}: PTX {cc} without its cubin")
                    if self.mvc_floor(variant.version.major) is None:
                        found.append(f"torch {release.name} {variant.tag}: no driver floor for CUDA {variant.version.major}")
                    if self.toolkit_floor(variant.version) is None:
                        found.append(f"torch {release.name} {variant.tag}: no toolkit row for CUDA {variant.version}")
                if variant.backend == "rocm":
                    for gfx in variant.archs:
                        if not any(GfxArch.parse(gfx) == m.gfx for m in self.amd_models) and gfx not in _GFX_WITHOUT_PRODUCT:
                            found.append(f"torch {release.name} {variant.tag}: {gfx} names no GPU in gpus.toml")
        for earlier, later in zip(self.releases, self.releases[1:]):
            if later.glibc_min < earlier.glibc_min:
                found.append(f"torch {later.name}: glibc floor {later.glibc_min} is below {earlier.name}'s")
        floors = sorted(self.mvc_floors, key=lambda f: f.cuda_major)
        for lower, higher in zip(floors, floors[1:]):
            if not lower.linux < higher.linux:
                found.append(f"cuda.toml: minor-version floor of CUDA {higher.cuda_major} is not above CUDA {lower.cuda_major}'s")
        toolkits = sorted(self.toolkits, key=lambda t: t.version)
        for lower, higher in zip(toolkits, toolkits[1:]):
            if higher.linux < lower.linux:
                found.append(f"cuda.toml: toolkit {higher.version} needs an older driver than {lower.version}")
        for toolkit in self.toolkits:
            floor = self.mvc_floor(toolkit.version.major)
            row = next((f for f in self.mvc_floors if f.cuda_major == toolkit.version.major), None)
            if row is not None and row.applies_from is not None and toolkit.version < row.applies_from:
                continue
            if floor is not None and toolkit.linux < floor:
                found.append(f"cuda.toml: toolkit {toolkit.version} floor {toolkit.linux} is below its major's "
                             f"minor-version floor {floor}")
        for arch in self.archs:
            if arch.last is not None and arch.last < arch.first:
                found.append(f"cuda.toml: sm {arch.compute_capability} last {arch.last} before first {arch.first}")
        for model in self.nvidia_models:
            if model.compute_capability not in known_ccs:
                found.append(f"gpus.toml: {model.names[0]} has compute capability {model.compute_capability}, "
                             "unknown to cuda.toml")
        names = [n.lower() for m in self.nvidia_models + self.amd_models for n in m.names]  # type: ignore[operator]
        for name in set(names):
            if names.count(name) > 1:
                found.append(f"gpus.toml: {name!r} is listed twice")
        release_names = {r.name for r in self.releases}
        for kernel in self.kernel_releases:
            if kernel.package not in {p.name for p in self.kernel_packages}:
                found.append(f"mamba.toml: release of unknown package {kernel.package}")
            for bound in (kernel.torch_min, kernel.torch_max):
                if bound is not None and str(bound.truncate(2)) not in release_names:
                    found.append(f"mamba.toml: {kernel.package} {kernel.version} names torch {bound}, not in torch.toml")
        for kernel in self.kernel_releases:
            for major, archs in kernel.wheel_archs:
                for arch in archs:
                    if ComputeCapability.parse(arch) not in known_ccs:
                        found.append(f"mamba.toml: {kernel.package} {kernel.version} cu{major} wheels list {arch}, "
                                     "unknown to cuda.toml")
        for wheels in self.wheels:
            if not any(k.package == wheels.package and k.version == wheels.version for k in self.kernel_releases) and \
                    not (wheels.package, wheels.version) in _WHEEL_ONLY_RELEASES:
                found.append(f"mamba.toml: wheels for {wheels.package} {wheels.version}, which has no [[release]] row")
            for torch in wheels.torch:
                if torch not in release_names:
                    found.append(f"mamba.toml: wheels for torch {torch}, not in torch.toml")
        for release in self.releases:
            for package in self.kernel_packages:
                if release.version >= DottedVersion.parse("2.0") and not any(
                        k.package == package.name and k.supports_torch(release.version) for k in self.kernel_releases):
                    found.append(f"mamba.toml: no {package.name} release covers torch {release.name}")
        for fix in self.header_fixes:
            if not fix.rocm_min < fix.rocm_below:
                found.append(f"rocm.toml: {fix.id} range is empty")
        for build in self.conda_forge.builds:
            if str(DottedVersion.parse(build.version).truncate(2)) not in release_names:
                found.append(f"conda_forge.toml: pytorch {build.version} is not in torch.toml")
            for cuda in build.cuda:
                if self.conda_forge.archs_of(cuda) is None:
                    found.append(f"conda_forge.toml: no arch list for CUDA {cuda}")
        return found


# gfx targets compiled into PyTorch wheels that name no single retail product we list (APUs).
_GFX_WITHOUT_PRODUCT = ("gfx1150", "gfx1151")
# Wheel rows for releases we do not plan with (kept as facts).
_WHEEL_ONLY_RELEASES: tuple[tuple[str, str], ...] = ()


def driver_text(version: DottedVersion) -> str:
    """NVIDIA's spelling of a driver version, two-digit middle parts: 450.80.2 -> ``450.80.02``.

    >>> driver_text(DottedVersion.parse("580.65.06"))
    '580.65.06'
    """
    head, *rest = version.parts
    return ".".join([str(head)] + [f"{p:02d}" for p in rest])


def _release_key(version: str) -> tuple:
    parts = re.findall(r"\d+|[a-z]+", version)
    return tuple((0, int(p)) if p.isdigit() else (-1, p) for p in parts)


def _best_name_match(name: str, candidates: Iterable[tuple[str, Any]]) -> Any | None:
    """The model whose name occurs in ``name`` as whole words; the longest such name wins."""
    text = " " + re.sub(r"[^a-z0-9]+", " ", name.lower()) + " "
    best, best_len = None, 0
    for candidate, model in candidates:
        needle = " " + re.sub(r"[^a-z0-9]+", " ", candidate.lower()).strip() + " "
        if needle in text and len(needle) > best_len:
            best, best_len = model, len(needle)
    return best


# ------------------------------------------------------------------------------------------ loading


def _read_tables(folder: Path, cache: bool) -> dict[str, dict]:
    blobs = {}
    for name in TABLE_FILES:
        path = folder / name
        try:
            blobs[name] = path.read_bytes()
        except FileNotFoundError:
            raise KnowledgeError(f"knowledge table {path} is missing", fix="reinstall mamba-resolver") from None
        except OSError as exc:
            raise KnowledgeError(f"knowledge table {path} cannot be read: {exc}",
                                 fix="restore it from the repository (git checkout resolver/data)") from None
    cached = _cache_file(blobs) if cache else None
    if cached is not None:
        try:
            data = json.loads(cached.read_text(encoding="utf-8"))
            if isinstance(data, dict) and set(data) == set(TABLE_FILES):
                return data
        except (OSError, ValueError):
            pass
    raw = {name: _parse_toml(folder / name, blob) for name, blob in blobs.items()}
    if cached is not None:
        try:
            write_text_atomic(cached, json.dumps(raw), label="knowledge-cache")
        except OSError:  # a read-only home: parse every time
            pass
    return raw


def _cache_file(blobs: dict[str, bytes]) -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not base or base.startswith("~"):
        return None
    # crc32 + adler32 + length of the concatenated tables: a 64-bit content key without importing hashlib
    # (OpenSSL's import costs more than the whole lookup)
    data = b"".join(name.encode() + b"\0" + blobs[name] + b"\0" for name in sorted(blobs))
    key = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"
    return Path(base) / "mamba-resolver" / f"knowledge-{key}.json"


def _parse_toml(path: Path, blob: bytes) -> dict:
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise KnowledgeError(f"knowledge table {path} cannot be read: {exc}",
                             fix="restore it from the repository (git checkout resolver/data)") from None


class _Row:
    """Typed access to one TOML row; every problem names the file and the row."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise KnowledgeError(f"{where} is not a table", fix="fix the data file")
        self.data = data
        self.where = where
        if not isinstance(data.get("source"), str) or not data["source"].strip():
            raise KnowledgeError(f"{where} has no source", fix="every row needs `source = \"...\"`")

    def _bad(self, key: str, what: str) -> KnowledgeError:
        return KnowledgeError(f"{self.where}: '{key}' {what}", fix="fix the data file")

    def str(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str):
            raise self._bad(key, "is missing or not a string")
        return value

    def opt_str(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, str):
            raise self._bad(key, "is not a string")
        return value

    def version(self, key: str) -> DottedVersion:
        try:
            return DottedVersion.parse(self.str(key))
        except ValueError:
            raise self._bad(key, "is not a version") from None

    def opt_version(self, key: str) -> DottedVersion | None:
        return None if self.data.get(key) is None else self.version(key)

    def strs(self, key: str, default: tuple = ()) -> tuple[str, ...]:
        value = self.data.get(key, list(default))
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._bad(key, "is not a list of strings")
        return tuple(value)

    def ints(self, key: str) -> tuple[int, ...]:
        value = self.data.get(key)
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise self._bad(key, "is not a list of integers")
        return tuple(value)

    def bools(self, key: str) -> tuple[bool, ...]:
        value = self.data.get(key)
        if not isinstance(value, list) or not all(isinstance(v, bool) for v in value):
            raise self._bad(key, "is not a list of booleans")
        return tuple(value)

    def bool(self, key: str, default: bool | None = None) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self._bad(key, "is missing or not true/false")
        return value

    def int(self, key: str) -> int:
        value = self.data.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._bad(key, "is missing or not an integer")
        return value

    def cc(self, key: str) -> ComputeCapability:
        try:
            return ComputeCapability.parse(self.str(key))
        except ValueError:
            raise self._bad(key, "is not a compute capability") from None

    def confirmed(self) -> bool:
        return self.bool("confirmed", True)


def _rows(table: dict, key: str, file: str) -> list[dict]:
    rows = table.get(key, [])
    if not isinstance(rows, list):
        raise KnowledgeError(f"{file}: [[{key}]] must be an array of tables", fix="fix the data file")
    return rows


def _build(raw: dict[str, dict]) -> Knowledge:
    torch_table, cuda, gpus, mamba, rocm, cf = (raw[name] for name in TABLE_FILES)

    releases = []
    for i, data in enumerate(_rows(torch_table, "release", "torch.toml")):
        row = _Row(data, f"torch.toml [[release]] #{i + 1} ({data.get('version', '?') if isinstance(data, dict) else '?'})")
        variants = []
        for j, vdata in enumerate(_rows(data, "variant", "torch.toml")):
            vrow = _Row(vdata, f"{row.where} variant #{j + 1} ({vdata.get('tag', '?')})")
            tag = vrow.str("tag")
            try:
                parsed = CudaVariant.parse(tag)
            except ValueError:
                raise vrow._bad("tag", "is not cpu, cuXYZ or rocmX.Y[.Z]") from None
            archs = vrow.strs("archs")
            for arch in archs + vrow.strs("ptx") + vrow.strs("unconfirmed_archs"):
                try:
                    ComputeCapability.parse(arch) if parsed.backend == "cuda" else GfxArch.parse(arch)
                except ValueError:
                    raise vrow._bad("archs", f"holds {arch!r}, not a {parsed.backend} architecture") from None
            platforms = vrow.strs("platforms")
            if not platforms:
                raise vrow._bad("platforms", "is empty")
            variants.append(TorchVariant(tag=tag, platforms=platforms, archs=archs, ptx=vrow.strs("ptx"),
                                         confirmed=vrow.confirmed(), source=vrow.str("source"),
                                         notes=vrow.opt_str("notes") or "",
                                         unconfirmed_archs=vrow.strs("unconfirmed_archs")))
        version = row.version("version")
        if len(version.parts) != 2:
            raise row._bad("version", "must be major.minor (the patch goes in 'latest')")
        releases.append(TorchRelease(
            version=version, latest=row.str("latest"), released=row.str("released"), python=row.strs("python"),
            glibc_min=row.version("glibc_min"), cxx11_abi=row.bool("cxx11_abi"), cxx_standard=row.int("cxx_standard"),
            pypi_default=row.str("pypi_default"), confirmed=row.confirmed(), source=row.str("source"),
            variants=tuple(variants), notes=row.opt_str("notes") or "",
            pypi_default_source=row.opt_str("pypi_default_source") or row.str("source")))

    mvc = []
    for i, data in enumerate(_rows(cuda, "minor_version_compat", "cuda.toml")):
        row = _Row(data, f"cuda.toml [[minor_version_compat]] #{i + 1}")
        mvc.append(DriverFloor(row.int("cuda_major"), row.version("driver_linux"), row.version("driver_windows"),
                               row.str("source"), row.opt_version("applies_from")))
    toolkits = []
    for i, data in enumerate(_rows(cuda, "toolkit", "cuda.toml")):
        row = _Row(data, f"cuda.toml [[toolkit]] #{i + 1} ({data.get('version', '?')})")
        toolkits.append(ToolkitFloor(row.version("version"), row.version("driver_linux"),
                                     row.opt_version("driver_windows"), row.confirmed(), row.str("source")))
    archs = []
    for i, data in enumerate(_rows(cuda, "arch", "cuda.toml")):
        row = _Row(data, f"cuda.toml [[arch]] #{i + 1} ({data.get('compute_capability', '?')})")
        archs.append(ArchSupport(row.cc("compute_capability"), row.str("name"), row.version("first"),
                                 row.opt_version("last"), row.confirmed(), row.str("source"),
                                 row.bool("stand_in", True)))

    nvidia = []
    for i, data in enumerate(_rows(gpus, "nvidia", "gpus.toml")):
        row = _Row(data, f"gpus.toml [[nvidia]] #{i + 1}")
        nvidia.append(NvidiaModel(row.strs("names"), row.cc("compute_capability"), row.str("architecture"),
                                  row.confirmed(), row.str("source")))
    amd = []
    for i, data in enumerate(_rows(gpus, "amd", "gpus.toml")):
        row = _Row(data, f"gpus.toml [[amd]] #{i + 1}")
        try:
            gfx = GfxArch.parse(row.str("gfx"))
        except ValueError:
            raise row._bad("gfx", "is not a gfx target") from None
        amd.append(AmdModel(row.strs("names"), gfx, row.str("architecture"), row.confirmed(), row.str("source")))

    packages = []
    for i, data in enumerate(_rows(mamba, "package", "mamba.toml")):
        row = _Row(data, f"mamba.toml [[package]] #{i + 1}")
        packages.append(KernelPackage(row.str("name"), row.str("dist"), row.str("repository"), row.str("wheel_url"),
                                      row.str("wheel_name"), row.version("min_cuda"), row.version("min_rocm"),
                                      row.cc("upstream_archs_min"), row.str("source")))
    kernel_releases = []
    for i, data in enumerate(_rows(mamba, "release", "mamba.toml")):
        row = _Row(data, f"mamba.toml [[release]] #{i + 1}")
        table = data.get("wheel_archs", {})
        if not isinstance(table, dict) or not all(re.fullmatch(r"cu\d+", k) for k in table):
            raise row._bad("wheel_archs", "must be a table like { cu12 = [\"7.5\", ...] }")
        wheel_archs = tuple((int(k[2:]), _Row({**table, "source": "-" * 9}, row.where).strs(k))
                            for k in sorted(table))
        kernel_releases.append(KernelRelease(row.str("package"), row.str("version"), row.version("python_min"),
                                             row.version("torch_min"), row.opt_version("torch_max"),
                                             row.confirmed(), row.str("source"), wheel_archs))
    wheels = []
    for i, data in enumerate(_rows(mamba, "wheels", "mamba.toml")):
        row = _Row(data, f"mamba.toml [[wheels]] #{i + 1}")
        version = row.str("version")
        wheels.append(WheelSet(row.str("package"), version, row.str("tag", f"v{version}"), row.strs("torch"),
                               row.ints("cuda_major"), row.bools("cxx11_abi"), row.strs("python"),
                               row.strs("machine"), row.confirmed(), row.str("source")))
    fixes = []
    for i, data in enumerate(_rows(mamba, "build_fix", "mamba.toml")):
        row = _Row(data, f"mamba.toml [[build_fix]] #{i + 1}")
        fixes.append(BuildFix(row.str("id"), row.opt_str("package"), row.str("applies"), row.str("what"),
                              row.opt_str("avoid_arch"), row.opt_str("use_instead"), row.str("source")))

    header_fixes = []
    for i, data in enumerate(_rows(rocm, "header_fix", "rocm.toml")):
        row = _Row(data, f"rocm.toml [[header_fix]] #{i + 1}")
        header_fixes.append(HeaderFix(row.str("id"), row.version("rocm_min"), row.version("rocm_below"),
                                      row.str("file"), row.str("why"), row.str("source")))
    official = []
    for i, data in enumerate(_rows(rocm, "official_gfx", "rocm.toml")):
        row = _Row(data, f"rocm.toml [[official_gfx]] #{i + 1}")
        official.append(OfficialGfx(row.version("rocm"), row.opt_version("until"), row.strs("gfx"), row.str("source")))

    channel = _Row(cf.get("channel"), "conda_forge.toml [channel]")
    old_channel = _Row(cf.get("pytorch_channel"), "conda_forge.toml [pytorch_channel]")
    builds = []
    for i, data in enumerate(_rows(cf, "pytorch", "conda_forge.toml")):
        row = _Row(data, f"conda_forge.toml [[pytorch]] #{i + 1}")
        builds.append(CondaForgeBuild(row.str("version"), row.str("platform"),
                                      tuple(DottedVersion.parse(c) for c in row.strs("cuda")), row.str("source")))
    cf_archs = []
    for i, data in enumerate(_rows(cf, "cuda_archs", "conda_forge.toml")):
        row = _Row(data, f"conda_forge.toml [[cuda_archs]] #{i + 1}")
        cf_archs.append((row.version("cuda").truncate(2), row.strs("archs"), row.strs("ptx")))
    conda_forge = CondaForge(channel.bool("rocm_builds"), old_channel.str("last_version"), tuple(builds),
                             tuple(cf_archs), channel.str("source"))

    return Knowledge(
        releases=tuple(sorted(releases, key=lambda r: r.version)), mvc_floors=tuple(mvc), toolkits=tuple(toolkits),
        archs=tuple(archs), nvidia_models=tuple(nvidia), amd_models=tuple(amd), kernel_packages=tuple(packages),
        kernel_releases=tuple(kernel_releases), wheels=tuple(wheels), build_fixes=tuple(fixes),
        header_fixes=tuple(header_fixes), official_gfx=tuple(official), conda_forge=conda_forge)
