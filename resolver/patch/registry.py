"""The patch registry: ``patches/<id>/patch.toml`` read into frozen values.

Each folder under ``patches/`` is one fix: which file under the ROCm root it changes, which ROCm
series it is for, the checksum of every known original with the checksum the fix makes of it, the
checksums of later headers that need nothing, and the transformation itself (``[fix]``).

Extra checksum tables (``RESOLVER_PATCH_TABLES``, a ``os.pathsep``-separated list of TOML files, or
``extra_tables=``) add known headers to a patch by id through exactly the same code path: the tests
use it for their synthetic headers, a distribution could use it for a header it builds differently::

    [[originals]]
    patch = "rocm6.0-bf16-inline"
    sha256 = "…"
    fixed_sha256 = "…"
    source = "where this header comes from"

>>> registry = load_registry()
>>> spec = registry.get("rocm6.0-bf16-inline")
>>> spec.file, spec.applies_to(DottedVersion.parse("6.0.2")), spec.applies_to(DottedVersion.parse("6.1.0"))
('include/hip/amd_detail/amd_hip_bf16.h', True, False)
>>> spec.classify("e78b3b28d4437cf2ced8dc7ec00463994e909b10740e65ffe68c2bf7dc1f7a3a").state
'original'
>>> [s.id for s in registry.for_rocm("6.0.2")], registry.for_rocm("6.1.0")
(['rocm6.0-bf16-inline'], ())
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from resolver.core.errors import BadInput, EnvironmentProblem
from resolver.core.versions import DottedVersion

TABLES_ENV = "RESOLVER_PATCH_TABLES"
PATCHES_ENV = "RESOLVER_PATCHES_DIR"
FIX_KINDS = ("add-static-inline",)
_HEADER_TABLES = {"originals": "original", "upstream_fixed": "upstream-fixed", "older_affected": "older-affected"}


@dataclass(frozen=True)
class KnownHeader:
    """One header whose bytes we know: ``state`` is original | fixed | upstream-fixed | older-affected."""

    sha256: str
    state: str
    rocm: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    source: str = ""
    fixed_sha256: str | None = None  # for originals: what the fix makes of it
    original_sha256: str | None = None  # for fixed: the original it came from


@dataclass(frozen=True)
class Reference:
    title: str
    url: str
    source: str = ""


@dataclass(frozen=True)
class Fix:
    kind: str
    insert: str
    functions: tuple[str, ...]


@dataclass(frozen=True)
class PatchSpec:
    id: str
    summary: str
    file: str  # relative to the ROCm root
    rocm_versions: tuple[DottedVersion, ...]  # major.minor series
    fixed_upstream_in: DottedVersion | None
    why: str
    fix: Fix
    headers: tuple[KnownHeader, ...]
    references: tuple[Reference, ...] = ()
    folder: Path | None = None
    tables: tuple[Path, ...] = field(default=())  # where the checksums came from

    def applies_to(self, version: DottedVersion) -> bool:
        """Whether a ROCm release belongs to a series this fix is for (6.0.2 → series 6.0)."""
        return version.truncate(2) in self.rocm_versions

    def is_older(self, version: DottedVersion) -> bool:
        return version.truncate(2) < min(self.rocm_versions)

    def classify(self, sha256: str) -> KnownHeader | None:
        """What we know about a header with this checksum (fixed results count as ``fixed``)."""
        for header in self.headers:
            if header.sha256 == sha256:
                return header
        for header in self.headers:
            if header.state == "original" and header.fixed_sha256 == sha256:
                return KnownHeader(sha256, "fixed", header.rocm, header.tags, header.source,
                                   original_sha256=header.sha256)
        return None

    @property
    def originals(self) -> tuple[KnownHeader, ...]:
        return tuple(h for h in self.headers if h.state == "original")

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "summary": self.summary, "file": self.file,
                "rocm_versions": [str(v) for v in self.rocm_versions],
                "functions": list(self.fix.functions),
                "originals": [{"sha256": h.sha256, "fixed_sha256": h.fixed_sha256, "rocm": list(h.rocm)}
                              for h in self.originals]}


@dataclass(frozen=True)
class Registry:
    patches: tuple[PatchSpec, ...]

    def get(self, patch_id: str) -> PatchSpec:
        for spec in self.patches:
            if spec.id == patch_id:
                return spec
        known = ", ".join(s.id for s in self.patches) or "none"
        raise BadInput(f"no patch with id {patch_id!r}", fix=f"use one of: {known}")

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.patches)

    def for_rocm(self, version: DottedVersion | str) -> tuple[PatchSpec, ...]:
        """The fixes a ROCm release needs (what ``plan`` lists), e.g. 6.0.2 → (rocm6.0-bf16-inline,), 6.1 → ()."""
        parsed = version if isinstance(version, DottedVersion) else DottedVersion.parse(version)
        return tuple(s for s in self.patches if s.applies_to(parsed))


def default_patches_dir() -> Path:
    """The shipped ``patches/`` (repository root, or a wheel's share folder), unless ``RESOLVER_PATCHES_DIR``."""
    override = os.environ.get(PATCHES_ENV)
    if override:
        return Path(override)
    from resolver.core.resources import shipped

    return shipped("patches")


def load_registry(patches_dir: Path | None = None, extra_tables: Sequence[Path] | None = None) -> Registry:
    """Read every ``<patches_dir>/*/patch.toml``; add the known headers of ``extra_tables``
    (default: the files named by ``RESOLVER_PATCH_TABLES``)."""
    folder = Path(patches_dir) if patches_dir is not None else default_patches_dir()
    if extra_tables is None:
        extra_tables = [Path(p) for p in os.environ.get(TABLES_ENV, "").split(os.pathsep) if p.strip()]
    specs: dict[str, PatchSpec] = {}
    if not folder.is_dir():
        # Never "no patches, so nothing needed": a missing registry would wave a ROCm 6.0 build through.
        raise EnvironmentProblem(f"the patch registry {folder} is missing",
                                 fix=f"run from a checkout of mamba-resolver (pip install -e .) or set {PATCHES_ENV}")
    for meta in sorted(folder.glob("*/patch.toml")):
        spec = _parse_spec(meta)
        if spec.id in specs:
            raise BadInput(f"two patches share the id {spec.id!r} ({meta})", fix="give each folder its own id")
        specs[spec.id] = spec
    for table in extra_tables:
        for patch_id, headers in _parse_extra(table).items():
            if patch_id not in specs:
                raise BadInput(f"{table} adds checksums to an unknown patch {patch_id!r}",
                               fix=f"use one of: {', '.join(specs) or 'none'}")
            spec = specs[patch_id]
            specs[patch_id] = replace(spec, headers=spec.headers + tuple(headers), tables=spec.tables + (table,))
    return Registry(tuple(specs.values()))


def _read_toml(path: Path) -> dict[str, Any]:
    from resolver.core.fs import read_bytes_bounded
    from resolver.core.toml import parse_toml

    try:
        text = read_bytes_bounded(path, limit=16 << 20, what="patch table", fix="check the path").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path} is not valid TOML ({exc})", fix="repair the file") from None
    return parse_toml(text, what=str(path), fix="repair the file")


