"""pixi's platforms: a conda subdir plus the virtual packages the manifest declares for it.

A bare ``"linux-64"`` is the subdir with pixi's defaults (``__unix=0=0``, ``__linux=4.18``,
``__glibc=2.28``, ``__archspec=0=x86_64``); an inline table names a variant that declares more,
``{ name = "linux-64-cuda13", platform = "linux-64", cuda = "13" }`` (pixi >= 0.71, replacing the
deprecated ``[system-requirements]``). The facts come from pixi's source (``pixi_manifest/src/platform.rs``,
``pixi_manifest/src/toml/platform.rs``, ``pixi_default_versions``, ``pixi_core/src/lock_file/platform_rename.rs``):

* the solver sees the defaults overridden by the declared ones;
* pixi.lock records the declared ones in pixi's order (``cuda``, then the friendly keys, then raw
  ``__name`` keys by name) followed by the defaults the entry does not override;
* a platform's *identity* is its subdir plus the declared virtual packages that differ from the
  defaults: pixi matches locked platforms to the manifest's by identity, never by name;
* in pixi.lock a platform that is not a bare subdir is written under an alias, ``p1``, ``p2``, ...
  numbered in the manifest's declaration order of such platforms (:func:`lock_names`).

>>> cuda = PixiPlatform.from_entry({"name": "linux-64-cuda13", "platform": "linux-64", "cuda": "13"})
>>> cuda.lock_virtual_packages()
['__cuda=13', '__unix=0=0', '__linux=4.18', '__glibc=2.28', '__archspec=0=x86_64']
>>> cuda.solve_virtual_packages()
['__archspec=0=x86_64', '__cuda=13=0', '__glibc=2.28=0', '__linux=4.18=0', '__unix=0=0']
>>> cuda.identity
('linux-64', (('__cuda', '13', ''),))
>>> PixiPlatform.from_entry("linux-64").glibc
'2.28'
>>> PixiPlatform.from_entry({"platform": "osx-arm64", "macos": "13.5"}).name
'osx-arm64-macos-13-5'
>>> lock_names([PixiPlatform.from_entry("linux-64"), cuda])
{'linux-64': 'linux-64', 'linux-64-cuda13': 'p1'}
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from resolver.core.errors import BadInput
from resolver.core.platforms import PLATFORMS

# pixi_default_versions: what a bare subdir stands for
DEFAULT_LINUX = "4.18"
DEFAULT_GLIBC = "2.28"
DEFAULT_WINDOWS = "10.0"
DEFAULT_MACOS = "13.0"
# pixi's friendly keys of a platform table, in its canonical order, and the virtual package each declares
FRIENDLY = (("cuda", "__cuda"), ("archspec", "__archspec"), ("glibc", "__glibc"), ("linux", "__linux"),
            ("macos", "__osx"), ("windows", "__win"))
FRIENDLY_KEYS = {**dict(FRIENDLY), "osx": "__osx"}  # osx: an alias of macos
_LIBCS = ("__glibc", "__musl", "__eglibc")
_FIX = "write platforms as pixi does: \"linux-64\" or { name = \"linux-64-cuda13\", platform = \"linux-64\", cuda = \"13\" }"

VirtualPackage = tuple[str, str, str]  # (name, version, build): ("__cuda", "13", ""), ("__unix", "0", "0")


def subdir_defaults(subdir: str) -> tuple[VirtualPackage, ...]:
    """pixi's default virtual packages of a subdir, in pixi's order (``subdir_default_virtual_packages``)."""
    platform = PLATFORMS[subdir]
    out: list[VirtualPackage] = []
    if platform.os in ("linux", "osx", "emscripten"):
        out.append(("__unix", "0", "0"))
    if platform.os == "linux":
        out += [("__linux", DEFAULT_LINUX, ""), ("__glibc", DEFAULT_GLIBC, "")]
    if platform.os == "win":
        out.append(("__win", DEFAULT_WINDOWS, ""))
    if platform.os == "osx":
        out.append(("__osx", DEFAULT_MACOS, ""))
    if platform.archspec:
        out.append(("__archspec", "0", platform.archspec))
    return tuple(out)


def vp_text(package: VirtualPackage) -> str:
    """A virtual package as pixi.lock writes it (rattler's ``GenericVirtualPackage`` Display)."""
    name, version, build = package
    return f"{name}={version}" + (f"={build}" if build else "")


def parse_vp(text: str) -> VirtualPackage | None:
    """``__name=version[=build]`` as pixi.lock holds it, else None (pixi drops what does not parse)."""
    parts = str(text).split("=", 2)
    if len(parts) < 2 or not parts[0].startswith("__") or not parts[1]:
        return None
    return parts[0].lower(), parts[1], parts[2] if len(parts) > 2 else ""


def _version_key(version: str) -> tuple[str, ...]:
    """A conda version for equality the way rattler compares them (``2.28`` == ``2.28.0``)."""
    parts = [p for p in re.split(r"[._-]", version.lower()) if p]
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return tuple(parts)


def customised(subdir: str, packages: Iterable[VirtualPackage]) -> tuple[VirtualPackage, ...]:
    """The virtual packages that differ from the subdir's defaults, by name, builds ``0`` read as empty:
    the part of a platform that is its identity (pixi's ``customised_virtual_packages``)."""
    defaults = {(n, _version_key(v), b) for n, v, b in subdir_defaults(subdir)}
    kept = [(n, v, "" if b == "0" else b) for n, v, b in packages if (n, _version_key(v), b) not in defaults]
    return tuple(sorted((n, ".".join(_version_key(v)), b) for n, v, b in kept))


def lock_identity(subdir: str, virtual_packages: Iterable[str]) -> tuple[str, tuple[VirtualPackage, ...]]:
    """The identity of a platform as pixi.lock records it (name, subdir, virtual-package strings)."""
    return subdir, customised(subdir, (p for p in map(parse_vp, virtual_packages) if p is not None))


@dataclass(frozen=True)
class PixiPlatform:
    """One entry of ``[workspace] platforms``."""

    name: str
    subdir: str
    declared: tuple[VirtualPackage, ...] = ()  # what the entry declares, in pixi's order (defaults not merged)

    @classmethod
    def from_entry(cls, entry: Any) -> "PixiPlatform":
        """A platform as pixi.toml writes it: a subdir string or an inline table."""
        if isinstance(entry, str):
            return cls(entry, _subdir(entry))
        if not isinstance(entry, Mapping):
            raise BadInput(f"pixi.toml: a platform must be a string or an inline table, not {type(entry).__name__}",
                           fix=_FIX)
        explicit = entry.get("name")
        subdir = _subdir(entry.get("platform", explicit))
        label = explicit or subdir
        cuda: list[VirtualPackage] = []
        friendly: dict[str, VirtualPackage] = {}
        raw: list[VirtualPackage] = []
        for key, value in entry.items():
            key = str(key)
            if key in ("name", "platform"):
                continue
            if key == "cuda" and isinstance(value, Mapping):
                if not value.get("driver") or set(map(str, value)) - {"driver", "arch"}:
                    raise BadInput(f"pixi.toml: platform {label}: cuda = {{ ... }} takes driver (and arch)", fix=_FIX)
                cuda.append(("__cuda", _scalar(value["driver"], label, key), ""))
                if value.get("arch"):
                    cuda.append(("__cuda_arch", _scalar(value["arch"], label, key), ""))
                continue
            name = FRIENDLY_KEYS.get(key)
            text = _scalar(value, label, key)
            if name == "__cuda":
                cuda.append((name, text, ""))
            elif name is not None:
                if name in friendly:
                    raise BadInput(f"pixi.toml: platform {label} sets {name} twice (macos and osx are one key)",
                                   fix=_FIX)
                friendly[name] = (name, "0", text) if name == "__archspec" else (name, text, "")
            elif key.startswith("__"):
                version, _, build = text.partition("=")
                raw.append((key.lower(), version, build))
            else:
                raise BadInput(f"pixi.toml: platform {label} has an unknown key {key!r}", fix=_FIX)
        order = [n for _, n in FRIENDLY]
        declared = (*cuda, *sorted(friendly.values(), key=lambda p: order.index(p[0])), *sorted(raw))
        if len({p[0] for p in declared}) != len(declared):
            raise BadInput(f"pixi.toml: platform {label} declares a virtual package twice", fix=_FIX)
        name = str(explicit) if explicit else synthesized_name(subdir, declared)
        if name == subdir and customised(subdir, declared):
            raise BadInput(f"pixi.toml: platform {name} declares virtual packages but is named after its subdir",
                           fix="give it a name of its own, e.g. { name = \"" + subdir + "-cuda12\", ... }")
        return cls(name, subdir, declared)

    def with_cuda(self, major: int) -> "PixiPlatform":
        """This platform, also declaring a CUDA driver of ``major`` (named ``<name>-cuda<major>``)."""
        declared = (("__cuda", str(major), ""), *(d for d in self.declared if d[0] != "__cuda"))
        return PixiPlatform(f"{self.name}-cuda{major}", self.subdir, declared)

    def entry(self) -> Any:
        """The pixi.toml form of this platform: the bare subdir, or an inline table."""
        if self.is_subdir:
            return self.subdir
        table: dict[str, Any] = {"name": self.name, "platform": self.subdir}
        friendly = {n: k for k, n in FRIENDLY}
        for name, version, build in self.declared:
            if name in friendly:
                table[friendly[name]] = build if name == "__archspec" else version
            else:
                table[name] = version + (f"={build}" if build else "")
        return table

    @property
    def is_subdir(self) -> bool:
        """A bare subdir platform (pixi keeps its name in pixi.lock; every other one gets an alias)."""
        return self.name == self.subdir and not customised(self.subdir, self.declared)

    @property
    def identity(self) -> tuple[str, tuple[VirtualPackage, ...]]:
        """What pixi matches a locked platform by: the subdir and the customised virtual packages."""
        return self.subdir, customised(self.subdir, self.declared)

    def _merged(self) -> list[VirtualPackage]:
        """The declared virtual packages, then the defaults they do not override (pixi's ``merge_subdir_defaults``)."""
        names = {p[0] for p in self.declared}
        has_libc = bool(names & set(_LIBCS))
        return [*self.declared, *(d for d in subdir_defaults(self.subdir)
                                  if d[0] not in names and not (d[0] == "__glibc" and has_libc))]

    def solve_virtual_packages(self) -> list[str]:
        """What the solver treats as present: pixi's defaults, overridden by the declared ones."""
        return sorted(f"{name}={version}={build or '0'}" for name, version, build in self._merged())

    def lock_virtual_packages(self) -> list[str]:
        """What pixi.lock records for this platform, in pixi's order."""
        return [vp_text(p) for p in self._merged()]

    @property
    def glibc(self) -> str | None:
        """The glibc wheels must fit (the declared one, else pixi's default); None off Linux."""
        return next((version for name, version, _ in self._merged() if name == "__glibc"), None)

    @property
    def cuda(self) -> str | None:
        return next((version for name, version, _ in self.declared if name == "__cuda"), None)


def lock_names(platforms: Iterable[PixiPlatform]) -> dict[str, str]:
    """Manifest name -> the name pixi writes into pixi.lock: a bare subdir keeps it, every other
    platform becomes ``p1``, ``p2``, ... in declaration order (``shorten_platform_names``)."""
    out: dict[str, str] = {}
    ordinal = 0
    for platform in platforms:
        if platform.is_subdir:
            out[platform.name] = platform.name
        else:
            ordinal += 1
            out[platform.name] = f"p{ordinal}"
    return out


def align(locked: Mapping[str, tuple[str, tuple[str, ...]]], platforms: Iterable[PixiPlatform]) -> dict[str, str]:
    """Locked platform name -> manifest platform name, as pixi renames them when it loads a lock
    (``align_platform_names``): by identity, only where exactly one manifest platform matches, the
    manifest name is not taken by another locked entry and the locked name is not a manifest name
    already. ``locked``: name -> (subdir, virtual-package strings). Unmatched names map to themselves."""
    manifest = list(platforms)
    manifest_names = {p.name for p in manifest}
    renames: dict[str, str] = {}
    for name, (subdir, packages) in locked.items():
        identity = lock_identity(subdir, packages)
        matching = [p for p in manifest if p.identity == identity]
        renames[name] = name
        if len(matching) != 1 or matching[0].name == name:
            continue
        target = matching[0].name
        if target in locked or name in manifest_names:
            continue
        renames[name] = target
    return renames


def _scalar(value: Any, label: str, key: str) -> str:
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise BadInput(f"pixi.toml: platform {label}: {key} must be a version string", fix=_FIX)
    return str(value)


def _subdir(value: Any) -> str:
    if not isinstance(value, str) or value not in PLATFORMS:
        raise BadInput(f"pixi.toml: {value!r} is not a conda platform (one of {', '.join(PLATFORMS)})", fix=_FIX)
    return value


def synthesized_name(subdir: str, declared: Iterable[VirtualPackage]) -> str:
    """The name pixi gives a platform table without one (``synthesize_name_string``): the subdir, then
    each customised virtual package as ``key-value``, friendly keys first in pixi's order.

    >>> synthesized_name("linux-64", [("__cuda", "12.0", ""), ("__glibc", "2.28", "")])
    'linux-64-cuda-12-0'
    """
    wanted = [(n, v, "" if b == "0" else b) for n, v, b in declared
              if (n, _version_key(v), b) not in {(dn, _version_key(dv), db) for dn, dv, db in subdir_defaults(subdir)}]
    parts = [subdir]
    used = set()
    for key, name in FRIENDLY:
        found = next((p for p in wanted if p[0] == name), None)
        if found is None or (name == "__archspec" and not found[2]) or (name != "__archspec" and found[2]):
            continue
        used.add(name)
        parts.append(f"{key}-{_segment(found[2] if name == '__archspec' else found[1])}")
    for name, version, build in sorted(p for p in wanted if p[0] not in used):
        parts.append(f"{_segment(name.lstrip('_'))}-{_segment(version + (f'={build}' if build else ''))}")
    return "-".join(parts)


def _segment(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")
