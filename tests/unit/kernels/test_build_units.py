"""Unit tests of the build stage's pure parts: cache key, parallelism, names, arch lists, log reading,
the recipes themselves and the compile-flag fixes. Real recipes, real compiler output, no mocks."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
from pathlib import Path

import pytest
from support import DATA

from resolver.core.errors import BadInput, EnvironmentProblem
from resolver.kernels.archs import apply_rules, parse_arch_list, upstream_default_archs
from resolver.kernels.cachekey import BuildKey
from resolver.kernels.logparse import NinjaProgress, classify, first_error
from resolver.kernels.naming import build_string
from resolver.kernels.packages import BUILD_EXT, RECIPES, KernelRecipe, known_packages
from resolver.kernels.parallelism import PER_COMPILER_BYTES, GiB, fit_parallelism
from resolver.kernels.toolkit import (
    find_toolkit,
    parse_hipcc_version,
    parse_nvcc_version,
)

LOGS = DATA / "fixtures" / "build-logs"
TINY = DATA / "fixtures" / "tiny-ext" / "recipe"

KEY = BuildKey(package="causal-conv1d", version="1.7.0", sdist_sha256="3202758494ea", backend="cuda",
               toolkit="13.0.88", torch="2.14.1+cu130", cxx11_abi=True, python="3.11", archs=("9.0",),
               cxx_std="c++20", fixes="abc", overlay="")


# --- cache key -------------------------------------------------------------------------------------

def test_identical_requests_share_a_key():
    assert KEY.digest() == dataclasses.replace(KEY).digest()


@pytest.mark.parametrize("change", [
    {"version": "1.6.0"}, {"sdist_sha256": "ffff"}, {"backend": "rocm"}, {"toolkit": "12.9.86"},
    {"torch": "2.13.0+cu130"}, {"cxx11_abi": False}, {"python": "3.12"}, {"archs": ("8.6", "9.0")},
    {"cxx_std": ""}, {"fixes": "abd"}, {"overlay": "0f"}, {"prebuilt_wheel": "aa"},
])
def test_every_binary_relevant_field_changes_the_key(change):
    assert dataclasses.replace(KEY, **change).digest() != KEY.digest()


def test_parallelism_is_not_part_of_the_key():
    names = {f.name for f in dataclasses.fields(BuildKey)}
    assert not names & {"jobs", "nvcc_threads", "log", "seconds"}


# --- build strings ---------------------------------------------------------------------------------

VARIANTS = [
    dict(backend="cuda", toolkit="13.0.88", torch="2.14.1+cu130", cxx11_abi=True, python="3.11", archs=("9.0",)),
    dict(backend="cuda", toolkit="12.6.85", torch="2.6.0+cu126", cxx11_abi=False, python="3.10",
         archs=("8.0", "8.6", "9.0")),
    dict(backend="rocm", toolkit="6.0.32830", torch="2.4.1+rocm6.0", cxx11_abi=False, python="3.12",
         archs=("gfx90a", "gfx942")),
    dict(backend="cuda", toolkit="13.0.88", torch="2.14.1", cxx11_abi=True, python="3.13",
         archs=upstream_default_archs("13.0")),
    dict(backend="cpu", toolkit="", torch="", cxx11_abi=True, python="3.11", archs=()),
]


@pytest.mark.parametrize("variant", VARIANTS)
def test_build_strings_are_valid_match_spec_build_strings(variant):
    from rattler import MatchSpec

    text = build_string(key_digest="0123456789abcdef", number=0, **variant)
    spec = MatchSpec(f"causal-conv1d ==1.7.0 {text}")
    assert spec.build is not None and text.endswith("_h0123456_0")


def test_build_string_names_the_variant():
    text = build_string(key_digest="9" * 64, **VARIANTS[0])
    assert text == "cu130_torch214_cxx11_py311_sm90_h9999999_0"
    rocm = build_string(key_digest="1" * 64, **VARIANTS[2])
    assert rocm.startswith("rocm60_torch24_precxx11_py312_gfx90agfx942_")


def test_long_arch_lists_are_abbreviated_but_unique_by_hash():
    a = build_string(key_digest="a" * 64, **VARIANTS[3])
    b = build_string(key_digest="b" * 64, **VARIANTS[3])
    assert a != b and "9archs" in a and len(a) < 80


# --- architectures ---------------------------------------------------------------------------------

def test_arch_list_forms():
    assert parse_arch_list("9.0", backend="cuda") == ("9.0",)
    assert parse_arch_list("sm_90, 86,8.0 9.0", backend="cuda") == ("8.0", "8.6", "9.0")
    assert parse_arch_list("GFX942;gfx90a", backend="rocm") == ("gfx90a", "gfx942")


def test_arch_all_is_the_upstream_list_for_the_toolkit():
    assert parse_arch_list("all", backend="cuda", toolkit="13.0") == upstream_default_archs("13.0")
    assert len(upstream_default_archs("13.0")) == 9
    assert upstream_default_archs("12.6") == ("7.5", "8.0", "8.7", "9.0")
    assert upstream_default_archs("11.7") == ("7.5", "8.0", "8.7")


@pytest.mark.parametrize("text", ["", "hopper", "9.x", "gfx90a"])
def test_bad_arch_lists_are_one_clear_error(text):
    with pytest.raises(BadInput) as info:
        parse_arch_list(text, backend="cuda")
    assert info.value.fix


def test_causal_conv1d_never_gets_sm103_from_nvcc_13():
    package = KernelRecipe.named("causal-conv1d")
    archs = upstream_default_archs("13.0")
    kept, dropped = apply_rules(archs, package.never_archs, "13.0")
    assert "10.3" not in kept and len(kept) == 8
    assert dropped and "105" in dropped[0]
    kept_12, dropped_12 = apply_rules(("9.0", "10.3"), package.never_archs, "12.9")
    assert kept_12 == ("9.0", "10.3") and not dropped_12


def test_mamba_ssm_keeps_sm103():
    package = KernelRecipe.named("mamba-ssm")
    kept, _ = apply_rules(upstream_default_archs("13.0"), package.never_archs, "13.0")
    assert "10.3" in kept


def test_arch_rule_window():
    from resolver.core.versions import DottedVersion as V
    from resolver.plan.knowledge import BuildFix

    rule = BuildFix("x", "p", "nvcc 13", "", "10.3", "10.0", "x", V.parse("13.0"), V.parse("14.0"))
    assert rule.holds_for_nvcc(V.parse("13.0")) and rule.holds_for_nvcc(V.parse("13.2"))
    assert not rule.holds_for_nvcc(V.parse("12.9")) and not rule.holds_for_nvcc(V.parse("14.0"))


# --- parallelism -----------------------------------------------------------------------------------

@pytest.mark.parametrize("cores,free_gib,units,archs", [
    (2, 24, 4, 1), (2, 24, 10, 9), (16, 64, 4, 3), (64, 8, 10, 9), (8, 2, 4, 1), (1, 0.5, 1, 1),
    (128, 1024, 10, 9), (4, 7.9, 10, 1),
])
def test_parallelism_never_exceeds_cores_or_memory(cores, free_gib, units, archs):
    plan = fit_parallelism(cores=cores, free_bytes=int(free_gib * GiB), units=units, archs=archs)
    assert plan.jobs >= 1 and plan.nvcc_threads >= 1
    assert plan.jobs * plan.nvcc_threads <= max(1, cores)
    if free_gib * GiB >= PER_COMPILER_BYTES:
        assert plan.jobs * plan.nvcc_threads * PER_COMPILER_BYTES <= free_gib * GiB
    else:
        assert plan.jobs == plan.nvcc_threads == 1  # the smallest build there is
    assert plan.nvcc_threads <= archs


def test_parallelism_prefers_jobs_and_respects_a_cap():
    assert fit_parallelism(cores=2, free_bytes=24 * GiB, units=4, archs=1).jobs == 2
    capped = fit_parallelism(cores=16, free_bytes=64 * GiB, units=10, archs=4, max_jobs=2)
    assert capped.jobs == 2 and capped.nvcc_threads == 4
    assert fit_parallelism(cores=16, free_bytes=64 * GiB, units=1, archs=9).nvcc_threads == 9


# --- logs ------------------------------------------------------------------------------------------

def _lines(name: str) -> list[str]:
    return (LOGS / name).read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("name,hint,needle", [
    ("gxx-cxx17-aten.txt", "cxx-standard", "C++20 or later compatible compiler is required"),
    ("ninja-killed.txt", "memory", "Killed"),
    ("ninja-missing-cuda-header.txt", "cuda-home", "cuda_runtime_api.h: No such file"),
    ("nvcc-arch.txt", "arch", "Unsupported gpu architecture 'compute_10'"),
    ("nvcc-undefined.txt", "unknown", 'identifier "undefined_name" is undefined'),
])
def test_first_error_and_hint_from_real_compiler_output(name, hint, needle):
    error = first_error(_lines(name))
    assert error is not None
    assert needle in error.line
    assert error.hint_id == hint and error.hint


def test_warnings_and_progress_lines_are_not_errors():
    lines = ["[1/4] c++ -c a.cpp -o a.o", "ptxas info    : Used 40 registers",
             "a.cu(7): warning #177-D: variable \"x\" was declared but never referenced"]
    assert first_error(lines) is None
    assert classify(lines)[0] == "unknown"


def test_ninja_progress():
    assert NinjaProgress.parse("[12/1440] /usr/local/cuda/bin/nvcc -c x.cu") == (12, 1440)
    assert NinjaProgress.parse("ninja: no work to do.") is None
    missing = _lines("ninja-missing-cuda-header.txt")
    assert [NinjaProgress.parse(l) for l in missing if NinjaProgress.parse(l)] == [(1, 4)]


# --- toolkit ---------------------------------------------------------------------------------------

def test_toolkit_version_parsing_from_real_output():
    assert parse_nvcc_version("Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0") == "13.0.88"
    assert parse_hipcc_version("HIP version: 6.0.32830-d62f6a171\nAMD clang version 17.0.0") == "6.0.32830"


def test_missing_nvcc_names_cuda_home(tmp_path):
    from resolver.plan.probe.sysroot import SysrootSystem
    from resolver.plan.probe.toolkits import find_cuda

    (tmp_path / "_meta.toml").write_text('system = "Linux"\nmachine = "x86_64"\npython = "3.11.7"\n')
    assert find_cuda(SysrootSystem(tmp_path)) is None  # a machine without any nvcc
    if not Path("/usr/local/cuda/bin/nvcc").exists():  # here the last fallback would answer
        with pytest.raises(EnvironmentProblem) as info:
            find_toolkit("cuda", environ={"PATH": str(tmp_path)})
        assert "CUDA_HOME" in info.value.fix
    with pytest.raises(EnvironmentProblem) as info:
        find_toolkit("rocm", environ={"PATH": str(tmp_path)})
    assert "ROCM_PATH" in info.value.fix


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on this machine")
def test_real_nvcc_home_has_headers():
    toolkit = find_toolkit("cuda")
    assert toolkit.version.count(".") == 2
    assert (Path(toolkit.home) / "bin" / "nvcc").exists()
    assert any(Path(toolkit.home).glob("**/cuda_runtime_api.h"))


# --- recipes ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", known_packages())
def test_recipes_pin_version_and_sha256(name):
    package = KernelRecipe.named(name)
    assert package.sdist is not None and len(package.sdist.sha256) == 64
    assert package.sdist.url and package.sdist.url.endswith("/" + package.sdist.file_name)
    assert package.version in package.sdist.file_name
    assert package.imports and package.env_prefix
    assert package.cxx_std == "c++20" and package.cxx_std_torch_min == "2.13"


@pytest.mark.parametrize("recipe_dir", [RECIPES / "causal-conv1d", RECIPES / "mamba-ssm", TINY])
def test_recipes_render_with_a_narrowed_variant(recipe_dir):
    from rattler_build import PlatformConfig, RenderConfig, Stage0Recipe, VariantConfig

    recipe = Stage0Recipe.from_file(str(recipe_dir / "recipe.yaml"))
    variant = VariantConfig({"backend": ["cuda"], "toolkit": ["13.0"], "torch": ["2.14"], "cxx11_abi": ["1"],
                             "python_version": ["3.11"], "archs": ["9.0"]})
    context = {"resolver_source": "file:///nonexistent/x.tar.gz", "resolver_build_string": "cu130_test_0",
               "resolver_python": "/usr/bin/python3", "resolver_build_ext": str(BUILD_EXT),
               "resolver_fix_args": "--jobs 1"}
    rendered = recipe.render(variant, RenderConfig(platform=PlatformConfig(target_platform="linux-64"),
                                                   extra_context=context))
    assert len(rendered) == 1
    assert rendered[0].recipe.build.string == "cu130_test_0"


def test_variants_file_covers_the_axes():
    from rattler_build import VariantConfig

    config = VariantConfig.from_file(str(RECIPES / "variants.yaml"))
    assert {"backend", "toolkit", "torch", "cxx11_abi", "python_version", "archs"} <= set(config.keys())
    assert set(config.get_values("backend")) == {"cuda", "rocm"}


def test_fixes_hash_follows_the_recipe_folder(tmp_path):
    copy = tmp_path / "causal-conv1d"
    shutil.copytree(RECIPES / "causal-conv1d", copy)
    before = KernelRecipe.load(copy).fixes_hash()
    assert before == KernelRecipe.named("causal-conv1d").fixes_hash()
    (copy / "resolver.toml").write_text((copy / "resolver.toml").read_text() + "\n# edited\n")
    assert KernelRecipe.load(copy).fixes_hash() != before


def test_broken_recipe_folder_is_one_clear_error(tmp_path):
    (tmp_path / "recipe.yaml").write_text("package: [unclosed\n")
    (tmp_path / "resolver.toml").write_text("")
    with pytest.raises(BadInput):
        KernelRecipe.load(tmp_path)


# --- our compile-flag fixes (recipes/common/build_ext.py) -------------------------------------------

@pytest.fixture(scope="module")
def build_ext():
    spec = importlib.util.spec_from_file_location("resolver_build_ext", BUILD_EXT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The nvcc flags mamba-ssm 2.3.2.post1's setup.py passes with nvcc 13 (shape of its list).
UPSTREAM_NVCC = ["-O3", "-std=c++17", "-U__CUDA_NO_HALF_OPERATORS__", "--expt-relaxed-constexpr",
                 "-gencode", "arch=compute_75,code=sm_75", "-gencode", "arch=compute_80,code=sm_80",
                 "-gencode", "arch=compute_103,code=sm_103", "-gencode", "arch=compute_121,code=sm_121",
                 "--threads", "4"]


def test_gencode_list_threads_and_std_are_replaced(build_ext):
    flags = build_ext.rewrite_flags(UPSTREAM_NVCC, backend="cuda", archs=["9.0"], cxx_std="c++20",
                                    nvcc_threads=1, include_first=[], device=True)
    assert [f for f in flags if f.startswith("arch=")] == ["arch=compute_90,code=sm_90"]
    assert flags.count("-gencode") == 1
    assert "-std=c++20" in flags and "-std=c++17" not in flags
    assert flags[flags.index("--threads") + 1] == "1" and flags.count("--threads") == 1
    assert "--expt-relaxed-constexpr" in flags and "-O3" in flags


def test_shipped_standard_is_kept_without_cxx_std(build_ext):
    flags = build_ext.rewrite_flags(["-O3", "-std=c++17"], backend="cuda", archs=[], cxx_std=None,
                                    nvcc_threads=None, include_first=[], device=False)
    assert flags == ["-O3", "-std=c++17"]


def test_rocm_overlay_goes_first_and_offload_archs_replace_native(build_ext):
    hip = ["-O3", "-std=c++17", "--offload-arch=native", "-fgpu-flush-denormals-to-zero"]
    flags = build_ext.rewrite_flags(hip, backend="rocm", archs=["gfx90a", "gfx942"], cxx_std=None,
                                    nvcc_threads=2, include_first=["/overlay/include"], device=True)
    assert flags[0] == "-I/overlay/include"
    assert [f for f in flags if f.startswith("--offload-arch")] == ["--offload-arch=gfx90a", "--offload-arch=gfx942"]
    assert "--threads" not in flags


def test_wheel_unpacks_into_the_interpreters_site_packages(build_ext, tmp_path):
    import sysconfig
    import zipfile

    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("demo/__init__.py", "VALUE = 1\n")
        archive.writestr("demo-1.0.dist-info/RECORD", "")
        archive.writestr("demo-1.0.data/scripts/demo-tool", "#!/bin/sh\n")
    prefix = tmp_path / "prefix"
    written = build_ext.install_wheel(str(wheel), str(prefix))
    site = Path(sysconfig.get_paths(vars={"base": str(prefix), "platbase": str(prefix)})["platlib"])
    assert (site / "demo" / "__init__.py").read_text() == "VALUE = 1\n"
    assert (site / "demo-1.0.dist-info" / "INSTALLER").read_text().strip() == "mamba-resolver"
    assert any(p.endswith("demo-tool") for p in written)


# --- environment facts vs toolkit -----------------------------------------------------------------

def _facts(**kw):
    from resolver.kernels.envfacts import EnvFacts

    base = dict(python="3.11", executable="/e/bin/python", platlib="lib/python3.11/site-packages",
                torch="2.14.1+cu130", torch_cuda="13.0", torch_hip=None, cxx11_abi=True)
    base.update(kw)
    return EnvFacts(**base)


def test_backend_follows_the_torch_build():
    assert _facts().backend == "cuda"
    assert _facts(torch_cuda=None, torch_hip="6.0.32830-d62f6a171").backend == "rocm"
    assert _facts(torch="2.14.1+cpu", torch_cuda=None).backend == "cpu"


def test_a_toolkit_of_another_major_than_torch_is_refused_before_compiling():
    from resolver.kernels.driver import _check_toolkit_matches_torch

    _check_toolkit_matches_torch(_facts(), "13.0")  # same major: fine
    _check_toolkit_matches_torch(_facts(torch_cuda="12.6"), "12.9")
    with pytest.raises(EnvironmentProblem) as info:
        _check_toolkit_matches_torch(_facts(torch_cuda="12.6"), "13.0")
    assert "CUDA_HOME" in info.value.fix


def test_arch_all_on_rocm_asks_for_names():
    with pytest.raises(BadInput) as info:
        parse_arch_list("all", backend="rocm")
    assert "gfx" in info.value.fix


def test_plan_toolkit_mismatch_is_a_warning_sentence():
    from resolver.kernels.driver import toolkit_mismatch
    from resolver.kernels.toolkit import Toolkit

    found = Toolkit("cuda", "/usr/local/cuda-13.0/bin/nvcc", "13.0.88", "/usr/local/cuda-13.0")
    assert toolkit_mismatch("nvcc 13.0", found) is None
    assert toolkit_mismatch("nvcc 13.0.88", found) is None
    warning = toolkit_mismatch("nvcc 12.6", found)
    assert "12.6" in warning and "13.0" in warning and "resolver plan" in warning


@pytest.mark.parametrize("text", ["sm_banana", "", "9.0,hopper"])
def test_arch_syntax_is_checked_before_anything_slow(text):
    from resolver.kernels.archs import check_arch_syntax

    with pytest.raises(BadInput):
        check_arch_syntax(text)
    check_arch_syntax("all")
    check_arch_syntax("8.6, sm_90,gfx942")
