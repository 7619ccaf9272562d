"""The fleet's shared kernel channel: publish built packages into it, fetch a node's exact variants from it.

A channel is a folder of ``<subdir>/*.conda`` plus ``repodata.json`` per subdir, which any static file
server or object store serves as is (rattler and pixi read it over HTTP). ``publish`` copies the packages
of a local channel (``.resolver/channel``, or CI artefacts) into the shared folder and re-indexes it with
py-rattler's ``index_fs``; a package already published under the same file name is kept (the file
name carries the variant's build key, so it is the same variant). ``fetch_package`` reads the channel's
``repodata.json`` over HTTP (or from a folder) and downloads one file, checked against the sha256 the
index records, into the project's own channel.
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlparse

from resolver.errors import BadInput, IntegrityError, SourceUnreachable, UsageError
from resolver.fs import atomic_stream, sha256_of

PACKAGE_SUFFIXES = (".conda", ".tar.bz2")
_INDEX_LIMIT = 64 << 20


@dataclass
class PublishReport:
    channel: str
    added: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # already there under the same name

    def to_json(self) -> dict[str, Any]:
        return {"channel": self.channel, "added": self.added, "kept": self.kept}


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
    """The package files of a local channel folder, by subdir then name."""
    if not channel.is_dir():
        return []
    return sorted(p for sub in channel.iterdir() if sub.is_dir() for p in sub.iterdir()
                  if p.is_file() and p.name.endswith(PACKAGE_SUFFIXES))


def publish(source: Path, to: str) -> PublishReport:
    """Add the packages of ``source`` to the channel at ``to`` (a folder or file:// URL) and re-index it."""
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
    report = PublishReport(channel_url(str(folder)))
    folder.mkdir(exist_ok=True)
    with _publishing(folder):  # two publishers at once: one waits, so neither index loses the other's packages
        _copy_and_index(packages, folder, report)
    return report


@contextmanager
def _publishing(folder: Path) -> Iterator[None]:
    import fcntl

    with open(folder / ".publish.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _copy_and_index(packages: list[Path], folder: Path, report: PublishReport) -> None:
    from resolver.conda import index_channel

    subdirs = {"noarch"}
    for package in packages:
        subdir = package.parent.name
        target = folder / subdir / package.name
        subdirs.add(subdir)
        if target.is_file():
            report.kept.append(f"{subdir}/{package.name}")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(package, "rb") as handle, atomic_stream(target, mode=0o644, label="publish") as sink:
            shutil.copyfileobj(handle, sink)
        report.added.append(f"{subdir}/{package.name}")
    for subdir in sorted(subdirs):
        (folder / subdir).mkdir(parents=True, exist_ok=True)
    index_channel(folder, tuple(sorted(subdirs)))


def _refuse_remote(to: str) -> None:
    """A remote channel: one sentence on why it is not written, naming the URL."""
    from resolver.net import probe_status

    status = probe_status(to.rstrip("/") + "/", timeout=5.0)
    if not isinstance(status, int):
        raise SourceUnreachable(f"channel {to} cannot be reached ({status})",
                                fix="check the URL and the network, or publish into a folder (--to DIR)")
    raise UsageError(f"channel {to} is served over HTTP, which is read-only: a static server cannot be written to",
                     fix="publish into the folder that server (or your object store's sync) serves: "
                         "`python -m resolver channel publish --to /srv/kernels`")


def read_index(location: str, subdir: str) -> dict[str, Any]:
    """``<channel>/<subdir>/repodata.json``; a channel that cannot be read is one sentence naming it."""
    from resolver.fs import parse_json
    from resolver.net import fetch_bytes

    url = f"{channel_url(location)}/{subdir}/repodata.json"
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


def fetch_package(location: str, file_name: str, local_channel: Path, *, variant: str,
                  subdir: str = "linux-64") -> Path:
    """Download ``file_name`` from the channel into ``local_channel`` (sha256 checked) and index it there."""
    from resolver.conda import index_channel
    from resolver.names import check_file_name
    from resolver.net import download

    check_file_name(file_name, what="kernel package file name", fix="lock the fleet again")
    index = read_index(location, subdir)
    entry = (index.get("packages.conda") or {}).get(file_name) or (index.get("packages") or {}).get(file_name)
    if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
        raise BadInput(f"kernel channel {location} has no {file_name} ({variant}): it was not built or not published",
                       fix="build it in CI (`python -m resolver build --matrix` lists it) and publish it "
                           "(`python -m resolver channel publish --to DIR_OR_URL`)")
    target = local_channel / subdir / file_name
    target.parent.mkdir(parents=True, exist_ok=True)
    (local_channel / "noarch").mkdir(exist_ok=True)
    download(f"{channel_url(location)}/{subdir}/{file_name}", target, expected_sha256=entry["sha256"],
             what=file_name)
    if sha256_of(target) != entry["sha256"]:  # download checks as it streams; this guards a replaced file
        target.unlink(missing_ok=True)
        raise IntegrityError(f"{file_name} from {location} does not match its sha256 in the channel's index",
                             fix="publish the channel again")
    index_channel(local_channel, (subdir, "noarch"))
    return target
