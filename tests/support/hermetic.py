"""What makes a test session hermetic: its own home and caches, no network beyond loopback, and a
local double of PyPI's simple index for the look-ups that ask PyPI where a file canonically lives.

The session's environment (:func:`session_environ`) is what every test and every process a test
starts inherits:

* ``HOME``, ``XDG_CONFIG_HOME``, ``XDG_DATA_HOME``, ``XDG_STATE_HOME``: folders of the session,
  removed at its end; ``XDG_CACHE_HOME``, ``UV_CACHE_DIR``, ``RATTLER_CACHE_DIR``, ``PIP_CACHE_DIR``:
  folders of the run, shared by its xdist workers (torch 2.14.1 is copied and unpacked once a run, not
  once a worker: about 10 GB less at the peak) and removed with the run's temporary folder. pip's own configuration files (configuration, not cache) are copied into the session's home,
  so "this machine's pip configuration" still names this machine's wheelhouses and local indexes.
* ``HTTP(S)_PROXY`` / ``ALL_PROXY`` (both cases) name a loopback port that refuses every connection,
  and ``NO_PROXY`` lets loopback through: urllib, pip, uv and rattler honour them, so a child process
  that tries the network fails at once instead of reaching it (pytest-socket guards this process).
* ``PIP_INDEX_URL``: PyPI is out of reach, so a local index stands in for it: :func:`own_wheelhouse`,
  PyPI's wheels of what the suite installs (this project's own workspace, pixi.toml's
  ``[pypi-dependencies]``: py-rattler, uv ...; the tests' torch environments) that pip's configuration
  does not hold locally, fetched once per checkout before any test runs (``./run-tests`` does it with
  the install step) and kept under ``.resolver/test-wheels/``. The local indexes of pip's configuration
  stay its extra indexes.
* ``RESOLVER_CANONICAL_INDEX``: the :class:`IndexDouble`, which answers as PyPI's simple index (PEP
  691) for the files of those local indexes, with PyPI-shaped URLs: the canonical-address look-up of a
  lock (resolver/lock/canonical.py) is served here, not by pypi.org.

>>> double = IndexDouble((Path("/nonexistent"),))
>>> double.page("numpy") is None
True
>>> double.close()
"""

from __future__ import annotations

import fcntl
import hashlib
import html
import http.server
import json
import os
import re
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
from pathlib import Path
from typing import Mapping
from urllib.parse import quote, unquote, urlsplit

LOOPBACK = ("127.0.0.1", "::1", "localhost")
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
NO_PROXY_VARS = ("no_proxy", "NO_PROXY")
CACHE_VARS = ("XDG_CACHE_HOME", "UV_CACHE_DIR", "RATTLER_CACHE_DIR", "PIP_CACHE_DIR")


def canonical_file_url(sha256: str, file_name: str) -> str:
    """A PyPI-shaped address for a file (files.pythonhosted.org/packages/<h>/<h>/<h>/<name>).

    >>> canonical_file_url("ab" * 32, "a-1.0-py3-none-any.whl")[:54]
    'https://files.pythonhosted.org/packages/ab/ab/abababab'
    """
    return f"https://files.pythonhosted.org/packages/{sha256[:2]}/{sha256[2:4]}/{sha256[4:]}/{quote(file_name)}"


