"""Conda, through py-rattler, in one place: solving, linking into prefixes, indexing channels.

Every stage that touches conda packages (lock, install, the kernel build) comes through here, and
nothing of rattler's leaves it: a solve answers with :class:`CondaRecord` values, a pixi.lock is read
into :class:`LockView` answers (our own values), a lock text is made canonical by
:func:`canonical_lock_text`, and linking takes :class:`CondaRecord` values again.
py-rattler 0.28 can abort at interpreter exit after a solve/index/install (a tokio worker thread
touching Python while it finalises): :func:`rattler` imports it
and registers a short sleep at exit, the workaround measured to remove the crash, so in-process
callers (tests, benchmarks, other tools) are safe too; the CLI additionally leaves via ``os._exit``.

>>> virtual_package_strings("linux-64", glibc="2.35", cuda="12.8")
['__archspec=1=x86_64', '__cuda=12.8=0', '__glibc=2.35=0', '__linux=4.18=0', '__unix=0=0']
>>> virtual_package_strings("osx-arm64")
['__archspec=1=m1', '__osx=11.0=0', '__unix=0=0']
"""

from __future__ import annotations

import atexit
import datetime
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Coroutine

from resolver.core.errors import BadInput, BuildFailed, IntegrityError, Refusal, ResolverError, SourceUnreachable
from resolver.core.fs import list_names, make_folder, read_text_bounded, write_text_atomic
from resolver.core.names import canonical_name
from resolver.core.platforms import PLATFORMS, host_subdir

DEFAULT_LINUX = "4.18"  # pixi's default __linux for a bare linux platform
DEFAULT_GLIBC = "2.28"  # pixi's default __glibc (docs/workspace/system_requirements.md)
DEFAULT_OSX = "11.0"
SOLVE_TIMEOUT = datetime.timedelta(seconds=120)
# What rattler says when a package itself is broken (a rerun cannot help): its metadata is unreadable, or
# a path in it is not one the installer accepts.
_MALFORMED = re.compile(r"paths\.json|index\.json|must be relative|panicked|invalid (?:type|value|path)")


def rattler() -> Any:
    """Import py-rattler once per process, with the exit-crash workaround registered."""
    already = "rattler" in sys.modules
    import rattler as module

    if not already or not getattr(module, "_resolver_exit_guard", False):
        atexit.register(time.sleep, 0.2)
        module._resolver_exit_guard = True
    return module


def run(coro: Coroutine) -> Any:
    """Run one py-rattler coroutine to completion from synchronous code."""
    import asyncio  # ~20 ms: imported when a solve runs, not when lock starts (uv is started first)

    return asyncio.run(coro)


# -------------------------------------------------------------------------------- virtual packages


def virtual_package_strings(platform: str, *, glibc: str | None = None, cuda: str | None = None,
                            linux: str | None = None) -> list[str]:
    """The target machine's virtual packages as ``name=version=build`` strings (what pixi.lock records)."""
    out = [f"__archspec=1={PLATFORMS[platform].archspec}"]
    if platform.startswith("linux"):
        out += [f"__glibc={glibc or DEFAULT_GLIBC}=0", f"__linux={linux or DEFAULT_LINUX}=0", "__unix=0=0"]
        if cuda:
            out.append(f"__cuda={cuda}=0")
    elif platform.startswith("osx"):
        out += [f"__osx={DEFAULT_OSX}=0", "__unix=0=0"]
    elif platform.startswith("win"):
        out.append("__win=0=0")
    return sorted(out)


def target_virtual_packages(strings: list[str]) -> list[Any]:
    """``GenericVirtualPackage`` objects for :func:`virtual_package_strings` output (imports rattler)."""
    r = rattler()
    from rattler.package import BuildString

    result = []
    for text in strings:
        name, version, build = (text.split("=") + ["0", "0"])[:3]
        result.append(r.GenericVirtualPackage(r.PackageName(name), r.Version(version), BuildString(build)))
    return result


