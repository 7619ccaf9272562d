"""Reading the TOML tables into a :class:`~resolver.plan.knowledge.query.Knowledge`: typed rows, every
problem one sentence naming the file and the row. No parse cache: it saved ~18 ms, and only when the
plan memo missed (benchmarks/memo_savings.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from resolver.core.errors import InternalError
from resolver.core.fs import open_read
from resolver.core.versions import ComputeCapability, CudaVariant, DottedVersion, GfxArch
from resolver.plan.knowledge.rows import (
    KNOWN_BAD_WHEN,
    AmdChip,
    AmdModel,
    ApiChange,
    ArchSupport,
    BuildFix,
    CondaForge,
    CondaForgeBuild,
    DriverFloor,
    HeaderFix,
    KernelRelease,
    KnownBad,
    NvidiaChip,
    NvidiaModel,
    OfficialGfx,
    ToolkitFloor,
    ToolkitPackage,
    TorchRelease,
    TorchVariant,
    UpstreamKernel,
    WheelSet,
    is_release_version,
)

DATA_DIR = Path(__file__).resolve().parent / "data"
TABLE_FILES = ("torch.toml", "cuda.toml", "gpus.toml", "mamba.toml", "rocm.toml", "conda_forge.toml")


if TYPE_CHECKING:
    from resolver.plan.knowledge.query import Knowledge


class KnowledgeError(InternalError):
    """A data table is malformed: a bug in the shipped data (or a bad local edit)."""

    id = "knowledge-data"


def load_tables(into: type[Knowledge], folder: str | Path | None = None) -> Knowledge:
    """Read and validate every table in ``folder`` (default: the package's ``data/``) into a ``Knowledge``."""
    folder = Path(folder) if folder is not None else DATA_DIR
    return _build(into, {name: _parse_toml(folder / name, blob) for name, blob in _read_blobs(folder).items()})


TABLE_LIMIT = 16 << 20  # the knowledge tables are tens of kB


def _read_blobs(folder: Path) -> dict[str, bytes]:
    blobs = {}
    for name in TABLE_FILES:
        path = folder / name
        try:
            with open_read(path, what="the knowledge table") as handle:
                blobs[name] = handle.read(TABLE_LIMIT)
        except FileNotFoundError:
            raise KnowledgeError(f"knowledge table {path} is missing", fix="reinstall mamba-resolver") from None
        except OSError as exc:
            raise KnowledgeError(f"knowledge table {path} cannot be read: {exc}",
                                 fix="restore it from the repository (git checkout resolver/plan/knowledge/data)") from None
    return blobs


def _parse_toml(path: Path, blob: bytes) -> dict:
    from resolver.core.errors import BadInput
    from resolver.core.toml import parse_toml

    fix = "restore it from the repository (git checkout resolver/plan/knowledge/data)"
    try:
        return parse_toml(blob.decode("utf-8"), what=f"knowledge table {path}", fix=fix)
    except BadInput as exc:
        raise KnowledgeError(exc.message, fix=fix) from None
    except UnicodeDecodeError as exc:
        raise KnowledgeError(f"knowledge table {path} cannot be read: {exc}",
                             fix="restore it from the repository (git checkout resolver/plan/knowledge/data)") from None


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


def _each(table: dict, file: str, key: str, build: Callable[[_Row], Any], label: str | None = None,
          where: str = "") -> tuple:
    """Every row of ``[[key]]`` in ``table`` typed by ``build``; a problem names the file, the row and
    (``label``) the row's own name."""
    prefix = f"{where} {key}" if where else f"{file} [[{key}]]"
    values = []
    for i, data in enumerate(_rows(table, key, file)):
        name = f" ({data.get(label, '?') if isinstance(data, dict) else '?'})" if label else ""
        values.append(build(_Row(data, f"{prefix} #{i + 1}{name}")))
    return tuple(values)


def _variant(row: _Row) -> TorchVariant:
    tag = row.str("tag")
    try:
        parsed = CudaVariant.parse(tag)
    except ValueError:
        raise row._bad("tag", "is not cpu, cuXYZ or rocmX.Y[.Z]") from None
    archs = row.strs("archs")
    for arch in archs + row.strs("ptx") + row.strs("unconfirmed_archs"):
        try:
            ComputeCapability.parse(arch) if parsed.backend == "cuda" else GfxArch.parse(arch)
        except ValueError:
            raise row._bad("archs", f"holds {arch!r}, not a {parsed.backend} architecture") from None
    platforms = row.strs("platforms")
    if not platforms:
        raise row._bad("platforms", "is empty")
    return TorchVariant(tag=tag, platforms=platforms, archs=archs, ptx=row.strs("ptx"), confirmed=row.confirmed(),
                        source=row.str("source"), notes=row.opt_str("notes") or "",
                        unconfirmed_archs=row.strs("unconfirmed_archs"))


def _torch_release(row: _Row) -> TorchRelease:
    variants = _each(row.data, "torch.toml", "variant", _variant, label="tag", where=row.where)
    version = row.version("version")
    if len(version.parts) != 2:
        raise row._bad("version", "must be major.minor (the patch goes in 'latest')")
    return TorchRelease(
        version=version, latest=row.str("latest"), released=row.str("released"), python=row.strs("python"),
        glibc_min=row.version("glibc_min"), cxx11_abi=row.bool("cxx11_abi"), cxx_standard=row.int("cxx_standard"),
        pypi_default=row.str("pypi_default"), confirmed=row.confirmed(), source=row.str("source"),
        variants=variants, notes=row.opt_str("notes") or "",
        pypi_default_source=row.opt_str("pypi_default_source") or row.str("source"))


def _gfx(row: _Row) -> GfxArch:
    try:
        return GfxArch.parse(row.str("gfx"))
    except ValueError:
        raise row._bad("gfx", "is not a gfx target") from None


def _kernel_release(row: _Row) -> KernelRelease:
    table = row.data.get("wheel_archs", {})
    if not isinstance(table, dict) or not all(re.fullmatch(r"cu\d+", k) for k in table):
        raise row._bad("wheel_archs", "must be a table like { cu12 = [\"7.5\", ...] }")
    wheel_archs = tuple((int(k[2:]), _Row({**table, "source": "-" * 9}, row.where).strs(k)) for k in sorted(table))
    version = row.str("version")
    if not is_release_version(version):
        raise row._bad("version", "must be a PEP 440 version like 2.2.4")
    return KernelRelease(row.str("package"), version, row.version("python_min"), row.version("torch_min"),
                         row.opt_version("torch_max"), row.confirmed(), row.str("source"), wheel_archs)


def _api_change(row: _Row) -> ApiChange:
    torch = row.version("torch")
    if len(torch.parts) != 2:
        raise row._bad("torch", "must be major.minor")
    return ApiChange(row.str("id"), torch, row.str("package"), row.str("what"), row.str("effect"),
                     row.opt_str("warning"), row.confirmed(), row.str("source"))


def _known_bad(row: _Row) -> KnownBad:
    when = row.str("when")
    if when not in KNOWN_BAD_WHEN:
        raise row._bad("when", f"is not one of {', '.join(KNOWN_BAD_WHEN)}")
    return KnownBad(row.str("id"), when, row.str("what"), row.str("fix"), row.confirmed(), row.str("source"))


def _wheel_set(row: _Row) -> WheelSet:
    version = row.str("version")
    return WheelSet(row.str("package"), version, row.str("tag", f"v{version}"), row.strs("torch"), row.ints("cuda_major"),
                    row.bools("cxx11_abi"), row.strs("python"), row.strs("machine"), row.confirmed(), row.str("source"))


# Knowledge field -> (table file, [[key]], what names a row in messages, the row's type)
_TABLES: dict[str, tuple[str, str, str | None, Callable[[_Row], Any]]] = {
    "releases": ("torch.toml", "release", "version", _torch_release),
    "mvc_floors": ("cuda.toml", "minor_version_compat", None, lambda r: DriverFloor(
        r.int("cuda_major"), r.version("driver_linux"), r.version("driver_windows"), r.str("source"),
        r.opt_version("applies_from"))),
    "toolkits": ("cuda.toml", "toolkit", "version", lambda r: ToolkitFloor(
        r.version("version"), r.version("driver_linux"), r.opt_version("driver_windows"), r.confirmed(),
        r.str("source"))),
    "archs": ("cuda.toml", "arch", "compute_capability", lambda r: ArchSupport(
        r.cc("compute_capability"), r.str("name"), r.version("first"), r.opt_version("last"), r.confirmed(),
        r.str("source"), r.bool("stand_in", True))),
    "nvidia_models": ("gpus.toml", "nvidia", None, lambda r: NvidiaModel(
        r.strs("names"), r.cc("compute_capability"), r.str("architecture"), r.confirmed(), r.str("source"))),
    "amd_models": ("gpus.toml", "amd", None, lambda r: AmdModel(
        r.strs("names"), _gfx(r), r.str("architecture"), r.confirmed(), r.str("source"))),
    "nvidia_chips": ("gpus.toml", "nvidia_chip", None, lambda r: NvidiaChip(
        r.strs("chips"), r.cc("compute_capability"), r.str("architecture"), r.str("source"))),
    "amd_chips": ("gpus.toml", "amd_chip", None, lambda r: AmdChip(
        r.strs("codenames"), _gfx(r), r.str("architecture"), r.str("source"))),
    "kernel_packages": ("mamba.toml", "package", None, lambda r: UpstreamKernel(
        r.str("name"), r.str("dist"), r.str("repository"), r.str("wheel_url"), r.str("wheel_name"),
        r.version("min_cuda"), r.version("min_rocm"), r.cc("upstream_archs_min"), r.str("source"))),
    "kernel_releases": ("mamba.toml", "release", None, _kernel_release),
    "wheels": ("mamba.toml", "wheels", None, _wheel_set),
    "build_fixes": ("mamba.toml", "build_fix", None, lambda r: BuildFix(
        r.str("id"), r.opt_str("package"), r.str("applies"), r.str("what"), r.opt_str("avoid_arch"),
        r.opt_str("use_instead"), r.str("source"), r.opt_version("nvcc_min"), r.opt_version("nvcc_below"))),
    "api_changes": ("mamba.toml", "api_change", "id", _api_change),
    "known_bad": ("mamba.toml", "known_bad", "id", _known_bad),
    "header_fixes": ("rocm.toml", "header_fix", None, lambda r: HeaderFix(
        r.str("id"), r.version("rocm_min"), r.version("rocm_below"), r.str("file"), r.str("why"), r.str("source"))),
    "official_gfx": ("rocm.toml", "official_gfx", None, lambda r: OfficialGfx(
        r.version("rocm"), r.opt_version("until"), r.strs("gfx"), r.str("source"))),
}


def _conda_forge(cf: dict) -> CondaForge:
    channel = _Row(cf.get("channel"), "conda_forge.toml [channel]")
    old_channel = _Row(cf.get("pytorch_channel"), "conda_forge.toml [pytorch_channel]")
    file = "conda_forge.toml"
    builds = _each(cf, file, "pytorch", lambda r: CondaForgeBuild(
        r.str("version"), r.str("platform"), tuple(DottedVersion.parse(c) for c in r.strs("cuda")), r.str("source")))
    archs = _each(cf, file, "cuda_archs", lambda r: (r.version("cuda").truncate(2), r.strs("archs"), r.strs("ptx")))
    toolkit = _each(cf, file, "cuda_toolkit_package", lambda r: ToolkitPackage(
        r.str("name"), r.str("role"), r.ints("cuda_majors"), r.opt_str("ask"), r.confirmed(), r.str("source")),
        label="name")
    return CondaForge(channel.bool("rocm_builds"), old_channel.str("last_version"), builds, archs,
                      channel.str("source"), toolkit)


def _build(into: type[Knowledge], raw: dict[str, dict]) -> Knowledge:
    tables = {field: _each(raw[file], file, key, build, label) for field, (file, key, label, build) in _TABLES.items()}
    tables["releases"] = tuple(sorted(tables["releases"], key=lambda r: r.version))
    return into(**tables, conda_forge=_conda_forge(raw["conda_forge.toml"]))
