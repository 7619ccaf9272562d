"""The PyPI side of lock: uv's resolution for this host and for another platform, hashes and metadata recorded;
pip's configuration read as pip reads it."""

from __future__ import annotations

import os
import sys

import pytest
from support import channel_factory as cf  # noqa: E402

from resolver.core.errors import ResolverError  # noqa: E402
from resolver.core.fs import sha256_of  # noqa: E402
from resolver.core.names import local_path  # noqa: E402
from resolver.core.platforms import host_subdir, wheel_platform_tags  # noqa: E402
from resolver.lock import pypi  # noqa: E402
from resolver.project.paths import ProjectPaths  # noqa: E402


@pytest.fixture(autouse=True)
def isolated_pip(monkeypatch):
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    return cf.build_wheelhouse(tmp_path_factory.mktemp("wheels"))


def test_host_resolution_records_location_and_sha256(wheels, tmp_path):
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    result = pypi.resolve(pypi.PypiRequest(("torch==2.13.0+cpu", "rtpy"), python=py, platform=host_subdir(),
                                          find_links=(str(wheels),)), ProjectPaths(tmp_path))
    got = {a.name: a for a in result.artifacts}
    assert sorted(got) == ["rtpy", "torch"] and got["torch"].version == "2.13.0+cpu"
    assert got["torch"].sha256 == sha256_of(wheels / "torch-2.13.0+cpu-py3-none-any.whl")
    assert local_path(got["rtpy"].location) == wheels / "rtpy-1.0.0-py3-none-any.whl"
    assert got["torch"].requires_dist == () and got["torch"].requires_python is None  # read from METADATA


def test_another_platform_and_python_resolve_from_here(wheels, tmp_path):
    result = pypi.resolve(pypi.PypiRequest(("torch==2.13.0+cu130",), python="3.12", platform="linux-aarch64",
                                          glibc="2.35", find_links=(str(wheels),)), ProjectPaths(tmp_path))
    assert [a.version for a in result.artifacts] == ["2.13.0+cu130"]


def test_unreachable_index_is_left_out_and_missing_pin_is_one_sentence(wheels, tmp_path):
    result = pypi.resolve(pypi.PypiRequest(("rtpy",), python=f"{sys.version_info.major}.{sys.version_info.minor}",
                                          platform=host_subdir(), extra_index_urls=("http://127.0.0.1:9/simple",),
                                          find_links=(str(wheels),)), ProjectPaths(tmp_path))
    assert result.skipped_indexes == ("http://127.0.0.1:9/simple",)
    with pytest.raises(ResolverError, match="the PyPI part cannot be resolved") as info:
        pypi.resolve(pypi.PypiRequest(("torch==9.9.9",), python="3.11", platform=host_subdir(),
                                     find_links=(str(wheels),)), ProjectPaths(tmp_path))
    assert "\n" not in str(info.value) and "torch==9.9.9" in str(info.value)


def test_an_index_out_of_reach_gives_way_to_pips_own_index(wheels, tmp_path, monkeypatch):
    """A manifest's index-url that cannot be reached (the PyTorch ROCm index on an air-gapped cluster) is
    left out, and pip's configured index, this machine's stand-in for PyPI, takes its place (not PyPI)."""
    index = tmp_path / "simple"
    (index / "rtpy").mkdir(parents=True)
    wheel = wheels / "rtpy-1.0.0-py3-none-any.whl"
    (index / "rtpy" / "index.html").write_text(f'<a href="{wheel.as_uri()}#sha256={sha256_of(wheel)}">{wheel.name}</a>\n')
    monkeypatch.delenv("PIP_NO_INDEX")
    monkeypatch.setenv("PIP_INDEX_URL", index.as_uri())
    result = pypi.resolve(pypi.PypiRequest(("rtpy",), python=f"{sys.version_info.major}.{sys.version_info.minor}",
                                          platform=host_subdir(), index_url="http://127.0.0.1:9/simple"),
                          ProjectPaths(tmp_path))
    assert result.skipped_indexes == ("http://127.0.0.1:9/simple",)
    assert [(a.name, local_path(a.location)) for a in result.artifacts] == [("rtpy", wheel)]


def test_requires_dist_comes_from_the_wheels_metadata_and_is_kept_by_sha256(tmp_path):
    folder = tmp_path / "wheels"
    cf.write_wheel(folder, "needs", "1.0", {"needs/__init__.py": ""}, requires=["rtpy>=1", "extra-thing ; extra == 'x'"])
    cf.write_wheel(folder, "rtpy", "1.0.0", {"rtpy/__init__.py": ""})
    request = pypi.PypiRequest(("needs",), python="3.11.7", platform="linux-64", find_links=(str(folder),))
    first = {a.name: a for a in pypi.resolve(request, ProjectPaths(tmp_path)).artifacts}
    assert first["needs"].requires_dist == ("rtpy>=1", "extra-thing ; extra == 'x'")
    assert ProjectPaths(tmp_path).pypi_requires.is_file()


