"""The PyPI side of a lock: uv resolves (``uv pip compile --generate-hashes``), we record each wheel.

uv is given every source explicitly (:mod:`resolver.tools.uv`): the environment's indexes, the plan's
PyTorch index, ``[tool.resolver]`` mirrors and wheelhouses, and pip's own configuration (index-url,
extra-index-url, find-links, constraints, no-index) read from pip.conf and ``PIP_*``. The resolve is
for the environment's conda Python and the target platform (its glibc), never this host. Remote
indexes that cannot be reached are left out with a note instead of costing minutes of retries.

uv names, per package, the pinned version, the sha256 of every file of it that fits the target and
the source it came from (``--emit-index-annotation``). The file itself is then looked up at that
source (an index's PEP 691/503 page, a wheelhouse folder) by those hashes, the best-fitting wheel
taken as uv would (:func:`resolver.core.platforms.wheel_rank`), and remembered by sha256
(:attr:`~resolver.project.paths.ProjectPaths.pypi_files`, its URL without credentials): a warm lock asks
nothing of the network but uv's own revalidation.
(uv's ``--format pylock.toml`` names the files itself, but costs twice the whole resolve.)

Each artefact keeps what pixi.lock records: its location and sha256, and its ``requires_dist`` /
``requires_python`` from the wheel's METADATA: read from the file when it is local, else from the
index's PEP 658 ``.metadata`` file, else from the wheel downloaded into the verified store (where
install will find it); kept by sha256 (:attr:`~resolver.project.paths.ProjectPaths.pypi_requires`).

>>> canonical_name("Typing_Extensions")
'typing-extensions'
>>> text = "a-b==1.0 --hash=sha256:" + "ab" * 32 + "\\n    # from https://pypi.org/simple\\n"
>>> [(p.name, p.version, len(p.hashes), p.source) for p in parse_pins(text)]
[('a-b', '1.0', 1, 'https://pypi.org/simple')]
"""

from __future__ import annotations

import os
import re
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Callable, Iterable
from urllib.parse import urlsplit

from resolver.core.errors import BadInput, ResolverError, SourceUnreachable
from resolver.core.fs import open_read, read_head, remove_file
from resolver.core.index_page import PEP691, index_files
from resolver.core.names import (
    canonical_name,
    check_requirement,
    download_name,
    local_path,
    redact_url,
    without_credentials,
)
from resolver.core.platforms import uv_platform, wheel_rank
from resolver.core.records import Fields, ListOf, RecordMap, Text, optional
from resolver.lock.lockfile import PypiArtifact
from resolver.lock.pipconfig import read_pip_config
from resolver.project.paths import ProjectPaths
from resolver.tools import uv
from resolver.tools.net import reachable
from resolver.tools.store import VerifiedStore

METADATA_LIMIT = 4 << 20  # a METADATA file is a few kB; a "metadata" past this is not one


@dataclass(frozen=True)
class PypiRequest:
    requirements: tuple[str, ...]
    python: str  # "3.11" or "3.11.7" (the environment's conda python, when known)
    platform: str  # conda subdir of the target
    glibc: str | None = None
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    preferences: tuple[str, ...] = ()  # "name==version" kept where the requirements allow (the lock there was)


@dataclass(frozen=True)
class PypiResolution:
    artifacts: tuple[PypiArtifact, ...]
    skipped_indexes: tuple[str, ...]  # remote indexes that could not be reached (credentials redacted)


@dataclass(frozen=True)
class UvSources:
    """Where uv looks, as its flags (pip's configuration included), and the remote indexes left out
    because they do not answer."""

    flags: tuple[str, ...]
    skipped: tuple[str, ...]


