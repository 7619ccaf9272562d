"""resolver/project/sources.py in detail: which layer wins, which mirror prefix wins, canonical addresses read
back through the mirrors, what a lock remembers, and every malformed setting as one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import projects, records

from resolver.core.errors import BadInput
from resolver.project.paths import ProjectPaths
from resolver.project.sources import Sources, channel_url


def project(tmp_path: Path, pixi: str = "", pyproject: str | None = None) -> Path:
    return projects.project(tmp_path / "p", '[workspace]\nname = "t"\n' + pixi,
                            files={} if pyproject is None else {"pyproject.toml": pyproject})


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
    ("https://h/TeX/", "https://h/TeX/"),
    ("XeTeX", "https://conda.anaconda.org/XeTeX/"),
    ("~", "HOME"),
])
def test_channel_urls(name, url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    expected = {None: (tmp_path / "a" / "b").as_uri() + "/", "HOME": (tmp_path / "home").as_uri() + "/"}
    assert channel_url(name) == expected.get(url, url)


# ---------------------------------------------------------------------------------------- remembering
def test_a_lock_remembers_flags_and_variables_not_the_manifest(tmp_path):
    root = project(tmp_path, '[tool.resolver]\nextra-index-urls = ["https://pixi/simple"]\n')
    s = Sources.load(root, flags={"conda-channels": ["/flag-channel"]}, environ={"RESOLVER_FIND_LINKS": "/w"})
    s.remember(root)
    assert records.read(ProjectPaths(root).sources_record) == {"conda-channels": ["/flag-channel"], "find-links": ["/w"]}
    later = Sources.load(root, environ={})
    assert later.conda_channels == ("/flag-channel",) and later.find_links == ("/w",)
    assert dict(later.origins)["conda-channels"].startswith("the last lock here")
    assert later.extra_index_urls == ("https://pixi/simple",)
    # remembered keys are kept by the next lock; a new flag replaces one
    Sources.load(root, flags={"find-links": ["/w2"]}, environ={}).remember(root)
    assert records.read(ProjectPaths(root).sources_record) == {"conda-channels": ["/flag-channel"], "find-links": ["/w2"]}
    # a variable outranks what was remembered
    assert Sources.load(root, environ={"RESOLVER_FIND_LINKS": "/env"}).find_links == ("/env",)


def test_nothing_to_remember_writes_nothing(tmp_path):
    root = project(tmp_path, '[tool.resolver]\nfind-links = ["/pixi"]\n')
    Sources.load(root, environ={}).remember(root)
    assert not ProjectPaths(root).sources_record.exists()


@pytest.mark.parametrize("text", ["{not json", "[1]", '{"find-links": []}', '{"mirrors": {"a": "b"}, "other": 1}'])
def test_a_remembered_file_that_is_not_usable_is_ignored(tmp_path, text):
    root = project(tmp_path)
    records.plant_text(ProjectPaths(root).sources_record, text)
    assert Sources.load(root, environ={}) == Sources()


def test_to_json_says_what_set_each_key(tmp_path):
    s = Sources.load(project(tmp_path, MIRRORS), environ={"RESOLVER_FIND_LINKS": "/w"})
    data = s.to_json()
    assert data["find_links"] == ["/w"] and data["conda_channels"] is None and data["torch_index"] is None
    assert data["extra_index_urls"] == [] and data["mirrors"]["https://download.pytorch.org/whl"] == "/srv/torch"
    assert data["set_by"] == {"find-links": "$RESOLVER_FIND_LINKS", "mirrors": "pixi.toml [tool.resolver]"}
    assert Sources(conda_channels=("/c",)).to_json()["conda_channels"] == ["/c"]


def test_the_environment_is_read_when_none_is_given(tmp_path, monkeypatch):
    monkeypatch.setenv("RESOLVER_FIND_LINKS", "/from-env")
    assert Sources.load(project(tmp_path)).find_links == ("/from-env",)


def test_absolute_paths_are_kept_as_written_but_normalised(tmp_path):
    root = project(tmp_path, '[tool.resolver]\nfind-links = ["/srv//w/", "/srv/a/../w"]\n')
    assert Sources.load(root, environ={}).find_links == ("/srv/w", "/srv/a/../w")  # no resolving of an absolute path


def test_a_setting_of_the_wrong_type_says_how_to_write_it(tmp_path):
    with pytest.raises(BadInput) as caught:
        Sources.load(project(tmp_path, "[tool.resolver]\nfind-links = [1]\n"), environ={})
    assert caught.value.fix == "write each setting as a string or a list of strings"


def test_credentials_and_strings_in_what_a_lock_remembers(tmp_path):
    root = project(tmp_path)
    Sources.load(root, flags={"find-links": ["https://u:pw@h/links", "/w"], "torch-index": "https://t/{variant}",
                              "extra-index-urls": ["https://u:pw@h/simple"]}, environ={}).remember(root)
    assert records.read(ProjectPaths(root).sources_record) == {"find-links": ["/w"],
                                                                          "torch-index": "https://t/{variant}"}
    assert Sources.load(root, environ={}).torch_index == "https://t/{variant}"
    Sources.load(root, flags={"torch-index": "https://u:pw@t/{variant}"}, environ={}).remember(root)
    assert records.read(ProjectPaths(root).sources_record) == {"find-links": ["/w"]}


def remembered(tmp_path: Path, data) -> Sources:
    root = project(tmp_path)
    records.plant_text(ProjectPaths(root).sources_record, json.dumps(data))
    return Sources.load(root, environ={})


@pytest.mark.parametrize("data, read", [
    ({"find-links": ["--index-url=https://evil"]}, False),  # an option, never a location
    ({"find-links": ["/w x"]}, False),
    ({"find-links": ["/" + "w" * 8191]}, True), ({"find-links": ["/" + "w" * 8192]}, False),
    ({"find-links": [f"/w{i}" for i in range(256)]}, True), ({"find-links": [f"/w{i}" for i in range(257)]}, False),
    ({"torch-index": "https://t/{variant}"}, True), ({"torch-index": ["https://t/{variant}"]}, False),
])
def test_a_remembered_record_is_read_only_in_its_shape_and_bounds(tmp_path, data, read):
    assert (remembered(tmp_path, data) != Sources()) is read


def test_a_remembered_record_over_one_mib_is_not_read(tmp_path):
    entry = "/" + "w" * 7999  # fewer than 256 entries either way: only the size differs
    fits = [entry] * ((1 << 20) // (len(entry) + 4) - 1)
    assert remembered(tmp_path, {"find-links": fits}).find_links == tuple(fits)
    assert remembered(tmp_path, {"find-links": fits + [entry] * 3}) == Sources()


@pytest.mark.parametrize("value", ['"x"', "5", '["a"]'])
def test_fleet_and_upgrade_values_are_left_to_their_own_readers(tmp_path, value):
    # their tables are not sources; a malformed one is refused by the reader that knows it, with its own fix
    root = project(tmp_path, f"[tool.resolver]\nfleet = {value}\nupgrade = {value}\n")
    assert Sources.load(root, environ={}) == Sources()


def test_mirrors_that_are_not_a_table_say_how_to_write_them(tmp_path):
    with pytest.raises(BadInput) as caught:
        Sources.load(project(tmp_path, '[tool.resolver]\nmirrors = "x"\n'), environ={})
    assert caught.value.message == "[tool.resolver] mirrors must be a table of URL prefix = replacement"
    assert caught.value.fix == 'write e.g. mirrors = { "https://conda.anaconda.org/conda-forge" = "/srv/cf" }'


def test_mirror_prefixes_and_replacements_lose_their_trailing_slash(tmp_path):
    root = project(tmp_path, '[tool.resolver.mirrors]\n"https://h/TeX/" = "https://m/TeX/"\n"https://g/" = "./here/"\n')
    assert Sources.load(root, environ={}).mirrors == (("https://h/TeX", "https://m/TeX"), ("https://g", str(root / "here")))


def test_a_relative_index_is_taken_from_the_project(tmp_path):
    root = project(tmp_path, '[tool.resolver]\nextra-index-urls = ["./index", "https://e/simple"]\n')
    assert Sources.load(root, environ={}).extra_index_urls == (str(root / "index"), "https://e/simple")


def test_a_manifest_in_toml_1_1_is_read(tmp_path):
    root = project(tmp_path, '[tool.resolver]\nmirrors = { "https://a" = "/srv/a",\n  "https://b" = "/srv/b", }\n')
    assert Sources.load(root, environ={}).mirrors == (("https://a", "/srv/a"), ("https://b", "/srv/b"))


def test_a_manifest_that_is_not_toml_or_not_text_names_the_file_and_the_fix(tmp_path):
    root = project(tmp_path, "[tool.resolver\n")
    with pytest.raises(BadInput) as caught:
        Sources.load(root, environ={})
    assert caught.value.message.startswith(f"{root / 'pixi.toml'} is not valid TOML (")
    assert caught.value.fix == "fix the TOML syntax of pixi.toml"
    (root / "pyproject.toml").write_bytes(b"\xff\xfe[tool]\n")
    with pytest.raises(BadInput) as caught:
        Sources.load(root, environ={})
    assert caught.value.message.startswith(f"cannot read {root / 'pyproject.toml'}: 'utf-8' codec can't decode byte 0xff")
    assert caught.value.fix == "check the permissions and encoding of pyproject.toml"


@pytest.mark.parametrize("text", ["tool = 5\n", "[tool]\nresolver = 5\n"])
def test_a_tool_or_resolver_key_that_is_not_a_table_is_one_sentence(tmp_path, text):
    root = tmp_path / "p"
    root.mkdir()
    (root / "pixi.toml").write_text(text)
    with pytest.raises(BadInput) as caught:
        Sources.load(root, environ={})
    assert caught.value.message == f"[tool.resolver] in {root / 'pixi.toml'} is not a table"
    assert caught.value.fix == "make it a TOML table"