class IndexDouble:
    """PyPI on 127.0.0.1 for the files of local PEP 503 indexes (pages whose links carry ``#sha256=``):
    its simple index (PEP 691 JSON, ``/simple/<project>/``) answers with PyPI-shaped file URLs, and the
    files themselves are served under ``/packages/`` (:attr:`files_url`, what a mirror entry for
    ``https://files.pythonhosted.org/packages`` points at); a project none of them has is a 404, as on
    PyPI. ``requests`` lists the paths asked for."""

    def __init__(self, indexes: tuple[Path, ...]) -> None:
        self.indexes = indexes
        self.requests: list[str] = []
        self._pages: dict[str, bytes | None] = {}
        self._files: dict[str, Path] = {}  # sha256 -> the local file
        self._lock = threading.Lock()
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - stdlib's name
                self._answer(with_body=True)

            def do_HEAD(self) -> None:  # noqa: N802 - stdlib's name
                self._answer(with_body=False)

            def _answer(self, *, with_body: bool) -> None:
                double.requests.append(self.path)
                wanted = re.fullmatch(r"/packages/(\w\w)/(\w\w)/(\w{60})/([^/]+)", urlsplit(self.path).path)
                if wanted:
                    self._send_file(double.file(wanted.group(1) + wanted.group(2) + wanted.group(3),
                                                unquote(wanted.group(4))), with_body=with_body)
                    return
                match = re.fullmatch(r"/simple/([^/]+)/?", urlsplit(self.path).path)
                body = double.page(unquote(match.group(1))) if match else None
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if with_body:
                    self.wfile.write(body)

            def _send_file(self, path: Path | None, *, with_body: bool) -> None:
                if path is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(path.stat().st_size))
                self.end_headers()
                if with_body:
                    with open(path, "rb") as handle:
                        shutil.copyfileobj(handle, self.wfile, 1 << 20)

            def log_message(self, format, *args) -> None:  # noqa: A002 - stdlib signature
                pass

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/simple/"
        self.files_url = f"http://127.0.0.1:{self._server.server_address[1]}/packages"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def page(self, project: str) -> bytes | None:
        """The PEP 691 page of ``project`` (None when no local index has it)."""
        name = re.sub(r"[-_.]+", "-", project).lower()
        with self._lock:
            if name not in self._pages:
                self._pages[name] = self._build(name)
            return self._pages[name]

    def file(self, sha256: str, file_name: str) -> Path | None:
        """The local file a PyPI-shaped URL of :func:`canonical_file_url` stands for (None if none)."""
        self.page(file_name.split("-", 1)[0])
        with self._lock:
            path = self._files.get(sha256)
        return path if path is not None and path.name == file_name and path.is_file() else None

    def _build(self, name: str) -> bytes | None:
        files: dict[str, dict] = {}
        for index in self.indexes:
            try:
                text = (index / name / "index.html").read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for href in re.findall(r'href="([^"]+)"', text):
                target, _, fragment = html.unescape(href).partition("#")
                sha = fragment[len("sha256="):] if fragment.startswith("sha256=") else ""
                file_name = unquote(target.rsplit("/", 1)[-1])
                if re.fullmatch(r"[0-9a-f]{64}", sha) and file_name not in files:
                    files[file_name] = {"filename": file_name, "url": canonical_file_url(sha, file_name),
                                        "hashes": {"sha256": sha}}
                    local = (index / name / unquote(target)).resolve() if "://" not in target else None
                    if local is not None:
                        self._files[sha] = local
        if not files:
            return None
        return json.dumps({"meta": {"api-version": "1.0"}, "name": name,
                           "files": [files[k] for k in sorted(files)]}).encode()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def refusing_port() -> socket.socket:
    """A loopback port bound and never listened on: every connection to it is refused at once. Keep
    the socket open as long as the port must stay refused."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.bind(("127.0.0.1", 0))
    return held


def local_indexes(environ: Mapping[str, str]) -> tuple[Path, ...]:
    """The local PEP 503 indexes pip's configuration names (folders with one folder per project)."""
    from resolver.lock.pipconfig import read_pip_config

    config = read_pip_config(environ)
    out = []
    for url in (*([config.index_url] if config.index_url else []), *config.extra_index_urls):
        path = Path(unquote(urlsplit(url).path)) if url.startswith("file://") else Path(url) if url.startswith("/") else None
        if path is not None and path.is_dir():
            out.append(path)
    return tuple(dict.fromkeys(out))


def own_requirements(manifest: str) -> list[str]:
    """The PyPI requirements of a pixi.toml text's default feature (``[pypi-dependencies]``), as PEP 508."""
    from resolver.core.toml import parse_toml

    out = []
    data = parse_toml(manifest, what="pixi.toml", fix="repair it")
    for name, spec in sorted((data.get("pypi-dependencies") or {}).items()):
        version = spec.get("version", "*") if isinstance(spec, dict) else str(spec)
        out.append(name if version.strip() in ("", "*") else f"{name}{version.strip()}")
    return out


# What the suite's environments install from PyPI besides this project's own workspace: the CPU torch of
# cpu_project, the CUDA torch of the GPU journeys and the "other" torch environment (conftest.py).
SUITE_REQUIREMENTS = (("torch==2.14.1", "transformers", "safetensors", "numpy", "einops"), ("torch==2.13.0+cpu",))


