"""Forms and wrappings the paste corpus has no public thread for, each in the shape its tool prints:
``hipInfo``, ``rocm-smi -a`` (``GPU ID``) and ``--csv``, Windows ``nvidia-smi`` (WDDM), ``nvidia-smi topo -m``,
``nvcc --list-gpu-arch``, a prompt and timestamps, HTML escapes, and what must never be read as a GPU."""

from __future__ import annotations

import pytest

from resolver.core.errors import BadInput
from resolver.plan.probe.paste_forms import forms_naming_no_gpu, read_hipinfo
from resolver.plan.probe.report import profile_from_report
from resolver.plan.probe.tolerant import read_facts

HIPINFO = """\
--------------------------------------------------------------------------------
device#                           0
Name:                             AMD Radeon RX 7900 XTX
pciBusID:                         3
gcnArchName:                      gfx1100
totalGlobalMem:                   23.98 GB
--------------------------------------------------------------------------------
device#                           1
Name:                             AMD Radeon Pro W7800
gcnArchName:                      gfx1100
"""

ROCM_SMI_A = """\
========================================= ROCm System Management Interface =========================================
=================================================== ID ===================================================
GPU[0]          : GPU ID: 0x74a1
GPU[1]          : GPU ID: 0x74a1
=========================================== Product Info ===========================================
GPU[0]          : Card Vendor:          Advanced Micro Devices, Inc. [AMD/ATI]
GPU[1]          : Card Vendor:          Advanced Micro Devices, Inc. [AMD/ATI]
"""

ROCM_SMI_CSV = """\
$ rocm-smi --showproductname --csv
device,Card series,Card model,Card vendor,Card SKU
card0,Aldebaran/MI200 [Instinct MI250X/MI250],0x0b0c,Advanced Micro Devices Inc. [AMD/ATI],D65201
card1,Aldebaran/MI200 [Instinct MI250X/MI250],0x0b0c,Advanced Micro Devices Inc. [AMD/ATI],D65201
"""

WDDM = """\
PS C:\\Users\\me> nvidia-smi
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 566.36                 Driver Version: 566.36         CUDA Version: 12.7     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                  Driver-Model | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4080 ...  WDDM  |   00000000:01:00.0  On |                  N/A |
|  0%   41C    P8             12W /  320W |    1369MiB /  16376MiB |      4%      Default |
+-----------------------------------------+------------------------+----------------------+
"""


def gpus(text: str) -> list[tuple[str, str]]:
    profile = profile_from_report(text)
    found = [(g.name, str(g.compute_capability)) for g in (profile.nvidia.gpus if profile.nvidia else ())]
    return found + [(g.name, str(g.gfx_arch)) for g in (profile.amd.gpus if profile.amd else ())]


def test_hipinfo_names_each_device_and_its_target() -> None:
    assert [(a.name, a.gfx) for a in read_hipinfo(HIPINFO)] == [
        ("AMD Radeon RX 7900 XTX", "gfx1100"), ("AMD Radeon Pro W7800", "gfx1100")]
    assert gpus(HIPINFO) == [("AMD Radeon RX 7900 XTX", "gfx1100"), ("AMD Radeon Pro W7800", "gfx1100")]


def test_rocm_smi_a_gpu_id_places_each_card() -> None:
    assert [arch for _, arch in gpus(ROCM_SMI_A)] == ["gfx942", "gfx942"]


def test_rocm_smi_csv_one_gpu_a_card_row() -> None:
    assert [arch for _, arch in gpus(ROCM_SMI_CSV)] == ["gfx90a", "gfx90a"]


def test_windows_nvidia_smi_wddm() -> None:
    profile = profile_from_report(WDDM)
    assert str(profile.nvidia.driver_version) == "566.36" and str(profile.nvidia.cuda_driver_version) == "12.7"
    assert [str(g.compute_capability) for g in profile.nvidia.gpus] == ["8.9"]


@pytest.mark.parametrize("text", [
    "$ nvcc --list-gpu-arch\ncompute_50\ncompute_52\ncompute_53\ncompute_60\ncompute_90\ncompute_120\n",
    "$ nvidia-smi topo -m\n        GPU0    GPU1    CPU Affinity\nGPU0     X      NV12    0-63\nGPU1    NV12     X      0-63\n",
])
def test_forms_naming_no_gpu_are_recognised_and_name_none(text: str) -> None:
    assert forms_naming_no_gpu(text)
    profile = profile_from_report(text)
    assert profile.nvidia is None and profile.amd is None
    assert any("names no GPU model" in note for note in profile.notes)


def test_prompt_timestamps_and_html_escapes_are_only_text_around_a_fact() -> None:
    text = ("&gt; 2025-03-01T10:00:01Z [INFO] user@host:~$ detected GPU: NVIDIA L40S &amp; driver version 550.54.14\n"
            "<details><summary>env</summary>\n<code>ROCm version: 6.2.4</code></details>\n")
    facts = read_facts(text)
    (gpu,) = facts.gpus("nvidia")
    assert (gpu.arch, gpu.line) == ("8.9", 1)
    assert (facts.first("driver").value, facts.first("driver").line) == ("550.54.14", 1)
    assert (facts.first("rocm").value, facts.first("rocm").line) == ("6.2.4", 3)


@pytest.mark.parametrize("text", [
    "PYTORCH_ROCM_ARCH=gfx900;gfx906;gfx908;gfx90a;gfx1030\n",  # a list of build targets
    "--offload-arch=gfx942\n",
    "Subsystem: Advanced Micro Devices, Inc. [AMD/ATI] Device [1002:0b0c]\n",
    "torch 2.6.0+rocm6.2 installed\n",  # torch's build tag is not the installed ROCm
    "CPU: AMD Ryzen 9 7950X3D 16-Core Processor\n",
])
def test_what_names_no_gpu_of_this_machine_is_not_read_as_one(text: str) -> None:
    facts = read_facts(text)
    assert facts.gpus("nvidia") == () and facts.gpus("amd") == () and facts.first("rocm") is None


def test_a_capability_list_is_not_the_gpus_capability() -> None:
    text = "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible. Supported: sm_50 sm_90\n"
    assert [g.arch for g in read_facts(text).gpus("nvidia")] == ["12.0"]


def test_a_paste_stating_nothing_is_refused_in_one_sentence_with_the_fix() -> None:
    with pytest.raises(BadInput) as caught:
        profile_from_report("hello, my GPU does not work, please help\n")
    assert "paste what one of these printed" in str(caught.value)


def test_a_log_repeating_a_name_is_one_gpu() -> None:
    log = "".join(f"step {i}: loss 0.{i}\n[rank0] running on NVIDIA A100-SXM4-80GB\n\n\n" for i in range(30))
    assert [g.arch for g in read_facts(log).gpus("nvidia")] == ["8.0"]


def test_a_form_wins_over_a_long_log_naming_its_gpu() -> None:
    text = ("|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |\n"
            + "".join(f"[rank{i}] device NVIDIA H100 80GB HBM3\n" for i in range(128)))
    profile = profile_from_report(text)
    assert [str(g.compute_capability) for g in profile.nvidia.gpus] == ["9.0"]
    assert "report: tolerant reader" not in profile.sources
