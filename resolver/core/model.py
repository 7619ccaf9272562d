"""The request a user makes and the Plan that ``decide`` answers with: frozen values with JSON forms.

The JSON form of :class:`Plan` is a contract (``plan --json``): ``backend``, ``backend_version``,
``python``, ``torch`` (``version``, ``variant``, ``source``, ``conda``), ``kernels`` (``strategy``,
``arch_list``, ``packages``), ``patches``, ``warnings`` and ``trace`` are always present.

A plan holds its versions typed (:mod:`resolver.core.versions`): they are parsed once, when the plan is
made or read back (the text forms are accepted and parsed there), and written back as the same text.

>>> Target.parse("cuda12.6")
Target(backend='cuda', version=DottedVersion(parts=(12, 6)))
>>> str(Target.parse("rocm6.0"))
'rocm6.0'
>>> Target.parse("rocm6.0").env_name
'rocm6'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from resolver.core.errors import BadInput, Refusal, UsageError
from resolver.core.versions import DottedVersion, ReleaseVersion

PYPI_SIMPLE = "https://pypi.org/simple"
# The operating systems whose torch is PyPI's own wheel, published without a local version label: PyTorch builds
# for macOS on CPU only and its CPU index carries the same unlabelled files (pytorch.org "Start Locally": macOS
# installs `pip3 install torch` with no index). A plan for macOS pins torch so, and so does a CPU environment
# that also serves macOS, for its macOS platforms.
TORCH_FROM_PYPI_ON = ("osx",)
_TARGET = re.compile(r"^(auto|cpu|cuda(\d+(?:\.\d+)?)|rocm(\d+(?:\.\d+){0,2}))$")
TARGET_FORMS = ("auto", "cpu", "cudaX.Y", "rocmX.Y[.Z]")
_EXAMPLES = ("auto", "cpu", "cuda11.8", "cuda12.6", "cuda12.8", "cuda12.9", "cuda13.0", "rocm6.0", "rocm6.1",
             "rocm6.2", "rocm6.3", "rocm6.4", "rocm7.0")


@dataclass(frozen=True)
class Target:
    """What the user asked for: ``auto`` (decide from the hardware), ``cpu``, ``cudaX.Y`` or ``rocmX.Y[.Z]``."""

    backend: str  # "auto" | "cpu" | "cuda" | "rocm"
    version: DottedVersion | None = None

    @classmethod
    def parse(cls, text: str) -> "Target":
        cleaned = str(text).strip().lower().replace("-", "").replace("_", "")
        if cleaned.startswith("cu") and not cleaned.startswith("cuda") and cleaned[2:].isdigit() and len(cleaned) >= 5:
            cleaned = f"cuda{cleaned[2:-1]}.{cleaned[-1]}"  # accept the wheel tag form, cu126 → cuda12.6
        match = _TARGET.match(cleaned)
        if not match:
            import difflib  # only for the suggestion in a refusal

            close = difflib.get_close_matches(cleaned, _EXAMPLES, n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise UsageError(f"unknown target {text!r}",
                             fix=f"{hint}use one of {', '.join(TARGET_FORMS)} (e.g. cuda12.6, rocm6.2)")
        if match.group(2):
            return cls("cuda", DottedVersion.parse(match.group(2)))
        if match.group(3):
            return cls("rocm", DottedVersion.parse(match.group(3)))
        return cls(match.group(1))

    @staticmethod
    def for_environment(name: str) -> str:
        """The ``--target`` that locks environment ``name`` again: the family name itself (``cuda12``
        plans the newest CUDA 12.x), or ``TARGET`` for a name no target makes (a fleet's class).

        >>> Target.for_environment("cuda12"), Target.for_environment("cpu"), Target.for_environment("cuda12-sm80")
        ('cuda12', 'cpu', 'TARGET')
        """
        try:
            target = Target.parse(name)
        except UsageError:
            return "TARGET"
        return name if target.backend != "auto" and target.env_name == name else "TARGET"

    @property
    def env_name(self) -> str:
        """The environment family a target lands in: ``cpu``, ``cuda12``, ``cuda13``, ``rocm6`` …"""
        if self.backend in ("auto", "cpu"):
            return self.backend
        return f"{self.backend}{self.version.major}"

    def __str__(self) -> str:
        return self.backend if self.version is None else f"{self.backend}{self.version}"


@dataclass(frozen=True)
class Request:
    """What ``plan`` is asked: a target, optionally a Python version (``X.Y``) and a torch release
    (``X.Y``, ``upgrade --torch``: only that release's builds are candidates)."""

    target: Target = Target("auto")
    python: DottedVersion | None = None
    torch: DottedVersion | None = None


@dataclass(frozen=True)
class TraceStep:
    """One rule that fired or eliminated a candidate, and why."""

    rule: str
    result: str
    because: str

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule, "result": self.result, "because": self.because}


@dataclass(frozen=True)
class TorchSource:
    kind: str  # "pypi-index" | "pypi" | "conda"
    url: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "url": self.url}


