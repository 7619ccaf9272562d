"""The suite is hermetic (tests/support/hermetic.py): no socket beyond loopback, in this process or in the ones
a test starts; the session's own home and caches; PyPI's simple index answered by a local double."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from support import REPO, hermetic


@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_this_process_cannot_open_a_socket_beyond_loopback():
    pytest_socket = pytest.importorskip("pytest_socket")
    with pytest.raises(pytest_socket.SocketConnectBlockedError):
        socket.create_connection(("198.51.100.7", 443), timeout=1)  # TEST-NET-2: never a real host
    with socket.socket() as server:  # loopback stays open: the suite's servers and doubles live there
        server.bind(("127.0.0.1", 0))
        server.listen()
        socket.create_connection(server.getsockname(), timeout=5).close()


def test_a_child_process_fails_at_once_on_the_network_and_reaches_loopback(index_double):
    code = ("import json, os, urllib.request\n"
            "from resolver.tools.net import probe_status\n"
            "print(json.dumps([probe_status('https://pypi.org/simple/', timeout=20), "
            f"probe_status({index_double.url + 'no-such-project/'!r}, timeout=20)]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    remote, loopback = json.loads(done.stdout)
    assert isinstance(remote, str), f"pypi.org answered a test's child process: {remote}"
    assert loopback == 404  # loopback is reached (the double answered)


def test_home_and_caches_are_the_sessions(tmp_path_factory):
    base = tmp_path_factory.getbasetemp().resolve()
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        assert Path(os.environ[name]).resolve().is_relative_to(base), name  # this worker's
    for name in hermetic.CACHE_VARS:
        assert Path(os.environ[name]).resolve().is_relative_to(hermetic.run_folder(tmp_path_factory).resolve()), name
    from resolver.project.paths import user_cache_dir

    assert user_cache_dir().resolve().is_relative_to(hermetic.run_folder(tmp_path_factory).resolve())
    assert all(os.environ[v] == os.environ["https_proxy"] for v in hermetic.PROXY_VARS)


def test_pips_configuration_is_kept_and_pypi_replaced_by_a_local_index():
    """pip's configuration files were copied into the session's home (its wheelhouses and local indexes
    still count); PyPI, the default index, is replaced by the local index of the wheels this project's
    own workspace needs."""
    from resolver.lock.pipconfig import read_pip_config

    config = read_pip_config()
    own = hermetic.own_wheelhouse(REPO)
    if own is None:
        pytest.skip("the local index of this project's own wheels could not be fetched")
    assert config.index_url == own.as_uri()
    assert {"py-rattler", "uv"} <= {p.name for p in own.iterdir() if p.is_dir()}
    assert all(u.startswith("file://") for u in config.extra_index_urls), config.extra_index_urls


def test_the_index_double_answers_as_pypi_for_what_the_local_indexes_hold(index_double, tmp_path):
    project = tmp_path / "simple" / "some-pkg"
    project.mkdir(parents=True)
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "some_pkg-1.0-py3-none-any.whl").write_bytes(b"wheel bytes")
    sha = hashlib.sha256(b"wheel bytes").hexdigest()
    (project / "index.html").write_text(f'<a href="../../files/some_pkg-1.0-py3-none-any.whl#sha256={sha}">x</a>\n'
                                        '<a href="../../files/some_pkg-0.9.tar.gz">no hash: not listed</a>\n')
    double = hermetic.IndexDouble((tmp_path / "simple",))
    try:
        request = urllib.request.Request(double.url + "Some_Pkg/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            page = json.loads(response.read())
        assert page["files"] == [{"filename": "some_pkg-1.0-py3-none-any.whl", "hashes": {"sha256": sha},
                                  "url": hermetic.canonical_file_url(sha, "some_pkg-1.0-py3-none-any.whl")}]
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(double.url + "other/", timeout=10)
        assert missing.value.code == 404
        assert double.requests == ["/simple/Some_Pkg/", "/simple/other/"]
        # the file itself, where a mirror of files.pythonhosted.org/packages finds it
        url = page["files"][0]["url"].replace("https://files.pythonhosted.org/packages", double.files_url)
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.read() == b"wheel bytes"
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(url.replace(sha[4:], "0" * 60), timeout=10)
    finally:
        double.close()


def test_a_lock_asks_the_double_for_canonical_addresses(index_double, tmp_path):
    """canonical.py asks RESOLVER_CANONICAL_INDEX, here the double, never pypi.org."""
    from resolver.lock import canonical
    from resolver.lock.lockfile import PypiArtifact
    from resolver.project.paths import ProjectPaths
    from resolver.project.sources import Sources

    indexes = hermetic.local_indexes(os.environ)
    page = next((json.loads(body) for index in indexes for folder in sorted(index.iterdir())[:50]
                 if folder.is_dir() and (body := index_double.page(folder.name))), None)
    if page is None:
        pytest.skip("pip's configuration here names no local index with hashed links")
    entry = page["files"][0]
    art = PypiArtifact(page["name"], "0", f"file:///elsewhere/{entry['filename']}", entry["hashes"]["sha256"])
    before = len(index_double.requests)
    found = canonical.Canonicalizer(Sources(), ProjectPaths(tmp_path)).pypi_artifact(art, _NoIndex())
    assert found.location == entry["url"] and len(index_double.requests) == before + 1


class _NoIndex:
    @staticmethod
    def package_index(name: str) -> None:
        return None
