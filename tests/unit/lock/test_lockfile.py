"""pixi.lock read and written in process, nothing solved: every workspace pixi wrote (tests/data/workspaces)
read and written again byte for byte, every field of a package entry as pixi's writer spells it, version
6 read as version 7, and a malformed lock refused in one sentence.

Each test reads or writes a lock directly (resolver/lock/lockfile.py), so the lockfile mutation campaign
(tests/mutation.py) runs them in a few seconds a mutant.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support import DATA, TESTS

from resolver.core.errors import BadInput
from resolver.lock.lockfile import (
    FALLBACK_HEADER,
    LockedEnv,
    LockedPlatform,
    NotALock,
    PypiArtifact,
    RawEnv,
    RawLock,
    absolute_location,
    check_lock_text,
    fallback_header,
    fallback_note,
    fresh_lock,
    load_lock,
    locked_envs,
    read_lock,
    relative_location,
    render_lock,
    replace_platform,
)
from resolver.project.manifest import Manifest
from resolver.tools.conda import CondaRecord, LockView, canonical_lock_text

HERE = TESTS
WORKSPACES = sorted(p.name for p in (DATA / "workspaces").iterdir() if (p / "pixi.lock").is_file())
FORGE = "https://conda.anaconda.org/conda-forge/"
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
LINUX = LockedPlatform("linux-64", "linux-64", ())
CUDA = LockedPlatform("linux-64-cuda13", "linux-64", ("__cuda=13", "__unix=0=0"))


def record(name: str, version: str, depends: tuple[str, ...] = (), url: str | None = None,
           channel: str | None = FORGE) -> CondaRecord:
    fields = {"build": "h0_0", "build_number": 0, "depends": list(depends), "name": name, "subdir": "linux-64",
              "version": version}
    return CondaRecord(name, version, "h0_0", "linux-64", url or f"{FORGE}linux-64/{name}-{version}-h0_0.conda",
                       channel, None, None, json.dumps(fields, sort_keys=True))


TORCH = PypiArtifact("torch", "2.13.0+cpu", "https://files.example.org/torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl",
                     "ab" * 32, ("filelock", 'numpy ; extra == "opt"'), ">=3.10", index=TORCH_INDEX)
PLAIN = PypiArtifact("plain", "1", "https://files.example.org/plain-1-py3-none-any.whl", "cd" * 32)


def cuda_env(root: Path) -> LockedEnv:
    """An environment on an aliased platform with a channel and a package inside the project, a PyPI source
    folder inside it, a pinned wheel and an index."""
    local = record("zlib", "1.3.1", url=(root / "chan" / "linux-64" / "zlib-1.3.1-h0_0.conda").as_uri(),
                   channel=(root / "chan").as_uri() + "/")
    source = PypiArtifact("mine", "0.1", (root / "src").as_uri() + "/", "")
    return LockedEnv("cuda", CUDA, (FORGE, (root / "chan").as_uri()), (record("python", "3.11.7", ("zlib >=1.2",)), local),
                     (TORCH, source), ("https://pypi.org/simple",))


def fallback_env() -> LockedEnv:
    return LockedEnv("fb", LINUX, (), (), (PLAIN,), fallback=True, python="3.12")


EXPECTED = """\
version: 7
platforms:
- name: linux-64
- name: p1
  subdir: linux-64
  virtual-packages:
  - __cuda=13
  - __unix=0=0
environments:
  cuda:
    channels:
    - url: https://conda.anaconda.org/conda-forge/
    - url: ./chan
    indexes:
    - https://pypi.org/simple
    packages:
      p1:
      - conda: ./chan/linux-64/zlib-1.3.1-h0_0.conda
      - conda: https://conda.anaconda.org/conda-forge/linux-64/python-3.11.7-h0_0.conda
      - pypi: ./src/
      - pypi: https://files.example.org/torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl
  fb:
    channels: []
    packages:
      linux-64:
      - pypi: https://files.example.org/plain-1-py3-none-any.whl
packages:
- conda: ./chan/linux-64/zlib-1.3.1-h0_0.conda
  subdir: linux-64
- conda: https://conda.anaconda.org/conda-forge/linux-64/python-3.11.7-h0_0.conda
  depends:
  - zlib >=1.2
- pypi: ./src/
  name: mine
  version: '0.1'
- pypi: https://files.example.org/plain-1-py3-none-any.whl
  name: plain
  version: '1'
  sha256: cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd
- pypi: https://files.example.org/torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl
  name: torch
  version: 2.13.0+cpu
  sha256: abababababababababababababababababababababababababababababababab
  index: https://download.pytorch.org/whl/cpu
  requires_dist:
  - filelock
  - numpy ; extra == 'opt'
  requires_python: '>=3.10'
