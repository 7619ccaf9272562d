"""What a kernel build is asked (:class:`BuildOptions`), what it works with (:class:`BuildContext`, one
:class:`Variant` per package) and what it answers (per package and in all).

>>> BuildOptions(packages=("causal-conv1d",)).packages
('causal-conv1d',)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from resolver.kernels.envfacts import EnvFacts
from resolver.kernels.packages import KernelRecipe
from resolver.kernels.parallelism import Parallelism
from resolver.project.paths import ProjectPaths


@dataclass(frozen=True)
class BuildOptions:
    packages: tuple[str, ...] | None = None  # None: every known kernel package
    arch: str | None = None  # --arch text; None = the architectures of the plan (handed in, else the locked one)
    env_name: str | None = None
    jobs: int | None = None  # cap on ninja jobs (--jobs / MAX_JOBS)
    prebuilt: str = "auto"  # "auto": use a reachable upstream wheel when the plan says so; "never"
    install: bool = True
    recipe_dirs: tuple[Path, ...] = ()  # explicit recipe folders (tests); overrides ``packages``
    plan_archs: tuple[str, ...] = ()  # from a plan handed in (setup, a fleet variant) or the environment's locked plan
    plan_strategy: str | None = None
    plan_toolkit: str | None = None  # "nvcc 13.0" / "hipcc 6.0": what the plan expects to find
    rocm_overlay: Path | None = None  # include folder to put first (ROCm 6.0): the patch stage's, handed in; None: none
    fleet_channel: str | None = None  # a fleet's shared channel: a variant missing here is fetched, never compiled
    # how a variant is fetched from it: (file name, local channel, variant=what it is for) -> the file; the fleet
    # stage hands it in (resolver.fleet.channel.fetch_package), so this stage imports nothing of the fleet
    fetch_variant: Callable[..., Path] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class BuildContext:
    """What every package of one build shares: the project, the environment and what its Python said about
    itself, the backend and toolkit, the architectures asked for, the header overlay, the options, this
    machine's cores and free memory, and where progress goes."""

    project: ProjectPaths
    env: Any  # resolver.install.environment.Environment
    facts: EnvFacts
    backend: str
    toolkit: Any  # resolver.kernels.toolkit.Toolkit, None for a host-only build
    archs: tuple[str, ...]
    overlay: Path | None
    options: BuildOptions
    cores: int
    free: int
    out: Any = None

    @property
    def toolkit_version(self) -> str:
        return self.toolkit.version if self.toolkit else ""

    @property
    def cxx11_abi(self) -> bool:
        return bool(self.facts.cxx11_abi) if self.facts.cxx11_abi is not None else True  # no torch: g++'s default


@dataclass(frozen=True)
class Variant:
    """One package's build for this context: the architectures kept, its sources, its cache key."""

    package: KernelRecipe
    kept: tuple[str, ...]
    dropped: tuple[str, ...]
    cxx_std: str
    source: Path
    wheel: Path | None  # an upstream wheel relocated instead of compiling
    key_digest: str
    build_string: str

    @property
    def file_name(self) -> str:
        return f"{self.package.name}-{self.package.version}-{self.build_string}.conda"


@dataclass
class PackageOutcome:
    name: str
    version: str
    status: str  # "built" | "cached" | "prebuilt" | "fetched" (from a fleet's channel)
    build_string: str
    file: str
    key: str
    archs: tuple[str, ...]
    dropped_archs: tuple[str, ...]
    seconds: float
    units: tuple[int, int] = (0, 0)
    log: str | None = None
    installed: bool = False
    imports_ok: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "status": self.status, "build_string": self.build_string,
                "file": self.file, "key": self.key, "archs": list(self.archs), "dropped_archs": list(self.dropped_archs),
                "seconds": round(self.seconds, 2), "translation_units": {"done": self.units[0], "total": self.units[1]},
                "log": self.log, "installed": self.installed, "imports_ok": list(self.imports_ok)}


@dataclass
class BuildSummary:
    environment: str
    env_path: str
    facts: EnvFacts
    toolkit: dict[str, Any] | None
    archs: tuple[str, ...]
    parallelism: Parallelism | None
    channel: str
    packages: list[PackageOutcome] = field(default_factory=list)
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.environment, "env_path": self.env_path, "env": self.facts.to_json(),
                "toolkit": self.toolkit, "archs": list(self.archs),
                "parallelism": self.parallelism.to_json() if self.parallelism else None,
                "channel": self.channel, "packages": [p.to_json() for p in self.packages],
                "compiled": sum(1 for p in self.packages if p.status == "built"),
                "seconds": round(self.seconds, 2), "warnings": list(self.warnings)}
