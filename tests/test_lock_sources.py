"""resolver/lock/sources.py in detail: which layer wins, which mirror prefix wins, canonical addresses read
back through the mirrors, what a lock remembers, and every malformed setting as one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resolver.errors import BadInput
from resolver.lock.sources import Sources, channel_url
from resolver.paths import ProjectPaths


def project(tmp_path: Path, pixi: str = "", pyproject: str | None = None) -> Path:
    root = tmp_path / "p"
    root.mkdir(exist_ok=True)
    (root / "pixi.toml").write_text('[workspace]\nname = "t"\n' + pixi)
    if pyproject is not None:
        (root / "pyproject.toml").write_text(pyproject)
    return root


# ---------------------------------------------------------------------------------------------- layers
def test_defaults_are_the_real_sources(tmp_path):
    s = Sources.load(project(tmp_path), environ={})
    assert s == Sources() and s.origins == () and s.conda_channels is None and s.torch_index is None


def test_each_layer_overrides_the_one_below(tmp_path):
    root = project(tmp_path, '[tool.resolver]\nfind-links = ["./pixi-wheels"]\ntorch-index = "https://pixi/{variant}"\n',
                   '[tool.resolver]\nfind-links = ["./pyproject-wheels"]\nextra-index-urls = ["https://pyproject/simple"]\n')
    s = Sources.load(root, environ={})
    assert s.find_links == (str(root / "pixi-wheels"),) and s.torch_index == "https://pixi/{variant}"
    assert s.extra_index_urls == ("https://pyproject/simple",)
    assert dict(s.origins) == {"find-links": "pixi.toml [tool.resolver]", "torch-index": "pixi.toml [tool.resolver]",
                               "extra-index-urls": "pyproject.toml [tool.resolver]"}
    env = Sources.load(root, environ={"RESOLVER_FIND_LINKS": "/env/a, /env/b  /env/c", "RESOLVER_TORCH_INDEX": " x "})
    assert env.find_links == ("/env/a", "/env/b", "/env/c") and env.torch_index == " x "
    assert dict(env.origins)["find-links"] == "$RESOLVER_FIND_LINKS"
    flags = Sources.load(root, flags={"find-links": ["/flag"], "torch-index": None, "conda-channels": []},
                         environ={"RESOLVER_FIND_LINKS": "/env"})
    assert flags.find_links == ("/flag",) and flags.torch_index == "https://pixi/{variant}"
    assert dict(flags.origins)["find-links"] == "command line" and flags.conda_channels is None


def test_blank_environment_variables_do_not_count(tmp_path):
    s = Sources.load(project(tmp_path, '[tool.resolver]\nfind-links = ["/pixi"]\n'),
                     environ={"RESOLVER_FIND_LINKS": "  ", "RESOLVER_CONDA_CHANNELS": ""})
    assert s.find_links == ("/pixi",) and s.conda_channels is None


def test_every_variable_names_its_key(tmp_path):
    s = Sources.load(project(tmp_path), environ={"RESOLVER_CONDA_CHANNELS": "/c1 /c2", "RESOLVER_TORCH_INDEX": "https://t",
                                                 "RESOLVER_EXTRA_INDEX_URLS": "https://e1,https://e2",
                                                 "RESOLVER_FIND_LINKS": "/w"})
    assert (s.conda_channels, s.torch_index, s.extra_index_urls, s.find_links) == \
        (("/c1", "/c2"), "https://t", ("https://e1", "https://e2"), ("/w",))


def test_relative_paths_are_taken_from_the_project_and_urls_and_names_stay(tmp_path):
    root = project(tmp_path, '[tool.resolver]\nconda-channels = ["./mirror", "../up", "conda-forge", "https://c/x", "~/home"]\n')
    s = Sources.load(root, environ={})
    assert s.conda_channels == (str(root / "mirror"), str((root / ".." / "up").resolve()), "conda-forge", "https://c/x",
                                str(Path("~/home").expanduser()))


def test_a_single_string_is_a_list(tmp_path):
    s = Sources.load(project(tmp_path, '[tool.resolver]\nfind-links = "/a /b"\n'), environ={})
    assert s.find_links == ("/a", "/b")


@pytest.mark.parametrize("table,words", [
    ('[tool.resolver]\nfind-link = ["/a"]\n', "unknown key(s) in [tool.resolver]: find-link"),
    ('[tool.resolver]\nfind-links = 5\n', "is not a string or a list of strings"),
    ('[tool.resolver]\nfind-links = ["/a", 5]\n', "is not a string or a list of strings"),
    ('[tool.resolver]\nmirrors = "x"\n', "mirrors must be a table"),
    ('[tool]\nresolver = 5\n', "is not a table"),
    ('[tool.resolver\n', "is not valid TOML"),
])
def test_malformed_settings_are_one_sentence(tmp_path, table, words):
    with pytest.raises(BadInput) as info:
        Sources.load(project(tmp_path, table), environ={})
    assert words in info.value.message and "\n" not in info.value.message


def test_unknown_keys_name_what_is_allowed(tmp_path):
    with pytest.raises(BadInput) as info:
        Sources.load(project(tmp_path, '[tool.resolver]\nzz = 1\naa = 2\n'), environ={})
    assert "unknown key(s) in [tool.resolver]: aa, zz" in info.value.message
    assert info.value.fix == "use only conda-channels, extra-index-urls, find-links, mirrors, torch-index"


def test_the_fleet_table_is_not_a_source(tmp_path):
    s = Sources.load(project(tmp_path, '[tool.resolver.fleet]\nclasses = 1\n'), environ={})
    assert s == Sources()


# --------------------------------------------------------------------------------------------- mirrors
MIRRORS = '''[tool.resolver.mirrors]
"https://download.pytorch.org/whl" = "/srv/torch"
"https://download.pytorch.org/whl/cpu" = "/srv/torch-cpu/"
"https://conda.anaconda.org/conda-forge/" = "./cf"
'''


def test_the_longest_mirror_prefix_wins_whatever_the_order(tmp_path):
    root = project(tmp_path, MIRRORS)
    s = Sources.load(root, environ={})
    assert [k for k, _ in s.mirrors] == ["https://conda.anaconda.org/conda-forge", "https://download.pytorch.org/whl/cpu",
                                         "https://download.pytorch.org/whl"]
    assert s.mirror("https://download.pytorch.org/whl/cpu/torch-2.13.0.whl") == "/srv/torch-cpu/torch-2.13.0.whl"
    assert s.mirror("https://download.pytorch.org/whl/cu126") == "/srv/torch/cu126"
    assert s.mirror("https://download.pytorch.org/whl/cpu") == "/srv/torch-cpu"
    assert s.mirror("https://download.pytorch.org/whl/cpuonly/x") == "/srv/torch/cpuonly/x"  # a path part, not a prefix
    assert s.mirror("https://download.pytorch.org/whlx") == "https://download.pytorch.org/whlx"
    assert s.mirror("https://conda.anaconda.org/conda-forge/noarch/x.conda") == str(root / "cf") + "/noarch/x.conda"


def test_canonical_reads_the_mirrors_backwards(tmp_path):
    s = Sources.load(project(tmp_path, MIRRORS), environ={})
    assert s.canonical("/srv/torch-cpu/torch-2.13.0+cpu.whl") == "https://download.pytorch.org/whl/cpu/torch-2.13.0%2Bcpu.whl"
    assert s.canonical("file:///srv/torch/cu126/torch.whl") == "https://download.pytorch.org/whl/cu126/torch.whl"
    assert s.canonical("/srv/torch-cpux/torch.whl") is None  # a folder beside the mirror is not in it
    assert s.canonical("/srv/elsewhere/torch.whl") is None
    assert s.canonical("https://pypi.org/x.whl") is None


def test_canonical_takes_the_deepest_mirror_folder_when_folders_nest(tmp_path):
    """A file under two mirror folders belongs to the deeper one, whatever the lengths of the URLs."""
    root = project(tmp_path, '[tool.resolver.mirrors]\n"https://long.example/whl/all" = "/srv"\n'
                             '"https://b/cpu" = "/srv/cpu"\n')
    s = Sources.load(root, environ={})
    assert s.canonical("/srv/cpu/t.whl") == "https://b/cpu/t.whl"
    assert s.canonical("/srv/other/t.whl") == "https://long.example/whl/all/other/t.whl"


def test_channels_through_their_mirrors_and_named_replacements(tmp_path):
    root = project(tmp_path, MIRRORS)
    s = Sources.load(root, environ={})
    assert s.channels_for(["conda-forge", "bioconda"]) == [(root / "cf").resolve().as_uri() + "/",
                                                          "https://conda.anaconda.org/bioconda/"]
    named = Sources.load(root, environ={"RESOLVER_CONDA_CHANNELS": "/m1"})
    assert named.channels_for(["conda-forge", "bioconda"]) == ["file:///m1/", "https://conda.anaconda.org/bioconda/"]
    two = Sources.load(root, environ={"RESOLVER_CONDA_CHANNELS": "/m1 /m2 /m3"})
    assert two.channels_for(["conda-forge"]) == ["file:///m1/"]


def test_the_torch_index_through_the_override_and_the_mirrors(tmp_path):
    s = Sources.load(project(tmp_path, MIRRORS), environ={})
    assert s.torch_index_for("https://download.pytorch.org/whl/cu126", "cu126") == "/srv/torch/cu126"
    assert s.torch_index_for(None, "cu126") is None
    override = Sources.load(project(tmp_path, MIRRORS), environ={"RESOLVER_TORCH_INDEX": "https://download.pytorch.org/whl/{variant}"})
    assert override.torch_index_for("https://elsewhere/x", "cpu") == "/srv/torch-cpu"


@pytest.mark.parametrize("name,url", [
    ("conda-forge", "https://conda.anaconda.org/conda-forge/"),
    ("/conda-forge/", "file:///conda-forge/"),
    ("https://x/y/", "https://x/y/"),
    ("https://x/y", "https://x/y/"),
    ("file:///srv/c", "file:///srv/c/"),
    (" bioconda ", "https://conda.anaconda.org/bioconda/"),
    ("a/b", None),
])
def test_channel_urls(name, url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert channel_url(name) == (url or (tmp_path / "a" / "b").as_uri() + "/")


# ---------------------------------------------------------------------------------------- remembering
def test_a_lock_remembers_flags_and_variables_not_the_manifest(tmp_path):
    root = project(tmp_path, '[tool.resolver]\nextra-index-urls = ["https://pixi/simple"]\n')
    s = Sources.load(root, flags={"conda-channels": ["/flag-channel"]}, environ={"RESOLVER_FIND_LINKS": "/w"})
    s.remember(root)
    assert json.loads(ProjectPaths(root).sources_record.read_text()) == {"conda-channels": ["/flag-channel"], "find-links": ["/w"]}
    later = Sources.load(root, environ={})
    assert later.conda_channels == ("/flag-channel",) and later.find_links == ("/w",)
    assert dict(later.origins)["conda-channels"].startswith("the last lock here")
    assert later.extra_index_urls == ("https://pixi/simple",)
    # remembered keys are kept by the next lock; a new flag replaces one
    Sources.load(root, flags={"find-links": ["/w2"]}, environ={}).remember(root)
    assert json.loads(ProjectPaths(root).sources_record.read_text()) == {"conda-channels": ["/flag-channel"], "find-links": ["/w2"]}
    # a variable outranks what was remembered
    assert Sources.load(root, environ={"RESOLVER_FIND_LINKS": "/env"}).find_links == ("/env",)


def test_nothing_to_remember_writes_nothing(tmp_path):
    root = project(tmp_path, '[tool.resolver]\nfind-links = ["/pixi"]\n')
    Sources.load(root, environ={}).remember(root)
    assert not ProjectPaths(root).sources_record.exists()


@pytest.mark.parametrize("text", ["{not json", "[1]", '{"find-links": []}', '{"mirrors": {"a": "b"}, "other": 1}'])
def test_a_remembered_file_that_is_not_usable_is_ignored(tmp_path, text):
    root = project(tmp_path)
    ProjectPaths(root).sources_record.parent.mkdir(parents=True)
    ProjectPaths(root).sources_record.write_text(text)
    assert Sources.load(root, environ={}) == Sources()


def test_to_json_says_what_set_each_key(tmp_path):
    s = Sources.load(project(tmp_path, MIRRORS), environ={"RESOLVER_FIND_LINKS": "/w"})
    data = s.to_json()
    assert data["find_links"] == ["/w"] and data["conda_channels"] is None and data["torch_index"] is None
    assert data["extra_index_urls"] == [] and data["mirrors"]["https://download.pytorch.org/whl"] == "/srv/torch"
    assert data["set_by"] == {"find-links": "$RESOLVER_FIND_LINKS", "mirrors": "pixi.toml [tool.resolver]"}
    assert Sources(conda_channels=("/c",)).to_json()["conda_channels"] == ["/c"]
