"""Where each locked artefact canonically lives: the channel or index that serves it, never this machine.

A lock is shared, so it records canonical locations and the sha256; mirrors (local channel folders,
wheelhouses, pip's configured local indexes) are applied again at install time
(:func:`resolver.install.fetch.fetch`). A location is made canonical, in order:

1. through ``[tool.resolver.mirrors]`` read backwards (``"https://download.pytorch.org/whl/cpu" =
   "/srv/wheels"`` makes ``/srv/wheels/torch-….whl`` ``https://download.pytorch.org/whl/cpu/torch-….whl``);
2. a conda record solved from a mirror of the manifest's channel takes that channel's URL;
3. a remote URL an index served stays as it is, and so does a file inside the project (the lock
   records it relative to the project, which is shared with it);
4. a local file that PyPI serves with the same sha256 takes PyPI's URL (asked once, then cached; a
   file PyPI does not have is asked for again after a day). ``RESOLVER_CANONICAL_INDEX`` names another
   simple index to ask instead of https://pypi.org/simple/ (one that answers with PyPI's own file URLs,
   as a PyPI proxy does).

What none of these places is kept as it is, and ``lock`` says so in one line with the fix.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Mapping

from resolver.core.index_page import PEP691, json_index_files
from resolver.core.names import canonical_name, without_credentials
from resolver.core.records import Number, RecordMap, Text
from resolver.lock.lockfile import PypiArtifact
from resolver.project.paths import ProjectPaths
from resolver.project.sources import Sources
from resolver.tools.conda import CondaRecord

# PyPI's simple index in its JSON form (PEP 691): absolute file URLs with their sha256. (The legacy
# /pypi/NAME/json answers with relative URLs through some proxies, and its per-release form with 404.)
PYPI_SIMPLE = "https://pypi.org/simple/{name}/"
CANONICAL_INDEX_VAR = "RESOLVER_CANONICAL_INDEX"
MISS_TTL_S = 24 * 3600  # a file PyPI did not have is looked for again after a day


class Canonicalizer:
    """Canonical locations for one lock run, and the notes about the ones it could not find."""

    def __init__(self, sources: Sources, project: ProjectPaths) -> None:
        self.sources = sources
        self.root = project.root.resolve()
        self.known = RecordMap(project.canonical_urls, Text(r"https?://[^/\s@]+/\S*", 8192))
        self.misses = RecordMap(project.canonical_misses, Number())  # sha256 -> when PyPI last did not have it
        self.notes: list[str] = []
        self._lock = threading.Lock()  # environments and their wheels are made canonical side by side

    # ---- conda
    def conda_record(self, record: CondaRecord, solved_from: list[str], canonical: list[str]) -> CondaRecord:
        """``record`` with its URL and channel moved from the mirror it was solved from to the manifest's channel."""
        for mirror, channel in zip(solved_from, canonical):
            mirror = mirror.rstrip("/") + "/"
            if record.url.startswith(mirror) and mirror != channel:
                return record.at(channel + record.url[len(mirror):], channel)
        return record

    # ---- PyPI
    def pypi_artifact(self, art: PypiArtifact, spec) -> PypiArtifact:
        """``art`` at its canonical location, with the index it is pinned to (torch's PyTorch index)."""
        index = spec.package_index(art.name)
        location = self.sources.canonical(art.location)
        if location is None and (art.location.startswith(("http://", "https://")) or self._in_project(art.location)):
            location = art.location
        if location is None:
            location = self._from_pypi(art)
        if location is None:
            location = art.location
            self._note_local(art, index)
        return PypiArtifact(art.name, art.version, location, art.sha256, art.requires_dist, art.requires_python,
                            index=index)

    def _in_project(self, location: str) -> bool:
        from resolver.core.names import local_path

        path = local_path(location)
        return self.root is not None and path is not None and path.resolve().is_relative_to(self.root)

    def _from_pypi(self, art: PypiArtifact) -> str | None:
        with self._lock:
            if art.sha256 in self.known:
                return self.known.get(art.sha256)
            if 0 <= time.time() - self.misses.get(art.sha256, 0.0) < MISS_TTL_S:
                return None
        from resolver.tools.net import fetch_json

        page = _pypi_page(canonical_name(art.name))
        data = fetch_json(page, timeout=10, accept=PEP691)
        if not isinstance(data, dict):
            return None  # PyPI did not answer: asked again next time
        with self._lock:
            for listed in json_index_files(data, page):
                if listed.file_name == art.file_name and listed.sha256 == art.sha256:
                    url = without_credentials(listed.url)
                    self.known.put(art.sha256, url)
                    self.known.save()
                    return url
            self.misses.put(art.sha256, time.time())  # a local build (torch's +cpu) is not on PyPI: not asked again
            self.misses.save()
        return None

    def _note_local(self, art: PypiArtifact, index: str | None) -> None:
        folder = str(Path(urllib.parse.unquote(urllib.parse.urlsplit(art.location).path)).parent)
        if index:
            fix = f"add \"{index}\" = \"{folder}\" under [tool.resolver.mirrors] in pixi.toml and lock again"
        else:
            fix = ("lock where PyPI (https://pypi.org) answers, so the file's PyPI address can be recorded, or map its "
                   f"canonical address to {folder} under [tool.resolver.mirrors]")
        with self._lock:
            self.notes.append(f"{art.file_name} comes from {folder} and its canonical address is unknown: the lock "
                              f"records a path of this machine. Fix: {fix}")



def _pypi_page(project: str, environ: Mapping[str, str] | None = None) -> str:
    """The simple-index page asked for ``project``'s canonical file URLs.

    >>> _pypi_page("torch", {})
    'https://pypi.org/simple/torch/'
    >>> _pypi_page("torch", {"RESOLVER_CANONICAL_INDEX": "http://127.0.0.1:8080/simple"})
    'http://127.0.0.1:8080/simple/torch/'
    """
    base = (os.environ if environ is None else environ).get(CANONICAL_INDEX_VAR, "").strip()
    return base.rstrip("/") + f"/{project}/" if base else PYPI_SIMPLE.format(name=project)