@dataclass(frozen=True)
class CondaChoice:
    channel: str
    spec: str

    def to_json(self) -> dict[str, str]:
        return {"channel": self.channel, "spec": self.spec}


@dataclass(frozen=True)
class TorchChoice:
    version: DottedVersion  # 2.9.1 (its text form is accepted)
    variant: str  # "cpu" | "cu126" | "rocm6.2"
    source: TorchSource
    conda: CondaChoice | None = None  # None when conda-forge has no build for it (ROCm)
    cxx11_abi: bool = True
    local_version: str | None = None  # "+cu126" as it appears on the wheel

    def __post_init__(self) -> None:
        object.__setattr__(self, "version", _exact(self.version, DottedVersion))

    @property
    def requirement(self) -> str:
        """The pip requirement pinning exactly this build, e.g. ``torch==2.9.1+cu126``."""
        suffix = f"+{self.local_version.lstrip('+')}" if self.local_version else ""
        return f"torch=={self.version}{suffix}"

    def to_json(self) -> dict[str, Any]:
        return {"version": str(self.version), "variant": self.variant, "source": self.source.to_json(),
                "conda": self.conda.to_json() if self.conda else None, "cxx11_abi": self.cxx11_abi,
                "requirement": self.requirement}


@dataclass(frozen=True)
class KernelChoice:
    strategy: str  # "build" | "prebuilt" | "none"
    arch_list: tuple[str, ...] = ()  # compute capabilities ("8.6") or gfx names ("gfx90a")
    packages: tuple[tuple[str, ReleaseVersion], ...] = ()  # (name, version) for causal-conv1d and mamba-ssm
    toolkit: str | None = None  # "nvcc 12.6" / "hipcc 6.0" / None
    prebuilt_wheels: tuple[tuple[str, str], ...] = ()  # (name, wheel file name) when strategy == "prebuilt"
    # where ``toolkit`` comes from: "system" (found by the probe), "environment" (the environment's own
    # toolkit packages), "target" (a plan for another machine: its own), "missing" (nothing matches torch)
    toolkit_source: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "packages", tuple((name, _exact(version, ReleaseVersion))
                                                   for name, version in self.packages))

    def to_json(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "arch_list": list(self.arch_list),
                "packages": {name: str(version) for name, version in self.packages},
                "toolkit": self.toolkit, "toolkit_source": self.toolkit_source,
                "prebuilt_wheels": dict(self.prebuilt_wheels)}


@dataclass(frozen=True)
class PatchRef:
    id: str
    file: str  # relative to the ROCm root

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "file": self.file}