def uv_sources(index_url: str | None, extra_index_urls: tuple[str, ...], find_links: tuple[str, ...], *,
               info: Callable[[str], None] = lambda text: None) -> UvSources:
    """The sources of a request, then pip's configuration, as uv flags; a remote index that does not
    answer is left out with a note (uv would retry it for minutes)."""
    pip = read_pip_config()
    skipped: list[str] = []

    def answers(url: str) -> bool:
        if url.startswith(("http://", "https://")) and not reachable(url):
            if redact_url(url) not in skipped:  # what is reported: never the credentials
                skipped.append(redact_url(url))
                info(f"  index {redact_url(url)} cannot be reached; left out")
            return False
        return True

    index_url = index_url or pip.index_url
    if index_url and not answers(index_url):
        # the index that replaced PyPI is out of reach: pip's own index (this machine's stand-in for PyPI)
        # takes its place, else uv's default, PyPI
        index_url = pip.index_url if pip.index_url and pip.index_url != index_url and answers(pip.index_url) else None
    extra = [u for u in dict.fromkeys([*extra_index_urls, *pip.extra_index_urls]) if answers(u)]
    flags = uv.source_flags(index_url=index_url, extra_index_urls=extra,
                            find_links=tuple(dict.fromkeys([*find_links, *pip.find_links])),
                            constraints=pip.constraints, no_index=pip.no_index)
    return UvSources(tuple(flags), tuple(skipped))


def resolve(request: PypiRequest, project: ProjectPaths, *, info: Callable[[str], None] = lambda text: None,
            sources: UvSources | None = None) -> PypiResolution:
    """Resolve ``request`` with uv; every artefact with its location, sha256 and metadata (the project's
    cache keeps where files are and their METADATA; a wheel downloaded to read it goes to the verified
    store, where install looks first). ``sources``: :func:`uv_sources` of the request, when the
    caller asked already."""
    requirements = [check_requirement(r) for r in request.requirements]  # PEP 508, never a uv option
    sources = sources or uv_sources(request.index_url, request.extra_index_urls, request.find_links, info=info)
    done, text = uv.UvCompile(tuple(requirements), request.python, uv_platform(request.platform, request.glibc),
                              sources.flags, preferences=request.preferences).run()
    if done.timed_out:
        raise SourceUnreachable(f"uv did not finish resolving the PyPI part within {uv.RESOLVE_TIMEOUT_S // 60} "
                                "minutes", fix="check that the configured indexes answer, or point the sources "
                                               "at a mirror ([tool.resolver])")
    if done.returncode != 0 or text is None:
        raise _resolution_failure(done.stderr or done.stdout, list(sources.skipped))
    pins = parse_pins(text)
    verified = project.verified_store
    files = _Files(project.pypi_files, verified, python=request.python, platform=request.platform,
                   glibc=request.glibc)
    store = _MetadataStore(project.pypi_requires, verified)

    def artifact(pin: Pin) -> PypiArtifact:
        url, sha = files.locate(pin)
        return store.artifact(pin.name, pin.version, url, sha)

    known = [pin for pin in pins if files.knows(pin) and store.knows(files.locate(pin)[1])]  # a warm lock: all
    artifacts = [artifact(pin) for pin in known]
    if len(known) < len(pins):  # the others ask an index or download a wheel: in parallel
        with ThreadPoolExecutor(max_workers=8) as pool:
            artifacts += pool.map(artifact, [pin for pin in pins if pin not in known])
    files.save()
    store.save()
    return PypiResolution(tuple(sorted(artifacts, key=lambda a: a.name)), sources.skipped)


@dataclass(frozen=True)
class Pin:
    """One line of uv's output: a pinned version, the hashes of its files that fit, where it came from."""

    name: str
    version: str
    hashes: tuple[str, ...]
    source: str | None


def parse_pins(text: str) -> list[Pin]:
    pins: list[Pin] = []
    for block in re.split(r"\n(?=[A-Za-z0-9])", text.strip()):
        head = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s\\;]+)", block)
        if not head:
            continue
        source = re.search(r"#\s*from\s+(\S+)", block)
        pins.append(Pin(canonical_name(head.group(1)), head.group(2), tuple(re.findall(r"--hash=sha256:([0-9a-f]{64})", block)),
                        source.group(1) if source else None))
    return pins


