"""Locked artefacts as local files: local ones read in place, remote ones downloaded once into the cache.

>>> local_path("file:///srv/wheels/torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl").name
'torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl'
>>> local_path("https://pypi.org/simple/torch/") is None
True
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlsplit

from resolver.errors import BadInput
from resolver.fs import sha256_of
from resolver.names import check_file_name, check_inside
from resolver.net import download


def local_path(url: str) -> Path | None:
    """The file behind a ``file://`` URL or a plain path; None for remote URLs."""
    if url.startswith("file://"):
        return Path(unquote(urlsplit(url).path))
    if url.startswith("/"):
        return Path(url)
    return None


def download_name(url: str) -> str:
    """The file name a download is saved as: the URL's last path segment, decoded, which must be one
    plain name (a ``%2F``-encoded ``..`` in a shared lock must not become a path).

    >>> download_name("https://h/whl/torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl")
    'torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl'
    """
    return check_file_name(unquote(urlsplit(url).path.rsplit("/", 1)[-1]), what=f"the file name of {url}",
                           fix="restore pixi.lock from version control or lock again: a locked URL must end in "
                               "the artefact's own file name")


def fetch(url: str, cache: Path, expected_sha256: str | None = None,
          progress: Callable[[str, int, int | None, float], None] | None = None) -> Path:
    """The artefact at ``url`` as a local file: local files in place, remote ones downloaded once.

    A cached download is reused only while it still has ``expected_sha256``.
    """
    path = local_path(url)
    if path is not None:
        if not path.is_file():
            raise BadInput(f"locked file {path} does not exist",
                           fix="restore the wheelhouse/channel it came from, or run `python -m resolver lock` again")
        return path
    name = download_name(url)
    target = cache / "downloads" / hashlib.sha256(url.encode()).hexdigest()[:16] / name
    check_inside(cache, target, what="the download of", fix="restore pixi.lock from version control or lock again")
    if target.is_file() and (expected_sha256 is None or sha256_of(target) == expected_sha256):
        return target
    return download(url, target, expected_sha256=expected_sha256, progress=progress)
