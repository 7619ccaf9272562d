"""Locked artefacts as private, verified files: found through mirrors, checked by sha256, then installed.

The lock names where each artefact canonically lives. Install looks for it, in order: at that very
path (a project-relative or local location); through ``[tool.resolver.mirrors]``; by file name in the
local wheelhouses and indexes that ``[tool.resolver]`` and pip's configuration name; else it downloads
it. Whatever the source, the bytes are copied into the verified store while they are hashed
(``~/.cache/mamba-resolver/verified/<sha256>/``, shared by the user's projects: one download per
machine; :attr:`~resolver.paths.ProjectPaths.verified`), and only that private copy is installed: a
file swapped after the check cannot be installed.

A lock is shared input, so a local location in it (``file:///…``, ``./…``, ``../../..``) is read only
inside a folder this project declares (:attr:`Finder.roots`: find-links, local indexes, mirrors and
conda channels that are folders, in pixi.toml, the resolver's settings or pip's configuration). A
location anywhere else is never opened, not even to see whether it exists, and when nothing else
holds the artefact it is refused by name (exit 3): a lock cannot make install read, and report the
hash of, a file of the user's.

>>> local_path("file:///srv/wheels/torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl").name
'torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl'
>>> local_path("https://pypi.org/simple/torch/") is None
True
"""

from __future__ import annotations

import hashlib
import html
import re
import shutil
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urljoin, urlsplit

from resolver.errors import BadInput, IntegrityError
from resolver.fs import atomic_stream, sha256_file
from resolver.lock.sources import Sources
from resolver.names import check_file_name, check_inside, inside, printable
from resolver.net import download

Progress = Callable[[str, int, "int | None", float], None]


def local_path(url: str) -> Path | None:
    """The file behind a ``file://`` URL or a plain path; None for remote URLs."""
    if url.startswith("file://"):
        return Path(unquote(urlsplit(url).path))
    if url.startswith("/"):
        return Path(url)
    return None


def _mirrored(location: str) -> str:
    """A URL moved onto a mirror: a local folder's file as a path (its URL-quoted name unquoted)."""
    if location.startswith("/"):
        return unquote(location)
    return str(local_path(location) or location)


def file_name_of(url: str) -> str:
    return unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])


def download_name(url: str) -> str:
    """The file name an artefact is stored as: the URL's last path segment, decoded, which must be one
    plain name (a ``%2F``-encoded ``..`` in a shared lock must not become a path).

    >>> download_name("https://h/whl/torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl")
    'torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl'
    """
    return check_file_name(unquote(urlsplit(url).path.rsplit("/", 1)[-1]), what=f"the file name of {url}",
                           fix="restore pixi.lock from version control or lock again: a locked URL must end in "
                               "the artefact's own file name")


class Finder:
    """Where the artefacts of one install come from: mirrors, local folders, the network."""

    def __init__(self, sources: Sources, local_folders: tuple[str, ...] = (), channels: tuple[str, ...] = (),
                 declared: tuple[str, ...] = ()) -> None:
        """``channels``: the lock's conda channels (canonical URLs), looked up through their mirrors;
        ``local_folders``: pip's local sources; ``declared``: the folders pixi.toml declares (channels,
        find-links, indexes)."""
        self.sources = sources
        self.channel_mirrors = tuple((c, m) for c, m in zip(channels, sources.channels_for(list(channels)))
                                     if c != m)
        self.folders = tuple(dict.fromkeys([*(f for f in sources.find_links if local_path(f) or f.startswith("/")),
                                            *(u for u in sources.extra_index_urls if local_path(u)),
                                            *local_folders]))
        places = [*self.folders, *(m for _, m in self.channel_mirrors), *(m for _, m in sources.mirrors),
                  *(sources.conda_channels or ()), *declared]
        self.roots = tuple(dict.fromkeys(str(root) for root in map(_folder_of, places) if root is not None))
        self._pages: dict[Path, str] = {}

    def declares(self, path: Path) -> bool:
        """Whether ``path`` lies inside a folder the project declares (both resolved, links followed)."""
        return any(inside(root, path) for root in self.roots)

    def candidates(self, url: str, name: str | None = None) -> list[str]:
        """Places to take ``url`` from, best first (local ones before any download)."""
        out: list[str] = []
        here = local_path(url)
        if here is not None:
            out.append(str(here))
        for canonical, mirror in self.channel_mirrors:
            if url.startswith(canonical):
                out.append(_mirrored(mirror + url[len(canonical):]))
        mirrored = self.sources.mirror(url)
        if mirrored != url:
            out.append(_mirrored(mirrored))
        file_name = file_name_of(url)
        for folder in self.folders:
            root = local_path(folder) or Path(folder)
            if (root / file_name).is_file():
                out.append(str(root / file_name))
            if name:
                page = self._index_entry(root, name, file_name)
                if page:
                    out.append(page)
        if here is None:
            out.append(mirrored)
        return list(dict.fromkeys(out))

    def _index_entry(self, index: Path, name: str, file_name: str) -> str | None:
        """The file a local PEP 503 index page links for ``file_name`` (``<index>/<project>/index.html``)."""
        project = re.sub(r"[-_.]+", "-", name).lower()
        page = index / project / "index.html"
        if page not in self._pages:
            try:
                self._pages[page] = page.read_text(encoding="utf-8", errors="replace")[:4 << 20]
            except OSError:
                self._pages[page] = ""
        for href in re.findall(r'href="([^"]+)"', self._pages[page]):
            target = html.unescape(href).split("#", 1)[0]
            if file_name_of(target) == file_name:
                resolved = local_path(urljoin(page.as_uri(), target))
                if resolved is not None and resolved.is_file():
                    return str(resolved)
        return None


