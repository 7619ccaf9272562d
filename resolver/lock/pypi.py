"""The PyPI side of a lock: pip resolves (``pip install --dry-run --report``), we record each wheel.

pip is driven through its command line only, so its own configuration (pip.conf, ``PIP_*``:
index-url, extra-index-url, find-links, constraints) applies untouched; the plan's PyTorch index
and any mirrors or wheelhouses are added as ``--extra-index-url`` / ``--find-links``. Remote
indexes that cannot be reached are left out with a warning instead of costing minutes of retries.
Every artefact gets a sha256: the index's when it gives one, else computed from the file
(a remote file is downloaded once into the cache for that).

>>> canonical_name("Typing_Extensions")
'typing-extensions'
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from resolver import proc
from resolver.errors import BadInput, ResolverError, SourceUnreachable
from resolver.fs import sha256_of
from resolver.install.fetch import file_name_of, local_path
from resolver.lock.lockfile import PypiArtifact
from resolver.names import check_requirement
from resolver.net import download, reachable
from resolver.platforms import host_subdir, wheel_platform_tags

RESOLVE_TIMEOUT_S = 1800  # a cold resolve of torch's CUDA build downloads metadata of ~60 wheels


@dataclass(frozen=True)
class PipRequest:
    requirements: tuple[str, ...]
    python: str  # "3.11"
    platform: str  # conda subdir of the target
    glibc: str | None = None
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()


@dataclass(frozen=True)
class PipResolution:
    artifacts: tuple[PypiArtifact, ...]
    skipped_indexes: tuple[str, ...]  # remote indexes that could not be reached
    interpreter: str
    cross: bool  # resolved with --platform/--python-version for another machine


def find_interpreter(python: str) -> str | None:
    """An interpreter of this host for Python ``X.Y``: the running one, else ``pythonX.Y`` on PATH."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == python:
        return sys.executable
    return shutil.which(f"python{python}")


def resolve(request: PipRequest, cache: Path, *, info: Callable[[str], None] = lambda text: None) -> PipResolution:
    """Resolve ``request`` with pip; every artefact with its location and sha256."""
    skipped = []
    indexes = []
    for url in request.extra_index_urls:
        if url.startswith(("http://", "https://")) and not reachable(url):
            skipped.append(url)
            info(f"  index {url} cannot be reached; left out (pip's own configuration still applies)")
            continue
        indexes.append(url)
    index_url = request.index_url
    if index_url and index_url.startswith(("http://", "https://")) and not reachable(index_url):
        if index_url not in skipped:
            skipped.append(index_url)
        info(f"  index {index_url} cannot be reached; left out (pip's own configuration still applies)")
        index_url = None
    same_machine = request.platform == host_subdir() and not _older_glibc(request.glibc)
    interpreter = find_interpreter(request.python) if same_machine else None
    cross = interpreter is None
    with tempfile.TemporaryDirectory(prefix="resolver-pip-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [interpreter or sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
               "--quiet", "--report", str(report), "--only-binary", ":all:", "--no-input"]
        if cross:
            major, minor = request.python.split(".")[:2]
            cmd += ["--target", str(Path(tmp) / "target"), "--python-version", request.python,
                    "--implementation", "cp", "--abi", f"cp{major}{minor}", "--abi", "abi3", "--abi", "none"]
            for tag in wheel_platform_tags(request.platform, request.glibc):
                cmd += ["--platform", tag]
        if index_url:
            cmd += ["--index-url", index_url]
        for url in indexes:
            cmd += ["--extra-index-url", url]
        for link in request.find_links:
            cmd += ["--find-links", link]
        # requirements only after "--": a name from a shared pixi.toml can never be read as a pip option
        cmd += ["--", *(check_requirement(r) for r in request.requirements)]
        env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
        done = proc.run(cmd, timeout=RESOLVE_TIMEOUT_S, env=env)
        if done.timed_out:
            raise SourceUnreachable(f"pip did not finish resolving the PyPI part within {RESOLVE_TIMEOUT_S // 60} "
                                    "minutes", fix="check that the configured indexes answer (pip config list), "
                                                   "or point the sources at a mirror ([tool.resolver])")
        if done.returncode != 0 or not report.is_file():
            raise _resolution_failure(done.stderr, skipped)
        data = json.loads(report.read_text(encoding="utf-8"))
    artifacts = [_artifact(item, cache) for item in data.get("install", [])]
    return PipResolution(tuple(sorted(artifacts, key=lambda a: a.name)), tuple(skipped),
                         interpreter or sys.executable, cross)


def _older_glibc(target: str | None) -> bool:
    """Whether the target's glibc is older than this host's (then wheels are chosen for the target's)."""
    import platform

    libc, here = platform.libc_ver()
    if not target or libc != "glibc" or not here:
        return False
    try:
        return tuple(int(x) for x in target.split(".")[:2]) < tuple(int(x) for x in here.split(".")[:2])
    except ValueError:
        return False


def _resolution_failure(stderr: str, skipped: list[str]) -> ResolverError:
    """pip's failure as one sentence; when an index was out of reach, that is almost always the cause."""
    reason = _pip_reason(stderr)
    if skipped:
        where = ", ".join(skipped)
        return SourceUnreachable(f"pip could not resolve the PyPI part ({reason}): {where} cannot be reached from here "
                             "and no other configured source has the pinned builds",
                             fix=f"lock on a machine that reaches {where}, or mirror its wheels and pass "
                                 "--find-links DIR or --torch-index URL (also RESOLVER_FIND_LINKS / RESOLVER_TORCH_INDEX)",
                             because=stderr[-2000:])
    return BadInput(f"pip could not resolve the PyPI part ({reason})",
                         fix="check the pins in pixi.toml and the sources (RESOLVER_FIND_LINKS, RESOLVER_TORCH_INDEX, "
                             "[tool.resolver])",
                         because=stderr[-2000:])


def _pip_reason(stderr: str) -> str:
    """The most telling ERROR line: the unmet requirement rather than pip's generic closing line."""
    errors = [ln.strip()[len("ERROR:"):].strip() for ln in stderr.splitlines() if ln.strip().startswith("ERROR")]
    specific = [e for e in errors if not e.startswith("ResolutionImpossible")]
    if specific:
        return specific[0][:300]
    return (errors[-1] if errors else (stderr.strip().splitlines() or ["no output"])[-1])[:300]


def _artifact(item: dict, cache: Path) -> PypiArtifact:
    meta = item.get("metadata", {})
    info = item.get("download_info", {})
    url = str(info.get("url", "")).split("#", 1)[0]
    if "dir_info" in info or not url:
        raise BadInput(f"{meta.get('name')} resolved to a local folder ({url}), which cannot be locked",
                       fix="build a wheel of it and put it in a wheelhouse (RESOLVER_FIND_LINKS)")
    hashes = (info.get("archive_info") or {}).get("hashes") or {}
    sha = hashes.get("sha256")
    if not sha:
        here = local_path(url)
        if here is None:  # hashed once: the download stays in the cache for the install
            here = download(url, cache / "downloads" / file_name_of(url), what=file_name_of(url))
        sha = sha256_of(here)
    name = canonical_name(meta.get("name", ""))
    return PypiArtifact(name=name, version=str(meta.get("version")), location=url, sha256=sha,
                        requires_dist=tuple(meta.get("requires_dist") or ()),
                        requires_python=meta.get("requires_python"))


def canonical_name(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()
