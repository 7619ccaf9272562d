"""The network, in one place: is a URL reachable, and download it (hashed as it streams, atomically).

Every stage that touches the network (channels, indexes, sdists, upstream wheels, locked artefacts)
comes through here, so timeouts, the error sentence and the "nothing half-downloaded under the real
name" rule are the same everywhere. Every request is bounded: each read by a timeout, the whole request
(connection, headers, body) by an overall deadline, and the body by a size (the index's when it states
one, else a cap the caller states). A ``file://`` URL opens regular files only: a FIFO or a device (a
link to ``/dev/zero``) is refused before a byte is read.

>>> reachable("http://127.0.0.1:9/nothing", timeout=1)
False
"""

from __future__ import annotations

import errno
import functools
import io
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable

from resolver.core.errors import BadInput, IntegrityError, SourceUnreachable
from resolver.core.fs import MiB, atomic_stream, sha256_hasher
from resolver.core.names import redact_url

Progress = Callable[..., None]  # Output.progress: (label, done bytes, total bytes or None, started, unit="bytes")


GiB = 1 << 30
DOWNLOAD_LIMIT = 8 * GiB  # the largest artefact a download may be when its index states no size (a ROCm torch wheel is ~5 GB)
PAGE_LIMIT = 64 << 20  # an index page or a JSON document
MIN_RATE = 1 * MiB  # bytes per second a download is allowed at the least, on top of a fixed start-up allowance


def deadline_for(limit: int, *, base: float = 120.0) -> float:
    """The overall seconds a request of at most ``limit`` bytes may take: ``base`` plus the time the whole
    body takes at :data:`MIN_RATE`. A server that trickles (one byte every few seconds keeps every read
    under its timeout) fails here, not never.

    >>> deadline_for(0), deadline_for(60 * MiB)
    (120.0, 180.0)
    """
    return base + limit / MIN_RATE


class DeadlinePassed(TimeoutError):
    """The whole request took longer than its deadline."""


class NotRegular(urllib.error.URLError):
    """A ``file://`` URL that names anything but a regular file (a FIFO, a device, a folder)."""


@functools.lru_cache(maxsize=1)
def _tls_context():
    """One TLS context per process: loading the system's certificates costs ~20 ms, which urllib would
    otherwise pay for every HTTPS connection."""
    import ssl

    return ssl.create_default_context()


class _DeadlineReader(io.RawIOBase):
    """The receiving side of a socket where every read waits at most the per-read timeout and never past
    the request's deadline: the headers and the body of an answer are bounded in time as a whole."""

    def __init__(self, sock, end: float, per_read: float) -> None:
        super().__init__()
        self._sock, self._end, self._per_read = sock, end, per_read
        self._raw = sock.makefile("rb", buffering=0)  # holds the socket open while the answer is read

    def close(self) -> None:
        self._raw.close()
        super().close()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 - io's signature
        left = self._end - time.monotonic()
        if left <= 0:
            raise DeadlinePassed("the answer took longer than its deadline")
        self._sock.settimeout(min(self._per_read, left))
        try:
            return self._raw.readinto(buffer)
        except TimeoutError:
            if self._end - time.monotonic() <= 0:
                raise DeadlinePassed("the answer took longer than its deadline") from None
            raise


class _DeadlineSocket:
    """A connected socket whose reads go through :class:`_DeadlineReader`; all else is the socket's."""

    def __init__(self, sock, end: float, per_read: float) -> None:
        self._sock, self._end, self._per_read = sock, end, per_read

    def makefile(self, mode: str = "r", *args, **kwargs):  # noqa: ANN002, ANN003 - socket's signature
        if "r" not in mode:
            return self._sock.makefile(mode, *args, **kwargs)
        return io.BufferedReader(_DeadlineReader(self._sock, self._end, self._per_read))

    def __getattr__(self, name: str):
        return getattr(self._sock, name)