@dataclass(frozen=True)
class Plan:
    backend: str  # "cpu" | "cuda" | "rocm"
    backend_version: DottedVersion | None  # 12.6, 6.0.2, None for cpu (text forms accepted)
    python: DottedVersion  # 3.11 (text form accepted)
    platform: str  # conda subdir of the target machine
    torch: TorchChoice
    kernels: KernelChoice
    patches: tuple[PatchRef, ...] = ()
    warnings: tuple[str, ...] = ()
    trace: tuple[TraceStep, ...] = ()
    glibc: str | None = None  # the target machine's glibc, for the lock's virtual packages
    cuda_driver: str | None = None  # newest CUDA the target driver runs, for __cuda
    runnable_here: bool = True  # False when the plan was made from another machine's profile
    summary: str = ""
    target: str = "auto"
    # the environment's conda dependencies: its own python, and for CUDA the toolkit the kernels build with
    conda_packages: tuple[tuple[str, str], ...] = ()
    # the environment's name when it is not the backend family's: a fleet class (``cuda12-sm80-sm90``)
    environment: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "python", _exact(self.python, DottedVersion))
        if self.backend_version is not None:
            object.__setattr__(self, "backend_version", _exact(self.backend_version, DottedVersion))

    @property
    def family(self) -> str:
        """The environment family of the plan's backend: ``cpu``, ``cuda12``, ``rocm6`` …"""
        if self.backend == "cpu":
            return "cpu"
        return f"{self.backend}{self.backend_version.major}"

    @property
    def env_name(self) -> str:
        return self.environment or self.family

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "backend_version": None if self.backend_version is None else str(self.backend_version),
            "python": str(self.python),
            "platform": self.platform,
            "target": self.target,
            "environment": self.env_name,
            "torch": self.torch.to_json(),
            "kernels": self.kernels.to_json(),
            "patches": [p.to_json() for p in self.patches],
            "warnings": list(self.warnings),
            "trace": [t.to_json() for t in self.trace],
            "glibc": self.glibc,
            "cuda_driver": self.cuda_driver,
            "runnable_here": self.runnable_here,
            "summary": self.summary,
            "conda_packages": dict(self.conda_packages),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Plan":
        """Read back what :meth:`to_json` wrote (e.g. a plan stored beside the lock)."""
        try:
            torch = data["torch"]
            kernels = data["kernels"]
            plan = cls(
                backend=data["backend"], backend_version=data["backend_version"], python=data["python"],
                platform=data.get("platform", "linux-64"), target=data.get("target", "auto"),
                torch=TorchChoice(
                    version=torch["version"], variant=torch["variant"],
                    source=TorchSource(**torch["source"]),
                    conda=CondaChoice(**torch["conda"]) if torch.get("conda") else None,
                    cxx11_abi=torch.get("cxx11_abi", True),
                    local_version=_local_from_requirement(torch.get("requirement"))),
                kernels=KernelChoice(
                    strategy=kernels["strategy"], arch_list=tuple(kernels["arch_list"]),
                    packages=tuple(sorted(kernels.get("packages", {}).items())), toolkit=kernels.get("toolkit"),
                    prebuilt_wheels=tuple(sorted((kernels.get("prebuilt_wheels") or {}).items())),
                    toolkit_source=kernels.get("toolkit_source")),
                patches=tuple(PatchRef(**p) for p in data.get("patches", [])),
                warnings=tuple(data.get("warnings", [])),
                trace=tuple(TraceStep(**t) for t in data.get("trace", [])),
                glibc=data.get("glibc"), cuda_driver=data.get("cuda_driver"),
                runnable_here=data.get("runnable_here", True), summary=data.get("summary", ""),
                conda_packages=tuple((data.get("conda_packages") or {}).items()))
            name = data.get("environment")
        except (KeyError, TypeError) as exc:
            raise BadInput(f"stored plan is malformed (missing {exc})",
                           fix="run `python -m resolver plan` again") from None
        except (ValueError, AttributeError) as exc:
            raise BadInput(f"stored plan is malformed ({exc})", fix="run `python -m resolver plan` again") from None
        if name is None or name == plan.family:
            return plan
        from resolver.core.names import check_env_name

        return replace(plan, environment=check_env_name(name, where="the stored plan"))


def _exact(value: Any, kind: type) -> Any:
    """``value`` as a ``kind`` (a version type of :mod:`resolver.core.versions`): its text form parsed, and
    refused unless the version is the whole of it, so the text written back is the text read."""
    if isinstance(value, kind):
        return value
    parsed = kind.parse(value)
    if not isinstance(value, str) or str(parsed) != value:
        raise ValueError(f"not a version: {value!r}")
    return parsed


def _local_from_requirement(requirement: str | None) -> str | None:
    if requirement and "+" in requirement:
        return requirement.split("+", 1)[1]
    return None


@dataclass(frozen=True)
class PlanOutcome:
    """What ``decide`` returns: a plan, or the refusal with the trace that led to it."""

    plan: Plan | None
    refusal: Refusal | None = None
    trace: tuple[TraceStep, ...] = field(default=())
