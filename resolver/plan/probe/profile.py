"""HardwareProfile: what ``probe`` found, as plain frozen data that round-trips through JSON.

The JSON form is a contract (``probe --json``, ``plan --profile FILE``): the keys ``platform``,
``glibc``, ``python``, ``nvidia``, ``amd`` and ``cuda_toolkit`` are always present; ``nvidia`` /
``amd`` are null when absent and ``cuda_toolkit`` is null when there is no nvcc. Every other key
is optional when reading, so a hand-written profile with just those keys plans fine.

>>> p = HardwareProfile.from_json({"platform": "linux-64", "glibc": "2.35", "python": "3.11.7",
...     "nvidia": {"driver_version": "550.54.15",
...                "gpus": [{"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]},
...     "amd": None, "cuda_toolkit": None})
>>> p.nvidia.gpus[0].compute_capability
ComputeCapability(major=9, minor=0)
>>> HardwareProfile.from_json(p.to_json()) == p
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resolver.core.errors import BadInput
from resolver.core.platforms import KNOWN
from resolver.core.versions import ComputeCapability, DottedVersion, GfxArch

PROFILE_LIMIT = 16 << 20  # a profile is a few kB; a file past this is not one


@dataclass(frozen=True)
class NvidiaGpu:
    name: str
    compute_capability: ComputeCapability
    memory_mib: int | None = None
    uuid: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "compute_capability": str(self.compute_capability),
                "memory_mib": self.memory_mib, "uuid": self.uuid}


@dataclass(frozen=True)
class NvidiaInfo:
    driver_version: DottedVersion | None
    gpus: tuple[NvidiaGpu, ...] = ()
    cuda_driver_version: DottedVersion | None = None  # newest CUDA the driver supports (nvidia-smi "CUDA Version")
    sources: tuple[str, ...] = ()
    unidentified_gpus: tuple[str, ...] = ()  # GPUs seen whose compute capability nothing could tell
    cuda_driver_version_derived: bool = False  # no output said it: the knowledge base's driver floors did

    def to_json(self) -> dict[str, Any]:
        return {"driver_version": _s(self.driver_version), "cuda_driver_version": _s(self.cuda_driver_version),
                "cuda_driver_version_derived": self.cuda_driver_version_derived,
                "gpus": [g.to_json() for g in self.gpus], "unidentified_gpus": list(self.unidentified_gpus),
                "sources": list(self.sources)}


@dataclass(frozen=True)
class AmdGpu:
    name: str
    gfx_arch: GfxArch

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "gfx_arch": str(self.gfx_arch)}


@dataclass(frozen=True)
class AmdInfo:
    rocm_version: DottedVersion | None
    gpus: tuple[AmdGpu, ...] = ()
    rocm_root: str | None = None
    sources: tuple[str, ...] = ()
    unidentified_gpus: tuple[str, ...] = ()  # GPUs seen whose gfx target nothing could tell

    def to_json(self) -> dict[str, Any]:
        return {"rocm_version": _s(self.rocm_version), "rocm_root": self.rocm_root,
                "gpus": [g.to_json() for g in self.gpus], "unidentified_gpus": list(self.unidentified_gpus),
                "sources": list(self.sources)}


@dataclass(frozen=True)
class HardwareProfile:
    platform: str
    python: DottedVersion
    glibc: DottedVersion | None = None
    nvidia: NvidiaInfo | None = None
    amd: AmdInfo | None = None
    cuda_toolkit: DottedVersion | None = None
    rocm_toolkit: DottedVersion | None = None  # hipcc's HIP version
    wsl: bool = False
    container: bool = False
    cpu_count: int | None = None
    memory_available_mib: int | None = None
    overrides: tuple[tuple[str, str], ...] = ()  # CONDA_OVERRIDE_* that were applied
    notes: tuple[str, ...] = field(default=())  # what the probe could not read, and why
    sources: tuple[str, ...] = ()  # which inputs answered the host-level fields (glibc, toolkits, …)
    # Facts the input did not state and the value used instead, e.g. ("python", "Python not in the
    # report: assumed 3.12"); only a profile read from a pasted report (probe --from-report) has any.
    assumed: tuple[tuple[str, str], ...] = ()

    @property
    def os(self) -> str:
        return self.platform.split("-", 1)[0]

    @property
    def has_gpu(self) -> bool:
        return bool((self.nvidia and self.nvidia.gpus) or (self.amd and self.amd.gpus))

    @property
    def unidentified(self) -> tuple[tuple[str, str], ...]:
        """``(vendor, name)`` of each GPU seen whose architecture nothing could tell."""
        return tuple([("nvidia", n) for n in (self.nvidia.unidentified_gpus if self.nvidia else ())]
                     + [("amd", n) for n in (self.amd.unidentified_gpus if self.amd else ())])

    def to_json(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "glibc": _s(self.glibc),
            "python": str(self.python),
            "nvidia": self.nvidia.to_json() if self.nvidia else None,
            "amd": self.amd.to_json() if self.amd else None,
            "cuda_toolkit": _s(self.cuda_toolkit),
            "rocm_toolkit": _s(self.rocm_toolkit),
            "wsl": self.wsl,
            "container": self.container,
            "cpu_count": self.cpu_count,
            "memory_available_mib": self.memory_available_mib,
            "overrides": dict(self.overrides),
            "notes": list(self.notes),
            "sources": list(self.sources),
            "assumed": dict(self.assumed),
        }

    @classmethod
    def from_json(cls, data: Any, *, origin: str = "the profile") -> "HardwareProfile":
        """Build a profile from its JSON form; anything malformed is one clear :class:`BadInput`."""
        reader = _Reader(origin)
        if not isinstance(data, dict):
            raise BadInput(f"{origin} is not a JSON object",
                           fix="pass a file written by `python -m resolver probe --json`")
        platform = reader.required_str(data, "platform")
        if platform not in KNOWN:
            raise BadInput(f"{origin}: unknown platform {platform!r} (expected one of {', '.join(KNOWN)})",
                           fix="use a conda subdir name such as linux-64")
        nvidia = data.get("nvidia")
        amd = data.get("amd")
        return cls(
            platform=platform,
            python=reader.version(data, "python", required=True),
            glibc=reader.version(data, "glibc"),
            nvidia=None if nvidia is None else NvidiaInfo(
                driver_version=reader.version(reader.obj(nvidia, "nvidia"), "driver_version"),
                cuda_driver_version=reader.version(nvidia, "cuda_driver_version"),
                gpus=tuple(NvidiaGpu(
                    name=reader.required_str(g, "name", "nvidia.gpus[].name"),
                    compute_capability=reader.parsed(g, "compute_capability", ComputeCapability.parse),
                    memory_mib=reader.optional_int(g, "memory_mib"),
                    uuid=reader.optional_str(g, "uuid")) for g in reader.objects(nvidia, "gpus", "nvidia.gpus")),
                sources=reader.strings(nvidia, "sources", "nvidia.sources"),
                unidentified_gpus=reader.strings(nvidia, "unidentified_gpus"),
                cuda_driver_version_derived=bool(nvidia.get("cuda_driver_version_derived", False))),
            amd=None if amd is None else AmdInfo(
                rocm_version=reader.version(reader.obj(amd, "amd"), "rocm_version"),
                rocm_root=reader.optional_str(amd, "rocm_root"),
                gpus=tuple(AmdGpu(
                    name=reader.required_str(g, "name", "amd.gpus[].name"),
                    gfx_arch=reader.parsed(g, "gfx_arch", GfxArch.parse)) for g in reader.objects(amd, "gpus", "amd.gpus")),
                sources=reader.strings(amd, "sources", "amd.sources"),
                unidentified_gpus=reader.strings(amd, "unidentified_gpus")),
            cuda_toolkit=reader.version(data, "cuda_toolkit"),
            rocm_toolkit=reader.version(data, "rocm_toolkit"),
            wsl=bool(data.get("wsl", False)),
            container=bool(data.get("container", False)),
            cpu_count=reader.optional_int(data, "cpu_count"),
            memory_available_mib=reader.optional_int(data, "memory_available_mib"),
            overrides=reader.string_map(data, "overrides"),
            notes=reader.strings(data, "notes"),
            sources=reader.strings(data, "sources"),
            assumed=reader.assumed(data),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> "HardwareProfile":
        from resolver.core.fs import parse_json, read_bytes_bounded

        path = Path(path)
        try:
            text = read_bytes_bounded(path, limit=PROFILE_LIMIT, what="profile file").decode("utf-8")
        except BadInput as exc:
            if "does not exist" in exc.message:
                raise BadInput(exc.message, fix="write one with `python -m resolver probe --json > profile.json`") \
                    from None
            raise
        except UnicodeDecodeError as exc:
            raise BadInput(f"cannot read profile file {path}: {exc}",
                           fix="pass a UTF-8 JSON file written by `python -m resolver probe --json`") from None
        data = parse_json(text, what=f"profile file {path}",
                          fix="regenerate it with `python -m resolver probe --json > profile.json`")
        return cls.from_json(data, origin=f"profile file {path}")


def _s(value: object | None) -> str | None:
    return None if value is None else str(value)


class _Reader:
    """Typed field access that turns every shape error into one BadInput sentence."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def _bad(self, what: str) -> BadInput:
        return BadInput(f"{self.origin}: {what}",
                        fix="regenerate it with `python -m resolver probe --json > profile.json`")

    def obj(self, value: Any, key: str) -> dict:
        if not isinstance(value, dict):
            raise self._bad(f"'{key}' must be an object or null, not {type(value).__name__}")
        return value

    def objects(self, data: dict, key: str, label: str) -> list[dict]:
        items = data.get(key) or []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise self._bad(f"'{label}' must be a list of objects")
        return items

    def strings(self, data: dict, key: str, label: str | None = None) -> tuple[str, ...]:
        items = data.get(key) or []
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise self._bad(f"'{label or key}' must be a list of strings")
        return tuple(items)

    def string_map(self, data: dict, key: str) -> tuple[tuple[str, str], ...]:
        value = data.get(key) or {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise self._bad(f"'{key}' must map names to strings")
        return tuple(sorted(value.items()))

    def optional_str(self, data: dict, key: str) -> str | None:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise self._bad(f"'{key}' must be a string or null")
        return value

    def required_str(self, data: dict, key: str, label: str | None = None) -> str:
        value = data.get(key)
        if not isinstance(value, str) or not value:
            raise self._bad(f"'{label or key}' is missing or not a string")
        return value

    def optional_int(self, data: dict, key: str) -> int | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(f"'{key}' must be an integer")
        return value

    def version(self, data: dict, key: str, required: bool = False) -> DottedVersion | None:
        value = data.get(key)
        if value is None:
            if required:
                raise self._bad(f"'{key}' is missing")
            return None
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise self._bad(f"'{key}' must be a version string such as \"12.6\"")
        try:
            return DottedVersion.parse(value)
        except ValueError:
            raise self._bad(f"'{key}' is not a version: {value!r}") from None

    def assumed(self, data: dict) -> tuple[tuple[str, str], ...]:
        value = data.get("assumed") or {}
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise self._bad("'assumed' must map field names to sentences")
        return tuple(value.items())

    def parsed(self, data: dict, key: str, parse):
        value = data.get(key)
        try:
            return parse(value)
        except (ValueError, TypeError):
            raise self._bad(f"'{key}' is not valid: {value!r}") from None
