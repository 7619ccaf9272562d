"""Every answer from outside is bounded: in time as a whole (a server that trickles one byte at a time
keeps every single read under its timeout, and still fails by the request's deadline), in size (what the
index states, else the caller's cap, refused while it streams), and a ``file://`` URL opens regular files
only (a FIFO or a link to /dev/zero is refused before a byte is read). Real loopback servers, real FIFOs."""

from __future__ import annotations

import os
import socketserver
import threading
import time
from pathlib import Path

import pytest

from resolver.core.errors import BadInput, IntegrityError, SourceUnreachable
from resolver.tools import net


class _Trickle(socketserver.BaseRequestHandler):
    """Answers with its headers (or with nothing but them, one byte at a time) and a body one byte per
    ``gap`` seconds: each read returns well within any timeout, the whole never ends in time."""

    def handle(self) -> None:
        server = self.server
        head = b"HTTP/1.0 200 OK\r\nContent-Length: 100000\r\n\r\n"
        try:
            self.request.recv(65536)
            if server.mode == "headers":  # type: ignore[attr-defined]
                for i in range(len(head)):
                    self.request.sendall(head[i:i + 1])
                    time.sleep(server.gap)  # type: ignore[attr-defined]
            elif server.mode == "huge":  # type: ignore[attr-defined]
                self.request.sendall(b"HTTP/1.0 200 OK\r\n\r\n")
                block = b"\0" * 65536
                while not server.stop.is_set():  # type: ignore[attr-defined]
                    self.request.sendall(block)
            else:
                self.request.sendall(head)
                while not server.stop.is_set():  # type: ignore[attr-defined]
                    self.request.sendall(b"x")
                    time.sleep(server.gap)  # type: ignore[attr-defined]
        except OSError:
            pass


def _serve(mode: str, gap: float = 0.2):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    server.mode, server.gap, server.stop = mode, gap, threading.Event()  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/pkg.conda"


@pytest.fixture(params=["body", "headers"])
def trickle(request):
    server, url = _serve(request.param)
    yield url
    server.stop.set()  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


def test_a_trickling_server_fails_by_the_deadline_not_by_the_per_read_timeout(trickle: str, tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(SourceUnreachable, match="did not finish within its deadline"):
        net.download(trickle, tmp_path / "pkg.conda", timeout=5.0, deadline=1.5)
    assert time.monotonic() - started < 6.0  # each read waits 0.2 s: without a deadline this took 20000 s
    assert not list(tmp_path.iterdir())  # nothing kept, not even a temporary
    started = time.monotonic()
    assert net.fetch_bytes(trickle, timeout=5.0, deadline=1.5) is None
    assert time.monotonic() - started < 6.0


def test_the_default_deadline_grows_with_the_size_but_is_always_finite() -> None:
    assert net.deadline_for(0) < net.deadline_for(net.DOWNLOAD_LIMIT) < float("inf")


def test_a_download_larger_than_its_stated_size_or_cap_is_refused_while_it_streams(tmp_path: Path) -> None:
    server, url = _serve("huge")
    try:
        started = time.monotonic()
        with pytest.raises(IntegrityError, match="its index says 1000 bytes") as caught:
            net.download(url, tmp_path / "a.conda", size=1000)
        assert caught.value.code == 4
        with pytest.raises(IntegrityError, match=r"the most this download may be is 1048576 bytes"):
            net.download(url, tmp_path / "b.conda", limit=1 << 20)
        assert net.fetch_bytes(url, limit=1 << 20) is None
        assert time.monotonic() - started < 10.0
        assert not list(tmp_path.iterdir())
    finally:
        server.stop.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()


def test_a_stated_size_that_the_body_falls_short_of_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "served.conda"
    source.write_bytes(b"x" * 100)
    with pytest.raises(IntegrityError, match="is 100 bytes, its index says 200"):
        net.download(source.as_uri(), tmp_path / "out" / "a.conda", size=200)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero-link", "folder"])
def test_a_file_url_opens_regular_files_only(kind: str, tmp_path: Path) -> None:
    special = tmp_path / "index.html"
    if kind == "fifo":
        os.mkfifo(special)
    elif kind == "dev-zero-link":
        special.symlink_to("/dev/zero")
    else:
        special.mkdir()
    started = time.monotonic()
    with pytest.raises(BadInput, match="cannot (read|download) .*index.html: .*(not a regular file|link|folder)") as caught:
        net.fetch_bytes(special.as_uri())
    assert caught.value.code == 3
    with pytest.raises(BadInput, match="cannot download .*index.html: .*(not a regular file|link|folder)"):
        net.download(special.as_uri(), tmp_path / "out" / "x.whl")
    assert isinstance(net.probe_status(special.as_uri()), str)  # no answer, and no hang
    assert time.monotonic() - started < 5.0


def test_a_regular_local_file_still_downloads(tmp_path: Path) -> None:
    source = tmp_path / "a.whl"
    source.write_bytes(b"wheel bytes")
    out = net.download(source.as_uri(), tmp_path / "out" / "a.whl", size=11)
    assert out.read_bytes() == b"wheel bytes"
    assert net.fetch_bytes(source.as_uri()) == b"wheel bytes"
    assert net.probe_status(source.as_uri()) == 200