def _connection_classes(end: float, per_read: float):
    import http.client

    def connect_bounded(conn) -> None:  # noqa: ANN001
        conn.timeout = max(0.01, min(per_read, end - time.monotonic()))
        type(conn).__mro__[1].connect(conn)
        conn.sock = _DeadlineSocket(conn.sock, end, per_read)

    class Plain(http.client.HTTPConnection):
        def connect(self) -> None:
            connect_bounded(self)

    class Secure(http.client.HTTPSConnection):
        def connect(self) -> None:
            connect_bounded(self)

    return Plain, Secure


def _opener(end: float, per_read: float) -> urllib.request.OpenerDirector:
    """An opener whose HTTP(S) connections honour the deadline ``end`` (time.monotonic) in every read, and
    whose ``file://`` URLs open regular files only."""
    plain, secure = _connection_classes(end, per_read)

    class Http(urllib.request.HTTPHandler):
        def http_open(self, req):  # noqa: ANN001, ANN201 - urllib's signature
            return self.do_open(plain, req)

    class Https(urllib.request.HTTPSHandler):
        def https_open(self, req):  # noqa: ANN001, ANN201
            return self.do_open(secure, req, context=_tls_context())

    class LocalFile(urllib.request.BaseHandler):
        def file_open(self, req):  # noqa: ANN001, ANN201
            return _open_local(req.full_url)

    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.ProxyHandler(), urllib.request.UnknownHandler(), Http(), Https(),
                    urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPRedirectHandler(),
                    urllib.request.HTTPErrorProcessor(), LocalFile()):
        opener.add_handler(handler)
    return opener


def _open(request: urllib.request.Request | str, timeout: float, deadline: float | None = None):
    """The answer to ``request``: each read waits at most ``timeout`` seconds, and the whole request (the
    connection, the headers and every read of the body) ends by ``deadline`` seconds from now."""
    end = time.monotonic() + (deadline if deadline is not None else deadline_for(PAGE_LIMIT))
    return _opener(end, timeout).open(request, timeout=timeout)


class _LocalAnswer:
    """A regular local file as urllib would answer it: a readable body with a Content-Length."""

    status = 200

    def __init__(self, handle, size: int) -> None:  # noqa: ANN001
        self._handle, self.headers = handle, {"Content-Length": str(size)}

    def read(self, n: int = -1) -> bytes:
        return self._handle.read(n)

    def __enter__(self) -> _LocalAnswer:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def close(self) -> None:
        self._handle.close()


def _open_local(url: str) -> _LocalAnswer:
    """A ``file://`` URL opened through the filesystem's door, never waiting: a regular file only (a FIFO, a
    device, a socket, a folder, a link in its last name is :class:`NotRegular`, found without reading a
    byte); a missing one is a URLError, as urllib gives."""
    from resolver.core.fs import open_read

    parts = urllib.parse.urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise urllib.error.URLError(f"a file:// URL names another host ({parts.netloc})")
    path = urllib.request.url2pathname(parts.path)
    try:
        handle = open_read(path, what="the file")
    except BadInput as exc:
        raise NotRegular(exc.message) from None
    except OSError as exc:
        raise urllib.error.URLError(f"{path}: {exc.strerror}") from None
    return _LocalAnswer(handle, os.fstat(handle.fileno()).st_size)


_SILENT: dict[str, str] = {}  # url -> why nothing answered, once per process: a firewall that drops costs one timeout