# ---------------------------------------------------------------------------------- our own values


@dataclass(frozen=True)
class CondaRecord:
    """One conda package as a solve found it or a lock records it: our value, rattler's stays here."""

    name: str
    version: str
    build: str
    subdir: str
    url: str  # an absolute URL (a file URL for a local channel or a verified copy)
    channel: str | None
    sha256: str | None  # hex
    md5: str | None  # hex
    fields: str  # its whole repodata entry (depends, constrains, size, timestamp, ...) as canonical JSON

    @property
    def file_name(self) -> str:
        from urllib.parse import unquote

        return unquote(self.url.rstrip("/").rsplit("/", 1)[-1])

    def at(self, url: str, channel: str | None) -> "CondaRecord":
        """The same package at another location (its canonical channel, or a verified local copy)."""
        import dataclasses

        return dataclasses.replace(self, url=url, channel=channel)

    def lock_entry(self, location: str | None = None, *, with_channel: bool = True) -> list[str]:
        """Its pixi.lock entry lines (``- conda: ...`` first); :func:`canonical_lock_text` gives them
        rattler's spelling."""
        lines = [f"- conda: {json.dumps(location or self.url)}"]
        if with_channel and self.channel:
            lines.append(f"  channel: {json.dumps(self.channel)}")
        lines += [f"  {key}: {json.dumps(value)}" for key, value in json.loads(self.fields).items()]
        return lines


@dataclass(frozen=True)
class LockedPypi:
    """One PyPI entry of a pixi.lock as rattler reads it."""

    name: str
    version: str
    location: str  # as the lock writes it (relative paths stay relative)
    sha256: str  # hex, "" for a source pixi builds itself (git, a folder)
    requires_dist: tuple[str, ...]
    requires_python: str | None


def _record_value(native: Any, url: str, channel: str | None) -> CondaRecord:
    data = json.loads(native.to_json())
    for key in ("url", "fn", "channel"):
        data.pop(key, None)
    if isinstance(data.get("track_features"), str):  # repodata spells it as one string, a lock as a list
        data["track_features"] = data["track_features"].replace(",", " ").split()
    return CondaRecord(name=str(data.get("name")), version=str(data.get("version")), build=str(data.get("build")),
                       subdir=str(data.get("subdir")), url=url, channel=channel, sha256=data.get("sha256"),
                       md5=data.get("md5"), fields=json.dumps(data, sort_keys=True))


def _natives(records: list[CondaRecord], platform: str) -> list[Any]:
    """rattler's records for ``records`` (read back from a lock of just them: the one way py-rattler
    builds a record from its data)."""
    if not records:
        return []
    text = "\n".join(["version: 7", "platforms:", "- name: target", f"  subdir: {platform}", "environments:",
                      "  default:", "    channels: []", "    packages:", "      target:",
                      *(f"      - conda: {json.dumps(r.url)}" for r in records), "packages:",
                      *(line for r in records for line in r.lock_entry())]) + "\n"
    lock = _parse_lock_text(text)
    env = lock.default_environment()
    natives = env.conda_repodata_records_for_platform(env.platforms()[0]) or []
    by_url = {str(n.url): n for n in natives}
    return [by_url.get(r.url) or next(n for n in natives if n.file_name == r.file_name) for r in records]


# ------------------------------------------------------------------------------------- lock files


LOCK_TEXT_LIMIT = 256 << 20  # the lock rattler writes back: pixi.lock's own bound