_URL = Text(r"(?:https?|file)://[^/\s@]*(?:/\S*)?", 8192)  # a remote or local file, never credentials or a flag
# the files of a release an index lists: its wheels, and its sdist (uv names the sdist's hash too, so a pin is
# known, with no index asked, only when every one of its files is)
_FILE_ENTRY = Fields({"url": _URL, "file": Text(r"[^/\\\s]+\.(?:whl|tar\.gz|zip|tar\.bz2)", 512)})
_REQUIRES_ENTRY = Fields({"requires_dist": ListOf(Text(max_len=2048), 10_000),
                          "requires_python": optional(Text(max_len=512))})


class _Files:
    """Where each pinned file lives, found at the source uv took it from, remembered by sha256."""

    def __init__(self, path: Path, verified: VerifiedStore, *, python: str, platform: str, glibc: str | None) -> None:
        self.known = RecordMap(path, _FILE_ENTRY)
        self.verified, self.python, self.platform, self.glibc = verified, python, platform, glibc

    def knows(self, pin: Pin) -> bool:
        """Whether every file of ``pin`` is known (locating it asks nothing of the network)."""
        return all(h in self.known for h in pin.hashes)

    def locate(self, pin: Pin) -> tuple[str, str]:
        """(url, sha256) of the wheel of ``pin`` that fits the target best."""
        if any(h not in self.known for h in pin.hashes) and pin.source:
            listing = [(file_name, url, sha or self._hash_of_download(url, file_name, pin))
                       for file_name, url, sha in _listing(pin.source, pin.name, pin.version)]
            for file_name, url, sha in listing:
                if sha in pin.hashes and sha not in self.known:  # an index page lists every release
                    self.known.put(sha, {"url": without_credentials(url), "file": file_name})
        ranked = sorted((rank, entry["url"], h) for h in pin.hashes if (entry := self.known.get(h)) is not None
                        for rank in [wheel_rank(entry["file"], self.python, self.platform, self.glibc)]
                        if rank is not None)
        if not ranked:
            raise BadInput(f"no wheel of {pin.name} {pin.version} for Python {self.python} on {self.platform} was "
                           f"found at {redact_url(pin.source) if pin.source else 'the configured sources'}",
                           fix="check that the source still serves it, or add a wheelhouse that has it (--find-links)")
        return ranked[0][1], ranked[0][2]

    def _hash_of_download(self, url: str, file_name: str, pin: Pin) -> str:
        """The sha256 of a file a page lists without one (a plain find-links page): the file of ``pin``
        that fits the target is downloaded once into the verified store, where install and the METADATA
        read find it; other files are not fetched."""
        if local_path(url) is not None or not _names_release(file_name, pin) or \
                wheel_rank(file_name, self.python, self.platform, self.glibc) is None:
            return ""
        kept, sha = self.verified.put_unhashed(url, download_name(url))
        if sha not in pin.hashes:
            remove_file(kept)
        return sha

    def save(self) -> None:
        self.known.save()


def _names_release(file_name: str, pin: Pin) -> bool:
    parts = file_name.split("-")
    return len(parts) > 2 and canonical_name(parts[0]) == pin.name and parts[1] == pin.version


