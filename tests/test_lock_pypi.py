"""The PyPI side of lock: pip's resolution for this host and for another platform, hashes recorded."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import channel_factory as cf  # noqa: E402

from resolver.errors import ResolverError  # noqa: E402
from resolver.install.fetch import local_path  # noqa: E402
from resolver.lock import pypi  # noqa: E402
from resolver.platforms import host_subdir, wheel_platform_tags  # noqa: E402


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
    result = pypi.resolve(pypi.PipRequest(("torch==2.13.0+cpu", "rtpy"), python=py, platform=host_subdir(),
                                          find_links=(str(wheels),)), tmp_path)
    assert not result.cross
    got = {a.name: a for a in result.artifacts}
    assert sorted(got) == ["rtpy", "torch"] and got["torch"].version == "2.13.0+cpu"
    assert got["torch"].sha256 == pypi.sha256_of(wheels / "torch-2.13.0+cpu-py3-none-any.whl")
    assert local_path(got["rtpy"].location) == wheels / "rtpy-1.0.0-py3-none-any.whl"


def test_other_platform_resolves_with_pips_platform_options(wheels, tmp_path):
    result = pypi.resolve(pypi.PipRequest(("torch==2.13.0+cu130",), python="3.12", platform="linux-aarch64",
                                          glibc="2.35", find_links=(str(wheels),)), tmp_path)
    assert result.cross and [a.version for a in result.artifacts] == ["2.13.0+cu130"]


def test_unreachable_index_is_left_out_and_missing_pin_is_one_sentence(wheels, tmp_path):
    result = pypi.resolve(pypi.PipRequest(("rtpy",), python=f"{sys.version_info.major}.{sys.version_info.minor}",
                                          platform=host_subdir(), extra_index_urls=("http://127.0.0.1:9/simple",),
                                          find_links=(str(wheels),)), tmp_path)
    assert result.skipped_indexes == ("http://127.0.0.1:9/simple",)
    with pytest.raises(ResolverError, match="pip could not resolve the PyPI part") as info:
        pypi.resolve(pypi.PipRequest(("torch==9.9.9",), python="3.11", platform=host_subdir(),
                                     find_links=(str(wheels),)), tmp_path)
    assert "\n" not in str(info.value)


def test_platform_tags_cover_older_manylinux_and_macos():
    tags = wheel_platform_tags("linux-64", "2.28")
    assert tags[0] == "manylinux_2_28_x86_64" and "manylinux_2_17_x86_64" in tags and "manylinux2014_x86_64" in tags
    assert "macosx_11_0_arm64" in wheel_platform_tags("osx-arm64", None)
