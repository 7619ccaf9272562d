"""The offline toolchain channel (tests/support/toolchain_channel.py): a solve + install with py-rattler makes a
real conda prefix whose python runs and installs wheels and whose nvcc compiles CUDA with nothing
from /usr/local/cuda. The channel is built once per clone (minutes) and cached; see the module."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import channel_factory as cf  # noqa: E402
from support import toolchain_channel as tc  # noqa: E402

from resolver.tools.conda import rattler, target_virtual_packages, virtual_package_strings  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform != "linux" or platform.machine() != "x86_64",
                                 reason="the channel repackages linux-64 binaries")]

TARGET = "targets/x86_64-linux"
CUDA_FREE_ENV_KEYS = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDAToolkit_ROOT", "NVCC_PREPEND_FLAGS",
                      "NVCC_APPEND_FLAGS", "LD_LIBRARY_PATH", "CPATH", "LIBRARY_PATH")

CU_SOURCE = r"""
#include <cstdio>
#include <cuda_runtime.h>
#include <cub/block/block_reduce.cuh>
#include <thrust/device_vector.h>

__global__ void block_sum(const int *in, int *out) {
    using Reduce = cub::BlockReduce<int, 128>;
    __shared__ typename Reduce::TempStorage storage;
    int total = Reduce(storage).Sum(in[threadIdx.x]);
    if (threadIdx.x == 0) *out = total;
}

