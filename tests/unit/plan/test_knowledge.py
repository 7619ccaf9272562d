"""The knowledge tables: they load, every row is sourced, and they agree with each other.

The consistency checks live in ``Knowledge.problems()``; the tests below also break copies of the
real tables to prove each check can fail."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from resolver.core.model import Request
from resolver.core.toml import parse_toml
from resolver.core.versions import ComputeCapability, DottedVersion, GfxArch
from resolver.plan.decide import decide
from resolver.plan.knowledge import (
    DATA_DIR,
    TABLE_FILES,
    Knowledge,
    KnowledgeError,
    driver_text,
)
from resolver.plan.probe.profile import HardwareProfile

K = Knowledge.load()


def _rows(node, path=""):
    """Every table inside an array of tables ([[...]]), recursively, with its path."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                for i, row in enumerate(value):
                    yield f"{path}{key}[{i}]", row
                    yield from _rows(row, f"{path}{key}[{i}].")
            elif isinstance(value, dict) and not path:  # a top-level [table]; inline tables belong to their row
                yield f"{path}{key}", value
                yield from _rows(value, f"{path}{key}.")


def test_tables_are_consistent() -> None:
    assert K.problems() == []


@pytest.mark.parametrize("name", TABLE_FILES)
def test_every_row_has_a_source(name: str) -> None:
    data = parse_toml((DATA_DIR / name).read_text(encoding="utf-8"), what=name, fix="")
    abbreviations = data.pop("sources", {})  # short names some `source` strings use
    rows = list(_rows(data))
    assert rows
    for where, row in rows:
        assert isinstance(row.get("source"), str) and len(row["source"]) > 8, f"{name} {where} has no source"
        assert isinstance(row.get("confirmed", True), bool)
        for token in re.findall(r"\b[A-Z][A-Z0-9]+-[A-Z0-9-]+\b", row["source"]):
            assert token in abbreviations, f"{name} {where}: abbreviation {token} is not in [sources]"


def test_torch_releases_2_0_to_2_14() -> None:
    names = [r.name for r in K.releases]
    assert names == [f"2.{i}" for i in range(0, 15)]
    for release in K.releases:
        gpu = [v for v in release.variants if v.backend != "cpu"]
        assert gpu and all(v.archs for v in gpu), release.name
        assert release.python and release.glibc_min and release.source
    assert K.release("2.6").glibc_min == DottedVersion.parse("2.28")
    assert K.release("2.5").glibc_min == DottedVersion.parse("2.17")
    assert not K.release("2.5").supports_python(DottedVersion.parse("3.8"))
    assert K.release("2.4").supports_python(DottedVersion.parse("3.8"))
    assert K.release("2.13").cxx_standard == 20 and K.release("2.12").cxx_standard == 17
    assert [r.cxx11_abi for r in K.releases if r.version >= DottedVersion.parse("2.7")] == [True] * 8


def test_2_14_is_flagged_except_what_was_inspected() -> None:
    release = K.release("2.14")
    flags = {v.tag: v.confirmed for v in release.variants}
    assert flags["cu130"] is True and "first-hand" in next(v for v in release.variants if v.tag == "cu130").source
    assert flags["cu126"] is True and flags["cu132"] is True  # RELEASE.md after the release (#197555)
    assert flags["cpu"] is False and flags["rocm7.14"] is False


def test_arch_lists() -> None:
    cu126 = next(v for v in K.release("2.13").variants if v.tag == "cu126" and "linux-64" in v.platforms)
    assert cu126.cubin_for(ComputeCapability.parse("6.1")) == ComputeCapability.parse("6.0")
    cu130 = next(v for v in K.release("2.13").variants if v.tag == "cu130" and "linux-64" in v.platforms)
    assert cu130.cubin_for(ComputeCapability.parse("7.0")) is None
    assert cu130.ptx_for(ComputeCapability.parse("12.1")) == ComputeCapability.parse("12.0")
    assert cu130.ptx_for(ComputeCapability.parse("11.0")) is None  # PTX never runs backwards
    rocm60 = next(v for v in K.release("2.4").variants if v.tag == "rocm6.0")
    assert "gfx90a" in rocm60.archs and "gfx942" in rocm60.archs


