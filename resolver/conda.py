"""Conda, through py-rattler, in one place: solving, linking into prefixes, indexing channels.

Every stage that touches conda packages (lock, install, the kernel build) comes through here.
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
import re
import sys
import time
from pathlib import Path
from typing import Any, Coroutine

from resolver.errors import BadInput, BuildFailed, Refusal, SourceUnreachable
from resolver.platforms import PLATFORMS, host_subdir

DEFAULT_LINUX = "4.18"  # pixi's default __linux for a bare linux platform
DEFAULT_GLIBC = "2.28"  # pixi's default __glibc (docs/workspace/system_requirements.md)
DEFAULT_OSX = "11.0"
SOLVE_TIMEOUT = datetime.timedelta(seconds=120)


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


# ---------------------------------------------------------------------------------------- channels


def check_channel(url: str, platform: str, timeout: float = 5.0) -> None:
    """Fail fast, in one sentence, when a channel cannot be read at all."""
    from resolver.net import probe_status

    if url.startswith("file://"):
        from resolver.install.fetch import local_path

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
    """(Re)write ``repodata.json`` of a local channel folder (every subdir, or the ones named)."""
    r = rattler()
    from rattler.index import index_fs
    from rattler.platform import Subdir

    del r
    if subdirs is None:
        run(index_fs(channel, write_zst=False, write_shards=False))
        return
    for subdir in subdirs:
        (channel / subdir).mkdir(parents=True, exist_ok=True)
        run(index_fs(channel, target_platform=Subdir(subdir), write_zst=False, write_shards=False))


def version_matches(spec: str, version: str) -> bool:
    """Whether a conda version ``spec`` (``>=3.10,<3.14``, ``3.11.*``) admits ``version``."""
    r = rattler()
    return r.VersionSpec(spec).matches(r.Version(version))


def record_matches(record: Any, spec: str) -> bool:
    """Whether a locked conda ``record`` satisfies the match spec ``spec`` (``python 3.11.*``); a spec
    rattler cannot parse is satisfied by nothing."""
    r = rattler()
    try:
        return r.MatchSpec(spec).matches(record)
    except Exception:  # rattler.exceptions.InvalidMatchSpecError and its kin
        return False


def depends_names(record: Any) -> list[str]:
    """The package names ``record`` depends on (virtual packages such as ``__glibc`` left out)."""
    names = (re.match(r"\s*([A-Za-z0-9_.+-]+)", text) for text in record.depends)
    return [m.group(1).lower() for m in names if m and not m.group(1).startswith("__")]


# --------------------------------------------------------------------------------- solve and link


def solve(channels: list[str], specs: list[str], platform: str, virtual_packages: list[str]) -> list[Any]:
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
    return sorted(records, key=lambda rec: rec.name.normalized)


def link(records: list[Any], prefix: Path, *, platform: str, cache_dir: Path, final: Path | None = None,
         installed: list[Any] | None = None, what: str = "the conda packages") -> None:
    """Make ``prefix`` hold exactly ``records`` (files whose paths are baked for ``final``)."""
    r = rattler()
    from rattler.platform import Subdir

    for attempt in (1, 2):
        try:
            run(r.install(records, target_prefix=str(prefix), cache_dir=cache_dir, platform=Subdir(platform),
                          installed_packages=installed, show_progress=False, execute_link_scripts=False,
                          alternative_target_prefix=str(final) if final else None))
            return
        except Exception as exc:  # rattler.exceptions.InstallerError …
            # rattler's "failed to fetch" of a local verified file was seen once, at a load average of 10,
            # and not again in 60 runs: one more try, then the whole message (every line of it)
            reason = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())[:600]
            if attempt == 1 and "fetch" in reason:
                continue
            raise BuildFailed(f"linking {what} failed ({reason})",
                              fix="run the same command again; if it persists, relock") from None


def records_for_files(records: list[Any], files: list[Path]) -> list[Any]:
    """The locked records pointed at the verified local copies of their packages."""
    r = rattler()
    return [r.RepoDataRecord(rec, file_name=path.name, url=path.resolve().as_uri(), channel=rec.channel)
            for rec, path in zip(records, files)]


def add_package(prefix: Path, package_file: Path, *, cache_dir: Path) -> None:
    """Install one package of a local indexed channel into ``prefix``, replacing older builds of it and
    keeping everything else the prefix holds (a venv gets a ``conda-meta/`` of its own)."""
    r = rattler()
    record = _channel_record(package_file)
    meta = prefix / "conda-meta"
    installed = [r.PrefixRecord.from_path(str(p)) for p in sorted(meta.glob("*.json"))] if meta.is_dir() else []
    keep = [rec for rec in installed if rec.name.normalized != record.name.normalized]
    link([*keep, record], prefix, platform=host_subdir(), cache_dir=cache_dir, installed=installed,
         what=package_file.name)


def _channel_record(package_file: Path) -> Any:
    """The channel's repodata record of ``package_file`` (the channel is its grandparent folder)."""
    r = rattler()
    subdir = package_file.parent
    repodata = json.loads((subdir / "repodata.json").read_text(encoding="utf-8"))
    entry = (repodata.get("packages.conda") or {}).get(package_file.name)
    if entry is None:
        raise BadInput(f"{package_file.name} is not in {subdir / 'repodata.json'}",
                       fix=f"re-index the channel (`python -m resolver build` does), or rebuild {package_file.name}")
    spec = f"{entry['name']} =={entry['version']} {entry['build']}"
    records = run(r.solve([r.Channel(str(subdir.parent.resolve()))], [spec], platforms=[entry["subdir"], "noarch"],
                          virtual_packages=[], timeout=SOLVE_TIMEOUT))
    match = [rec for rec in records if rec.file_name == package_file.name]
    if not match:
        raise BadInput(f"{package_file.name} could not be resolved from {subdir.parent}",
                       fix="re-index the channel, or rebuild the package")
    return match[0]