def verified_copy(url: str, sha256: str, store: Path, finder: Finder, *, name: str | None = None,
                  progress: Progress | None = None) -> Path:
    """A private copy of the artefact ``url`` that has ``sha256`` (re-checked when it is reused)."""
    if not re.fullmatch(r"[0-9a-f]{64}", sha256 or ""):
        raise IntegrityError(f"pixi.lock records no usable sha256 for {file_name_of(url)}",
                             fix="relock with `python -m resolver lock` (it records one for every artefact)")
    file_name = download_name(url)
    target = store / sha256[:2] / sha256 / file_name
    check_inside(store, target, what="the copy of", fix="restore pixi.lock from version control or lock again")
    if _still_verified(target):
        return target
    if sha256_file(target) == sha256:
        _mark_verified(target)
        return target
    wrong: list[str] = []
    undeclared: list[Path] = []
    for source in finder.candidates(url, name):
        path = local_path(source) if source.startswith("file://") else (Path(source) if source.startswith("/") else None)
        if path is None:
            download(source, target, expected_sha256=sha256, progress=progress, what=file_name)
            _mark_verified(target)
            return target
        if not finder.declares(path):
            undeclared.append(path)  # never opened, not even looked at
            continue
        if not path.is_file():
            continue
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as handle, atomic_stream(target, label="verified-copy") as sink:
                for block in iter(lambda: handle.read(1 << 20), b""):  # noqa: B023 - read here, in this loop turn
                    sink.write(block)
                    digest.update(block)
                if digest.hexdigest() != sha256:
                    raise _Mismatch(digest.hexdigest())
        except _Mismatch as exc:
            wrong.append(f"{path} (sha256 {exc.args[0][:12]}…)")
            continue
        _mark_verified(target)
        return target
    if undeclared and not wrong:
        folders = ", ".join(finder.roots) or "none"
        raise BadInput(f"pixi.lock locates {file_name} at {printable(str(undeclared[0]))}, outside every folder this "
                       f"project declares ({folders}); it is not read",
                       fix="declare the folder that holds it (find-links or mirrors in [tool.resolver] of pixi.toml, "
                           "RESOLVER_FIND_LINKS, or a conda channel), or restore pixi.lock from version control")
    if wrong:
        raise IntegrityError(f"{file_name} does not match pixi.lock (sha256 {sha256[:12]}… expected; found {wrong[0]})",
                             fix="restore the original file (or delete it from the mirror) and install again; if the "
                                 "source really changed, relock with `python -m resolver lock`")
    raise BadInput(f"locked file {file_name} is nowhere to be found ({url})",
                   fix="restore the wheelhouse/channel it came from, add a [tool.resolver.mirrors] entry for it, "
                       "or run `python -m resolver lock` again")


def _stamp(target: Path) -> str:
    stat = target.stat()
    return f"{stat.st_size} {stat.st_mtime_ns} {stat.st_ino}"


def _still_verified(target: Path) -> bool:
    """A copy verified before and untouched since (same size, mtime and inode; made read-only then):
    re-hashing 200 MB of torch on every install would cost more than the rest of the install."""
    try:
        return (target.parent / ".verified").read_text(encoding="utf-8") == _stamp(target)
    except OSError:
        return False


def _mark_verified(target: Path) -> None:
    """Record the verified copy's stamp (once: a chmod or a rewrite on every install would change its
    ctime, and uv unpacks a wheel again whenever that changes)."""
    if _still_verified(target):
        return
    try:
        if target.stat().st_mode & 0o222:
            target.chmod(0o444)
        (target.parent / ".verified").write_text(_stamp(target), encoding="utf-8")
    except OSError:  # a read-only cache: the next install hashes again
        pass


def _folder_of(location: str) -> Path | None:
    """The folder a declared location names (a path or a file:// URL); None for a remote URL or a name."""
    path = local_path(location)
    return Path(path).expanduser() if path is not None and str(path) not in ("", "/") else None


def manifest_folders(root: Path, env_name: str) -> tuple[str, ...]:
    """The folders pixi.toml declares for environment ``env_name``: its conda channels, find-links and
    indexes that are paths (relative ones taken from the project root)."""
    from resolver.errors import ResolverError
    from resolver.lock.manifest import Manifest

    if not (root / "pixi.toml").is_file():
        return ()
    try:
        spec = Manifest.load(root / "pixi.toml").environment(env_name)
    except ResolverError:
        return ()
    values = [*spec.channels, *spec.find_links, *spec.extra_index_urls, *([spec.index_url] if spec.index_url else [])]
    return tuple(str(root / value) if value.startswith(("./", "../")) else value for value in values)


class _Mismatch(Exception):
    pass


def drop_store(store: Path) -> None:
    shutil.rmtree(store, ignore_errors=True)