def test_driver_floors() -> None:
    assert [driver_text(K.mvc_floor(m)) for m in (11, 12, 13)] == ["450.80.02", "525.60.13", "580.65.06"]
    assert driver_text(K.toolkit_floor(DottedVersion.parse("12.6"))) == "560.28.03"
    assert K.newest_cuda_for_driver(DottedVersion.parse("550.54.15")) == DottedVersion.parse("12.4")
    assert K.newest_cuda_for_driver(DottedVersion.parse("580.82.07")) == DottedVersion.parse("13.0")


def test_nvcc_architectures() -> None:
    cuda13, cuda128, cuda126 = (DottedVersion.parse(v) for v in ("13.0", "12.8", "12.6"))
    for cc in ("5.0", "6.1", "7.0", "7.2"):
        assert not K.nvcc_can_build(cuda13, ComputeCapability.parse(cc)), cc
        assert K.nvcc_can_build(cuda126, ComputeCapability.parse(cc)), cc
    for cc in ("10.0", "12.0"):
        assert K.nvcc_can_build(cuda128, ComputeCapability.parse(cc))
        assert not K.nvcc_can_build(cuda126, ComputeCapability.parse(cc))
    # a GPU nvcc does not know is built as the highest same-major target it does know (not a Tegra one)
    assert K.build_target(cuda128, ComputeCapability.parse("10.3")) == ComputeCapability.parse("10.0")
    assert K.build_target(DottedVersion.parse("11.7"), ComputeCapability.parse("8.9")) == ComputeCapability.parse("8.6")


@pytest.mark.parametrize("name,expected", [
    ("Tesla V100-PCIE-16GB", "7.0"), ("NVIDIA A100-SXM4-80GB", "8.0"), ("NVIDIA A10G", "8.6"), ("NVIDIA A10", "8.6"),
    ("NVIDIA L4", "8.9"), ("NVIDIA L40S", "8.9"), ("NVIDIA GeForce GTX 1080 Ti", "6.1"), ("Tesla T4", "7.5"),
    ("NVIDIA H100 80GB HBM3", "9.0"), ("NVIDIA H200", "9.0"), ("NVIDIA B200", "10.0"), ("NVIDIA GB200", "10.0"),
    ("NVIDIA GeForce RTX 5090", "12.0"), ("NVIDIA GeForce RTX 3060 Laptop GPU", "8.6"), ("Orin (nvgpu)", "8.7"),
    ("NVIDIA GeForce RTX 2080 Ti", "7.5"), ("NVIDIA GeForce RTX 4070 Ti SUPER", "8.9"),
])
def test_nvidia_names(name: str, expected: str) -> None:
    assert K.nvidia_model(name).compute_capability == ComputeCapability.parse(expected)


@pytest.mark.parametrize("name,expected", [
    ("AMD Instinct MI250X", "gfx90a"), ("AMD Instinct MI210", "gfx90a"), ("AMD Instinct MI300X", "gfx942"),
    ("AMD Instinct MI325X", "gfx942"), ("AMD Instinct MI100", "gfx908"), ("AMD Radeon RX 7900 XTX", "gfx1100"),
    ("AMD Radeon RX 7900 GRE", "gfx1100"), ("AMD Radeon PRO W7900", "gfx1100"), ("Radeon RX 7800 XT", "gfx1101"),
])
def test_amd_names(name: str, expected: str) -> None:
    assert K.amd_model(name).gfx == GfxArch.parse(expected)


def test_unknown_gpu_name() -> None:
    assert K.nvidia_model("Some Future GPU 9000") is None


def test_mamba_facts() -> None:
    assert str(K.min_rocm()) == "6.0"
    newest = K.kernel_release("mamba-ssm", DottedVersion.parse("2.13"), DottedVersion.parse("3.11"))
    assert newest.version == "2.3.2.post1"
    old = K.kernel_release("mamba-ssm", DottedVersion.parse("2.4"), DottedVersion.parse("3.10"))
    assert old.version == "2.3.1"
    assert K.kernel_release("mamba-ssm", DottedVersion.parse("2.4"), DottedVersion.parse("3.8")) is None
    name, url = K.prebuilt_wheel("causal-conv1d", "1.7.0", "2.10", 13, True, "3.12", "x86_64")
    assert name == "causal_conv1d-1.7.0+cu13torch2.10cxx11abiTRUE-cp312-cp312-linux_x86_64.whl"
    assert re.match(r"https://github.com/Dao-AILab/causal-conv1d/releases/download/v1\.7\.0/causal_conv1d-1\.7\.0%2B", url)
    assert K.prebuilt_wheel("mamba-ssm", "2.3.2.post1", "2.13", 12, True, "3.11", "x86_64") is None
    # the misfiled causal-conv1d 1.6.1 wheels live under the v1.6.2 tag
    assert "/download/v1.6.2/" in K.prebuilt_wheel("causal-conv1d", "1.6.1", "2.8", 12, True, "3.11", "x86_64")[1]


