"""The fleet's shared kernel channel: publish built packages into it, fetch a node's exact variants from it.

A channel is a folder of ``<subdir>/*.conda`` plus ``repodata.json`` per subdir, which any static file
server or object store serves as is (rattler and pixi read it over HTTP). ``publish`` copies the packages
of a local channel (``.resolver/channel``, or CI artefacts) into the shared folder and re-indexes it with
py-rattler's ``index_fs``; a package already published under the same file name with the same bytes is
kept, one with other bytes is refused (a published package never changes under its name), and a file of
that name no publish put there (not in the index, or not the bytes it records) is replaced by ours. The
indexer indexes every package file in the folder, so anything else no publish put there (a file dropped
in by hand, one swapped after it was published, a FIFO or device under a package's name) is refused
before anything is written: the index records only what was published. ``fetch_package`` reads the channel's
``repodata.json`` over HTTP (or from a folder) and downloads one file, checked against the sha256 the
index records, into the project's own channel.

Both sides treat the packages as someone else's: ``publish`` checks every package first
(:mod:`resolver.tools.package_check`) and changes the channel only when all pass, restoring it as it was when
indexing fails; a fetched package is checked against the index's record before it is kept. The shared
folder is written only through real folders and files: its subdirs, the packages and indexes in them,
and the publish lock are refused when they are symbolic links.
"""

from __future__ import annotations

import contextlib
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlparse

from resolver.core.errors import BadInput, SourceUnreachable, UsageError
from resolver.core.fs import (
    check_real_folder,
    copy_file,
    make_folder,
    mark_tree,
    read_bytes_bounded,
    remove_file,
    remove_tree,
    sha256_of,
    write_atomic,
)
from resolver.tools.package_check import PACKAGE_SUFFIXES, check_package

_INDEX_LIMIT = 64 << 20
_PACKAGE_LIMIT = 8 << 30  # a kernel package is tens of MB
LOCK_NAME = ".publish.lock"


@dataclass
class PublishReport:
    channel: str
    added: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # already there under the same name, the same bytes
    replaced: list[str] = field(default_factory=list)  # a file of that name no publish put there: ours instead

    def to_json(self) -> dict[str, Any]:
        return {"channel": self.channel, "added": self.added, "kept": self.kept, "replaced": self.replaced}


def channel_url(location: str) -> str:
    """A channel location as a URL: http(s) and file URLs as they are, a folder as its file URL.

    >>> channel_url("http://127.0.0.1:8000/kernels/"), channel_url("/srv/kernels")
    ('http://127.0.0.1:8000/kernels', 'file:///srv/kernels')
    """
    if "://" in location:
        return location.rstrip("/")
    return Path(location).expanduser().resolve().as_uri()


def local_folder(location: str) -> Path | None:
    """The folder of a folder path or ``file://`` URL; None for a remote URL."""
    if location.startswith("file://"):
        return Path(urlparse(location).path)
    if "://" in location:
        return None
    return Path(location).expanduser().resolve()


def packages_of(channel: Path) -> list[Path]:
    """The package files of a local channel folder, by subdir then name. A package that is a symbolic link
    is refused (exit 3): what it points to is not what the folder holds."""
    if not channel.is_dir():
        return []
    found = sorted(p for sub in channel.iterdir() if sub.is_dir() for p in sub.iterdir()
                   if p.name.endswith(PACKAGE_SUFFIXES))
    for path in found:
        if path.is_symlink() or path.parent.is_symlink():
            link = path if path.is_symlink() else path.parent
            raise BadInput(f"{link} is a symbolic link (to {os.readlink(link)}); packages are published from files, "
                           "never through a link", fix=f"copy the package itself into {channel}, then publish again")
        _check_regular(path, fix=f"remove {path} from {channel} (a package is a regular file), then publish again")
    return found


def _check_regular(path: Path, *, fix: str) -> None:
    """Refuse (exit 3) a package name that is a FIFO, a device, a socket or a folder: reading one would
    wait forever or never end, and it is no package. Found with ``lstat``, without opening it."""
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO, device or socket"
        raise BadInput(f"{path} is not a regular file ({kind})", fix=fix)