def _parse_lock_text(text: str) -> Any:
    """rattler's ``LockFile`` of ``text`` (py-rattler reads files only)."""
    r = rattler()
    with tempfile.TemporaryDirectory(prefix="resolver-lock-") as tmp:
        path = Path(tmp) / "pixi.lock"
        write_text_atomic(path, text, under=tmp)
        return r.LockFile.from_path(str(path))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def canonical_lock_text(text: str) -> str:
    """``text`` (a pixi.lock of any version rattler reads) as rattler writes it: version 7, every value
    spelled and ordered the one way pixi's own writer does. ValueError when rattler cannot read it."""
    try:
        lock = _parse_lock_text(text)
    except Exception as exc:  # rattler's ParseCondaLockError and friends
        raise ValueError(_first_line(exc)) from None
    with tempfile.TemporaryDirectory(prefix="resolver-lock-") as tmp:
        out = Path(tmp) / "pixi.lock"
        try:
            lock.to_path(str(out))
        except Exception as exc:  # rattler's IoError (disk full, read-only) is not an OSError
            raise OSError(f"cannot write a temporary lock in {tmp}: {_first_line(exc)}") from None
        return read_text_bounded(out, limit=LOCK_TEXT_LIMIT, what="the lock rattler wrote", under=tmp)


