"""pixi's platforms: a conda subdir plus the virtual packages the manifest declares for it.

A bare ``"linux-64"`` is the subdir with pixi's defaults (``__unix=0=0``, ``__linux=4.18``,
``__glibc=2.28``, ``__archspec=0=x86_64``); an inline table names a variant that declares more,
``{ name = "linux-64-cuda13", platform = "linux-64", cuda = "13" }`` (pixi >= 0.71, replacing the
deprecated ``[system-requirements]``). The solver sees the defaults overridden by the declared ones;
pixi.lock records only the declared ones (pixi compares those, ``satisfiability/environment.rs``),
and the facts come from pixi's source (``pixi_manifest/src/platform.rs``, ``pixi_default_versions``).

>>> cuda = PixiPlatform.from_entry({"name": "linux-64-cuda13", "platform": "linux-64", "cuda": "13"})
>>> cuda.lock_virtual_packages()
['__cuda=13']
>>> cuda.solve_virtual_packages()
['__archspec=0=x86_64', '__cuda=13=0', '__glibc=2.28=0', '__linux=4.18=0', '__unix=0=0']
>>> PixiPlatform.from_entry("linux-64").glibc
'2.28'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from resolver.errors import BadInput
from resolver.platforms import PLATFORMS

# pixi_default_versions: what a bare subdir stands for
DEFAULT_LINUX = "4.18"
DEFAULT_GLIBC = "2.28"
DEFAULT_WINDOWS = "10.0"
DEFAULT_MACOS = "13.0"
# the friendly keys of a platform table and the virtual package each declares
FRIENDLY_KEYS = {"cuda": "__cuda", "glibc": "__glibc", "linux": "__linux", "macos": "__osx", "osx": "__osx",
                 "windows": "__win", "archspec": "__archspec"}
_FIX = "write platforms as pixi does: \"linux-64\" or { name = \"linux-64-cuda13\", platform = \"linux-64\", cuda = \"13\" }"


def subdir_defaults(subdir: str) -> dict[str, tuple[str, str]]:
    """pixi's default virtual packages of a subdir: name -> (version, build)."""
    os_name = PLATFORMS[subdir].os
    out: dict[str, tuple[str, str]] = {}
    if os_name in ("linux", "osx"):
        out["__unix"] = ("0", "0")
    if os_name == "linux":
        out["__linux"] = (DEFAULT_LINUX, "")
        out["__glibc"] = (DEFAULT_GLIBC, "")
    if os_name == "win":
        out["__win"] = (DEFAULT_WINDOWS, "")
    if os_name == "osx":
        out["__osx"] = (DEFAULT_MACOS, "")
    out["__archspec"] = ("0", PLATFORMS[subdir].archspec)
    return out


@dataclass(frozen=True)
class PixiPlatform:
    """One entry of ``[workspace] platforms``."""

    name: str
    subdir: str
    declared: tuple[tuple[str, str, str], ...] = ()  # (virtual package, version, build) the manifest declares

    @classmethod
    def from_entry(cls, entry: Any) -> "PixiPlatform":
        """A platform as pixi.toml writes it: a subdir string or an inline table."""
        if isinstance(entry, str):
            return cls(entry, _subdir(entry))
        if not isinstance(entry, Mapping):
            raise BadInput(f"pixi.toml: a platform must be a string or an inline table, not {type(entry).__name__}",
                           fix=_FIX)
        subdir = _subdir(entry.get("platform"))
        declared: list[tuple[str, str, str]] = []
        for key, value in entry.items():
            key = str(key)
            if key in ("name", "platform"):
                continue
            if key == "cuda" and isinstance(value, Mapping):
                declared.append(("__cuda", str(value.get("driver", "")), ""))
                if value.get("arch"):
                    declared.append(("__cuda_arch", str(value["arch"]), ""))
                continue
            name = FRIENDLY_KEYS.get(key, key if key.startswith("__") else None)
            if name is None or not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise BadInput(f"pixi.toml: platform {entry.get('name') or subdir} has an unknown key {key!r}",
                               fix=_FIX)
            declared.append((name, "0", str(value)) if name == "__archspec" else (name, str(value), ""))
        explicit = entry.get("name")
        return cls(str(explicit) if explicit else synthesized_name(subdir, declared), subdir, tuple(declared))

    def with_cuda(self, major: int) -> "PixiPlatform":
        """This platform, also declaring a CUDA driver of ``major`` (named ``<name>-cuda<major>``)."""
        declared = tuple(d for d in self.declared if d[0] != "__cuda") + (("__cuda", str(major), ""),)
        return PixiPlatform(f"{self.name}-cuda{major}", self.subdir, declared)

    def entry(self) -> Any:
        """The pixi.toml form of this platform: the bare subdir, or an inline table."""
        if not self.declared and self.name == self.subdir:
            return self.subdir
        table: dict[str, Any] = {"name": self.name, "platform": self.subdir}
        friendly = {v: k for k, v in FRIENDLY_KEYS.items() if k != "osx"}
        for name, version, build in self.declared:
            table[friendly.get(name, name)] = build if name == "__archspec" else version
        return table

    def _merged(self) -> dict[str, tuple[str, str]]:
        merged = subdir_defaults(self.subdir)
        for name, version, build in self.declared:
            if name in ("__musl", "__eglibc"):
                merged.pop("__glibc", None)
            merged[name] = (version, build)
        return merged

    def solve_virtual_packages(self) -> list[str]:
        """What the solver treats as present: pixi's defaults, overridden by the declared ones."""
        return sorted(f"{name}={version}={build or '0'}" for name, (version, build) in self._merged().items())

    def lock_virtual_packages(self) -> list[str]:
        """What pixi.lock records for this platform: the declared virtual packages only."""
        return sorted(f"{name}={version}" + (f"={build}" if build else "") for name, version, build in self.declared)

    @property
    def glibc(self) -> str | None:
        """The glibc wheels must fit (the declared one, else pixi's default); None off Linux."""
        value = self._merged().get("__glibc")
        return value[0] if value else None

    @property
    def cuda(self) -> str | None:
        return next((version for name, version, _ in self.declared if name == "__cuda"), None)


def _subdir(value: Any) -> str:
    if not isinstance(value, str) or value not in PLATFORMS:
        raise BadInput(f"pixi.toml: {value!r} is not a conda platform (one of {', '.join(PLATFORMS)})", fix=_FIX)
    return value


def synthesized_name(subdir: str, declared: list[tuple[str, str, str]] | tuple) -> str:
    """A name for an unnamed platform table, in pixi's spirit: ``linux-64-cuda-12-0``."""
    if not declared:
        return subdir
    friendly = {v: k for k, v in FRIENDLY_KEYS.items() if k != "osx"}
    parts = [subdir]
    for name, version, build in sorted(declared):
        parts += [friendly.get(name, name.strip("_")), (build if name == "__archspec" else version).replace(".", "-")]
    return "-".join(parts)