def test_rocm_header_fix() -> None:
    assert [f.id for f in K.header_fixes_for(DottedVersion.parse("6.0.2"))] == ["rocm6.0-bf16-inline"]
    assert K.header_fixes_for(DottedVersion.parse("6.1.0")) == ()
    assert K.header_fixes_for(DottedVersion.parse("5.7.1")) == ()
    assert K.header_fixes_for(DottedVersion.parse("6.0"))[0].file == "include/hip/amd_detail/amd_hip_bf16.h"


def test_conda_forge() -> None:
    assert K.conda_forge.rocm_builds is False
    assert K.conda_forge.pytorch_channel_last == "2.5.1"
    assert K.conda_forge.cuda_builds("2.13.0", "linux-64") == (DottedVersion.parse("12.9"), DottedVersion.parse("13.0"))


# ---- the checks can fail: break copies of the real tables


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own cache folder, so no test writes to the user's ~/.cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_an_edited_table_is_read_as_edited_and_nothing_is_cached(data_copy: Path, _private_cache: Path) -> None:
    first = Knowledge.load(data_copy)
    _edit(data_copy, "torch.toml", 'latest = "2.9.1"', 'latest = "2.9.2"')
    assert Knowledge.load(data_copy).release("2.9").latest == "2.9.2"
    _edit(data_copy, "torch.toml", 'latest = "2.9.2"', 'latest = "2.9.1"')
    assert Knowledge.load(data_copy) == first
    assert not list(_private_cache.rglob("*.json"))  # no parse cache (it saved under 50 ms)


@pytest.fixture()
def data_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    for name in TABLE_FILES:
        shutil.copy(DATA_DIR / name, folder / name)
    return folder


def _edit(folder: Path, name: str, old: str, new: str, count: int = 1) -> None:
    path = folder / name
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def test_missing_source_is_refused(data_copy: Path) -> None:
    _edit(data_copy, "gpus.toml", 'source = "ROCm/ROCm docs/reference/gpu-arch-specs.rst @e396b489"\n', "")
    with pytest.raises(KnowledgeError, match="has no source"):
        Knowledge.load(data_copy)


def test_variant_without_arch_list_is_reported(data_copy: Path) -> None:
    _edit(data_copy, "torch.toml", 'tag = "cu117"\nplatforms = ["linux-64", "win-64"]\narchs = '
                                   '["3.7", "5.0", "6.0", "7.0", "7.5", "8.0", "8.6"]',
          'tag = "cu117"\nplatforms = ["linux-64", "win-64"]\narchs = []')
    assert any("cu117: no arch list" in p for p in Knowledge.load(data_copy).problems())


def test_unknown_gpu_cc_is_reported(data_copy: Path) -> None:
    _edit(data_copy, "gpus.toml", 'compute_capability = "12.1"', 'compute_capability = "12.7"')
    assert any("12.7, unknown to cuda.toml" in p for p in Knowledge.load(data_copy).problems())


def test_unordered_floors_are_reported(data_copy: Path) -> None:
    _edit(data_copy, "cuda.toml", 'driver_linux = "525.60.13"', 'driver_linux = "440.00.00"')
    assert any("minor-version floor of CUDA 12" in p for p in Knowledge.load(data_copy).problems())


def test_kernel_row_naming_a_missing_torch_is_reported(data_copy: Path) -> None:
    _edit(data_copy, "mamba.toml", 'torch = ["2.6"]', 'torch = ["2.99"]')
    assert any("torch 2.99, not in torch.toml" in p for p in Knowledge.load(data_copy).problems())


def test_malformed_version_is_refused(data_copy: Path) -> None:
    _edit(data_copy, "torch.toml", 'glibc_min = "2.28"', 'glibc_min = "new"')
    with pytest.raises(KnowledgeError, match="glibc_min"):
        Knowledge.load(data_copy)


