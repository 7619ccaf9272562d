"""The PyPI side of a lock: uv resolves (``uv pip compile --format pylock.toml``), we record each wheel.

uv is given every source explicitly (:mod:`resolver.uv`): the environment's indexes, the plan's
PyTorch index, ``[tool.resolver]`` mirrors and wheelhouses, and pip's own configuration (index-url,
extra-index-url, find-links, constraints, no-index) read from pip.conf and ``PIP_*``. The resolve is
for the environment's conda Python and the target platform (its glibc), never this host. Remote
indexes that cannot be reached are left out with a note instead of costing minutes of retries.

Each artefact keeps what pixi.lock records: its location and sha256 (from the pylock), and its
``requires_dist`` / ``requires_python`` from the wheel's METADATA: read from the file when it is
local, else from the index's PEP 658 ``.metadata`` file, else from the wheel downloaded into the
verified store (where install will find it); kept by sha256 in ``.resolver/cache/metadata``.

>>> canonical_name("Typing_Extensions")
'typing-extensions'
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Callable

from resolver import uv
from resolver.errors import BadInput, ResolverError, SourceUnreachable
from resolver.fs import write_json_atomic
from resolver.install.fetch import download_name, local_path
from resolver.lock.lockfile import PypiArtifact
from resolver.lock.pipconfig import read_pip_config
from resolver.names import check_requirement
from resolver.net import reachable
from resolver.platforms import uv_platform

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

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


@dataclass(frozen=True)
class PypiResolution:
    artifacts: tuple[PypiArtifact, ...]
    skipped_indexes: tuple[str, ...]  # remote indexes that could not be reached


def find_interpreter(python: str) -> str | None:
    """An interpreter of this host for Python ``X.Y``: the running one, else ``pythonX.Y`` on PATH."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == python:
        return sys.executable
    return shutil.which(f"python{python}")


def resolve(request: PypiRequest, cache: Path, *, info: Callable[[str], None] = lambda text: None) -> PypiResolution:
    """Resolve ``request`` with uv; every artefact with its location, sha256 and metadata."""
    requirements = [check_requirement(r) for r in request.requirements]  # PEP 508, never a uv option
    pip = read_pip_config()
    skipped: list[str] = []

    def answers(url: str) -> bool:
        if url.startswith(("http://", "https://")) and not reachable(url):
            if url not in skipped:
                skipped.append(url)
                info(f"  index {url} cannot be reached; left out")
            return False
        return True

    index_url = request.index_url or pip.index_url
    if index_url and not answers(index_url):
        index_url = None
    extra = [u for u in dict.fromkeys([*request.extra_index_urls, *pip.extra_index_urls]) if answers(u)]
    flags = uv.source_flags(index_url=index_url, extra_index_urls=extra,
                            find_links=tuple(dict.fromkeys([*request.find_links, *pip.find_links])),
                            constraints=pip.constraints, no_index=pip.no_index)
    with tempfile.TemporaryDirectory(prefix="resolver-uv-") as tmp:
        wanted = Path(tmp) / "requirements.in"
        wanted.write_text("".join(f"{r}\n" for r in requirements), encoding="utf-8")
        output = Path(tmp) / "pylock.toml"
        done = uv.compile_pylock(wanted, output, python=request.python,
                                 platform=uv_platform(request.platform, request.glibc), flags=flags)
        if done.timed_out:
            raise SourceUnreachable(f"uv did not finish resolving the PyPI part within {uv.RESOLVE_TIMEOUT_S // 60} "
                                    "minutes", fix="check that the configured indexes answer, or point the sources "
                                                   "at a mirror ([tool.resolver])")
        if done.returncode != 0 or not output.is_file():
            raise _resolution_failure(done.stderr or done.stdout, skipped)
        pylock = tomllib.loads(output.read_text(encoding="utf-8"))
    picked = [_wheel_of(package) for package in pylock.get("packages", [])]
    store = _MetadataStore(cache / "metadata", cache.parent / "verified")
    with ThreadPoolExecutor(max_workers=8) as pool:
        artifacts = list(pool.map(lambda item: store.artifact(*item), picked))
    store.save()
    return PypiResolution(tuple(sorted(artifacts, key=lambda a: a.name)), tuple(skipped))


def _wheel_of(package: dict) -> tuple[str, str, str, str]:
    """(name, version, url, sha256) of the one wheel uv chose for the target."""
    name = canonical_name(str(package.get("name", "")))
    wheels = package.get("wheels") or []
    if not wheels:
        raise BadInput(f"{name} has no wheel for this target (only a source distribution)",
                       fix="build a wheel of it and put it in a wheelhouse (RESOLVER_FIND_LINKS), or pin a version "
                           "that has wheels")
    wheel = wheels[0]  # uv lists the wheels that fit the --python-platform; the first is its choice
    sha = str((wheel.get("hashes") or {}).get("sha256", ""))
    url = str(wheel.get("url") or "")
    if not url and wheel.get("path"):
        url = Path(str(wheel["path"])).resolve().as_uri()
    return name, str(package.get("version", "")), url, sha


class _MetadataStore:
    """requires_dist / requires_python of locked wheels, kept by sha256 (a wheel's metadata never changes)."""

    def __init__(self, folder: Path, verified: Path) -> None:
        self.file = folder / "requires.json"
        self.verified = verified
        try:
            self.known: dict[str, dict] = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.known = {}
        self.changed = False

    def artifact(self, name: str, version: str, url: str, sha: str) -> PypiArtifact:
        meta = self.known.get(sha) if sha else None
        if meta is None:
            meta = _parse_metadata(self._metadata_text(url, sha))
            if sha:
                self.known[sha] = meta
                self.changed = True
        if not sha:
            raise BadInput(f"the index gives no sha256 for {download_name(url)}",
                           fix="use an index that publishes hashes (PyPI, the PyTorch index) or a wheelhouse folder")
        return PypiArtifact(name=name, version=version, location=url, sha256=sha,
                            requires_dist=tuple(meta["requires_dist"]), requires_python=meta["requires_python"])

    def _metadata_text(self, url: str, sha: str) -> str:
        from resolver.net import download, fetch_bytes

        here = local_path(url)
        if here is None:
            text = fetch_bytes(url + ".metadata", limit=METADATA_LIMIT)  # PEP 658 (PyPI, most mirrors)
            if text is not None:
                return text.decode("utf-8", errors="replace")
            here = self.verified / sha[:2] / sha / download_name(url)  # where install looks first
            if not here.is_file():
                download(url, here, expected_sha256=sha or None, what=download_name(url))
        return _metadata_from_wheel(here)

    def save(self) -> None:
        if self.changed:
            try:
                write_json_atomic(self.file, self.known, label="metadata")
            except OSError:  # a cache is an optimisation
                pass


def _metadata_from_wheel(wheel: Path) -> str:
    try:
        with zipfile.ZipFile(wheel) as archive:
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
    """uv's explanation without its box drawing: ``Because torch==9.9 was not found … we can conclude …``."""
    lines = [re.sub(r"^[\s×╰─▶│├]+", "", line).strip() for line in output.splitlines()]
    lines = [line for line in lines if line and not line.lower().startswith(("hint:", "warning:"))]
    text = " ".join(lines[1:] if len(lines) > 1 and lines[0].startswith("No solution found") else lines)
    return (text or "no output")[:300]


def canonical_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
