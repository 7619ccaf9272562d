"""Reading the TOML tables into a :class:`~resolver.knowledge.query.Knowledge`: typed rows, every
problem one sentence naming the file and the row, and a parse cache keyed by the tables' bytes."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

from resolver.errors import InternalError
from resolver.fs import write_text_atomic
from resolver.knowledge.query import Knowledge
from resolver.knowledge.rows import (
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
)
from resolver.versions import ComputeCapability, CudaVariant, DottedVersion, GfxArch

DATA_DIR = Path(__file__).resolve().parent / "data"
TABLE_FILES = ("torch.toml", "cuda.toml", "gpus.toml", "mamba.toml", "rocm.toml", "conda_forge.toml")


class KnowledgeError(InternalError):
    """A data table is malformed: a bug in the shipped data (or a bad local edit)."""

    id = "knowledge-data"


def load_tables(folder: str | Path | None = None, *, cache: bool = True) -> Knowledge:
    """Read and validate every table in ``folder`` (default: the package's ``data/``)."""
    return _build(_read_tables(Path(folder) if folder is not None else DATA_DIR, cache))


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
                                 fix="restore it from the repository (git checkout resolver/knowledge/data)") from None
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
    from resolver.paths import user_cache_dir

    base = user_cache_dir()
    if base is None:
        return None
    # crc32 + adler32 + length of the concatenated tables: a 64-bit content key without importing hashlib
    # (OpenSSL's import costs more than the whole lookup)
    data = b"".join(name.encode() + b"\0" + blobs[name] + b"\0" for name in sorted(blobs))
    key = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"
    return base / f"knowledge-{key}.json"


def _parse_toml(path: Path, blob: bytes) -> dict:
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise KnowledgeError(f"knowledge table {path} cannot be read: {exc}",
                             fix="restore it from the repository (git checkout resolver/knowledge/data)") from None


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
    nvidia_chips = []
    for i, data in enumerate(_rows(gpus, "nvidia_chip", "gpus.toml")):
        row = _Row(data, f"gpus.toml [[nvidia_chip]] #{i + 1}")
        nvidia_chips.append(NvidiaChip(row.strs("chips"), row.cc("compute_capability"), row.str("architecture"),
                                       row.str("source")))
    amd_chips = []
    for i, data in enumerate(_rows(gpus, "amd_chip", "gpus.toml")):
        row = _Row(data, f"gpus.toml [[amd_chip]] #{i + 1}")
        try:
            gfx = GfxArch.parse(row.str("gfx"))
        except ValueError:
            raise row._bad("gfx", "is not a gfx target") from None
        amd_chips.append(AmdChip(row.strs("codenames"), gfx, row.str("architecture"), row.str("source")))

    packages = []
    for i, data in enumerate(_rows(mamba, "package", "mamba.toml")):
        row = _Row(data, f"mamba.toml [[package]] #{i + 1}")
        packages.append(UpstreamKernel(row.str("name"), row.str("dist"), row.str("repository"), row.str("wheel_url"),
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
                              row.opt_str("avoid_arch"), row.opt_str("use_instead"), row.str("source"),
                              row.opt_version("nvcc_min"), row.opt_version("nvcc_below")))

    api_changes = []
    for i, data in enumerate(_rows(mamba, "api_change", "mamba.toml")):
        row = _Row(data, f"mamba.toml [[api_change]] #{i + 1} ({data.get('id', '?') if isinstance(data, dict) else '?'})")
        torch = row.version("torch")
        if len(torch.parts) != 2:
            raise row._bad("torch", "must be major.minor")
        api_changes.append(ApiChange(row.str("id"), torch, row.str("package"), row.str("what"), row.str("effect"),
                                     row.opt_str("warning"), row.confirmed(), row.str("source")))
    known_bad = []
    for i, data in enumerate(_rows(mamba, "known_bad", "mamba.toml")):
        row = _Row(data, f"mamba.toml [[known_bad]] #{i + 1} ({data.get('id', '?') if isinstance(data, dict) else '?'})")
        when = row.str("when")
        if when not in KNOWN_BAD_WHEN:
            raise row._bad("when", f"is not one of {', '.join(KNOWN_BAD_WHEN)}")
        known_bad.append(KnownBad(row.str("id"), when, row.str("what"), row.str("fix"), row.confirmed(),
                                  row.str("source")))

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
    toolkit = []
    for i, data in enumerate(_rows(cf, "cuda_toolkit_package", "conda_forge.toml")):
        row = _Row(data, f"conda_forge.toml [[cuda_toolkit_package]] #{i + 1} ({data.get('name', '?')})")
        toolkit.append(ToolkitPackage(row.str("name"), row.str("role"), row.ints("cuda_majors"), row.opt_str("ask"),
                                      row.confirmed(), row.str("source")))
    conda_forge = CondaForge(channel.bool("rocm_builds"), old_channel.str("last_version"), tuple(builds),
                             tuple(cf_archs), channel.str("source"), tuple(toolkit))

    return Knowledge(
        releases=tuple(sorted(releases, key=lambda r: r.version)), mvc_floors=tuple(mvc), toolkits=tuple(toolkits),
        archs=tuple(archs), nvidia_models=tuple(nvidia), amd_models=tuple(amd), kernel_packages=tuple(packages),
        kernel_releases=tuple(kernel_releases), wheels=tuple(wheels), build_fixes=tuple(fixes),
        header_fixes=tuple(header_fixes), official_gfx=tuple(official), conda_forge=conda_forge,
        api_changes=tuple(api_changes), known_bad=tuple(known_bad),
        nvidia_chips=tuple(nvidia_chips), amd_chips=tuple(amd_chips))