int main() {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    int devices = 0;
    cudaError_t status = cudaGetDeviceCount(&devices);
    std::printf("runtime %d devices %d status %s\n", runtime, devices, cudaGetErrorName(status));
    return 0;
}
"""


def _host_glibc() -> str:
    return platform.libc_ver()[1] or "2.17"


def _virtual(*, glibc: str, cuda: str | None) -> list:
    return target_virtual_packages(virtual_package_strings("linux-64", glibc=glibc, cuda=cuda))


def _solve(channel: Path, specs: list[str], *, glibc: str, cuda: str | None, **options) -> list:
    r = rattler()
    return r_run(r.solve([r.Channel(channel.as_uri())], specs, platforms=["linux-64", "noarch"],
                         virtual_packages=_virtual(glibc=glibc, cuda=cuda), **options))


def r_run(coro):
    import asyncio

    return asyncio.run(coro)


def _install(records: list, prefix: Path, cache: Path) -> None:
    r = rattler()
    r_run(r.install(records, target_prefix=prefix, cache_dir=cache, show_progress=False))


def _clean_env(prefix: Path, tmp: Path) -> dict[str, str]:
    """Only the prefix's bin and the system's /usr/bin:/bin: no CUDA variables, no /usr/local."""
    env = {k: v for k, v in os.environ.items() if k not in CUDA_FREE_ENV_KEYS and not k.startswith("CONDA")}
    env.update(PATH=f"{prefix}/bin:/usr/bin:/bin", HOME=str(tmp), TMPDIR=str(tmp))
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    return env


def _names(records: list) -> dict[str, object]:
    return {rec.name.normalized: rec for rec in records}


# -- the channel -------------------------------------------------------------------------------------
def test_channel_is_cached_by_its_inputs(conda_channel: Path) -> None:
    python = tc.find_source_python()
    assert conda_channel.name == f"toolchain-{tc.channel_key(python)}"
    assert (conda_channel / ".ready").is_file()
    for subdir in ("linux-64", "noarch"):
        assert (conda_channel / subdir / "repodata.json").is_file()
    ready = (conda_channel / ".ready").stat().st_mtime_ns
    assert tc.cached_channel() == conda_channel  # a second call reuses, does not rebuild
    assert (conda_channel / ".ready").stat().st_mtime_ns == ready
    info = tc.channel_info(conda_channel)
    assert info["python"] == python.version and info["toolkit"]["nvcc"] == tc.TOOLKIT.nvcc
    print(f"\nchannel build seconds (cold, recorded): {info.get('build_seconds')} {info['seconds']}")


def test_key_changes_with_the_inputs() -> None:
    python = tc.find_source_python()
    other = tc.Toolkit(nvcc="13.0.99")
    assert tc.channel_key(python) != tc.channel_key(python, other)


def test_records_carry_conda_forge_metadata(conda_channel: Path) -> None:
    records = {}
    for subdir in ("linux-64", "noarch"):
        data = json.loads((conda_channel / subdir / "repodata.json").read_text())
        for rec in data["packages.conda"].values():
            records[rec["name"]] = rec
    pin = "cuda-version >=13.0,<13.1.0a0"

    python = records["python"]
    assert re.fullmatch(r"h[0-9a-f]{7}_0_cpython", python["build"]), python["build"]
    assert python["constrains"] == ["python_abi 3.11.* *_cp311"]
    assert python["depends"] == [f"__glibc >={tc.channel_info(conda_channel)['python_glibc_floor']},<3.0.a0"]
    abi = records["python_abi"]
    assert (abi["version"], abi["build"], abi["noarch"]) == ("3.11", "8_cp311", "generic")
    assert abi["constrains"] == ["python 3.11.* *_cpython"]
    assert records["pip"]["noarch"] == "python" and {"setuptools", "wheel"} <= set(records["pip"]["depends"])

    version = records["cuda-version"]
    assert (version["version"], version["build_number"], version["noarch"]) == ("13.0", 3, "generic")
    assert "__cuda >=13" in version["constrains"] and not version.get("depends")
    assert records["cuda-nvcc"]["depends"] == ["cuda-nvcc_linux-64 13.0.88.*"]
    assert "cuda-nvcc-tools 13.0.88.*" in records["cuda-nvcc_linux-64"]["depends"]
    assert "cuda-cudart-dev_linux-64 13.0.*" in records["cuda-nvcc_linux-64"]["depends"]
    for name in ("cuda-nvcc-tools", "cuda-nvcc-impl", "cuda-nvcc-dev_linux-64", "cuda-crt-tools",
                 "cuda-crt-dev_linux-64", "cuda-nvvm-tools", "cuda-nvvm-impl", "cuda-nvvm-dev_linux-64",
                 "cuda-cudart", "cuda-cudart-dev", "cuda-cudart-dev_linux-64", "cuda-cudart_linux-64",
                 "cuda-cudart-static", "cuda-cudart-static_linux-64", "cuda-cccl", "cuda-cccl_linux-64"):
        assert pin in records[name]["depends"], name
        assert not any(d.startswith("__cuda") for d in records[name]["depends"]), name
    assert "gcc_impl_linux-64 >=6,<16.0a0" in records["cuda-nvcc-tools"]["constrains"]
    assert records["cuda-nvcc-dev_linux-64"]["noarch"] == "generic"
    assert any(d.startswith("cuda-nvvm-tools ==13.0.88 ") for d in records["cuda-nvcc-tools"]["depends"])


# -- solve + install ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def toolchain_prefix(conda_channel: Path, tmp_path_factory) -> Path:
    """python 3.11 + pip + the CUDA 13.0 compiler, solved for a CUDA 13.0 machine and installed."""
    base = tmp_path_factory.mktemp("toolchain")
    started = time.monotonic()
    records = _solve(conda_channel, ["python 3.11.*", "pip", "cuda-nvcc", "cuda-version 13.0.*", "cuda-cudart-dev"],
                     glibc=_host_glibc(), cuda="13.0")
    solved = time.monotonic()
    _install(records, base / "env", base / "pkgs")
    print(f"\nsolve {solved - started:.2f} s, install {time.monotonic() - solved:.2f} s, {len(records)} packages")
    return base / "env"


def test_prefix_has_conda_meta_for_every_package(toolchain_prefix: Path) -> None:
    metas = {json.loads(p.read_text())["name"] for p in (toolchain_prefix / "conda-meta").glob("*.json")}
    assert {"python", "pip", "setuptools", "wheel", "cuda-version", "cuda-nvcc", "cuda-nvcc_linux-64",
            "cuda-nvcc-tools", "cuda-nvcc-impl", "cuda-nvcc-dev_linux-64", "cuda-crt-tools", "cuda-crt-dev_linux-64",
            "cuda-nvvm-tools", "cuda-nvvm-impl", "cuda-nvvm-dev_linux-64", "cuda-cudart", "cuda-cudart-dev",
            "cuda-cudart-dev_linux-64", "cuda-cccl_linux-64"} <= metas


def test_python_is_the_prefixs_own(toolchain_prefix: Path, tmp_path: Path) -> None:
    env = _clean_env(toolchain_prefix, tmp_path)
    python = toolchain_prefix / "bin" / "python"
    done = subprocess.run([str(python), "-c", "import sys, ssl, sqlite3, ctypes, sysconfig; "
                           "print(sys.prefix); print(sysconfig.get_config_var('prefix')); "
                           "print(sysconfig.get_paths()['include'])"],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    prefix, config_prefix, include = done.stdout.split()
    assert Path(prefix) == toolchain_prefix and Path(config_prefix) == toolchain_prefix
    assert (Path(include) / "Python.h").is_file()
    linked = subprocess.run(["ldd", str(toolchain_prefix / "bin" / "python3.11")], capture_output=True, text=True)
    assert f"{toolchain_prefix}/bin/../lib/libpython3.11.so.1.0" in linked.stdout or \
        f"{toolchain_prefix}/lib/libpython3.11.so.1.0" in linked.stdout, linked.stdout


def test_pip_installs_a_wheel_into_the_prefix(toolchain_prefix: Path, tmp_path: Path) -> None:
    env = _clean_env(toolchain_prefix, tmp_path)
    python = str(toolchain_prefix / "bin" / "python")
    done = subprocess.run([python, "-m", "pip", "--version"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and f"pip {tc.PYTHON_TOOLS['pip']} from {toolchain_prefix}" in done.stdout, done
    entry = subprocess.run([str(toolchain_prefix / "bin" / "pip"), "--version"], env=env,
                           capture_output=True, text=True)
    assert entry.returncode == 0 and str(toolchain_prefix) in entry.stdout, entry
    wheel = cf.write_wheel(tmp_path / "wheels", "tc-probe", "1.0.0", {"tc_probe/__init__.py": "VALUE = 'probe ok'\n"})
    done = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check",
                           str(wheel)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([python, "-c", "import tc_probe; print(tc_probe.VALUE, tc_probe.__file__)"],
                          env=env, capture_output=True, text=True)
    assert done.stdout.startswith(f"probe ok {toolchain_prefix}/lib/python3.11/site-packages/"), done


def test_nvcc_compiles_and_links_from_the_prefix_alone(toolchain_prefix: Path, tmp_path: Path) -> None:
    env = _clean_env(toolchain_prefix, tmp_path)
    nvcc = toolchain_prefix / "bin" / "nvcc"
    version = subprocess.run([str(nvcc), "--version"], env=env, capture_output=True, text=True)
    assert version.returncode == 0 and "release 13.0" in version.stdout, version
    source = tmp_path / "probe.cu"
    source.write_text(CU_SOURCE)

    dry = subprocess.run([str(nvcc), "--dryrun", "-arch=sm_90", "-c", str(source), "-o", str(tmp_path / "probe.o")],
                         env=env, capture_output=True, text=True, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "/usr/local/cuda" not in dry.stderr + dry.stdout
    assert f"{toolchain_prefix}/bin/../{TARGET}/include" in dry.stderr
    assert f"{toolchain_prefix}/bin/../{TARGET}/include/cccl" in dry.stderr
    settings = dict(line[3:].split("=", 1) for line in dry.stderr.splitlines()
                    if re.match(r"#\$ [A-Z_]+=", line))
    assert settings["CICC_PATH"] == f"{toolchain_prefix}/bin/../{TARGET}/nvvm/bin"
    assert settings["NVVMIR_LIBRARY_DIR"] == f"{toolchain_prefix}/bin/../{TARGET}/nvvm/libdevice"
    assert '"$CICC_PATH/cicc"' in dry.stderr
    assert (toolchain_prefix / TARGET / "nvvm" / "bin" / "cicc").resolve() == \
        (toolchain_prefix / "nvvm" / "bin" / "cicc").resolve()

    done = subprocess.run([str(nvcc), "-arch=sm_90", "-c", str(source), "-o", str(tmp_path / "probe.o")],
                          env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    sections = subprocess.run(["readelf", "-S", str(tmp_path / "probe.o")], capture_output=True, text=True).stdout
    assert ".nv_fatbin" in sections

    done = subprocess.run([str(nvcc), "-arch=sm_90", str(tmp_path / "probe.o"), "-o", str(tmp_path / "probe")],
                          env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ran = subprocess.run([str(tmp_path / "probe")], env=env, capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.startswith("runtime 13000 "), ran


def test_activation_script_sets_conda_forges_variables(toolchain_prefix: Path, tmp_path: Path) -> None:
    activate = toolchain_prefix / "etc" / "conda" / "activate.d" / "~cuda-nvcc_activate.sh"
    deactivate = toolchain_prefix / "etc" / "conda" / "deactivate.d" / "~cuda-nvcc_deactivate.sh"
    env = _clean_env(toolchain_prefix, tmp_path) | {"CONDA_PREFIX": str(toolchain_prefix), "CXX": "g++"}
    script = (f'. "{activate}" && echo "flags=$NVCC_PREPEND_FLAGS" && echo "cxx=$CXXFLAGS" && '
              f'. "{deactivate}" && echo "after=${{NVCC_PREPEND_FLAGS-unset}}"')
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert lines["flags"].split() == ["-ccbin=g++"]
    assert f"-I{toolchain_prefix}/{TARGET}/include" in lines["cxx"].split()
    assert lines["after"] == "unset"
    env.pop("CXX")
    done = subprocess.run(["bash", "-c", f'. "{activate}"'], env=env, capture_output=True, text=True)
    assert done.returncode != 0 and "CXX" in done.stderr


# -- solves that say what the packages require -------------------------------------------------------
def test_toolkit_installs_without_a_cuda_driver(conda_channel: Path, tmp_path: Path) -> None:
    """conda-forge's cuda-version only *constrains* __cuda, so no driver is needed to compile; pixi's
    default __glibc 2.28 is enough for the toolkit."""
    records = _solve(conda_channel, ["cuda-nvcc", "cuda-version 13.0.*", "cuda-cudart-dev"], glibc="2.28", cuda=None)
    names = _names(records)
    assert {"cuda-nvcc", "cuda-nvcc-tools", "cuda-cudart-dev", "cuda-version"} <= set(names)
    assert str(names["cuda-version"].version) == "13.0"
    _install(records, tmp_path / "env", tmp_path / "pkgs")
    done = subprocess.run([str(tmp_path / "env" / "bin" / "nvcc"), "--version"],
                          env=_clean_env(tmp_path / "env", tmp_path), capture_output=True, text=True)
    assert done.returncode == 0 and "release 13.0" in done.stdout


def test_an_older_driver_is_refused_by_cuda_version(conda_channel: Path) -> None:
    from rattler.exceptions import SolverError

    with pytest.raises(SolverError, match="__cuda"):
        _solve(conda_channel, ["cuda-nvcc", "cuda-version 13.0.*"], glibc="2.28", cuda="12.4")


def test_python_needs_the_glibc_it_was_built_for(conda_channel: Path) -> None:
    """The repackaged interpreter is this machine's, so below its glibc floor there is no python."""
    from rattler.exceptions import SolverError

    floor = tc.channel_info(conda_channel)["python_glibc_floor"]
    assert tuple(map(int, floor.split("."))) > (2, 17)
    with pytest.raises(SolverError, match="__glibc"):
        _solve(conda_channel, ["python 3.11.*"], glibc="2.17", cuda=None)