"""


def fallback_line(env: str, platform: str, python: str) -> str:
    return (f"# mamba-resolver: environment {env} ({platform}) is a fallback: a virtual environment of this machine's "
            f"Python {python}, because its conda packages were not solved (no conda channel answered, or --no-conda); "
            "pixi cannot install it until it is locked where a conda channel answers")


def workspace_lock(name: str) -> tuple[Path, str]:
    folder = DATA / "workspaces" / name
    return folder, (folder / "pixi.lock").read_text(encoding="utf-8")


def as_pixi_writes(text: str) -> str:
    """A lock as pixi writes it at its next save: version 7 as it is, an older one as rattler converts it."""
    return text if text.startswith("version: 7\n") else canonical_lock_text(text)


# ------------------------------------------------------------------------------- every workspace pixi wrote
@pytest.mark.parametrize("name", WORKSPACES)
def test_a_workspace_lock_loads_and_writes_back_as_pixi_writes_it(name):
    folder, text = workspace_lock(name)
    manifest = Manifest.load(folder / "pixi.toml")
    existing = load_lock(folder / "pixi.lock", folder, manifest.platforms().values())
    assert existing.raw.text(existing.header) == as_pixi_writes(text)
    assert existing.header == ()
    assert existing.fallbacks == {}
    for locked, manifest_name in existing.renames.items():
        assert existing.platform_of(manifest_name) == locked
    assert set(existing.renames.values()) <= set(manifest.platforms())


@pytest.mark.parametrize("name", WORKSPACES)
def test_a_workspace_lock_read_as_environments_holds_what_rattler_reads(name):
    folder, text = workspace_lock(name)
    manifest = Manifest.load(folder / "pixi.toml")
    envs = read_lock(folder / "pixi.lock", folder, manifest.platforms().values())
    view = LockView(folder / "pixi.lock")
    assert sorted(envs) == sorted(view.environments())
    raw = RawLock.parse(as_pixi_writes(text))
    for name_, locked in envs.items():
        counts = {p: n for p, n in view.counts(name_).items()}
        assert len(locked) == len(counts)
        for env in locked:
            assert env.name == name_ and not env.fallback
            assert env.channels == tuple(c if "://" in c else absolute_location(c, folder) for c in view.channels(name_))
            assert env.indexes == raw.envs[name_].indexes()
            subdir, packages = view.platforms()[next(p for p, n in existing_renames(view, manifest).items()
                                                     if n == env.platform.name)]
            assert (env.platform.subdir, env.platform.virtual_packages) == (subdir, packages)
            assert all("://" in r.url for r in env.conda) and all("://" in p.location for p in env.pypi)
            python = next((r.version for r in env.conda if r.name == "python"), None)
            assert env.python == (".".join(python.split(".")[:2]) if python else None)
    again = locked_envs(load_lock(folder / "pixi.lock", folder, manifest.platforms().values()), folder)
    assert by_platform(again) == by_platform(envs)


def by_platform(envs: dict[str, list[LockedEnv]]) -> dict[tuple[str, str], LockedEnv]:
    """(rattler lists an environment's platforms in no fixed order)"""
    return {(name, env.platform.name): env for name, found in envs.items() for env in found}


def existing_renames(view: LockView, manifest: Manifest) -> dict[str, str]:
    from resolver.project.pixi_platforms import align

    return align(view.platforms(), manifest.platforms().values())


def test_a_version_6_lock_is_read_as_rattler_converts_it():
    folder, text = workspace_lock("solve-groups")
    assert text.startswith("version: 6\n")
    with pytest.raises(ValueError, match="line 1: expected 'version: 7'"):
        RawLock.parse(text)
    existing = load_lock(folder / "pixi.lock", folder)
    converted = canonical_lock_text(text)
    assert converted.startswith("version: 7\nplatforms:\n")
    assert existing.raw.text() == converted
    assert sorted(existing.raw.envs) == ["default", "max-py310", "min-py38"]
    assert existing.raw.envs["default"].indexes() == ("https://pypi.org/simple",)
    assert existing.raw.envs["max-py310"].indexes() == ()


def test_aliased_platforms_are_named_as_the_manifest_names_them():
    folder, _ = workspace_lock("multi-machine")
    manifest = Manifest.load(folder / "pixi.toml")
    existing = load_lock(folder / "pixi.lock", folder, manifest.platforms().values())
    assert existing.renames == {"linux-64": "linux-64", "win-64": "win-64", "p1": "cuda-win-64",
                                "p2": "cuda-linux-64", "p3": "osx-arm64-macos-13-5"}
    assert existing.platform_of("cuda-linux-64") == "p2"
    assert existing.platform_of("osx-arm64") is None
    envs = {e.platform.name: e for e in read_lock(folder / "pixi.lock", folder, manifest.platforms().values())["default"]}
    assert sorted(envs) == ["cuda-linux-64", "cuda-win-64", "linux-64", "osx-arm64-macos-13-5", "win-64"]
    assert envs["cuda-linux-64"].platform.subdir == "linux-64"
    assert envs["cuda-linux-64"].platform.virtual_packages[0] == "__cuda=12"
    unaligned = {e.platform.name for e in read_lock(folder / "pixi.lock", folder)["default"]}
    assert unaligned == {"linux-64", "win-64", "p1", "p2", "p3"}


def test_packages_pixi_builds_from_source_are_named_not_installed():
    folder, _ = workspace_lock("pixi-build-workspace")
    for env in read_lock(folder / "pixi.lock", folder)["default"]:
        assert env.sources == ("cpp_math", "python_rich")
        assert all(r.name not in env.sources for r in env.conda)


def test_a_source_package_keeps_the_packages_it_builds_with():
    _, text = workspace_lock("pixi-build-workspace")
    raw = RawLock.parse(text)
    source = next(key for key in raw.packages if key[0] == 1)
    assert source[1].startswith("cpp_math[")
    builds_with = raw.reachable([source]) - {source}
    assert builds_with and all(key[0] == 0 for key in builds_with)
    selected = {key for env in raw.envs.values() for keys in env.packages.values() for key, _ in keys}
    assert builds_with - selected  # reached only through the source package, and kept
    assert set(raw.packages) == raw.reachable(selected)


# -------------------------------------------------------------------------------------------- writing
def test_a_lock_is_written_as_pixi_writes_it(tmp_path):
    text = render_lock([cuda_env(tmp_path), fallback_env()], tmp_path, aliases={"linux-64-cuda13": "p1"})
    assert text == fallback_line("fb", "linux-64", "3.12") + "\n" + EXPECTED
    assert canonical_lock_text(text) == EXPECTED  # rattler reads it and writes the same


def test_what_was_written_reads_back_as_it_was_locked(tmp_path):
    envs = [cuda_env(tmp_path), fallback_env()]
    (tmp_path / "pixi.lock").write_text(render_lock(envs, tmp_path, aliases={"linux-64-cuda13": "p1"}))
    back = read_lock(tmp_path / "pixi.lock", tmp_path)
    assert sorted(back) == ["cuda", "fb"]
    (cuda,), (fb,) = back["cuda"], back["fb"]
    assert cuda.platform == LockedPlatform("p1", "linux-64", ("__cuda=13", "__unix=0=0"))
    assert cuda.channels == (FORGE, (tmp_path / "chan").resolve().as_uri())
    assert cuda.indexes == ("https://pypi.org/simple",)
    assert sorted((r.name, r.version, r.build, r.url, json.loads(r.fields)["depends"]) for r in cuda.conda) == [
        ("python", "3.11.7", "h0_0", f"{FORGE}linux-64/python-3.11.7-h0_0.conda", ["zlib >=1.2"]),
        ("zlib", "1.3.1", "h0_0", (tmp_path / "chan/linux-64/zlib-1.3.1-h0_0.conda").resolve().as_uri(), [])]
    assert {r.name: r.channel for r in cuda.conda} == {"python": FORGE,
                                                      "zlib": (tmp_path / "chan").resolve().as_uri() + "/"}
    pypi = {p.name: p for p in cuda.pypi}
    assert pypi["torch"] == PypiArtifact(TORCH.name, TORCH.version, TORCH.location, TORCH.sha256,
                                         ("filelock", "numpy ; extra == 'opt'"), ">=3.10")
    assert pypi["mine"] == PypiArtifact("mine", "0.1", (tmp_path / "src").resolve().as_uri() + "/", "")
    assert (cuda.python, cuda.fallback, cuda.sources) == ("3.11", False, ())
    assert fb == LockedEnv("fb", LINUX, (), (), (PLAIN,), (), fallback=True, python="3.12")
    assert fb.fallback_note == fallback_line("fb", "linux-64", "3.12")[2:].removeprefix("mamba-resolver: ")


def test_platforms_default_to_those_of_the_environments_and_names_to_the_manifests(tmp_path):
    text = render_lock([LockedEnv("cuda", CUDA, (FORGE,), (record("python", "3.11.7"),))], tmp_path)
    assert text.startswith('version: 7\nplatforms:\n- name: linux-64-cuda13\n  subdir: linux-64\n  virtual-packages:\n'
                           "  - __cuda=13\n  - __unix=0=0\nenvironments:\n  cuda:\n")
    assert "      linux-64-cuda13:\n      - conda: " in text


def test_every_platform_of_the_manifest_is_listed_even_without_packages(tmp_path):
    osx = LockedPlatform("osx-arm64", "osx-arm64", ("__osx=13.0",))
    text = render_lock([LockedEnv("default", LINUX, (FORGE,))], tmp_path, platforms=[LINUX, osx])
    assert text == ("version: 7\nplatforms:\n- name: linux-64\n- name: osx-arm64\n  virtual-packages:\n  - __osx=13.0\n"
                    "environments:\n  default:\n    channels:\n    - url: https://conda.anaconda.org/conda-forge/\n"
                    "    packages: {}\npackages: []\n")


def test_an_empty_lock_is_written_in_pixis_empty_forms(tmp_path):
    assert render_lock([], tmp_path) == "version: 7\nplatforms: []\nenvironments: {}\npackages: []\n"
    assert render_lock([], tmp_path, platforms=[LINUX]) == \
        "version: 7\nplatforms:\n- name: linux-64\nenvironments: {}\npackages: []\n"


def test_indexes_are_written_only_for_an_environment_with_pypi_packages(tmp_path):
    no_pypi = LockedEnv("a", LINUX, (FORGE,), (record("python", "3.11.7"),), (), ("https://pypi.org/simple",))
    assert "indexes:" not in render_lock([no_pypi], tmp_path)
    other = LockedEnv("a", CUDA, (FORGE,), (), (PLAIN,), ("https://mirror.example.org/simple",))
    text = render_lock([no_pypi, other], tmp_path)
    assert "    indexes:\n    - https://mirror.example.org/simple\n" in text


def test_one_package_in_two_environments_is_written_once(tmp_path):
    python = record("python", "3.11.7")
    text = render_lock([LockedEnv("a", LINUX, (FORGE,), (python,), (PLAIN,)),
                        LockedEnv("b", LINUX, (FORGE,), (python,), (PLAIN,))], tmp_path)
    assert text.count(f"- conda: {python.url}\n") == 3 and text.count(f"- pypi: {PLAIN.location}\n") == 3


def test_a_channel_outside_the_project_is_kept_as_it_is(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    outside = record("zlib", "1.3.1", url=(tmp_path / "chan/linux-64/zlib-1.3.1-h0_0.conda").as_uri(),
                     channel=(tmp_path / "chan").as_uri() + "/")
    text = render_lock([LockedEnv("a", LINUX, ((tmp_path / "chan").as_uri(),), (outside,))], project)
    assert f"    - url: {(tmp_path / 'chan').as_uri()}\n" in text
    assert f"      - conda: {tmp_path}/chan/linux-64/zlib-1.3.1-h0_0.conda\n" in text  # rattler's spelling of a file URL
    assert text.endswith(f"  subdir: linux-64\n  channel: {(tmp_path / 'chan').as_uri()}\n")  # where it is no channel's


def test_fallback_header_names_each_fallback_as_the_lock_names_its_platform():
    envs = [fallback_env(), LockedEnv("x", CUDA, (), fallback=True, python=None), LockedEnv("y", LINUX, ())]
    assert fallback_header(envs, {"linux-64-cuda13": "p1"}) == [
        fallback_line("fb", "linux-64", "3.12"), fallback_line("x", "p1", "")]
    assert fallback_line("x", "p1", "") == FALLBACK_HEADER + fallback_note("x", "p1", None)


def test_what_rattler_refuses_to_read_back_is_never_written(tmp_path):
    bad = PypiArtifact("bad", "not a version!", "https://files.example.org/bad-1-py3-none-any.whl", "ab" * 32)
    with pytest.raises(BadInput) as refused:
        render_lock([LockedEnv("a", LINUX, (), (), (bad,))], tmp_path)
    assert refused.value.message.startswith("the lock being written is not one rattler reads back (")
    assert refused.value.fix == "report this with the pixi.toml that gave it; the previous pixi.lock is unchanged"


# ---------------------------------------------------------------------------------- one package's entry
def test_a_wheels_entry_holds_each_field_in_pixis_order():
    assert TORCH.lock_entry("./torch.whl") == [
        '- pypi: "./torch.whl"', '  name: "torch"', '  version: "2.13.0+cpu"', f"  sha256: {'ab' * 32}",
        f'  index: "{TORCH_INDEX}"', "  requires_dist:", '  - "filelock"', '  - "numpy ; extra == \\"opt\\""',
        '  requires_python: ">=3.10"']


def test_a_source_entry_leaves_out_the_fields_it_has_not():
    assert PypiArtifact("mine", "0.1", "file:///p/src/", "").lock_entry("./src/") == [
        '- pypi: "./src/"', '  name: "mine"', '  version: "0.1"']


def test_a_wheels_file_name_and_json():
    assert TORCH.file_name == "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl"
    assert PypiArtifact("a", "1", "file:///p/src/a%20b/", "").file_name == "a b"
    assert TORCH.to_json() == {"name": "torch", "version": "2.13.0+cpu", "location": TORCH.location,
                               "sha256": "ab" * 32}


def test_an_environments_json_names_its_packages(tmp_path):
    env = cuda_env(tmp_path)
    assert env.to_json() == {
        "environment": "cuda", "platform": "linux-64-cuda13", "subdir": "linux-64",
        "virtual_packages": ["__cuda=13", "__unix=0=0"], "channels": [FORGE, (tmp_path / "chan").as_uri()],
        "conda": ["python-3.11.7-h0_0", "zlib-1.3.1-h0_0"], "pypi": ["torch==2.13.0+cpu", "mine==0.1"]}
    moved = replace_platform(env, LINUX)
    assert moved.platform == LINUX and moved.conda == env.conda and moved.name == env.name


# ------------------------------------------------------------------------------------------ locations
@pytest.mark.parametrize("value,expected", [
    ("file:///p/r/chan/noarch/a.conda", "./chan/noarch/a.conda"),
    ("/p/r/chan/noarch/a.conda", "./chan/noarch/a.conda"),
    ("file:///p/r/chan/", "./chan/"),
    ("/p/r/chan/", "./chan/"),
    ("file:///p/r/my%20chan/a+b~c_d-e.conda", "./my%20chan/a+b~c_d-e.conda"),
    ("/p/r/wheel dir/x@y.whl", "./wheel%20dir/x%40y.whl"),
    ("file:///p/r/chan//", "./chan/"),
    ("/p/r/local-X/", "./local-X/"),
    ("file:///p/r2/chan/a.conda", None),
    ("/p/r", None),
    ("/p/other/a.conda", None),
    ("https://p/r/a.conda", None),
    ("./chan/a.conda", None),
])
def test_a_location_inside_the_project_is_relative(value, expected, tmp_path):
    root = tmp_path / "p" / "r"
    root.mkdir(parents=True)
    value = value.replace("/p/", f"{tmp_path}/p/".replace(" ", "%20") if value.startswith("file:") else f"{tmp_path}/p/", 1)
    assert relative_location(value, root) == expected
    assert relative_location(value, Path(str(root) + "/")) == expected


def test_a_project_at_the_root_of_the_file_system_or_named_with_any_letter():
    assert relative_location("/chan/noarch/a.conda", Path("/")) == "./chan/noarch/a.conda"
    assert relative_location("file:///chan/", Path("/")) == "./chan/"


@pytest.mark.parametrize("folder", ["proj", "GPU-BOX", "my project", "v1.0"])
def test_a_location_inside_a_project_folder_of_any_name_is_relative(tmp_path, folder):
    root = tmp_path / folder
    root.mkdir()
    assert relative_location(f"{root}/chan/a.conda", root) == "./chan/a.conda"
    assert relative_location(f"{root}-other/chan/a.conda", root) is None


def test_a_project_root_given_through_a_link_is_resolved(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert relative_location(f"{tmp_path}/real/chan/a.conda", tmp_path / "link") == "./chan/a.conda"


@pytest.mark.parametrize("value,expected", [
    ("https://conda.anaconda.org/conda-forge/", "https://conda.anaconda.org/conda-forge/"),
    ("git+https://github.com/o/r.git@abc", "git+https://github.com/o/r.git@abc"),
    ("file:///x/y", "file:///x/y"),
    ("./chan/a.conda", "file://ROOT/chan/a.conda"),
    ("./chan/", "file://ROOT/chan/"),
    ("chan", "file://ROOT/chan"),
    ("./my%20chan/a%2Bb.conda", "file://ROOT/my%20chan/a%2Bb.conda"),
    ("/abs/a.conda", "file:///abs/a.conda"),
    ("/abs/dir/", "file:///abs/dir/"),
])
def test_a_lock_location_is_made_absolute(value, expected, tmp_path):
    assert absolute_location(value, tmp_path) == expected.replace("file://ROOT", tmp_path.resolve().as_uri())


# ------------------------------------------------------------------------------------------ the text cut
LAYOUT = """\
# a comment pixi never writes, kept as the header
version: 7
platforms:
- name: linux-64
- name: 'p1'
  subdir: linux-64
- name: ''
  subdir: noarch
- name: XPU-BOX
  subdir: linux-64
environments:
  b:
    channels: []
    packages: {}
  a:
    channels:
    - url: https://c.example.org/
    indexes:
    - "https://i.example.org/simple"
    - https://j.example.org/simple
    - "https://k.example.org/caf\\u00e9/it's"
    - 'https://l.example.org/it''s'
    options:
      pypi-prerelease-mode: if-necessary-or-explicit
    packages:
      p1:
      - pypi: https://f.example.org/z-1-py3-none-any.whl
      - conda: https://c.example.org/linux-64/y-1-0.conda
      linux-64:
      - conda: "https://c.example.org/linux-64/x-1-0.conda"
packages:
- pypi: https://f.example.org/z-1-py3-none-any.whl
  name: z
  version: '1'
- conda: https://c.example.org/linux-64/y-1-0.conda
  depends:
  - x
- conda: https://c.example.org/linux-64/unused-1-0.conda
- conda: https://c.example.org/linux-64/x-1-0.conda
"""


def test_a_lock_is_cut_into_rattlers_blocks_and_joined_sorted_as_rattler_sorts():
    raw = RawLock.parse(LAYOUT)
    assert list(raw.platforms) == ["linux-64", "p1", "", "XPU-BOX"]  # as YAML reads the names
    assert raw.platforms["p1"] == ["- name: 'p1'", "  subdir: linux-64"]
    assert list(raw.envs) == ["b", "a"]
    assert raw.envs["b"].head == ["    channels: []"] and raw.envs["b"].packages == {}
    assert raw.envs["a"].indexes() == ("https://i.example.org/simple", "https://j.example.org/simple",
                                       "https://k.example.org/caf\u00e9/it's", "https://l.example.org/it's")
    assert raw.envs["a"].packages == {
        "p1": [((2, "https://f.example.org/z-1-py3-none-any.whl"), ["      - pypi: https://f.example.org/z-1-py3-none-any.whl"]),
               ((0, "https://c.example.org/linux-64/y-1-0.conda"), ["      - conda: https://c.example.org/linux-64/y-1-0.conda"])],
        "linux-64": [((0, "https://c.example.org/linux-64/x-1-0.conda"),
                      ['      - conda: "https://c.example.org/linux-64/x-1-0.conda"'])]}
    assert raw.packages[(0, "https://c.example.org/linux-64/y-1-0.conda")] == [
        "- conda: https://c.example.org/linux-64/y-1-0.conda", "  depends:", "  - x"]
    assert raw.text(["# header"]) == """\
# header
version: 7
platforms:
- name: ''
  subdir: noarch
- name: XPU-BOX
  subdir: linux-64
- name: linux-64
- name: 'p1'
  subdir: linux-64
environments:
  a:
    channels:
    - url: https://c.example.org/
    indexes:
    - "https://i.example.org/simple"
    - https://j.example.org/simple
    - "https://k.example.org/caf\\u00e9/it's"
    - 'https://l.example.org/it''s'
    options:
      pypi-prerelease-mode: if-necessary-or-explicit
    packages:
      linux-64:
      - conda: "https://c.example.org/linux-64/x-1-0.conda"
      p1:
      - conda: https://c.example.org/linux-64/y-1-0.conda
      - pypi: https://f.example.org/z-1-py3-none-any.whl
  b:
    channels: []
    packages: {}
packages:
- conda: https://c.example.org/linux-64/x-1-0.conda
- conda: https://c.example.org/linux-64/y-1-0.conda
  depends:
  - x
- pypi: https://f.example.org/z-1-py3-none-any.whl
  name: z
  version: '1'
"""


def test_a_lock_without_environments_platforms_or_packages_joins_back_the_same():
    for text in ("version: 7\nplatforms: []\nenvironments: {}\npackages: []\n",
                 "version: 7\nplatforms: []\nenvironments:\n  a:\n    channels: []\n    packages: {}\npackages: []\n"):
        raw = RawLock.parse(text)
        assert raw.text() == text
    assert RawLock.parse("version: 7\nplatforms: []\nenvironments: {}\npackages: []").text() == \
        "version: 7\nplatforms: []\nenvironments: {}\npackages: []\n"


def test_a_platform_whose_packages_are_gone_is_left_out():
    raw = RawLock.parse(LAYOUT)
    raw.envs["a"].packages["linux-64"] = []
    raw.envs["b"].packages["linux-64"] = []
    text = raw.text()
    assert "      linux-64:" not in text and "x-1-0.conda" not in text
    assert "  b:\n    channels: []\n    packages: {}\n" in text


def test_indexes_are_read_only_under_their_own_key():
    raw = RawLock.parse(LAYOUT.replace("    indexes:\n", "    find-links:\n    - path: ./wheels\n    indexes:\n")
                        .replace("    options:\n", "    options:\n    - '- not an index'\n"))
    assert raw.envs["a"].indexes() == RawLock.parse(LAYOUT).envs["a"].indexes()
    assert len(raw.envs["a"].indexes()) == 4
    assert RawLock.parse(LAYOUT.replace("    indexes:\n", "    Indexes:\n")).envs["a"].indexes() == ()
    assert RawEnv(["    - https://stray.example.org/simple", "    indexes:", "    - https://i.example.org/simple"],
                  {}).indexes() == ("https://i.example.org/simple",)


@pytest.mark.parametrize("text,message", [
    ("", "line 1: expected 'version: 7'"),
    ("version: 6\n", "line 1: expected 'version: 7'"),
    ("# note\nversion: 7\nplatform:\n", "line 3: expected 'platforms:' or 'platforms: []'"),
    ("version: 7\nplatforms: []\nenvironments: {}\n", "line 4: expected 'packages:' or 'packages: []'"),
    ("version: 7\nplatforms:\n- subdir: linux-64\nenvironments: {}\npackages: []\n",
     "platform entry '- subdir: linux-64' does not start with its name"),
    ("version: 7\nplatforms:\nname: x\n", "line 3: not in rattler's layout"),
    ("version: 7\nplatforms: []\nenvironments:\n  a\n", "line 4: expected an environment name"),
    ("version: 7\nplatforms: []\nenvironments:\n   a:\n", "line 4: expected an environment name"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    channels: []\npackages: []\n",
     "line 6: expected '    packages:' or '    packages: {}'"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    packages:\n      - conda: x\n",
     "line 6: a package outside a platform"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    packages:\n      linux-64:\n        stray: 1\n",
     "line 7: not in rattler's layout"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    packages:\n      linux-64:\n       odd\n",
     "line 7: not in rattler's layout"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    packages:\n      linux-64:\n       odd:\n",
     "line 7: not in rattler's layout"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    packages:\n      linux-64:\n        extras:\n",
     "line 7: not in rattler's layout"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    packages:\n      linux-64\n", "line 6: not in rattler's layout"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    packages: {}\n      linux-64:\n",
     "line 6: expected an environment name"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    channels: []\n", "line 6: expected '    packages:' or "
     "'    packages: {}'"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    packages: {}\n", "line 6: expected 'packages:' or "
     "'packages: []'"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    packages:\n      linux-64:\n      - conda: x\n",
     "line 8: expected 'packages:' or 'packages: []'"),
    ("version: 7\nplatforms: []\nenvironments:\n  a:\n    packages:\n      linux-64:\n      - npm: x\n",
     "'- npm: x' is not a package entry"),
    ("version: 7\nplatforms: []\nenvironments: {}\npackages: []\nextra: 1\n", "line 5: unexpected after the packages"),
    ("version: 7\nplatforms: []\nenvironments: {}\npackages:\n  orphan: 1\n", "line 5: not in rattler's layout"),
    ("version: 7\nplatforms: []\nenvironments: {}\npackages:\n- conda: x\n\n", "line 6: unexpected after the packages"),
])
def test_a_lock_not_in_rattlers_layout_is_refused_naming_its_line(text, message):
    with pytest.raises(ValueError) as refused:
        RawLock.parse(text)
    assert str(refused.value) == message


def test_lines_a_newer_writer_adds_under_a_selected_package_are_kept_with_it():
    z, y = "      - pypi: https://f.example.org/z-1-py3-none-any.whl", "      - conda: https://c.example.org/linux-64/y-1-0.conda"
    text = LAYOUT.replace(f"{z}\n", f"{z}\n        extras:\n        - cli\n").replace(f"{y}\n", f"{y}\n        variant: a\n")
    raw = RawLock.parse(text)
    assert [lines for _, lines in raw.envs["a"].packages["p1"]] == [[z, "        extras:", "        - cli"],
                                                                   [y, "        variant: a"]]
    assert f"{y}\n        variant: a\n{z}\n        extras:\n        - cli\n" in raw.text()


def test_a_package_entry_line_too_long_to_quote_is_cut():
    with pytest.raises(ValueError) as refused:
        RawLock.parse("version: 7\nplatforms: []\nenvironments: {}\npackages:\n- npm: " + "x" * 300 + "\n")
    assert str(refused.value) == repr(("- npm: " + "x" * 300)[:120]) + " is not a package entry"


def test_an_environment_selecting_a_package_the_lock_lacks_is_refused():
    raw = RawLock.parse(LAYOUT.replace("- conda: https://c.example.org/linux-64/x-1-0.conda\n", "- conda: elsewhere\n"))
    with pytest.raises(ValueError, match="^no package entry for https://c.example.org/linux-64/x-1-0.conda$"):
        raw.text()


def test_each_kind_of_package_sorts_in_rattlers_order():
    text = ("version: 7\nplatforms:\n- name: linux-64\nenvironments:\n  a:\n    channels: []\n    packages:\n"
            "      linux-64:\n      - pypi: a\n      - conda_source: b @ .\n      - conda: c\n"
            "packages:\n- pypi: a\n- conda_source: b @ .\n  build_packages:\n  - conda: d\n  host_packages:\n"
            "  - conda: e\n  run_exports: {}\n  - conda: f\n- conda: c\n- conda: d\n- conda: e\n- conda: f\n")
    raw = RawLock.parse(text)
    assert [key for key, _ in sorted(raw.envs["a"].packages["linux-64"])] == [(0, "c"), (1, "b @ ."), (2, "a")]
    assert raw.reachable([(1, "b @ .")]) == {(1, "b @ ."), (0, "d"), (0, "e")}
    assert raw.text().split("\npackages:\n")[-1].startswith("- conda: c\n- conda: d\n- conda: e\n- conda_source: b @ .\n")
    assert "\n- conda: f\n" not in raw.text()


# ---------------------------------------------------------------------------------------- reading
def test_a_missing_lock_says_to_lock_first(tmp_path):
    with pytest.raises(BadInput) as refused:
        read_lock(tmp_path / "pixi.lock", tmp_path)
    assert str(refused.value) == f"{tmp_path / 'pixi.lock'} does not exist. Fix: run `python -m resolver lock` first."


def test_a_lock_that_is_a_folder_is_not_called_missing(tmp_path):
    (tmp_path / "pixi.lock").mkdir()
    with pytest.raises(BadInput) as refused:
        load_lock(tmp_path / "pixi.lock", tmp_path)
    assert refused.value.message == f"the lock file {tmp_path / 'pixi.lock'} is a folder, not a file"
    assert refused.value.fix.startswith("put the project's pixi.lock there")


def test_a_lock_that_is_a_fifo_is_never_opened(tmp_path):
    os.mkfifo(tmp_path / "pixi.lock")
    with pytest.raises(BadInput, match="is not a regular file"):
        read_lock(tmp_path / "pixi.lock", tmp_path)


@pytest.mark.parametrize("text,cause", [
    ("version: 7\nenvironments: [\n", None),
    ("version: 99\n", None),
    ("{a: " * 8 + "b" + "}" * 8 + "\n", "(its YAML is nested too deeply)"),
])
def test_what_rattler_cannot_read_is_not_a_lock_in_one_sentence(tmp_path, text, cause):
    (tmp_path / "pixi.lock").write_text(text)
    for read in (read_lock, load_lock):
        with pytest.raises(NotALock) as refused:
            read(tmp_path / "pixi.lock", tmp_path)
        message = refused.value.message
        assert message.startswith(f"{tmp_path / 'pixi.lock'} cannot be read as a pixi.lock (") and "\n" not in message
        assert cause is None or message.endswith(cause)
        assert refused.value.fix == "restore it from version control or run `python -m resolver lock` again"


@pytest.mark.parametrize("depth,nested", [(7, False), (8, True)])
def test_nesting_is_refused_from_eight_open_collections(tmp_path, depth, nested):
    (tmp_path / "pixi.lock").write_text("version: 7\nx: " + "[" * depth + "]" * depth + "\n")
    with pytest.raises(NotALock) as refused:
        read_lock(tmp_path / "pixi.lock", tmp_path)
    assert ("nested too deeply" in refused.value.message) == nested


def test_collections_closed_in_between_are_not_nesting(tmp_path):
    (tmp_path / "pixi.lock").write_text(EXPECTED.replace("packages: []", "") + "# " + "[a] {b} " * 20 + "\n")
    read_lock(tmp_path / "pixi.lock", tmp_path)


def test_an_environment_name_that_is_a_path_is_refused(tmp_path):
    (tmp_path / "pixi.lock").write_text(EXPECTED.replace("  fb:\n", "  ../fb:\n"))
    with pytest.raises(BadInput) as refused:
        read_lock(tmp_path / "pixi.lock", tmp_path)
    assert "../fb" in refused.value.message and str(tmp_path / "pixi.lock") in refused.value.message
    assert refused.value.fix == ("restore pixi.lock from version control (or lock again); environment names are "
                                 "lowercase letters, digits and '-'")


def test_a_lock_larger_than_the_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import resolver.lock.lockfile as lockfile

    (tmp_path / "pixi.lock").write_text(EXPECTED)
    monkeypatch.setattr(lockfile, "LOCK_LIMIT", 1024)
    with pytest.raises(BadInput) as refused:
        read_lock(tmp_path / "pixi.lock", tmp_path)
    assert refused.value.message == f"the lock file {tmp_path / 'pixi.lock'} is larger than 1024 bytes"


def test_a_lock_that_is_not_utf8_is_not_a_lock_in_one_sentence(tmp_path):
    (tmp_path / "pixi.lock").write_bytes(EXPECTED.replace("name: plain", "name: pl\xe4in").encode("latin-1"))
    with pytest.raises(NotALock) as refused:
        read_lock(tmp_path / "pixi.lock", tmp_path)
    assert refused.value.message.startswith(f"{tmp_path / 'pixi.lock'} cannot be read as a pixi.lock (")


def test_a_lock_in_another_layout_is_read_as_rattler_writes_it(tmp_path):
    import yaml

    (tmp_path / "pixi.lock").write_text(yaml.safe_dump(yaml.safe_load(EXPECTED), default_flow_style=True, width=10 ** 6))
    existing = load_lock(tmp_path / "pixi.lock", tmp_path)
    assert existing.raw.text() == EXPECTED
    assert read_lock(tmp_path / "pixi.lock", tmp_path)["cuda"][0].indexes == ("https://pypi.org/simple",)


def test_header_notes_and_fallbacks_are_read_from_the_lines_before_the_lock(tmp_path):
    text = render_lock([cuda_env(tmp_path), fallback_env(), LockedEnv("nopy", CUDA, (), (), (PLAIN,), fallback=True)],
                       tmp_path, aliases={"linux-64-cuda13": "p1"})
    text = "# a note of the team\n" + text + "# " + fallback_line("cuda", "p1", "3.9") + "\n"
    (tmp_path / "pixi.lock").write_text(text)
    existing = load_lock(tmp_path / "pixi.lock", tmp_path)
    assert existing.header == ("# a note of the team", fallback_line("fb", "linux-64", "3.12"),
                               fallback_line("nopy", "p1", ""))
    assert existing.fallbacks == {("fb", "linux-64"): "3.12", ("nopy", "p1"): None}
    envs = read_lock(tmp_path / "pixi.lock", tmp_path)
    assert [(e.fallback, e.python) for e in envs["nopy"]] == [(True, None)]
    assert [(e.fallback, e.python) for e in envs["fb"]] == [(True, "3.12")]
    assert [(e.fallback, e.python) for e in envs["cuda"]] == [(False, "3.11")]
    assert by_platform(locked_envs(existing, tmp_path)) == by_platform(envs)


def test_without_a_conda_python_the_wheels_tag_names_the_python(tmp_path):
    cp312 = PypiArtifact("b", "1", "https://f.example.org/b-1-cp312-cp312-linux_x86_64.whl", "ef" * 32)
    cp310 = PypiArtifact("c", "1", "https://f.example.org/c-1-cp310-abi3-linux_x86_64.whl", "12" * 32)
    envs = [LockedEnv("one", LINUX, (), (), (TORCH, PLAIN)), LockedEnv("two", LINUX, (), (), (TORCH, cp312)),
            LockedEnv("none", LINUX, (), (), (PLAIN,)), LockedEnv("ten", CUDA, (), (), (cp310, cp310))]
    (tmp_path / "pixi.lock").write_text(render_lock(envs, tmp_path))
    pythons = {name: [e.python for e in found] for name, found in read_lock(tmp_path / "pixi.lock", tmp_path).items()}
    assert pythons == {"one": ["3.11"], "two": [None], "none": [None], "ten": ["3.10"]}


def test_a_lock_whose_text_and_rattlers_reading_disagree_is_not_taken_as_it_is(tmp_path):
    text = EXPECTED.replace("      - pypi: https://files.example.org/plain-1-py3-none-any.whl\n", "")
    raw = RawLock.parse(EXPECTED)
    with pytest.raises(BadInput) as refused:
        check_lock_text(text, raw)
    assert refused.value.message == ("the pixi.lock composed here does not read back (environment fb's packages are "
                                     "not where rattler's layout puts them)")
    assert refused.value.fix == "report this with the pixi.toml and pixi.lock it came from; both are left as they were"
    del raw.envs["fb"]
    with pytest.raises(BadInput, match=r"\(its environments are not where rattler's layout puts them\)"):
        check_lock_text(EXPECTED, raw)
    check_lock_text(EXPECTED, RawLock.parse(EXPECTED))


def test_a_fresh_lock_is_cut_as_it_is_written(tmp_path):
    fresh = fresh_lock([cuda_env(tmp_path)], [LINUX, CUDA], {"linux-64-cuda13": "p1"}, tmp_path)
    assert isinstance(fresh, RawLock) and sorted(fresh.platforms) == ["linux-64", "p1"]
    assert [key for key, _ in fresh.envs["cuda"].packages["p1"]] == [
        (0, "./chan/linux-64/zlib-1.3.1-h0_0.conda"), (0, f"{FORGE}linux-64/python-3.11.7-h0_0.conda"), (2, "./src/"),
        (2, TORCH.location)]
    check_lock_text(fresh.text(), fresh)


@pytest.mark.parametrize("sha256", ["1" * 64, "0" * 63 + "7", "1" * 30 + "e" + "2" * 33, "12" * 32])
def test_a_pypi_sha256_is_written_so_every_yaml_reader_reads_text(tmp_path, sha256):
    """A hex digest may be all digits (a number to a YAML reader, an octal one with a leading 0) or digits
    around one ``e`` (a float): written quoted where it would be, it reads back as the same text by
    PyYAML, by rattler, and by the lock's own reader."""
    import yaml

    wheel = PypiArtifact("plain", "1.0", "https://files.example.org/plain-1.0-py3-none-any.whl", sha256)
    env = LockedEnv("cpu", LINUX, (FORGE,), (record("python", "3.11.7"),), (wheel,), ("https://pypi.org/simple",))
    text = render_lock([env], tmp_path)
    packages = yaml.safe_load(text)["packages"]
    assert [p["sha256"] for p in packages if "pypi" in p] == [sha256]
    assert yaml.safe_load(canonical_lock_text(text)) == yaml.safe_load(text)  # rattler reads it so, writes it so
    (tmp_path / "pixi.lock").write_text(text)
    assert [p.sha256 for p in read_lock(tmp_path / "pixi.lock", tmp_path)["cpu"][0].pypi] == [sha256]