class LockView:
    """A pixi.lock as rattler reads it, answering in our own values."""

    def __init__(self, path: Path | None = None, *, text: str | None = None) -> None:
        r = rattler()
        try:
            self._lock = r.LockFile.from_path(str(path)) if text is None else _parse_lock_text(text)
        except Exception as exc:  # rattler.exceptions.ParseCondaLockError and parse errors
            raise ValueError(_first_line(exc)) from None
        self._envs = dict(self._lock.environments())

    def platforms(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """name -> (subdir, the virtual packages it records)."""
        return {str(p.name): (str(p.subdir), tuple(str(v) for v in p.virtual_packages)) for p in self._lock.platforms()}

    def environments(self) -> list[str]:
        return list(self._envs)

    def channels(self, env: str) -> tuple[str, ...]:
        return tuple(str(c.url if hasattr(c, "url") else c) for c in self._envs[env].channels())

    def counts(self, env: str) -> dict[str, int]:
        """platform -> how many packages the environment locks there."""
        return {str(p.name): len(self._envs[env].packages(p) or []) for p in self._envs[env].platforms()}

    def _packages(self, env: str, platform: str) -> list[Any]:
        environment = self._envs[env]
        chosen = next((p for p in environment.platforms() if str(p.name) == platform), None)
        return list(environment.packages(chosen) or []) if chosen is not None else []

    def packages(self, env: str, platform: str, locate: Any) -> tuple[tuple[CondaRecord, ...], tuple[LockedPypi, ...],
                                                                        tuple[str, ...]]:
        """(conda records, PyPI entries, names of conda packages pixi builds from source) of ``env`` on
        ``platform``; ``locate`` makes a lock location absolute (relative ones are the project's)."""
        r = rattler()
        conda, pypi, sources = [], [], []
        for pkg in self._packages(env, platform):
            if isinstance(pkg, r.PypiLockedPackage):
                sha = getattr(pkg.hashes, "sha256", None) if pkg.hashes is not None else None
                pypi.append(LockedPypi(str(pkg.name), str(pkg.version), str(pkg.location),
                                       sha.hex() if isinstance(sha, (bytes, bytearray)) else (sha or ""),
                                       tuple(str(x) for x in (pkg.requires_dist or ())),
                                       str(pkg.requires_python) if pkg.requires_python else None))
            elif getattr(pkg, "package_record", None) is None:  # a package pixi builds from source
                sources.append(str(pkg.name))
            else:
                url = locate(str(pkg.location))
                conda.append(_record_value(pkg.package_record, url, url.rsplit("/", 2)[0] + "/"))
        return tuple(conda), tuple(pypi), tuple(sources)

    def unsatisfied(self, env: str, platform: str, conda_specs: list[str], pypi_requirements: list[str]) -> list[str]:
        """What of the manifest's specs the locked packages of ``env`` on ``platform`` do not satisfy,
        one short phrase each (rattler's MatchSpec and PEP 508 matching)."""
        r = rattler()
        packages = self._packages(env, platform)
        conda = {}
        pypi = {}
        for pkg in packages:
            (pypi if isinstance(pkg, r.PypiLockedPackage) else conda).setdefault(canonical_name(str(pkg.name)), pkg)
        out = []
        for specs, locked, kind in ((conda_specs, conda, "conda"), (pypi_requirements, pypi, "PyPI")):
            for spec in specs:
                name = canonical_name(re.split(r"[\s\[<>=!~;@]", spec.strip(), maxsplit=1)[0])
                pkg = locked.get(name)
                if pkg is None:
                    out.append(f"{kind} package {name} is not locked")
                    continue
                if canonical_name(spec.strip()) == name:  # any version: being locked is enough
                    continue
                try:
                    fits = pkg.satisfies(re.sub(r"\[[^\]]*\]", "", spec))
                except Exception:  # a spec rattler cannot read: the lock cannot be shown to satisfy it
                    fits = False
                if not fits:
                    out.append(f"{spec.strip()} is not the locked {name} {pkg.version}")
        return out



# ---------------------------------------------------------------------------------------- channels


def check_channel(url: str, platform: str, timeout: float = 5.0) -> None:
    """Fail fast, in one sentence, when a channel cannot be read at all."""
    from resolver.tools.net import probe_status

    if url.startswith("file://"):
        from resolver.core.names import local_path

        folder = local_path(url)
        if folder is None or not folder.is_dir():
            raise BadInput(f"conda channel folder {folder} does not exist",
                           fix="create it, fix RESOLVER_CONDA_CHANNELS / [tool.resolver] conda-channels, "
                               "or pass --no-conda")
        if not any((folder / sub / "repodata.json").is_file() for sub in (platform, "noarch")):
            raise BadInput(f"conda channel folder {folder} has no repodata.json for {platform} or noarch "
                           "(it is not indexed)",
                           fix=f"index it (`rattler-index fs {folder}`, or py-rattler's index_fs), "
                               "or point the channel setting at an indexed mirror")
        return
    if url.startswith(("http://", "https://")):
        status = probe_status(url.rstrip("/") + "/noarch/repodata.json", timeout=timeout)
        if isinstance(status, int) and status < 500 and status != 404:
            return
        reason = f"HTTP {status}" if isinstance(status, int) else status
        raise SourceUnreachable(f"conda channel {url} cannot be reached ({reason})",
                                fix="set a mirror (RESOLVER_CONDA_CHANNELS=/path/to/mirror or [tool.resolver] "
                                    "conda-channels / mirrors in pixi.toml), or lock without the conda part: --no-conda")


def index_channel(channel: Path, subdirs: tuple[str, ...] | None = None) -> None:
    """(Re)write ``repodata.json`` of a local channel folder (every subdir, or the ones named). A package
    the indexer cannot read (rattler panics on some) is one :class:`BadInput` naming the channel."""
    r = rattler()
    from rattler.index import index_fs
    from rattler.platform import Subdir

    del r
    try:
        if subdirs is None:
            for subdir in list_names(channel):
                _check_indexable(channel, subdir)
            run(index_fs(channel, write_zst=False, write_shards=False))
            return
        for subdir in subdirs:
            make_folder(channel / subdir)
            _check_indexable(channel, subdir)
            run(index_fs(channel, target_platform=Subdir(subdir), write_zst=False, write_shards=False))
    except BaseException as exc:  # rattler's errors, and the panic a malformed package causes
        if not is_rattler_failure(exc):
            raise
        raise BadInput(f"channel {channel} cannot be indexed ({_one_line(exc)})",
                       fix="remove the package the reason names from the channel, then index it again") from None


def _check_indexable(channel: Path, subdir: str) -> None:
    """Refuse (exit 3) what rattler's indexer would open and wait on or read without end: a ``repodata*`` or
    package of the subdir that is a link, FIFO, device or socket (rattler opens paths as they are)."""
    import stat

    folder = channel / subdir
    if not os.path.isdir(folder) or os.path.islink(folder):
        return
    for name in list_names(folder):
        if not (name.startswith("repodata") or name.endswith((".conda", ".tar.bz2"))):
            continue
        mode = os.lstat(folder / name).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise BadInput(f"{folder / name} in the channel is not a regular file (a link, FIFO or device); the "
                           "resolver does not index through it",
                           fix=f"remove {folder / name} (and find out who put it there), then run again")


def is_rattler_failure(exc: BaseException) -> bool:
    """An exception py-rattler raised: its own errors, and a Rust panic (``PanicException``, which derives
    from BaseException and so passes ``except Exception``); never an interrupt or a termination."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


def _one_line(exc: BaseException, limit: int = 300) -> str:
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())[:limit] or type(exc).__name__


# ------------------------------------------------------------------------------- package archives


@dataclass(frozen=True)
class Member:
    """One entry of a package's archive: ``kind`` is file, dir, symlink or hardlink; ``target`` a link's."""

    name: str
    kind: str
    target: str | None = None


@dataclass(frozen=True)
class PackageListing:
    """What a package archive holds: its ``info/index.json`` and ``info/paths.json`` (None when absent)
    and every member of its payload."""

    index_json: bytes | None
    paths_json: bytes | None
    members: tuple[Member, ...]


def read_package(path: Path, *, info_limit: int, member_limit: int, unpacked_limit: int,
                 before_payload: Callable[[dict[str, bytes]], None] | None = None) -> PackageListing:
    """List a ``.conda`` or ``.tar.bz2`` package without extracting it: py-rattler streams the archive and
    reads the two info files (at most ``info_limit`` bytes each), then ``before_payload(info)`` (which may
    refuse the package before its payload is read), then the payload's headers. The payload is bounded as
    it streams: at most ``member_limit`` members, and at most ``unpacked_limit`` bytes unpacked, counted
    from each member's header before its data is read, so a small archive that unpacks to terabytes stops
    at the first header past the bound. An archive that cannot be read, or past a bound, is one
    :class:`IntegrityError` naming the file (never a panic)."""
    rattler()
    from rattler.package_streaming import PackageArchive

    async def listing() -> PackageListing:
        archive = await PackageArchive.from_path(path)
        info: dict[str, bytes] = {}
        async for entry in archive.stream("info"):
            if entry.name in ("info/index.json", "info/paths.json") and entry.is_file:
                if entry.size > info_limit:
                    raise _TooLarge(f"{entry.name} is larger than {info_limit >> 20} MiB")
                info[entry.name] = await entry.read()
        if before_payload is not None:
            before_payload(info)
        members: list[Member] = []
        unpacked = 0
        async for entry in archive.stream("pkg"):
            if len(members) >= member_limit:
                raise _TooLarge(f"it holds more than {member_limit} files")
            unpacked += max(int(entry.size or 0), 0) if entry.is_file else 0
            if unpacked > unpacked_limit:
                raise _TooLarge(f"it unpacks to more than {size_text(unpacked_limit)} (a file of "
                                f"{size_text(int(entry.size or 0))} among them)")
            kind = "symlink" if entry.is_symlink else "hardlink" if entry.is_hardlink else \
                "file" if entry.is_file else "dir"
            members.append(Member(entry.name, kind, entry.link_target if entry.is_link else None))
        return PackageListing(info.get("info/index.json"), info.get("info/paths.json"), tuple(members))

    try:
        return run(listing())
    except ResolverError:
        raise
    except _TooLarge as exc:
        raise IntegrityError(f"package {path.name} is refused: {exc}",
                             fix="rebuild the package; a package from a channel you do not publish: tell its "
                                 "publisher, and do not use it") from None
    except BaseException as exc:
        raise _unreadable(path, exc) from None


class _TooLarge(Exception):
    pass


def _unreadable(path: Path, exc: BaseException) -> BaseException:
    """What a failure reading the archive ``path`` is raised as: rattler's own failures as one
    :class:`IntegrityError` naming the file, anything else as it was."""
    if not is_rattler_failure(exc):
        return exc
    return IntegrityError(f"package {path.name} is refused: its archive cannot be read ({_one_line(exc)})",
                          fix="build or download it again; a package from a channel you do not publish: "
                              "tell its publisher")


def read_package_index(path: Path, *, limit: int) -> bytes | None:
    """The bytes of a ``.conda`` or ``.tar.bz2`` package's ``info/index.json`` (None: it has none), read
    without extracting anything and without listing its files (at most ``limit`` bytes). An archive that
    cannot be read is one :class:`IntegrityError` naming the file."""
    rattler()
    from rattler.package_streaming import PackageArchive

    async def index() -> bytes | None:
        archive = await PackageArchive.from_path(path)
        async for entry in archive.stream("info"):
            if entry.name == "info/index.json" and entry.is_file:
                if entry.size > limit:
                    raise _TooLarge(f"its info/index.json is larger than {limit >> 10} KiB")
                return await entry.read()
        return None

    try:
        return run(index())
    except _TooLarge as exc:
        raise IntegrityError(f"package {path.name} is refused: {exc}", fix="build or download it again") from None
    except BaseException as exc:
        raise _unreadable(path, exc) from None


def size_text(n: int) -> str:
    """A byte count for a sentence.

    >>> size_text(5 << 30), size_text(1536 << 30), size_text(3 << 20)
    ('5.0 GiB', '1.5 TiB', '3.0 MiB')
    """
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def version_matches(spec: str, version: str) -> bool:
    """Whether a conda version ``spec`` (``>=3.10,<3.14``, ``3.11.*``) admits ``version``."""
    r = rattler()
    return r.VersionSpec(spec).matches(r.Version(version))


def record_matches(record: CondaRecord, spec: str) -> bool:
    """Whether a locked conda ``record`` satisfies the match spec ``spec`` (``python 3.11.*``, rattler's
    matching); a spec rattler cannot parse is satisfied by nothing."""
    r = rattler()
    from rattler.package import BuildString

    try:
        build_number = int(json.loads(record.fields).get("build_number") or 0)
        native = r.PackageRecord(record.name, record.version, BuildString(record.build), build_number, record.subdir)
        return r.MatchSpec(spec).matches(native)
    except Exception:  # rattler.exceptions.InvalidMatchSpecError and its kin
        return False


def depends_names(record: CondaRecord) -> list[str]:
    """The package names ``record`` depends on (virtual packages such as ``__glibc`` left out)."""
    depends = json.loads(record.fields).get("depends") or []
    names = (re.match(r"\s*([A-Za-z0-9_.+-]+)", str(text)) for text in depends)
    return [m.group(1).lower() for m in names if m and not m.group(1).startswith("__")]


# --------------------------------------------------------------------------------- solve and link


def solve(channels: list[str], specs: list[str], platform: str, virtual_packages: list[str]) -> list[CondaRecord]:
    """py-rattler ``solve`` for a target machine; unreachable channels and conflicts are one sentence."""
    r = rattler()
    for url in channels:
        check_channel(url, platform)
    try:
        records = run(r.solve([r.Channel(c) for c in channels], specs, platforms=[platform, "noarch"],
                              virtual_packages=target_virtual_packages(virtual_packages), timeout=SOLVE_TIMEOUT))
    except Exception as exc:  # rattler.exceptions.SolverError and friends
        text = str(exc).strip()
        first = " ".join(text.splitlines()[:6])[:600]
        missing = re.search(r"No candidates were found for ([A-Za-z0-9_.-]+)", text)
        if missing:
            raise BadInput(f"no package {missing.group(1)} for {platform} in the conda channels {', '.join(channels)}",
                           fix=f"add a channel that has {missing.group(1)} (conda-forge, or a mirror of it named with "
                               "--channel / [tool.resolver] conda-channels), or drop it from [dependencies]",
                           because=text[:4000]) from None
        raise Refusal(f"the conda packages cannot be solved for {platform} ({first})",
                      fix="relax the [dependencies] pins in pixi.toml or add the channel that has them",
                      because=text[:4000]) from None
    return sorted((_record_value(rec, str(rec.url), str(rec.channel) if rec.channel else None) for rec in records),
                  key=lambda rec: rec.name)


def link(records: list[CondaRecord], prefix: Path, *, platform: str, cache_dir: Path, final: Path | None = None,
         what: str = "the conda packages") -> None:
    """Make ``prefix`` hold exactly ``records`` (files whose paths are baked for ``final``)."""
    _link(_natives(records, platform), prefix, platform=platform, cache_dir=cache_dir, final=final, what=what)


def _link(records: list[Any], prefix: Path, *, platform: str, cache_dir: Path, final: Path | None = None,
          installed: list[Any] | None = None, what: str = "the conda packages") -> None:
    r = rattler()
    from rattler.platform import Subdir

    for attempt in (1, 2):
        try:
            run(r.install(records, target_prefix=str(prefix), cache_dir=cache_dir, platform=Subdir(platform),
                          installed_packages=installed, show_progress=False, execute_link_scripts=False,
                          alternative_target_prefix=str(final) if final else None))
            return
        except BaseException as exc:  # rattler.exceptions.InstallerError …, or a panic over a malformed package
            if not is_rattler_failure(exc):
                raise
            # rattler's "failed to fetch" of a local verified file was seen once, at a load average of 10,
            # and not again in 60 runs: one more try, then the whole message (every line of it)
            reason = _one_line(exc, 600)
            if attempt == 1 and "fetch" in reason:
                continue
            if type(exc).__name__ == "PanicException" or _MALFORMED.search(reason):
                raise IntegrityError(f"linking {what} failed: a package is malformed ({reason})",
                                     fix="rebuild or republish the package the reason names (running again cannot "
                                         "help)") from None
            if "No space left" in reason:
                raise BadInput(f"linking {what} failed: the disk is full ({reason})",
                               fix="free disk space, then run the same command again") from None
            raise BuildFailed(f"linking {what} failed ({reason})",
                              fix="run the same command again; if it persists, relock") from None


def records_for_files(records: list[CondaRecord], files: list[Path]) -> list[CondaRecord]:
    """The locked records pointed at the verified local copies of their packages."""
    return [rec.at(path.resolve().as_uri(), rec.channel) for rec, path in zip(records, files)]


def add_package(prefix: Path, package_file: Path, *, cache_dir: Path) -> None:
    """Install one package of a local indexed channel into ``prefix``, replacing older builds of it and
    keeping everything else the prefix holds (a venv gets a ``conda-meta/`` of its own)."""
    r = rattler()
    record = _channel_record(package_file)
    meta = prefix / "conda-meta"
    installed = [r.PrefixRecord.from_path(str(p)) for p in sorted(meta.glob("*.json"))] if meta.is_dir() else []
    keep = [rec for rec in installed if rec.name.normalized != record.name.normalized]
    _link([*keep, record], prefix, platform=host_subdir(), cache_dir=cache_dir, installed=installed,
          what=package_file.name)


def _channel_record(package_file: Path) -> Any:
    """The channel's repodata record of ``package_file`` (the channel is its grandparent folder)."""
    from resolver.tools.channel_index import channel_record

    r = rattler()
    subdir = package_file.parent
    entry = channel_record(package_file)
    if not all(isinstance(entry.get(key), str) for key in ("name", "version", "build", "subdir")):
        raise BadInput(f"the record of {package_file.name} in {subdir / 'repodata.json'} is malformed",
                       fix=f"re-index the channel (`python -m resolver build` does), or rebuild {package_file.name}")
    spec = f"{entry['name']} =={entry['version']} {entry['build']}"
    records = run(r.solve([r.Channel(str(subdir.parent.resolve()))], [spec], platforms=[entry["subdir"], "noarch"],
                          virtual_packages=[], timeout=SOLVE_TIMEOUT))
    match = [rec for rec in records if rec.file_name == package_file.name]
    if not match:
        raise BadInput(f"{package_file.name} could not be resolved from {subdir.parent}",
                       fix="re-index the channel, or rebuild the package")
    return match[0]