def _parse_spec(path: Path) -> PatchSpec:
    data = _read_toml(path)
    try:
        fix = data["fix"]
        if fix["kind"] not in FIX_KINDS:
            raise BadInput(f"{path}: unknown fix kind {fix['kind']!r}", fix=f"use one of {', '.join(FIX_KINDS)}")
        headers = []
        for table, state in _HEADER_TABLES.items():
            headers.extend(_header(row, state) for row in data.get(table, []))
        spec = PatchSpec(
            id=str(data["id"]), summary=str(data.get("summary", "")), file=str(data["file"]),
            rocm_versions=tuple(DottedVersion.parse(v).truncate(2) for v in data["rocm_versions"]),
            fixed_upstream_in=DottedVersion.parse(data["fixed_upstream_in"]) if data.get("fixed_upstream_in") else None,
            why=" ".join(str(data.get("why", "")).split()),
            fix=Fix(kind=fix["kind"], insert=str(fix.get("insert", "static inline")),
                    functions=tuple(str(f) for f in fix["functions"])),
            headers=tuple(headers),
            references=tuple(Reference(str(r["title"]), str(r["url"]), str(r.get("source", "")))
                             for r in data.get("references", [])),
            folder=path.parent, tables=(path,))
    except (KeyError, TypeError, ValueError) as exc:
        raise BadInput(f"{path} is malformed ({exc!r})", fix="compare it with patches/rocm6.0-bf16-inline/patch.toml") from None
    if spec.id != path.parent.name:
        raise BadInput(f"{path}: id {spec.id!r} differs from its folder name", fix="make them equal")
    return spec


def _header(row: dict[str, Any], state: str) -> KnownHeader:
    sha = str(row["sha256"]).lower()
    fixed = str(row["fixed_sha256"]).lower() if row.get("fixed_sha256") else None
    if state == "original" and not fixed:
        raise KeyError("fixed_sha256")
    for value in (sha, fixed):
        if value is not None and (len(value) != 64 or any(c not in "0123456789abcdef" for c in value)):
            raise ValueError(f"not a sha256: {value!r}")
    return KnownHeader(sha, state, tuple(str(v) for v in row.get("rocm", ())), tuple(str(t) for t in row.get("tags", ())),
                       str(row.get("source", "")), fixed_sha256=fixed)


def _parse_extra(path: Path) -> dict[str, list[KnownHeader]]:
    data = _read_toml(path)
    out: dict[str, list[KnownHeader]] = {}
    try:
        for table, state in _HEADER_TABLES.items():
            for row in data.get(table, []):
                out.setdefault(str(row["patch"]), []).append(_header(row, state))
    except (KeyError, TypeError, ValueError) as exc:
        raise BadInput(f"{path} is malformed ({exc!r})", fix="each row needs patch, sha256 (and fixed_sha256 for originals)") from None
    return out