def _listing(source: str, name: str, version: str) -> list[tuple[str, str, str]]:
    """(file name, url, sha256) of the files of project ``name`` at ``source``: a PEP 691/503 index
    (remote or ``file://``) or a wheelhouse (a folder, or a page of links)."""
    from resolver.tools.net import fetch_bytes

    folder = local_path(source)
    if folder is not None and folder.is_dir() and not (folder / name / "index.html").is_file() \
            and not (folder / name).is_dir():
        return [(p.name, p.resolve().as_uri(), _file_sha(p)) for p in sorted(folder.glob("*.whl"))
                if canonical_name(p.name.split("-")[0]) == name and p.name.split("-")[1:2] == [version]]
    if folder is not None:
        page = folder / name / "index.html"
        if not os.path.lexists(page):
            return []
        return _files(read_head(page, limit=16 << 20, what="the index page", under=folder), page.as_uri())
    page_url = source.rstrip("/") + f"/{name}/"
    data = fetch_bytes(page_url, limit=64 << 20, accept=f"{PEP691}, text/html;q=0.1")
    if data is None:  # a find-links page rather than an index
        data = fetch_bytes(source, limit=64 << 20)
        page_url = source
    if data is None:
        return []
    return _files(data.decode("utf-8", errors="replace"), page_url)


def _files(text: str, page_url: str) -> list[tuple[str, str, str]]:
    return [(f.file_name, f.url, f.sha256) for f in index_files(text, page_url)]


_FILE_SHAS: dict[tuple[str, int, int], str] = {}


def _file_sha(path: Path) -> str:
    """A wheelhouse file's sha256 (remembered per size and mtime for this run)."""
    from resolver.core.fs import sha256_of

    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _FILE_SHAS:
        _FILE_SHAS[key] = sha256_of(path)
    return _FILE_SHAS[key]


class _MetadataStore:
    """requires_dist / requires_python of locked wheels, kept by sha256 (a wheel's metadata never changes)."""

    def __init__(self, path: Path, verified: VerifiedStore) -> None:
        self.known = RecordMap(path, _REQUIRES_ENTRY)
        self.verified = verified

    def knows(self, sha: str) -> bool:
        return bool(sha) and sha in self.known

    def artifact(self, name: str, version: str, url: str, sha: str) -> PypiArtifact:
        if not sha:
            raise BadInput(f"the index gives no sha256 for {download_name(url)}",
                           fix="use an index that publishes hashes (PyPI, the PyTorch index) or a wheelhouse folder")
        meta = self.known.get(sha)
        if meta is None:
            meta = _parse_metadata(self._metadata_text(url, sha))
            self.known.put(sha, meta)
        return PypiArtifact(name=name, version=version, location=url, sha256=sha,
                            requires_dist=tuple(meta["requires_dist"]), requires_python=meta["requires_python"])

    def _metadata_text(self, url: str, sha: str) -> str:
        from resolver.tools.net import fetch_bytes

        here = local_path(url)
        if here is None:
            text = fetch_bytes(url + ".metadata", limit=METADATA_LIMIT)  # PEP 658 (PyPI, most mirrors)
            if text is not None:
                return text.decode("utf-8", errors="replace")
            name = download_name(url)
            here = self.verified.find(sha, name) or self.verified.put(url, sha, name)  # where install looks first
        return _metadata_from_wheel(here)

    def save(self) -> None:
        self.known.save()


def requires_read_here(project: ProjectPaths, artifacts: Iterable[PypiArtifact]) -> dict[str, tuple[str, ...]]:
    """``Requires-Dist`` of locked wheels as each wheel's own metadata says, by sha256, for a check that
    downloads no wheel: what this user's resolver read when it locked (the sealed record), else the copy in
    the verified store, a wheel in a local folder (its sha256 checked), or the index's PEP 658 file beside a
    remote one, whose Name and Version must be the entry's. A wheel none of these answers for (offline in a
    fresh clone, or an index without PEP 658 files) is left out: what the lock claims for it is all there is."""
    from resolver.core.versions import same_version

    known = RecordMap(project.pypi_requires, _REQUIRES_ENTRY)
    found = {sha: tuple(entry["requires_dist"]) for sha, entry in known.entries.items()}
    silent: set[str] = set()  # hosts that did not answer once: not asked again in this check
    for art in artifacts:
        if not art.sha256 or art.sha256 in found or not art.file_name.endswith(".whl"):
            continue
        text = _metadata_without_download(project, art, silent)
        meta = HeaderParser().parsestr(text) if text is not None else None
        if meta is not None and canonical_name(str(meta["Name"] or "")) == canonical_name(art.name) \
                and same_version(str(meta["Version"] or ""), art.version):
            found[art.sha256] = tuple(str(v) for v in meta.get_all("Requires-Dist") or [])
    return found


