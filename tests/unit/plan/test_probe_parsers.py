"""Each parser against real tool output, quoted from public reports (the source is noted at each sample)."""

from __future__ import annotations

import pytest

from resolver.plan.probe import amd_parse, host, nvidia_parse, toolkits
from resolver.plan.probe.amd_parse import AmdAgent
from resolver.plan.probe.nvidia_parse import QUERY_FIELDS, QUERY_FIELDS_OLD

# ------------------------------------------------------------------------------------------- NVIDIA

# https://github.com/triton-inference-server/server/pull/8070 (`--format=csv`, header included)
TRITON_CSV = """compute_cap, compute_mode, driver_version, name, index
7.0, Default, 570.86.15, NVIDIA TITAN V, 0
8.9, Default, 570.86.15, NVIDIA RTX 5880 Ada Generation, 1
"""


def test_query_csv_with_compute_cap_and_header_line() -> None:
    rows = nvidia_parse.parse_query_csv(TRITON_CSV, ("compute_cap", "compute_mode", "driver_version", "name", "index"))
    assert [(r["name"], r["compute_cap"], r["driver_version"]) for r in rows] == [
        ("NVIDIA TITAN V", "7.0", "570.86.15"), ("NVIDIA RTX 5880 Ada Generation", "8.9", "570.86.15")]


def test_query_csv_in_the_probes_field_order_with_missing_values() -> None:
    text = "NVIDIA GeForce RTX 3090, 8.6, 595.71.05, 24576 MiB, [N/A]\n\n"
    (row,) = nvidia_parse.parse_query_csv(text, QUERY_FIELDS)
    assert row == {"name": "NVIDIA GeForce RTX 3090", "compute_cap": "8.6", "driver_version": "595.71.05",
                   "memory.total": "24576 MiB", "uuid": None}
    assert nvidia_parse.parse_memory_mib(row["memory.total"]) == 24576
    assert nvidia_parse.parse_memory_mib(None) is None


def test_query_csv_without_compute_cap() -> None:
    (row,) = nvidia_parse.parse_query_csv("GeForce GTX 1080 Ti, 460.56, 11178 MiB, GPU-4d0faadf-72fd-2360-2f5b-02126199ef87\n",
                                          QUERY_FIELDS_OLD)
    assert row["name"] == "GeForce GTX 1080 Ti" and row["uuid"].startswith("GPU-4d0f") and "compute_cap" not in row


def test_query_csv_ignores_lines_of_the_wrong_shape() -> None:
    assert nvidia_parse.parse_query_csv("No devices were found\n", QUERY_FIELDS) == []


@pytest.mark.parametrize("output", [
    # https://github.com/canonical/inference-snaps/issues/128 and huggingface/candle#733 (driver 470.182.03)
    'Field "compute_cap" is not a valid field to query.\n',
])
def test_unsupported_field_message(output: str) -> None:
    assert nvidia_parse.unsupported_field(output)
    assert not nvidia_parse.unsupported_field("NVIDIA H100 80GB HBM3, 9.0, 550.54.15, 81559 MiB, GPU-1\n")


@pytest.mark.parametrize("header,expected", [
    # https://github.com/Frogging-Family/nvidia-all/pull/212
    ("| NVIDIA-SMI 550.40.07              Driver Version: 550.40.07      CUDA Version: 12.4     |", ("550.40.07", "12.4")),
    # WSL: nvidia-smi's own version differs from the Windows driver's (microsoft/WSL#11277)
    ("| NVIDIA-SMI 555.52.01              Driver Version: 555.99         CUDA Version: 12.5     |", ("555.99", "12.5")),
    # WSL with a broken CUDA report (microsoft/WSL#11589)
    ("| NVIDIA-SMI 545.46                 Driver Version: 546.80       CUDA Version: ERR!     |", ("546.80", None)),
    # FreeBSD shim, no CUDA (shkhln/libc6-shim#14)
    ("| NVIDIA-SMI 575.64.03              Driver Version: 575.64.03      CUDA Version: N/A      |", ("575.64.03", None)),
    # 2014 nvidia-smi, no CUDA column at all (cBio/cbio-cluster#38)
    ("| NVIDIA-SMI 331.62     Driver Version: 331.62         |", ("331.62", None)),
    # driver 595 reports CUDA 13.2 (noonghunna/club-3090#617)
    ("| NVIDIA-SMI 595.71.05              Driver Version: 595.71.05      CUDA Version: 13.2     |", ("595.71.05", "13.2")),
])
def test_smi_header(header: str, expected: tuple) -> None:
    assert nvidia_parse.parse_smi_header(header) == expected