def own_wheelhouse(repo: Path, environ: Mapping[str, str] | None = None) -> Path | None:
    """A local PEP 503 index (``<folder>/simple``) of PyPI's wheels that the suite installs and this
    machine's pip configuration does not already hold locally: :func:`own_requirements` of the
    shipped pixi.toml and :data:`SUITE_REQUIREMENTS`, with what they depend on, for this Python and platform.
    pip resolves each set (``--dry-run --report``) and only the files it would take from a remote index
    are fetched, once (flock-protected); later sessions reuse them. None, with a warning, when pip
    cannot fetch them."""
    from support import shipped_manifest

    groups = (tuple(own_requirements(shipped_manifest())), *SUITE_REQUIREMENTS)
    tag = f"{sys.implementation.cache_tag}-{os.uname().machine}"
    key = hashlib.sha256(json.dumps([groups, tag]).encode()).hexdigest()[:12]
    folder = repo / ".resolver" / "test-wheels" / f"suite-{key}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    env = dict(environ if environ is not None else os.environ)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / ".ready").is_file():
            return folder / "simple"
        shutil.rmtree(folder, ignore_errors=True)
        (folder / "files").mkdir(parents=True)
        remote: dict[str, str] = {}
        for group in groups:
            report = folder / "report.json"
            done = subprocess.run([*pip, "install", "--dry-run", "--ignore-installed", "--quiet", "--only-binary",
                                   ":all:", "--report", str(report), *group], capture_output=True, text=True, env=env)
            if done.returncode != 0:
                return _failed(folder, group, done.stderr)
            for item in json.loads(report.read_text(encoding="utf-8")).get("install", []):
                info = item.get("download_info") or {}
                url, sha = info.get("url", ""), ((info.get("archive_info") or {}).get("hashes") or {}).get("sha256")
                if url.startswith(("http://", "https://")) and sha:
                    remote[url.split("#", 1)[0]] = sha
            report.unlink()
        if remote:
            done = subprocess.run([*pip, "download", "--quiet", "--no-deps", "--dest", str(folder / "files"),
                                   *(f"{url}#sha256={sha}" for url, sha in sorted(remote.items()))],
                                  capture_output=True, text=True, env=env)
            if done.returncode != 0:
                return _failed(folder, sorted(remote), done.stderr)
        _write_index(folder / "files", folder / "simple")
        (folder / ".ready").write_text("ok\n")
    return folder / "simple"


def _failed(folder: Path, what, stderr: str) -> None:
    print(f"warning: cannot fetch the wheels of {', '.join(what)} for the test suite's local index (the tests "
          f"that lock or install them will fail): {stderr.strip()[-500:]}", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    return None


def _write_index(files: Path, simple: Path) -> None:
    by_project: dict[str, list[str]] = {}
    for wheel in sorted(files.glob("*.whl")):
        sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
        project = re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()
        by_project.setdefault(project, []).append(f'<a href="../../files/{quote(wheel.name)}#sha256={sha}">'
                                                  f'{html.escape(wheel.name)}</a>')
    for project, links in by_project.items():
        (simple / project).mkdir(parents=True, exist_ok=True)
        (simple / project / "index.html").write_text("<!DOCTYPE html><html><body>\n" + "\n".join(links) +
                                                     "\n</body></html>\n", encoding="utf-8")
    (simple / "index.html").write_text("".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(by_project)), encoding="utf-8")


def run_folder(tmp_path_factory) -> Path:
    """The run's temporary folder: shared by its xdist workers (each has its own below it), removed when
    the run ends if every test passed."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def session_environ(base: Path, environ: Mapping[str, str], *, refused_port: int, double_url: str,
                    index: Path | None, caches: Path | None = None) -> dict[str, str]:
    """The variables a hermetic session sets (``base``: an empty folder of the session; ``caches``: where
    its caches go, ``base`` unless given: the xdist workers of one run share theirs, as two resolver
    commands run at once on one machine share the user's; ``index``: the local index that stands in for
    PyPI, :func:`own_wheelhouse`)."""
    home = base / "home"
    real_home = Path(environ.get("HOME") or Path.home())
    real_config = Path(environ.get("XDG_CONFIG_HOME") or real_home / ".config")
    for source, target in ((real_home / ".pip" / "pip.conf", home / ".pip" / "pip.conf"),
                           (real_config / "pip" / "pip.conf", home / ".config" / "pip" / "pip.conf")):
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_file():
            shutil.copyfile(source, target)
    out = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
           "XDG_STATE_HOME": str(home / ".local" / "state"), "RESOLVER_CANONICAL_INDEX": double_url}
    for name in CACHE_VARS:
        folder = (caches or base) / name.lower()
        folder.mkdir(parents=True, exist_ok=True)
        out[name] = str(folder)
    proxy = f"http://127.0.0.1:{refused_port}"
    out.update({name: proxy for name in PROXY_VARS})
    out.update({name: ",".join(LOOPBACK) for name in NO_PROXY_VARS})
    if index is not None:
        out["PIP_INDEX_URL"] = index.as_uri()
    return out


if __name__ == "__main__":  # ./run-tests: the local index, fetched with the install step, before any test
    sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parents[1])]
    sys.exit(0 if own_wheelhouse(Path(__file__).resolve().parents[2]) is not None else 1)