def test_pip_configuration_is_read_as_pip_reads_it(tmp_path):
    from resolver.lock.pipconfig import read_pip_config

    (tmp_path / "etc" / "pip").mkdir(parents=True)
    (tmp_path / "etc" / "pip" / "pip.conf").write_text("[global]\nindex-url = https://mirror/simple\n"
                                                      "constraint = /c.txt\n[install]\nfind-links = /w1\n")
    (tmp_path / "home" / ".config" / "pip").mkdir(parents=True)
    (tmp_path / "home" / ".config" / "pip" / "pip.conf").write_text("[global]\nextra-index-url = file:///a file:///b\n")
    env = {"XDG_CONFIG_DIRS": str(tmp_path / "etc"), "HOME": str(tmp_path / "home"), "PIP_FIND_LINKS": "/w2"}
    config = read_pip_config(env)
    assert config.index_url == "https://mirror/simple" and config.constraints == ("/c.txt",)
    assert config.extra_index_urls == ("file:///a", "file:///b") and config.find_links == ("/w2",)
    assert config.local_folders == ("/w2", "/a", "/b")
    assert read_pip_config(dict(env, PIP_CONFIG_FILE=os.devnull)).index_url is None


def test_platform_tags_cover_older_manylinux_and_macos():
    tags = wheel_platform_tags("linux-64", "2.28")
    assert tags[0] == "manylinux_2_28_x86_64" and "manylinux_2_17_x86_64" in tags and "manylinux2014_x86_64" in tags
    assert "macosx_11_0_arm64" in wheel_platform_tags("osx-arm64", None)


def test_a_local_file_pypi_has_takes_its_url_and_one_it_lacks_is_asked_for_once_a_day(tmp_path, monkeypatch):
    """The canonical location of a wheel from a local folder: PyPI's URL when PyPI serves the same
    sha256 (remembered), else the local path with a note; PyPI is not asked again the same day about a
    file it lacked (torch's +cpu builds), nor is a PyPI that did not answer taken for a miss."""
    import json
    import time

    from resolver.lock import canonical
    from resolver.lock.lockfile import PypiArtifact
    from resolver.project.sources import Sources

    public, local = "ab" * 32, "cd" * 32
    page = tmp_path / "pypi" / "simple" / "pkg"
    page.mkdir(parents=True)
    (page / "index.html").write_text(json.dumps({"files": [
        {"filename": "pkg-1.0-py3-none-any.whl", "url": "../../files/pkg-1.0-py3-none-any.whl",
         "hashes": {"sha256": public}}]}))
    server = cf.ChannelServer(tmp_path / "pypi")
    try:
        monkeypatch.setenv("RESOLVER_CANONICAL_INDEX", server.url + "simple")
        sources = Sources.load(tmp_path / "project", environ={})
        from resolver.project.paths import ProjectPaths

        project = ProjectPaths(tmp_path / "project")

        def locate(sha: str) -> tuple[str, list[str]]:
            c = canonical.Canonicalizer(sources, project)
            art = c.pypi_artifact(PypiArtifact("pkg", "1.0", "file:///srv/wheels/pkg-1.0-py3-none-any.whl", sha), _NoIndex())
            return art.location, c.notes

        assert locate(public) == (server.url + "files/pkg-1.0-py3-none-any.whl", [])
        location, notes = locate(local)
        assert location == "file:///srv/wheels/pkg-1.0-py3-none-any.whl" and "canonical address is unknown" in notes[0]
        asked = len(server.requests)
        assert locate(public)[0].startswith(server.url) and locate(local)[1] and len(server.requests) == asked
        misses = project.canonical_misses
        misses.write_text(json.dumps({local: time.time() - 2 * 86400}))  # a day later: asked again
        locate(local)
        assert len(server.requests) == asked + 1
    finally:
        server.close()
    misses.unlink()
    assert locate(local)[1] and not misses.exists()  # PyPI did not answer: nothing remembered


class _NoIndex:
    @staticmethod
    def package_index(name: str) -> None:
        return None


def test_index_credentials_never_reach_a_message_or_a_record(wheels, tmp_path):
    """An index URL with a password in it (pip's and uv's way of naming a private index) is used as
    given, but what is reported or remembered shows it as pip does (user:****) or leaves it out."""
    from resolver.project.sources import Sources

    secret = "http://user:s3cret@127.0.0.1:9/simple"
    project = ProjectPaths(tmp_path)
    result = pypi.resolve(pypi.PypiRequest(("rtpy",), python=f"{sys.version_info.major}.{sys.version_info.minor}",
                                          platform=host_subdir(), extra_index_urls=(secret,), find_links=(str(wheels),)),
                          project)
    assert result.skipped_indexes == ("http://user:****@127.0.0.1:9/simple",)
    sources = Sources.load(tmp_path, environ={"RESOLVER_EXTRA_INDEX_URLS": f"{secret} https://mirror.example/simple"})
    assert secret in sources.extra_index_urls  # used as given
    sources.remember(tmp_path)
    kept = [p for p in tmp_path.rglob("*.json") if p.is_file()]
    assert project.sources_record in kept and all("s3cret" not in p.read_text() for p in kept)
    assert Sources.load(tmp_path, environ={}).extra_index_urls == ("https://mirror.example/simple",)