@pytest.mark.parametrize("text,expected", [
    # proprietary module (dylanaraps/neofetch#876)
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.98  Thu Oct 26 15:16:01 PDT 2017\n"
     "GCC version:  gcc version 7.2.0 (Ubuntu 7.2.0-8ubuntu3) \n", "384.98"),
    # zero-padded build number (zzzhouuu/truenas-nvidia-drivers#19)
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.173.02  Tue Jun 23 08:38:17 UTC 2026\n", "580.173.02"),
    # open kernel module (nix-community/nixGL#186)
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (dvs-builder@U16-A24-9-2)  "
     "Thu Oct 10 12:15:00 UTC 2024\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n", "565.57.01"),
    # Jetson (nix-community/nixGL#139): an L4T release number
    ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  35.3.1  Release Build  (buildbrain@mobile-u64-6289-d7000)"
     "  Sun Mar 19 08:09:33 PDT 2023\n", "35.3.1"),
    ("garbage\n", None),
])
def test_proc_driver_version(text: str, expected: str | None) -> None:
    assert nvidia_parse.parse_proc_version(text) == expected


def test_module_version() -> None:
    assert nvidia_parse.parse_module_version("550.54.15\n") == "550.54.15"
    assert nvidia_parse.parse_module_version("") is None


def test_gpu_information_file() -> None:
    # https://github.com/canonical/lxd/issues/3950 (an old driver: no Device Minor line)
    text = ("Model:           GeForce GTX 650\nIRQ:             44\n"
            "GPU UUID:        GPU-e3f822b9-8c5f-95a5-b379-8dfdeefd7758\nVideo BIOS:      80.07.35.00.80\n"
            "Bus Type:        PCIe\nDMA Size:        40 bits\nDMA Mask:        0xffffffffff\nBus Location:    0000:04:00.0\n")
    info = nvidia_parse.parse_gpu_information(text)
    assert info["Model"] == "GeForce GTX 650"
    assert info["GPU UUID"] == "GPU-e3f822b9-8c5f-95a5-b379-8dfdeefd7758"
    assert info["Bus Location"] == "0000:04:00.0"


# ---------------------------------------------------------------------------------------------- AMD

# https://github.com/ROCm/aiter/issues/179 (MI250X) and lamikr/rocm_sdk_builder#180 (the CPU agent)
ROCMINFO = """ROCk module version 6.10.5 is loaded
=====================
HSA System Attributes
=====================
Runtime Version:         1.14
==========
HSA Agents
==========
*******
Agent 1
*******
  Name:                    AMD Ryzen 9 5950X 16-Core Processor
  Uuid:                    CPU-XX
  Marketing Name:          AMD Ryzen 9 5950X 16-Core Processor
  Vendor Name:             CPU
  Device Type:             CPU
*******
Agent 16
*******
  Name:                    gfx90a
  Uuid:                    GPU-124d13ccd7b050e5
  Marketing Name:          AMD Instinct MI250X/MI250
  Vendor Name:             AMD
  Feature:                 KERNEL_DISPATCH
  Node:                    15
  Device Type:             GPU
  Cache Info:
    L1:                      16(0x10) KB
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-
"""


def test_rocminfo_keeps_gpu_agents_and_their_own_name() -> None:
    assert amd_parse.parse_rocminfo(ROCMINFO) == [AmdAgent("AMD Instinct MI250X/MI250", "gfx90a")]


def test_rocminfo_blank_marketing_name() -> None:
    # ROCm 5.x printed no marketing name for MI100/MI200 (https://github.com/ROCm/legacy-rocm-build/issues/1778)
    text = "*******\nAgent 2\n*******\n  Name:                    gfx90a\n  Marketing Name:          \n  Device Type:             GPU\n"
    assert amd_parse.parse_rocminfo(text) == [AmdAgent(None, "gfx90a")]


def test_rocminfo_without_gpu_agents() -> None:
    assert amd_parse.parse_rocminfo(ROCMINFO.split("*******\nAgent 16")[0]) == []
    assert amd_parse.parse_rocminfo("hsa api call failure at: rocminfo.cc:1306\n") == []


# amd-smi static of an MI325X VF as printed in a public ROCm tools README (found by content search)
AMD_SMI_STATIC = """GPU: 0
    ASIC:
        MARKET_NAME: AMD Instinct Mi325X VF
        VENDOR_ID: 0x1002
        VENDOR_NAME: Advanced Micro Devices Inc. [AMD/ATI]
        DEVICE_ID: 0x74b9
        NUM_COMPUTE_UNITS: 304
        TARGET_GRAPHICS_VERSION: gfx942
    BUS:
        BDF: 0000:83:00.0
        SLOT_TYPE: OAM
"""


def test_amd_smi_static() -> None:
    assert amd_parse.parse_amd_smi_static(AMD_SMI_STATIC) == [AmdAgent("AMD Instinct Mi325X VF", "gfx942")]


def test_amd_smi_static_missing_values() -> None:
    text = "GPU: 0\n    ASIC:\n        MARKET_NAME: N/A\n        TARGET_GRAPHICS_VERSION: N/A\nGPU: 1\n    ASIC:\n" \
           "        MARKET_NAME:\n        TARGET_GRAPHICS_VERSION: gfx1100\n"
    assert amd_parse.parse_amd_smi_static(text) == [AmdAgent(None, None), AmdAgent(None, "gfx1100")]


