"""The network, in one place: is a URL reachable, and download it (hashed as it streams, atomically).

Every stage that touches the network (channels, indexes, sdists, upstream wheels, locked artefacts)
comes through here, so timeouts, the error sentence and the "nothing half-downloaded under the real
name" rule are the same everywhere.

>>> reachable("http://127.0.0.1:9/nothing", timeout=1)
False
"""

from __future__ import annotations

import errno
import functools
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

from resolver.core.errors import BadInput, IntegrityError, SourceUnreachable
from resolver.core.fs import MiB, atomic_stream, sha256_hasher
from resolver.core.names import redact_url

Progress = Callable[..., None]  # Output.progress: (label, done bytes, total bytes or None, started, unit="bytes")


@functools.lru_cache(maxsize=1)
def _opener() -> urllib.request.OpenerDirector:
    """One opener with one TLS context per process: loading the system's certificates costs ~20 ms,
    which urllib would otherwise pay for every HTTPS connection."""
    import ssl

    return urllib.request.build_opener(urllib.request.HTTPSHandler(context=ssl.create_default_context()))


def _open(request: urllib.request.Request | str, timeout: float):
    url = request if isinstance(request, str) else request.full_url
    if url.startswith("file:"):
        return _open_local(url)
    return _opener().open(request, timeout=timeout)


def _open_local(url: str):
    """A ``file://`` URL answered through the filesystem's door: a regular file only (a FIFO or device there
    is refused without a byte read, never waited on), opened without following a link in its last name
    (and none on the way below a root); anything else is a URLError, as urllib gives for a missing file."""
    import email.message
    import urllib.response
    from urllib.parse import urlparse

    from resolver.core.fs import open_read

    path = urllib.request.url2pathname(urlparse(url).path)
    try:
        handle = open_read(path, what="the file")
    except (OSError, BadInput) as exc:
        raise urllib.error.URLError(getattr(exc, "message", None) or getattr(exc, "strerror", None) or str(exc)) \
            from None
    headers = email.message.Message()
    headers["Content-Length"] = str(os.fstat(handle.fileno()).st_size)
    return urllib.response.addinfourl(handle, headers, url)


_SILENT: dict[str, str] = {}  # url -> why nothing answered, once per process: a firewall that drops costs one timeout


def probe_status(url: str, *, timeout: float = 5.0) -> int | str:
    """The HTTP status a HEAD request gets (any answer counts), or the reason there was none."""
    if url in _SILENT:
        return _SILENT[url]
    try:
        with _open(urllib.request.Request(url, method="HEAD"), timeout) as response:
            return int(getattr(response, "status", None) or 200)  # a file:// answer carries no status
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        _SILENT[url] = str(getattr(exc, "reason", exc)) or type(exc).__name__
        return _SILENT[url]


def reachable(url: str, *, timeout: float = 5.0) -> bool:
    """Whether anything answers at ``url`` (an HTTP error status is still an answer)."""
    return isinstance(probe_status(url, timeout=timeout), int)


def download(url: str, target: Path, *, expected_sha256: str | None = None, timeout: float = 60.0,
             progress: Progress | None = None, what: str | None = None) -> Path:
    """``url`` saved as ``target``; the file appears only complete, and only with ``expected_sha256``."""
    label = what or target.name
    digest = sha256_hasher()
    try:
        with atomic_stream(target, label="download") as sink, _open(url, timeout) as response:
            total = int(response.headers.get("Content-Length") or 0) or None
            done, started = 0, time.monotonic()
            for block in iter(lambda: response.read(MiB), b""):
                sink.write(block)
                digest.update(block)
                done += len(block)
                if progress is not None:
                    progress(f"downloading {label}", done, total or None, started, unit="bytes")
            if expected_sha256 and digest.hexdigest() != expected_sha256:
                raise IntegrityError(f"the download of {label} has sha256 {digest.hexdigest()[:12]}…, expected "
                                     f"{expected_sha256[:12]}… ({redact_url(url)})",
                                     fix="retry; if it persists the server (or a mirror in front of it) serves a "
                                         "different file")
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        raise SourceUnreachable(f"cannot download {redact_url(url)} ({getattr(exc, 'reason', exc)})",
                                fix="check the network or point a mirror at it ([tool.resolver] mirrors)") from None
    except OSError as exc:
        if exc.errno not in _DISK_ERRNOS:
            raise
        # the network was fine: the disk was not (full, over quota, read-only): say so, not "check the network"
        raise BadInput(f"cannot save the download of {label} in {target.parent} ({exc.strerror})",
                       fix=f"free disk space on the file system of {target.parent} (or make it writable), "
                           "then run the command again") from None
    return target


def fetch_bytes(url: str, *, timeout: float = 10.0, limit: int = 16 << 20, accept: str = "*/*") -> bytes | None:
    """The body at ``url`` (at most ``limit`` bytes), or None when it cannot be had (any error status)."""
    try:
        with _open(urllib.request.Request(url, headers={"Accept": accept}), timeout) as response:
            data = response.read(limit + 1)
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return None if len(data) > limit else data


def fetch_json(url: str, *, timeout: float = 10.0, limit: int = 16 << 20, accept: str = "application/json") -> Any | None:
    """A JSON document from ``url`` (at most ``limit`` bytes), or None when it cannot be had."""
    import json

    data = fetch_bytes(url, timeout=timeout, limit=limit, accept=accept)
    try:
        return json.loads(data) if data is not None else None
    except ValueError:
        return None


_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG}