def probe_status(url: str, *, timeout: float = 5.0) -> int | str:
    """The HTTP status a HEAD request gets (any answer counts), or the reason there was none."""
    if url in _SILENT:
        return _SILENT[url]
    try:
        with _open(urllib.request.Request(url, method="HEAD"), timeout, deadline=2 * timeout) as response:
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
             size: int | None = None, limit: int = DOWNLOAD_LIMIT, deadline: float | None = None,
             progress: Progress | None = None, what: str | None = None) -> Path:
    """``url`` saved as ``target``; the file appears only complete, and only with ``expected_sha256``.

    Bounded three ways: each read waits at most ``timeout`` seconds; the whole download ends by
    ``deadline`` seconds (by default :func:`deadline_for` its cap); and it holds at most ``size`` bytes
    (the size its index states) or else ``limit``: an answer that says or turns out to be larger is
    refused as it streams (:class:`IntegrityError`, exit 4), and nothing is kept."""
    label = what or target.name
    cap = size if size is not None else limit
    digest = sha256_hasher()
    try:
        with atomic_stream(target, label="download") as sink, \
                _open(url, timeout, deadline if deadline is not None else deadline_for(cap)) as response:
            total = _stated_length(response)
            if total is not None and total > cap:
                raise _too_large(label, url, cap, size, total)
            done, started = 0, time.monotonic()
            for block in iter(lambda: response.read(MiB), b""):
                done += len(block)
                if done > cap:
                    raise _too_large(label, url, cap, size, None)
                sink.write(block)
                digest.update(block)
                if progress is not None:
                    progress(f"downloading {label}", done, total or None, started, unit="bytes")
            if size is not None and done != size:
                raise IntegrityError(f"the download of {label} is {done} bytes, its index says {size} "
                                     f"({redact_url(url)})", fix="retry; if it persists the server (or a mirror in "
                                                                  "front of it) serves a different file")
            if expected_sha256 and digest.hexdigest() != expected_sha256:
                raise IntegrityError(f"the download of {label} has sha256 {digest.hexdigest()[:12]}…, expected "
                                     f"{expected_sha256[:12]}… ({redact_url(url)})",
                                     fix="retry; if it persists the server (or a mirror in front of it) serves a "
                                         "different file")
    except NotRegular as exc:
        raise BadInput(f"cannot download {redact_url(url)}: {exc.reason}",
                       fix="point the source at a regular file (a package or a page), not a pipe or a device") from None
    except DeadlinePassed:
        raise SourceUnreachable(f"the download of {label} from {redact_url(url)} did not finish within its "
                                f"deadline ({_seconds(deadline if deadline is not None else deadline_for(cap))})",
                                fix="check the network (the server answers too slowly) or point a mirror at it "
                                    "([tool.resolver] mirrors)") from None
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


def _stated_length(response) -> int | None:  # noqa: ANN001
    text = str(response.headers.get("Content-Length") or "").strip()
    return int(text) if text.isdigit() and len(text) < 20 else None


def _too_large(label: str, url: str, cap: int, size: int | None, total: int | None) -> IntegrityError:
    said = f"{total} bytes" if total is not None else f"more than {cap} bytes"
    bound = f"its index says {size} bytes" if size is not None else f"the most this download may be is {cap} bytes"
    return IntegrityError(f"the download of {label} is {said}, and {bound} ({redact_url(url)}); nothing was kept",
                          fix="check the source: it serves a different (or endless) file; point a mirror at a "
                              "good copy ([tool.resolver] mirrors)")


def _seconds(value: float) -> str:
    return f"{value:.0f} s"


def fetch_bytes(url: str, *, timeout: float = 10.0, limit: int = 16 << 20, accept: str = "*/*",
                deadline: float | None = None) -> bytes | None:
    """The body at ``url`` (at most ``limit`` bytes, within ``deadline`` seconds, by default
    :func:`deadline_for` ``limit``), or None when it cannot be had (any error status, too large, too
    slow). A ``file://`` URL that names a FIFO, a device or a folder is one :class:`BadInput`."""
    try:
        with _open(urllib.request.Request(url, headers={"Accept": accept}), timeout,
                   deadline if deadline is not None else deadline_for(limit)) as response:
            total = _stated_length(response)
            if total is not None and total > limit:
                return None
            data = response.read(limit + 1)
    except NotRegular as exc:
        raise BadInput(f"cannot read {redact_url(url)}: {exc.reason}",
                       fix="point the source at a regular file (a page or a folder of packages), not a pipe or a "
                           "device") from None
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return None if len(data) > limit else data


def fetch_json(url: str, *, timeout: float = 10.0, limit: int = 16 << 20, accept: str = "application/json") -> Any | None:
    """A JSON document from ``url`` (at most ``limit`` bytes), or None when it cannot be had."""
    import json

    data = fetch_bytes(url, timeout=timeout, limit=limit, accept=accept)
    try:
        return json.loads(data) if data is not None else None
    except (ValueError, RecursionError):
        return None


_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG}