def test_amd_smi_rocm_version() -> None:
    # the banner line of amd-smi (ROCm docs, "AMD SMI CLI tool usage", docs-6.4.2)
    banner = "AMD System Management Interface | Version: 25.5.1 | ROCm version: 6.4.2 | Platform: Linux Baremetal"
    assert amd_parse.parse_amd_smi_rocm_version(banner) == "6.4.2"
    assert amd_parse.parse_amd_smi_rocm_version("AMDSMI Tool: 24.6.2+2b02a07 | ROCm version: N/A") is None


@pytest.mark.parametrize("text,expected", [("6.0.2-115\n", "6.0.2"), ("5.7.0\n", "5.7.0"), ("6.4\n", "6.4"), ("", None)])
def test_rocm_version_file(text: str, expected: str | None) -> None:
    assert amd_parse.parse_rocm_version_file(text) == expected


def test_rocm_version_header() -> None:
    text = "#define ROCM_VERSION_MAJOR   6\n#define ROCM_VERSION_MINOR   2\n#define ROCM_VERSION_PATCH   4\n"
    assert amd_parse.parse_rocm_version_header(text) == "6.2.4"
    assert amd_parse.parse_rocm_version_header("#define ROCM_VERSION_MAJOR 6\n") is None


def test_kfd_properties() -> None:
    # the node line quoted in ROCm/rocm-cli#343 (an MI300X): `gfx_target_version 90402`
    props = amd_parse.parse_kfd_properties("cpu_cores_count 0\nsimd_count 1216\ngfx_target_version 90402\n"
                                           "drm_render_minor 128\nname junk words here\n")
    assert props == {"cpu_cores_count": 0, "simd_count": 1216, "gfx_target_version": 90402, "drm_render_minor": 128}


def test_hipcc_version() -> None:
    # HIP version string of ROCm 6.0 (IDEA-Research/GroundingDINO#328) in hipcc's `HIP version:` line
    text = "HIP version: 6.0.32830-d62f6a171\nAMD clang version 17.0.0 (https://github.com/RadeonOpenCompute/llvm-project roc-6.0.0)\n"
    assert amd_parse.parse_hipcc_version(text) == "6.0.32830"
    assert amd_parse.parse_hipcc_version("clang version 17\n") is None


# --------------------------------------------------------------------------------------------- host

def test_nvcc_version() -> None:
    # https://github.com/vllm-project/vllm/issues/4066
    text = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2021 NVIDIA Corporation\n"
            "Built on Mon_May__3_19:15:13_PDT_2021\nCuda compilation tools, release 11.3, V11.3.109\n"
            "Build cuda_11.3.r11.3/compiler.29920130_0\n")
    assert toolkits.parse_nvcc_version(text) == "11.3.109"
    assert toolkits.parse_nvcc_version("Cuda compilation tools, release 11.3") == "11.3"
    assert toolkits.parse_nvcc_version("nvcc fatal   : No input files specified") is None


@pytest.mark.parametrize("text,expected", [
    # distribution spellings of ldd's first line, and musl's ldd (which names no glibc)
    ("ldd (Ubuntu GLIBC 2.35-0ubuntu3.6) 2.35\nCopyright (C) 2022 Free Software Foundation, Inc.\n", "2.35"),
    ("ldd (GNU libc) 2.17\nCopyright (C) 2012 Free Software Foundation, Inc.\n", "2.17"),
    ("ldd (Debian GLIBC 2.36-9+deb12u14) 2.36\n", "2.36"),
    ("musl libc (x86_64)\nVersion 1.2.4\nDynamic Program Loader\n", None),
])
def test_ldd_version(text: str, expected: str | None) -> None:
    assert host.parse_ldd_version(text) == expected


@pytest.mark.parametrize("system,machine,expected", [
    ("Linux", "x86_64", "linux-64"), ("Linux", "aarch64", "linux-aarch64"), ("Linux", "ppc64le", "linux-ppc64le"),
    ("Darwin", "arm64", "osx-arm64"), ("Darwin", "x86_64", "osx-64"), ("Windows", "AMD64", "win-64"),
    ("Windows", "ARM64", "win-arm64"), ("Linux", "riscv64", None), ("FreeBSD", "amd64", None),
])
def test_conda_subdir(system: str, machine: str, expected: str | None) -> None:
    assert host.conda_subdir(system, machine) == expected


def test_ldd_version_of_this_machine() -> None:
    import shutil
    import subprocess

    if shutil.which("ldd") is None:
        pytest.skip("no ldd here")
    out = subprocess.run(["ldd", "--version"], capture_output=True, text=True)
    version = host.parse_ldd_version(out.stdout or out.stderr)
    import os

    assert version is None or os.confstr("CS_GNU_LIBC_VERSION") == f"glibc {version}"