def test_a_kernel_release_whose_version_is_not_pep_440_is_refused(data_copy: Path) -> None:
    _edit(data_copy, "mamba.toml", 'version = "2.3.1"', 'version = "2.3.1-final-fix"')
    with pytest.raises(KnowledgeError, match="'version' must be a PEP 440 version"):
        Knowledge.load(data_copy)


def test_adding_a_release_is_a_data_edit(data_copy: Path) -> None:
    """A new torch release appended to torch.toml is planned with, no code change."""
    (data_copy / "torch.toml").write_text((data_copy / "torch.toml").read_text() + '''
[[release]]
version = "2.15"
latest = "2.15.0"
released = "2027-01"
python = ["3.10", "3.11", "3.12", "3.13", "3.14"]
glibc_min = "2.28"
cxx11_abi = true
cxx_standard = 20
pypi_default = "cu130"
source = "test fixture"

[[release.variant]]
tag = "cpu"
platforms = ["linux-64"]
source = "test fixture"

[[release.variant]]
tag = "cu130"
platforms = ["linux-64"]
archs = ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]
source = "test fixture"
''')
    knowledge = Knowledge.load(data_copy)
    assert knowledge.problems() == []
    profile = HardwareProfile.from_json({"platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "amd": None,
                                         "cuda_toolkit": None, "nvidia": {"driver_version": "580.82.07", "gpus": [
                                             {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]}})
    plan = decide(profile, Request(), knowledge).plan
    assert (str(plan.torch.version), plan.torch.variant) == ("2.15.0", "cu130")
    assert str(decide(profile, Request(), K).plan.torch.version) != "2.15.0"


# ------------------------------------------------------------------ each consistency check, on a broken copy
def _broken(**tables) -> list[str]:
    from dataclasses import replace

    return replace(Knowledge.load(), **tables).problems()


def test_releases_out_of_order_or_repeated_are_reported() -> None:
    k = Knowledge.load()
    message = "torch.toml: releases are not in ascending order or repeat"
    assert message in _broken(releases=tuple(reversed(k.releases)))
    assert message in _broken(releases=k.releases + k.releases[-1:])


def test_a_release_whose_latest_is_of_another_line_is_reported() -> None:
    k = Knowledge.load()
    last = k.releases[-1]
    broken = _broken(releases=k.releases[:-1] + (last._replace(latest="1.0.0"),))
    assert f"torch {last.name}: latest 1.0.0 is not a {last.name}.x release" in broken


def test_a_release_without_a_cpu_variant_or_with_a_variant_twice_is_reported() -> None:
    k = Knowledge.load()
    last = k.releases[-1]
    no_cpu = last._replace(variants=tuple(v for v in last.variants if v.tag != "cpu"))
    assert f"torch {last.name}: no cpu variant" in _broken(releases=k.releases[:-1] + (no_cpu,))
    cpu = next(v for v in last.variants if v.tag == "cpu")
    twice = last._replace(variants=last.variants + (cpu,))
    assert f"torch {last.name}: variant cpu listed twice for {cpu.platforms[0]}" in \
        _broken(releases=k.releases[:-1] + (twice,))


def test_a_glibc_floor_below_the_release_before_is_reported() -> None:
    k = Knowledge.load()
    last, before = k.releases[-1], k.releases[-2]
    lowered = last._replace(glibc_min=type(last.glibc_min).parse("2.0"))
    assert f"torch {last.name}: glibc floor 2.0 is below {before.name}'s" in \
        _broken(releases=k.releases[:-1] + (lowered,))


def test_a_gpu_name_listed_twice_is_reported() -> None:
    k = Knowledge.load()
    model = k.nvidia_models[0]
    assert f"gpus.toml: {model.names[0].lower()!r} is listed twice" in \
        _broken(nvidia_models=k.nvidia_models + (model,))


def test_a_kernel_release_of_an_unknown_package_is_reported() -> None:
    k = Knowledge.load()
    kernel = k.kernel_releases[0]
    assert f"mamba.toml: release of unknown package {kernel.package}" in _broken(kernel_packages=tuple(
        p for p in k.kernel_packages if p.name != kernel.package))


def test_a_toolkits_driver_floor_on_linux_and_on_windows() -> None:
    """The floor of a toolkit minor is its earliest release's, read for the driver's OS: CUDA 11.8's Windows
    driver floor (520.06) is below its Linux one (520.61.05), so a 520.10 driver runs 11.8 on Windows (WSL)
    and only 11.7 on Linux; a full version is taken by its minor."""
    k = Knowledge.load()
    V = DottedVersion.parse
    assert k.toolkit_floor(V("12.4")) == V("550.54.14") and k.toolkit_floor(V("12.4.1")) == V("550.54.14")
    assert k.toolkit_floor(V("12.4"), "win") == V("551.61")
    assert k.toolkit_floor(V("11.8"), "win") == V("520.06") and k.toolkit_floor(V("11.8")) == V("520.61.05")
    assert k.toolkit_floor(V("9.9")) is None
    assert k.newest_cuda_for_driver(V("520.10"), "win") == V("11.8")
    assert k.newest_cuda_for_driver(V("520.10")) == V("11.7")
    assert k.newest_cuda_for_driver(V("300.0")) is None


def test_a_build_fix_holds_inside_its_nvcc_range_and_at_its_bounds() -> None:
    V = DottedVersion.parse
    fix = Knowledge.load().build_fixes[0]._replace(nvcc_min=V("12.8"), nvcc_below=V("13.1"))
    assert [fix.holds_for_nvcc(V(v)) for v in ("12.6", "12.8", "12.8.93", "13.0.88", "13.1", "13.2")] == \
        [False, True, True, True, False, False]
    assert fix._replace(nvcc_below=None).holds_for_nvcc(V("14.0")) and not fix._replace(nvcc_below=None).holds_for_nvcc(V("12.6"))
    assert fix._replace(nvcc_min=None).holds_for_nvcc(V("11.8")) and not fix._replace(nvcc_min=None).holds_for_nvcc(V("13.1"))
    assert fix._replace(nvcc_min=None, nvcc_below=None).holds_for_nvcc(V("9.0"))


def test_an_api_change_is_crossed_only_by_an_upgrade_through_its_release() -> None:
    V = DottedVersion.parse
    change = Knowledge.load().api_changes[0]._replace(torch=V("2.6"))
    assert change.crossed_by(V("2.5.1"), V("2.6.0")) and change.crossed_by(V("2.5"), V("2.6"))
    assert change.crossed_by(V("2.4"), V("2.7.1"))
    assert not change.crossed_by(V("2.6.0"), V("2.7"))  # already past it
    assert not change.crossed_by(V("2.4"), V("2.5.9"))  # not yet there
    assert not change.crossed_by(V("2.6"), V("2.6.3"))


def test_a_torch_release_is_found_by_its_minor_and_an_unknown_one_is_none() -> None:
    V = DottedVersion.parse
    assert K.release("2.9.1") is K.release("2.9") is K.release(V("2.9.0")) is not None
    assert K.release("2.9").name == "2.9"
    assert K.release("9.9") is None and K.release("1.13.1") is None


def test_a_toolkit_minor_without_a_dot_zero_release_has_its_earliest_releases_floor() -> None:
    """CUDA 11.0's first listed release is 11.0.2: the floor of 11.0 is that release's."""
    V = DottedVersion.parse
    assert K.toolkit_floor(V("11.0")) == V("450.51.05") and K.toolkit_floor(V("11.0.3")) == V("450.51.05")
    assert K.toolkit_floor(V("11.0"), "win") == V("451.48")


def test_the_newest_toolkit_for_a_driver_whatever_order_the_rows_are_listed_in() -> None:
    from dataclasses import replace

    V = DottedVersion.parse
    shuffled = replace(K, toolkits=tuple(reversed(K.toolkits)))
    for driver in ("550.54.15", "580.82.07", "520.10", "455.23"):
        assert shuffled.newest_cuda_for_driver(V(driver)) == K.newest_cuda_for_driver(V(driver)), driver
    assert shuffled.newest_cuda_for_driver(V("560.30")) == V("12.6")


def test_an_architecture_is_named_by_its_row_or_by_its_capability() -> None:
    assert K.arch_name(ComputeCapability.parse("9.0")) == "Hopper"
    assert K.arch_name(ComputeCapability.parse("8.6")) == "Ampere (GA10x)"
    assert K.arch_support(ComputeCapability(4, 2)) is None
    assert K.arch_name(ComputeCapability(4, 2)) == "compute capability 4.2"


@pytest.mark.parametrize("name,expected", [
    ("Navi 31", "gfx1100"), ("navi 31", "gfx1100"), ("Navi 31 XT", "gfx1100"), ("Navi 31 [Radeon RX 7900 XT]", "gfx1100"),
    ("Navi 310", None), ("Navi 31XT", None), ("Hawaii PRO", "gfx701"),
])
def test_an_amd_code_name_matches_as_a_whole_word(name: str, expected: str | None) -> None:
    chip = K.amd_chip(name)
    assert (str(chip.gfx) if chip else None) == expected


@pytest.mark.parametrize("name", ["V100-SXM2-32GB", "Tesla V100-PCIE-16GB"])
def test_a_listed_name_with_punctuation_matches_however_the_driver_punctuates_it(name: str) -> None:
    assert K.nvidia_model(name).compute_capability == ComputeCapability(7, 0)
    assert K.nvidia_model("NVIDIA TITAN X (Pascal)").compute_capability == ComputeCapability(6, 1)


def _with_kernels(*versions: str) -> Knowledge:
    from dataclasses import replace

    row = next(k for k in K.kernel_releases if k.package == "mamba-ssm")
    return replace(K, kernel_releases=tuple(row._replace(version=v) for v in versions))


@pytest.mark.parametrize("versions,newest", [
    (("2.9.1", "2.10.0", "2.3.1"), "2.10.0"),  # by number, not by spelling or by the order of the rows
    (("2.10.0", "2.9.1"), "2.10.0"),
    (("2.3.2.post1", "2.3.2", "2.3.1"), "2.3.2.post1"),
    (("2.3.2.post1", "2.3.2.1"), "2.3.2.1"),  # a later release beats a post-release of an earlier one
    (("2.3.2.post2", "2.3.2.post10", "2.3.2.post1"), "2.3.2.post10"),
    (("2.3.2rc1", "2.3.2"), "2.3.2"),  # a final release is newer than its release candidates
    (("2.3.3rc1", "2.3.2", "2.3.3.dev1"), "2.3.2"),  # and preferred to a later pre-release, as pip does
    (("2.3.3rc1", "2.3.3b2"), "2.3.3rc1"),  # pre-releases alone: the newest of them
])
def test_the_newest_kernel_release_is_the_highest_version(versions: tuple[str, ...], newest: str) -> None:
    V = DottedVersion.parse
    assert _with_kernels(*versions).kernel_release("mamba-ssm", V("2.13"), V("3.11")).version == newest


def test_a_kernel_release_covers_a_full_torch_version_by_its_minor() -> None:
    V = DottedVersion.parse
    row = K.kernel_releases[0]._replace(torch_min=V("2.4"), torch_max=V("2.6"))
    assert [row.supports_torch(V(t)) for t in ("2.3.1", "2.4.0", "2.6.3", "2.6", "2.7.0")] == \
        [False, True, True, True, False]


def test_build_fixes_of_a_package_are_its_own_and_the_general_ones() -> None:
    assert [f.id for f in K.fixes_for("causal-conv1d")] == ["cxx20", "no-sm103-nvcc13"]
    assert [f.id for f in K.fixes_for("mamba-ssm")] == ["cxx20"]
    assert K.fixes_for() == K.build_fixes


def test_torch_variants_are_listed_newest_toolkit_first() -> None:
    """By version, not by tag: rocm7.14 is newer than rocm7.2."""
    release = K.release("2.14")
    assert [v.tag for v in release.variants_for("linux-64", "rocm")] == ["rocm7.14", "rocm7.2"]
    assert [v.tag for v in release.variants_for("linux-64", "cuda")] == ["cu132", "cu130", "cu126"]
    assert [v.tag for v in release.variants_for("linux-64", "cpu")] == ["cpu"]


def test_conda_forge_builds_and_arch_lists_by_platform_and_minor() -> None:
    V = DottedVersion.parse
    assert K.conda_forge.cuda_builds("2.13.0", "linux-aarch64-unrecorded") is None
    assert K.conda_forge.cuda_builds("0.0.1", "linux-64") is None
    assert K.conda_forge.archs_of(V("13.0.2")) == K.conda_forge.archs_of(V("13.0")) is not None
    assert K.conda_forge.archs_of(V("99.0")) is None
    unasked = next(p for p in K.conda_forge.toolkit if not p.ask)
    assert unasked.spec_for(V("13.0")) == "*"
    asked = next(p for p in K.conda_forge.toolkit if p.ask == "{X.Y}.*")
    assert asked.spec_for(V("13.0.2")) == "13.0.*"