def publish(source: Path, to: str) -> PublishReport:
    """Add the packages of ``source`` to the channel at ``to`` (a folder or file:// URL) and re-index it:
    all of them or, when one is refused or the index cannot be written, none (the channel as it was)."""
    folder = local_folder(to)
    if folder is None:
        _refuse_remote(to)
    assert folder is not None
    packages = packages_of(source)
    if not packages:
        raise BadInput(f"{source} holds no built kernel package",
                       fix="build them first (`python -m resolver build --variant KEY`, or `build`), or name the "
                           "folder that holds them with --from DIR")
    if not folder.is_dir() and not folder.parent.is_dir():
        raise BadInput(f"channel folder {folder} cannot be created: {folder.parent} does not exist",
                       fix="create the folder your web server or object store serves, then publish again")
    for package in packages:  # every package first: a bad one leaves the channel untouched
        check_package(package, subdir=package.parent.name)
    subdirs = sorted({"noarch", *(p.parent.name for p in packages)})
    _check_writable_tree(folder, subdirs)
    report = PublishReport(channel_url(str(folder)))
    made = not folder.exists()
    make_folder(folder)
    if made:
        mark_tree(folder)  # the resolver made it: the one kind of channel folder it may remove again
    try:
        with _publishing(folder):  # two publishers at once: one waits, so neither index loses the other's packages
            _check_writable_tree(folder, subdirs)  # again, now that no other publisher writes
            standing = _check_unindexed(folder, subdirs, {f"{p.parent.name}/{p.name}": sha256_of(p) for p in packages})
            _copy_and_index(packages, folder, subdirs, report, standing)
    except BaseException:
        if made:  # the channel did not exist: it still does not
            with contextlib.suppress(OSError, BadInput):
                remove_tree(folder, made_by_us=True)
        raise
    return report


def _check_unindexed(folder: Path, subdirs: list[str], ours: dict[str, str]) -> dict[str, str]:
    """What the channel folder holds besides what its index records, before anything is written. The indexer
    reads every package file there and indexes its sha256, so the channel publishes only what a publish put
    there: a package file that is not a regular file (a FIFO would hang the indexer), one no index records
    (dropped in by hand), or one whose bytes are no longer the ones its index records (swapped after it was
    published) is refused, exit 3, naming it; unless it bears the name of one of ``ours`` (``subdir/name``
    -> sha256), which then replaces it. Returns how each of ``ours`` already there stands: ``kept`` (the
    same bytes) or ``replace`` (a file of that name no publish put there); a package the index records under
    that name with other bytes is refused (a published package is never changed under its name)."""
    from resolver.core.fs import sha256_of

    standing: dict[str, str] = {}
    for subdir in subdirs:
        place = folder / subdir
        if not place.is_dir():
            continue
        known = _index_shas(place)
        for path in sorted(place.iterdir()):
            if not path.name.endswith(PACKAGE_SUFFIXES):
                continue
            name = f"{subdir}/{path.name}"
            _check_regular(path, fix=f"remove {path} (no `channel publish` put it there), then publish again")
            sha = sha256_of(path, under=folder)
            if name in ours:
                if sha == ours[name]:
                    standing[name] = "kept"
                elif known.get(path.name) == sha:
                    raise BadInput(f"channel folder {folder} already publishes {name} with other content (sha256 "
                                   f"{sha[:12]}…, the new one {ours[name][:12]}…); a published package is never "
                                   "changed under its name", fix="give the new build another build number, or remove "
                                                                 f"{path} from the channel first")
                else:
                    standing[name] = "replace"
            elif path.name not in known:
                raise BadInput(f"channel folder {folder} already holds {name}, which is not in its index: no "
                               "`channel publish` put it there, and it is not indexed",
                               fix=f"remove {path}, then publish again")
            elif known[path.name] != sha:
                raise BadInput(f"channel folder {folder} holds {name} with sha256 {sha[:12]}…, not the "
                               f"{str(known[path.name])[:12]}… its index records: it was changed after it was "
                               "published", fix=f"remove {path} (or put the published file back), then publish again")
    return standing


