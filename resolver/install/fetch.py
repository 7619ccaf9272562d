"""Locked artefacts as private, verified files: found through mirrors, checked by sha256, then installed.

The lock names where each artefact canonically lives. Install looks for it, in order: at that very
path (a project-relative or local location); through ``[tool.resolver.mirrors]``; by file name in the
local wheelhouses and indexes that ``[tool.resolver]`` and pip's configuration name; else it downloads
it. Whatever the source, the bytes are copied into the verified store while they are hashed
(:class:`resolver.tools.store.VerifiedStore`, shared by the user's projects: one download per machine),
and only that private copy is installed: a file swapped after the check cannot be installed.

A lock is shared input, so a local location in it (``file:///…``, ``./…``, ``../../..``) is read only
inside a folder this project declares (:attr:`Finder.roots`: find-links, local indexes, mirrors and
conda channels that are folders, in pixi.toml, the resolver's settings or pip's configuration). A
location anywhere else is never opened, not even to see whether it exists, and when nothing else
holds the artefact it is refused by name (exit 3): a lock cannot make install read, and report the
hash of, a file of the user's.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable
from urllib.parse import unquote

from resolver.core.errors import BadInput, IntegrityError
from resolver.core.fs import read_head
from resolver.core.index_page import index_files
from resolver.core.names import canonical_name, download_name, file_name_of, inside, local_path, printable, redact_url
from resolver.project.sources import Sources
from resolver.tools.store import Mismatch, VerifiedStore

Progress = Callable[[str, int, "int | None", float], None]


def _mirrored(location: str) -> str:
    """A URL moved onto a mirror: a local folder's file as a path (its URL-quoted name unquoted)."""
    if location.startswith("/"):
        return unquote(location)
    return str(local_path(location) or location)


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
        self._linked: set[Path] = set()  # files a declared local index links to (PEP 503 hrefs may leave its folder)

    def declares(self, path: Path) -> bool:
        """Whether ``path`` lies inside a folder the project declares (both resolved, links followed), or is a
        file a declared local index links to."""
        return path.resolve() in self._linked or any(inside(root, path) for root in self.roots)

    def declares_location(self, url: str) -> bool:
        """Whether the locked location ``url`` is a download or a file inside a declared folder (a local one
        outside them is refused as such, without looking at its name)."""
        here = local_path(url)
        if here is None:
            return "://" in url
        return self.declares(Path(here))

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
        project = canonical_name(name)
        page = index / project / "index.html"
        if page not in self._pages:  # a declared local folder: reached without a link, a regular file, bounded
            self._pages[page] = "" if not os.path.lexists(page) else \
                read_head(page, limit=4 << 20, what="the local index page", under=index)
        for listed in index_files(self._pages[page], page.as_uri()):
            if listed.file_name == file_name:
                resolved = local_path(listed.url)
                if resolved is not None and resolved.is_file():
                    self._linked.add(resolved.resolve())
                    return str(resolved)
        return None


def verified_copy(url: str, sha256: str, store: VerifiedStore, finder: Finder, *, name: str | None = None,
                  progress: Progress | None = None) -> Path:
    """A private copy of the artefact ``url`` that has ``sha256``: the store's (checked, or hashed again),
    else copied in from the first place that has those bytes."""
    if not re.fullmatch(r"[0-9a-f]{64}", sha256 or ""):
        raise IntegrityError(f"pixi.lock records no usable sha256 for {file_name_of(url)}",
                             fix="relock with `python -m resolver lock` (it records one for every artefact)")
    file_name = download_name(url)
    if not is_package_file_name(file_name) and finder.declares_location(url):
        raise IntegrityError(f"pixi.lock locates {printable(file_name)}, which is not a package file (a wheel, an sdist "
                             f"or a conda package); install reads only package files",
                             fix="restore pixi.lock from version control, or relock with `python -m resolver lock`")
    kept = store.find(sha256, file_name)
    if kept is not None:
        return kept
    wrong: list[str] = []
    undeclared: list[Path] = []
    for source in finder.candidates(url, name):
        path = local_path(source) if source.startswith("file://") else (Path(source) if source.startswith("/") else None)
        if path is None:
            return store.put(source, sha256, file_name, progress=progress)
        if not finder.declares(path) or not is_package_file_name(path.name):
            undeclared.append(path)  # never opened, not even looked at
            continue
        if not path.is_file():
            continue
        try:
            return store.copy_in(path, sha256, file_name)
        except Mismatch as exc:
            wrong.append(f"{path} (sha256 {exc.args[0][:12]}…)")
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
    raise BadInput(f"locked file {file_name} is nowhere to be found ({redact_url(url)})",
                   fix="restore the wheelhouse/channel it came from, add a [tool.resolver.mirrors] entry for it, "
                       "or run `python -m resolver lock` again")


PACKAGE_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+!-]*-[0-9][^/\\]*\.(?:whl|tar\.gz|zip|tar\.bz2|conda)")


def is_package_file_name(name: str) -> bool:
    """Whether ``name`` is the name of a package file: a wheel, an sdist or a conda package, named for a
    project and its version. Only such files are read from a declared local folder, so a folder declared
    for packages (``find-links = ["/etc"]`` in a shared pixi.toml) never makes install hash another file.

    >>> [is_package_file_name(n) for n in ("tiny-1.0-py3-none-any.whl", "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl",
    ...                                     "a-1.0.tar.gz", "k-1.2.0-cuda_1.conda", "passwd", "shadow.whl", "x-1.0.txt")]
    [True, True, True, True, False, False, False]
    """
    return PACKAGE_FILE.fullmatch(name) is not None


def _folder_of(location: str) -> Path | None:
    """The folder a declared location names (a path or a file:// URL); None for a remote URL or a name."""
    path = local_path(location)
    return Path(path).expanduser() if path is not None and str(path) not in ("", "/") else None


def manifest_folders(root: Path, env_name: str) -> tuple[str, ...]:
    """The folders pixi.toml declares for environment ``env_name``: its conda channels, find-links and
    indexes that are paths (relative ones taken from the project root)."""
    from resolver.core.errors import ResolverError
    from resolver.project.manifest import Manifest
    from resolver.project.pixi_toml import read_pixi_toml

    if not (root / "pixi.toml").is_file():
        return ()
    try:
        spec = Manifest.view(read_pixi_toml(root / "pixi.toml")).environment(env_name)
    except ResolverError:
        return ()
    values = [*spec.channels, *spec.find_links, *spec.extra_index_urls, *([spec.index_url] if spec.index_url else [])]
    return tuple(str(root / value) if value.startswith(("./", "../")) else value for value in values)