def _metadata_without_download(project: ProjectPaths, art: PypiArtifact, silent: set[str]) -> str | None:
    from resolver.tools.net import fetch_bytes

    try:
        stored = project.verified_store.find(art.sha256, download_name(art.location))
        if stored is not None:
            return _metadata_from_wheel(stored)
        here = local_path(art.location)
        if here is not None:
            return _metadata_from_wheel(here) if here.is_file() and _file_sha(here) == art.sha256 else None
    except (OSError, BadInput):
        return None
    host = urlsplit(art.location).netloc
    if host in silent:
        return None
    data = fetch_bytes(art.location + ".metadata", timeout=5.0, limit=METADATA_LIMIT, deadline=30.0)
    if data is None:
        silent.add(host)
        return None
    return data.decode("utf-8", errors="replace")


def _metadata_from_wheel(wheel: Path) -> str:
    try:
        with open_read(wheel, what="the wheel") as opened, zipfile.ZipFile(opened) as archive:
            name = next(n for n in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
            with archive.open(name) as handle:
                return handle.read(METADATA_LIMIT).decode("utf-8", errors="replace")
    except (OSError, zipfile.BadZipFile, StopIteration):
        raise BadInput(f"{wheel.name} is not a readable wheel (no METADATA)",
                       fix="restore the file in the wheelhouse, or remove it so the index's copy is used") from None


def _parse_metadata(text: str) -> dict:
    message = HeaderParser().parsestr(text)
    return {"requires_dist": [str(v) for v in message.get_all("Requires-Dist") or []],
            "requires_python": str(message["Requires-Python"]).strip() if message["Requires-Python"] else None}


def _resolution_failure(output: str, skipped: list[str]) -> ResolverError:
    """uv's failure as one sentence; when an index was out of reach, that is almost always the cause."""
    reason = _uv_reason(output)
    if skipped:
        where = ", ".join(skipped)
        return SourceUnreachable(f"the PyPI part cannot be resolved ({reason}): {where} cannot be reached from here "
                                 "and no other configured source has the pinned builds",
                                 fix=f"lock on a machine that reaches {where}, or mirror its wheels and pass "
                                     "--find-links DIR or --torch-index URL (also RESOLVER_FIND_LINKS / "
                                     "RESOLVER_TORCH_INDEX)", because=output[-2000:])
    return BadInput(f"the PyPI part cannot be resolved ({reason})",
                    fix="check the pins in pixi.toml and the sources (RESOLVER_FIND_LINKS, RESOLVER_TORCH_INDEX, "
                        "[tool.resolver])", because=output[-2000:])


def _uv_reason(output: str) -> str:
    """uv's explanation without its box drawing and its headings: ``Because torch==9.9 was not found … we can
    conclude …``.

    >>> _uv_reason("error: No solution found when resolving dependencies:\\n  ╰─▶ Because x depends on torch<2.14 "
    ...            "and you require x, we can conclude that your requirements are unsatisfiable.")
    'Because x depends on torch<2.14 and you require x, we can conclude that your requirements are unsatisfiable.'
    """
    lines = [re.sub(r"^([\s×╰─▶│├]+|error:\s*|cause:\s*)+", "", line).strip() for line in output.splitlines()]
    lines = [line for line in lines if line and not line.lower().startswith(("hint:", "warning:"))]
    text = " ".join(lines[1:] if len(lines) > 1 and lines[0].startswith("No solution found") else lines)
    return (text or "no output")[:300]