def _index_shas(place: Path) -> dict[str, object]:
    """file name -> the sha256 ``place/repodata.json`` records for it (read as outside input, never
    through a link; an unreadable index records nothing)."""
    import json

    from resolver.core.fs import read_bytes_bounded

    try:
        index = json.loads(read_bytes_bounded(place / "repodata.json", limit=_INDEX_LIMIT, what="channel index",
                                              follow_symlinks=False))
    except (BadInput, ValueError, RecursionError):
        index = {}
    index = index if isinstance(index, dict) else {}
    return {name: entry.get("sha256") if isinstance(entry, dict) else None
            for key in ("packages", "packages.conda") if isinstance(index.get(key), dict)
            for name, entry in index[key].items()}


def _check_writable_tree(folder: Path, subdirs: list[str]) -> None:
    """Refuse (exit 3) a channel whose subdirs, indexes or packages are links (or not what they should be):
    writing through one would put a file, or truncate one, wherever the link points."""
    for subdir in subdirs:
        check_real_folder(folder / subdir, what="channel folder")
        place = folder / subdir
        if not place.is_dir():
            continue
        for entry in os.scandir(place):
            if entry.is_symlink() and (entry.name.endswith(PACKAGE_SUFFIXES) or entry.name.startswith("repodata")):
                raise BadInput(f"{entry.path} in the channel is a symbolic link (to {os.readlink(entry.path)}); "
                               "the resolver does not write or index through a link",
                               fix=f"remove the link {entry.path} (and find out who made it), then publish again")


@contextmanager
def _publishing(folder: Path) -> Iterator[None]:
    import fcntl

    from resolver.core.fs import open_no_follow

    fd = open_no_follow(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, what="the channel's publish lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _copy_and_index(packages: list[Path], folder: Path, subdirs: list[str], report: PublishReport,
                    standing: dict[str, str]) -> None:
    """Copy and index; on any failure remove whatever was added (packages, folders, the indexer's temporary
    files) and put the indexes back as they were."""
    from resolver.tools.conda import index_channel

    indexes = {path: read_bytes_bounded(path, limit=_INDEX_LIMIT, what="the channel's index", under=folder)
               for subdir in subdirs for path in ((folder / subdir / "repodata.json"),) if path.is_file()}
    before = _entries(folder)
    replaced: dict[Path, bytes] = {}  # what was under a name ours replaced, put back when the publish fails
    try:
        for package in packages:
            subdir = package.parent.name
            target = folder / subdir / package.name
            name = f"{subdir}/{package.name}"
            if standing.get(name) == "kept":
                report.kept.append(name)
                continue
            if standing.get(name) == "replace":
                replaced[target] = read_bytes_bounded(target, limit=1 << 30, what="the package", under=folder)
            copy_file(package, target, limit=_PACKAGE_LIMIT, what="the package", target_under=folder, label="publish")
            (report.replaced if name in standing else report.added).append(name)
        for subdir in subdirs:
            make_folder(folder / subdir, under=folder)
        index_channel(folder, tuple(subdirs))
    except BaseException:
        for path in sorted(_entries(folder) - before, key=lambda p: -len(p.parts)):  # deepest first
            with contextlib.suppress(OSError, BadInput):  # added by this run: removed, reached without a link
                if path.is_dir() and not path.is_symlink():
                    remove_tree(path, under=folder)
                else:
                    remove_file(path, under=folder)
        for path, data in [*indexes.items(), *replaced.items()]:
            try:
                same = read_bytes_bounded(path, limit=max(_INDEX_LIMIT, _PACKAGE_LIMIT), what="the channel's file",
                                          under=folder) == data
            except BadInput:
                same = False
            if not same:
                write_atomic(path, data, label="publish-restore", under=folder)
        raise


def _entries(folder: Path) -> set[Path]:
    """Every file and folder below ``folder`` (links not followed)."""
    found = set()
    for top, dirs, files in os.walk(folder):
        found.update(Path(top) / name for name in (*dirs, *files))
    return found