def test_pip_comes_with_python_only_when_asked(conda_channel: Path) -> None:
    """As with conda-forge: python has no pip inside; ask for pip, or let the solver add it."""
    plain = _names(_solve(conda_channel, ["python 3.11.*"], glibc=_host_glibc(), cuda=None))
    assert "pip" not in plain and "python_abi" not in plain
    added = _names(_solve(conda_channel, ["python 3.11.*"], glibc=_host_glibc(), cuda=None,
                          add_pip_as_python_dependency=True))
    assert {"pip", "setuptools", "wheel"} <= set(added)


def test_torch_extension_headers_need_exactly_three_library_dev_packages(toolchain_prefix: Path, other_torch_env: Path,
                                                                         tmp_path: Path) -> None:
    """The fact behind [[cuda_toolkit_package]] libcublas-dev / libcusparse-dev / libcusolver-dev: with the
    toolkit from the prefix, the headers mamba-ssm and causal-conv1d include from torch need exactly
    these library headers (taken here from the torch venv's NVIDIA wheels) and nothing else."""
    site = next(other_torch_env.glob("lib/python3.*/site-packages"))
    torch_include = site / "torch" / "include"
    wheel_includes = sorted(site.glob("nvidia/*/include"))
    assert wheel_includes, "torch's CUDA wheels bring their headers under nvidia/*/include"
    toolkit_include = toolchain_prefix / TARGET / "include"
    extra = tmp_path / "library-headers"  # only what the toolkit packages do not have
    extra.mkdir()
    for header in (h for folder in wheel_includes for h in folder.iterdir()):
        if not (toolkit_include / header.name).exists() and not (extra / header.name).exists():
            (extra / header.name).symlink_to(header)
    source = tmp_path / "ext.cu"
    source.write_text("#include <c10/util/BFloat16.h>\n#include <c10/cuda/CUDAException.h>\n"
                      "#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAGuard.h>\n"
                      "#include <torch/extension.h>\n#include <cub/block/block_load.cuh>\n"
                      "#include <cub/block/block_scan.cuh>\n")
    base = [str(toolchain_prefix / "bin" / "nvcc"), "-std=c++20", "-M", "-arch=sm_90", f"-I{torch_include}",
            f"-I{torch_include}/torch/csrc/api/include", f"-I{toolchain_prefix}/include/python3.11", str(source)]
    env = _clean_env(toolchain_prefix, tmp_path)
    without = subprocess.run(base, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert without.returncode != 0 and "cusparse.h: No such file" in without.stderr, without.stderr[-2000:]
    done = subprocess.run([*base, f"-I{extra}"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    used = {Path(p).name for p in done.stdout.replace("\\\n", " ").split() if p.startswith(f"{extra}/")}
    assert used == {"cublas_v2.h", "cublas_api.h", "cublasLt.h", "cusparse.h", "cusolverDn.h", "cusolver_common.h"}
    assert "/usr/local/cuda" not in done.stdout