def _refuse_remote(to: str) -> None:
    """A remote channel: one sentence on why it is not written, naming the URL."""
    from resolver.tools.net import probe_status

    status = probe_status(to.rstrip("/") + "/", timeout=5.0)
    if not isinstance(status, int):
        raise SourceUnreachable(f"channel {to} cannot be reached ({status})",
                                fix="check the URL and the network, or publish into a folder (--to DIR)")
    raise UsageError(f"channel {to} is served over HTTP, which is read-only: a static server cannot be written to",
                     fix="publish into the folder that server (or your object store's sync) serves: "
                         "`python -m resolver channel publish --to /srv/kernels`")


def read_index(location: str, subdir: str) -> dict[str, Any]:
    """``<channel>/<subdir>/repodata.json``; a channel that cannot be read is one sentence naming it."""
    from resolver.core.fs import parse_json
    from resolver.tools.net import fetch_bytes

    url = f"{channel_url(location)}/{subdir}/repodata.json"
    folder = local_folder(location)
    if folder is not None:  # a channel folder: reached without a link, a regular file (a FIFO is refused, not waited on)
        path = folder / subdir / "repodata.json"
        data = read_bytes_bounded(path, limit=_INDEX_LIMIT, what=f"the index of kernel channel {location}",
                                  under=folder) if os.path.lexists(path) else None
    else:
        data = fetch_bytes(url, timeout=15.0, limit=_INDEX_LIMIT)
    if data is None:
        raise SourceUnreachable(f"kernel channel {location} cannot be reached ({url} did not answer)",
                                fix="check the URL ([tool.resolver.fleet] kernel-channel in pixi.toml, "
                                    "--kernel-channel, or RESOLVER_KERNEL_CHANNEL) and that the channel was published")
    index = parse_json(data, what=f"the index of kernel channel {location}",
                       fix="publish the channel again (`python -m resolver channel publish --to DIR_OR_URL`)")
    if not isinstance(index, dict):
        raise BadInput(f"the index of kernel channel {location} is not a repodata.json",
                       fix="publish the channel again (`python -m resolver channel publish --to DIR_OR_URL`)")
    return index


def index_entry(index: dict[str, Any], file_name: str) -> dict[str, Any] | None:
    """The record of ``file_name`` in a channel's index (``repodata.json`` as read), or None.

    >>> index_entry({"packages.conda": {"a-1-h0.conda": {"sha256": "00"}}, "packages": []}, "a-1-h0.conda")
    {'sha256': '00'}
    """
    for key in ("packages.conda", "packages"):
        table = index.get(key)
        entry = table.get(file_name) if isinstance(table, dict) else None
        if isinstance(entry, dict):
            return entry
    return None


def fetch_package(location: str, file_name: str, local_channel: Path, *, variant: str,
                  subdir: str = "linux-64") -> Path:
    """Download ``file_name`` from the channel into ``local_channel`` (sha256 checked) and index it there."""
    from resolver.core.names import check_file_name
    from resolver.tools.conda import index_channel
    from resolver.tools.net import download

    check_file_name(file_name, what="kernel package file name", fix="lock the fleet again")
    index = read_index(location, subdir)
    entry = index_entry(index, file_name)
    if entry is None or not isinstance(entry.get("sha256"), str):
        raise BadInput(f"kernel channel {location} has no {file_name} ({variant}): it was not built or not published",
                       fix="build it in CI (`python -m resolver build --matrix` lists it) and publish it "
                           "(`python -m resolver channel publish --to DIR_OR_URL`)")
    target = local_channel / subdir / file_name
    make_folder(target.parent)
    make_folder(local_channel / "noarch")
    stated = entry.get("size")
    download(f"{channel_url(location)}/{subdir}/{file_name}", target, expected_sha256=entry["sha256"],
             size=stated if isinstance(stated, int) and not isinstance(stated, bool) and stated >= 0 else None,
             what=file_name)
    try:  # the index's sha256 again (a file replaced since the download), what the index says is what it
        # holds, and every path and link of it stays inside the environment
        check_package(target, record=entry, subdir=subdir)
    except BaseException:
        remove_file(target)
        raise
    index_channel(local_channel, (subdir, "noarch"))
    return target
