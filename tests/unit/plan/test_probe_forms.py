"""Every output form the probe reads, each against real output quoted from a public report (cited at
each sample; lines are verbatim, and a sample that is an excerpt says so)."""

from __future__ import annotations

from pathlib import Path

from support import DATA

from resolver.plan.probe import amd_parse, nvidia_parse
from resolver.plan.probe.amd_parse import AmdAgent
from resolver.plan.probe.collect_env import parse_collect_env
from resolver.plan.probe.findings import Findings
from resolver.plan.probe.name_table import NameTable
from resolver.plan.probe.nvidia import NvidiaFacts
from resolver.plan.probe.nvidia_parse import GpuSeen, NvidiaReading

REPORTS = DATA / "machines"  # report-*.txt: pasted reports, cited in report-sources.md

# ------------------------------------------------------------------------------ plain nvidia-smi

# https://github.com/FoldingAtHome/fah-issues/issues/1557: the old (pre-520) layout; nvidia-smi's own
# version (450.66) differs from the driver's (418.67), and the driver is what counts.
OLD_LAYOUT = """\
| NVIDIA-SMI 450.66       Driver Version: 418.67       CUDA Version: 10.1     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  Tesla T4            Off  | 00000000:00:04.0 Off |                    0 |
| N/A   77C    P0    68W /  70W |    163MiB / 15079MiB |     95%      Default |
|                               |                      |                 ERR! |
+-------------------------------+----------------------+----------------------+
"""

# https://github.com/rossumai/nvgpu/pull/15 (driver 450.57, the old layout with persistence "On")
OLD_LAYOUT_ON = """\
| NVIDIA-SMI 450.57       Driver Version: 450.57       CUDA Version: 11.0     |
|===============================+======================+======================|
|   0  TITAN Xp            On   | 00000000:17:00.0 Off |                  N/A |
| 23%   39C    P8     9W / 250W |      7MiB / 12196MiB |      0%      Default |
"""

# https://github.com/projectbluefin/finpilot/issues/160 (610.43.03): the name is cut to fit its column
CUT_NAME = """\
| NVIDIA-SMI 610.43.03              KMD Version: 610.43.03     CUDA UMD Version: 13.3     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 3080 ...    Off |   00000000:01:00.0 Off |                  N/A |
| N/A   40C    P0            751W /   80W |      14MiB /  16384MiB |      6%      Default |
"""


def test_plain_table_old_layout() -> None:
    reading = nvidia_parse.read_smi_plain(OLD_LAYOUT)
    assert (reading.driver, reading.cuda) == ("418.67", "10.1")
    assert reading.gpus == (GpuSeen("Tesla T4", memory_mib=15079),)
    assert nvidia_parse.parse_smi_table(OLD_LAYOUT_ON) == [GpuSeen("TITAN Xp", memory_mib=12196)]


def test_plain_table_new_header_and_a_name_cut_short() -> None:
    reading = nvidia_parse.read_smi_plain(CUT_NAME)
    assert (reading.driver, reading.cuda) == ("610.43.03", "13.3")
    assert reading.gpus == (GpuSeen("NVIDIA GeForce RTX 3080 ...", memory_mib=16384),)


def test_header_rows_are_not_gpus() -> None:
    """The column headings and a header-only paste name no GPU."""
    assert nvidia_parse.parse_smi_table(CUT_NAME.splitlines()[0] + "\n" + CUT_NAME.splitlines()[2]) == []


def test_header_of_the_610_series() -> None:
    # https://github.com/EricLBuehler/mistral.rs/pull/2287
    line = "| NVIDIA-SMI 610.43.02              KMD Version: 610.43.02     CUDA UMD Version: 13.3     |"
    assert nvidia_parse.parse_smi_header(line) == ("610.43.02", "13.3")


# --------------------------------------------------------------------------------- nvidia-smi -q

# https://github.com/MatthiasSchinzel/sysmon/issues/12 (`nvidia-smi -q`, the report's first lines)
Q_GTX780 = """\

==============NVSMI LOG==============

Timestamp                                 : Sat Oct 10 17:02:53 2020
Driver Version                            : 450.66
CUDA Version                              : 11.0

Attached GPUs                             : 1
GPU 00000000:01:00.0
    Product Name                          : GeForce GTX 780
    Product Brand                         : GeForce
    Display Mode                          : N/A
    Display Active                        : N/A
    Persistence Mode                      : Disabled
    MIG Mode
        Current                           : N/A
        Pending                           : N/A
    Accounting Mode                       : N/A
    Accounting Mode Buffer Size           : N/A
    Driver Model
        Current                           : N/A
        Pending                           : N/A
    Serial Number                         : N/A
    GPU UUID                              : GPU-a230e637-c9e1-1b61-3830-a437b874d88d
"""

# https://github.com/NVIDIA/nvidia-docker/issues/954: a 396 driver's -q has no "CUDA Version" line
Q_GTX1080 = """\
==============NVSMI LOG==============

Timestamp                           : Sun Apr 14 18:55:20 2019
Driver Version                      : 396.54

Attached GPUs                       : 1
GPU 00000000:01:00.0
    Product Name                    : GeForce GTX 1080
    Product Brand                   : GeForce
    GPU UUID                        : GPU-0200523e-f473-3a45-9b4a-fbbe0e41ccf8
"""


def test_q_reads_driver_cuda_and_gpus() -> None:
    reading = nvidia_parse.read_smi_details(Q_GTX780)
    assert (reading.driver, reading.cuda) == ("450.66", "11.0")
    assert reading.gpus == (GpuSeen("GeForce GTX 780", uuid="GPU-a230e637-c9e1-1b61-3830-a437b874d88d"),)


def test_q_of_an_old_driver_without_cuda_version() -> None:
    reading = nvidia_parse.read_smi_details(Q_GTX1080)
    assert (reading.driver, reading.cuda, [g.name for g in reading.gpus]) == ("396.54", None, ["GeForce GTX 1080"])


def test_q_with_a_log_line_in_between() -> None:
    text = (REPORTS / "report-nvidia-smi-q-v100-hami.txt").read_text()
    reading = nvidia_parse.read_smi_details(text)
    assert (reading.driver, reading.cuda) == ("535.86.10", "12.2")
    assert reading.gpus == (GpuSeen("Tesla V100-PCIE-16GB", uuid="GPU-3a6ec8f0-24eb-1905-1f17-7bdb4e850ffa"),)


def test_the_gtx_780_of_nvidia_s_legacy_list_is_placed_and_cuda_derived_from_the_driver() -> None:
    findings = Findings()
    facts = NvidiaFacts()
    facts.take(nvidia_parse.read_smi_details(Q_GTX780), "nvidia-smi -q", findings)
    info = facts.info(findings, NameTable())
    assert str(info.driver_version) == "450.66" and [str(g.compute_capability) for g in info.gpus] == ["3.5"]
    assert str(info.cuda_driver_version) == "11.0" and not info.cuda_driver_version_derived  # -q printed it


# https://github.com/NVIDIA/nvidia-docker/issues/464 (nvidia-smi -q on a GPU the driver cannot read)
Q_UNKNOWN_ERROR = """\
Driver Version                      : 375.26

Attached GPUs                       : 1
GPU 0000:4B:00.0
    Product Name                    : Unknown Error
    Product Brand                   : GeForce
"""


def test_a_gpu_nothing_can_place_is_kept_as_unidentified_with_a_note() -> None:
    findings = Findings()
    facts = NvidiaFacts()
    facts.take(nvidia_parse.read_smi_details(Q_UNKNOWN_ERROR), "nvidia-smi -q", findings)
    info = facts.info(findings, NameTable())
    assert info.gpus == () and info.unidentified_gpus == ("Unknown Error",)
    assert any("'Unknown Error' left out" in n and "PCI ID table" in n for n in findings.notes)
    assert info.cuda_driver_version is None  # 375 is older than every toolkit floor the knowledge base holds


# --------------------------------------------------------------------------------- nvidia-smi -L

# https://github.com/psalias2006/gpu-hot/issues/64
LIST_3090 = """\
GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-e1924eea-b9bb-d537-39f2-b345087fa145)
GPU 1: NVIDIA GeForce RTX 3090 (UUID: GPU-899c71bf-27be-b6a0-ae8f-d8afe5ba0f85)
GPU 2: NVIDIA GeForce RTX 3090 (UUID: GPU-acd314e9-4c7a-4824-eb0f-b6e38b1ec38c)
GPU 3: NVIDIA GeForce RTX 3090 (UUID: GPU-2639988f-1756-0583-db8f-faee38effce2)
"""


def test_list_names_every_gpu_with_its_uuid() -> None:
    gpus = nvidia_parse.read_smi_list(LIST_3090).gpus
    assert [g.name for g in gpus] == ["NVIDIA GeForce RTX 3090"] * 4
    assert gpus[3].uuid == "GPU-2639988f-1756-0583-db8f-faee38effce2"


# ----------------------------------------------------------------------- the csv with its header

# https://github.com/triton-inference-server/server/pull/8070 (`--format=csv`, header included)
TRITON_CSV = """compute_cap, compute_mode, driver_version, name, index
7.0, Default, 570.86.15, NVIDIA TITAN V, 0
8.9, Default, 570.86.15, NVIDIA RTX 5880 Ada Generation, 1
"""


def test_csv_with_a_header_names_its_own_fields() -> None:
    reading = nvidia_parse.read_query_csv_with_header("$ nvidia-smi --query-gpu=... --format=csv\n" + TRITON_CSV)
    assert reading.driver == "570.86.15"
    assert [(g.name, g.compute_capability) for g in reading.gpus] == [
        ("NVIDIA TITAN V", "7.0"), ("NVIDIA RTX 5880 Ada Generation", "8.9")]


# ------------------------------------------------------------------------------- the name table

def test_names_cut_short_resolve_when_every_candidate_agrees() -> None:
    table = NameTable()
    # https://github.com/projectbluefin/finpilot/issues/160 and https://github.com/EricLBuehler/mistral.rs/pull/2287:
    # cut after a word ("RTX 3080 Ti" and "RTX 3080" are both sm_86)
    assert table.compute_capability("NVIDIA GeForce RTX 3080 ...")[0] == "8.6"
    assert table.compute_capability("NVIDIA GeForce RTX 5070 ...")[0] == "12.0"
    # https://github.com/bottlerocket-os/bottlerocket-kernel-kit/pull/456: cut inside a word
    capability, source = table.compute_capability("NVIDIA RTX PRO 4500 Blac...")
    assert capability == "12.0" and "cut the name short" in source
    row = "|   0  NVIDIA RTX PRO 4500 Blac...    On  |   00000000:33:00.0 Off |                    0 |"
    assert nvidia_parse.parse_smi_table(row)[0].name == "NVIDIA RTX PRO 4500 Blac..."


def test_q_where_the_cuda_version_is_not_found() -> None:
    # https://github.com/bigstack-oss/cubecos/issues/312 (`nvidia-smi -q -d MEMORY,PERFORMANCE`, its first lines)
    text = ("==============NVSMI LOG==============\n\nTimestamp                                 : Wed Jan 14 15:17:09 2026\n"
            "Driver Version                            : 580.105.06\n"
            "CUDA Version                              : Not Found\n")
    assert (nvidia_parse.read_smi_details(text).driver, nvidia_parse.read_smi_details(text).cuda) == ("580.105.06", None)


# ------------------------------------------------------------------------------------ rocminfo

ROCM_4489 = ("  Name:                    gfx942\n"
             "  Marketing Name:          AMD Instinct MI300X VF\n"
             "      Name:                    amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-\n")


def test_rocminfo_excerpt_without_agent_lines() -> None:
    # https://github.com/ROCm/ROCm/issues/4489: eight such blocks, no "Agent N" and no "Device Type"
    assert amd_parse.parse_rocminfo(ROCM_4489 * 8) == [AmdAgent("AMD Instinct MI300X VF", "gfx942")] * 8


def test_rocminfo_excerpt_ignores_cpu_agents() -> None:
    # https://github.com/ROCm/ROCm/issues/5231 (the agents' Name lines, CPU first)
    text = ("  Name:                    INTEL(R) XEON(R) PLATINUM 8568Y+   \n"
            "  Marketing Name:          INTEL(R) XEON(R) PLATINUM 8568Y+   \n"
            "  Name:                    gfx942                             \n"
            "  Marketing Name:          AMD Instinct MI300X VF             \n")
    assert amd_parse.parse_rocminfo(text) == [AmdAgent("AMD Instinct MI300X VF", "gfx942")]


# ---------------------------------------------------------------------------------------- amd-smi

# https://github.com/ROCm/TheRock/issues/1737 (ROCm 7.9.0; the excerpt's first GPU row and the second's
# first line): an RX 9070 XT elsewhere in that report shows as "AMD Radeon Graphics"
AMD_SMI_THEROCK = """\
+------------------------------------------------------------------------------+
| AMD-SMI 26.1.0+5cbef4e7      amdgpu version: 6.12.12  ROCm version: 7.9.0    |
| VBIOS version:                                                               |
| Platform: Linux Baremetal                                                    |
|-------------------------------------+----------------------------------------|
| BDF                        GPU-Name | Mem-Uti   Temp   UEC       Power-Usage |
| GPU  HIP-ID  OAM-ID  Partition-Mode | GFX-Uti    Fan               Mem-Usage |
|=====================================+========================================|
| 0000:63:00.0 AMD Radeon RX 7900 XTX | 0 %      29 °C   0            47/327 W |
|   0       0     N/A             N/A | 1 %      0.0 %             27/24560 MB |
|-------------------------------------+----------------------------------------|
| 0000:a3:00.0  AMD Radeon RX 6700 XT | 0 %      28 °C   0            15/203 W |
"""


def test_plain_amd_smi_table_and_header() -> None:
    assert amd_parse.parse_amd_smi_table(AMD_SMI_THEROCK) == [AmdAgent("AMD Radeon RX 7900 XTX", None),
                                                              AmdAgent("AMD Radeon RX 6700 XT", None)]
    assert amd_parse.parse_amd_smi_rocm_version(AMD_SMI_THEROCK) == "7.9.0"


def test_amd_smi_version_line() -> None:
    # https://github.com/ROCm/ROCm/issues/5231 (comment 11)
    line = ("AMDSMI Tool: 26.2.0+021c61fc | AMDSMI Library version: 26.2.0 | ROCm version: 7.1.1 | "
            "amdgpu version: 6.16.6 | amd_hsmp version: N/A")
    assert amd_parse.parse_amd_smi_rocm_version(line) == "7.1.1"


def test_amd_names_take_gfx_from_the_name_table() -> None:
    table = NameTable()
    assert table.gfx("AMD Radeon RX 7900 XTX")[0] == "gfx1100"
    assert table.gfx("AMD Radeon RX 6700 XT")[0] == "gfx1031"
    assert table.gfx("AMD Radeon Graphics")[0] is None  # TheRock#1737: the generic name says nothing


# --------------------------------------------------------------------------------------- rocm-smi

def test_rocm_smi_product_names_with_gfx() -> None:
    text = (REPORTS / "report-rocm-smi-productname-mi300x-vf.txt").read_text()
    assert amd_parse.parse_rocm_smi_products(text) == [AmdAgent("AMD Instinct MI300X VF", "gfx942")] * 4


def test_rocm_smi_of_old_rocm_and_unknown_cards() -> None:
    # https://github.com/easybuilders/easybuild-framework/pull/3978 (ROCm 4/5: no GFX Version line)
    fury = ("GPU[0]          : Card series:          Fiji [Radeon R9 FURY / NANO Series]\n"
            "GPU[0]          : Card model:           Radeon R9 FURY X\n"
            "GPU[0]          : Card vendor:          Advanced Micro Devices, Inc. [AMD/ATI]\n"
            "GPU[0]          : Card SKU:             C88001\n")
    assert amd_parse.parse_rocm_smi_products(fury) == [AmdAgent("Fiji [Radeon R9 FURY / NANO Series]", None)]
    # https://github.com/Syllo/nvtop/issues/236: the pci.ids table lacked the card, so only ids print
    ids = ("GPU[0]\t\t: Card series: \t\t0x744c\nGPU[0]\t\t: Card model: \t\t0x2422\n"
           "GPU[0]\t\t: Card vendor: \t\tAdvanced Micro Devices, Inc. [AMD/ATI]\nGPU[0]\t\t: Card SKU: \t\tEXT84765\n")
    agents = amd_parse.parse_rocm_smi_products(ids)
    assert [(a.name, a.gfx, a.pci_device) for a in agents] == [(None, None, "744c")]  # placed by its PCI id


# ------------------------------------------------------------------------------------ collect_env

# https://github.com/vllm-project/vllm/issues/6408 (the lines from "Libc version" to "Nvidia driver version")
COLLECT_ENV_H100 = """\
Libc version: glibc-2.35

Python version: 3.11.9 | packaged by conda-forge | (main, Apr 19 2024, 18:36:13) [GCC 12.3.0] (64-bit runtime)
Python platform: Linux-5.15.0-107-generic-x86_64-with-glibc2.35
Is CUDA available: True
CUDA runtime version: Could not collect
CUDA_MODULE_LOADING set to: LAZY
GPU models and configuration: 
GPU 0: NVIDIA H100 80GB HBM3
GPU 1: NVIDIA H100 80GB HBM3
GPU 2: NVIDIA H100 80GB HBM3
GPU 3: NVIDIA H100 80GB HBM3
GPU 4: NVIDIA H100 80GB HBM3
GPU 5: NVIDIA H100 80GB HBM3
GPU 6: NVIDIA H100 80GB HBM3
GPU 7: NVIDIA H100 80GB HBM3

Nvidia driver version: 550.54.15
"""

# https://github.com/vllm-project/vllm/pull/35404: vLLM's newer layout pads the keys
COLLECT_ENV_PADDED = """\
Python version               : 3.12.3 (main, Jan 22 2026, 20:57:42) [GCC 13.3.0] (64-bit runtime)
Python platform              : Linux-5.15.0-52-generic-x86_64-with-glibc2.39

==============================
       CUDA / GPU Info
==============================
Is CUDA available            : True
CUDA runtime version         : 13.1.115
CUDA_MODULE_LOADING set to   :
GPU models and configuration : GPU 0: NVIDIA H100 80GB HBM3
Nvidia driver version        : 580.105.08
"""


def test_collect_env_of_an_nvidia_machine() -> None:
    env = parse_collect_env(COLLECT_ENV_H100)
    assert (env.python, env.glibc, env.system, env.machine) == ("3.11.9", "2.35", "Linux", "x86_64")
    assert env.nvidia_gpus == ("NVIDIA H100 80GB HBM3",) * 8 and env.nvidia_driver == "550.54.15"
    assert env.cuda_toolkit is None and env.amd_gpus == ()


def test_collect_env_with_padded_keys() -> None:
    env = parse_collect_env(COLLECT_ENV_PADDED)
    assert (env.python, env.glibc, env.cuda_toolkit, env.nvidia_driver) == ("3.12.3", "2.39", "13.1", "580.105.08")
    assert env.nvidia_gpus == ("NVIDIA H100 80GB HBM3",)


def test_collect_env_of_an_amd_machine() -> None:
    text = (REPORTS / "report-collect-env-rocm-mi210.txt").read_text()
    env = parse_collect_env(text)
    assert env.amd_gpus == (("AMD Instinct MI210", "gfx90a:sramecc+:xnack-"),)
    assert (env.python, env.glibc, env.torch_rocm, env.nvidia_driver) == ("3.9.19", "2.31", "6.2", None)


def test_text_without_collect_env_lines() -> None:
    assert parse_collect_env(LIST_3090) is None


def test_an_empty_reading_adds_nothing() -> None:
    facts, findings = NvidiaFacts(), Findings()
    facts.take(NvidiaReading(), "nothing", findings)
    assert facts.info(findings) is None and facts.sources == []


# ----------------------------------------------------------------- collect_env in a captured machine

def _sysroot_with_collect_env(tmp_path: Path, output: str) -> Path:
    root = tmp_path / "root"
    (root / "_commands").mkdir(parents=True)
    (root / "_meta.toml").write_text('system = "Linux"\nmachine = "x86_64"\npython = "3.9.19"\n')
    (root / "_commands" / "collect_env.txt").write_text(output)
    (root / "commands.toml").write_text('[[command]]\nargv = ["python", "-m", "torch.utils.collect_env"]\n'
                                        'stdout_file = "_commands/collect_env.txt"\n')
    return root


def test_a_capture_with_only_collect_env(tmp_path: Path) -> None:
    from resolver.plan.probe import probe_machine

    amd = probe_machine(_sysroot_with_collect_env(tmp_path, (REPORTS / "report-collect-env-rocm-mi210.txt").read_text())).amd
    assert [(g.name, str(g.gfx_arch)) for g in amd.gpus] == [("AMD Instinct MI210", "gfx90a")]
    assert amd.sources == ("python -m torch.utils.collect_env",)
    other = tmp_path / "other"
    other.mkdir()
    nvidia = probe_machine(_sysroot_with_collect_env(other, COLLECT_ENV_H100)).nvidia
    assert str(nvidia.driver_version) == "550.54.15" and len(nvidia.gpus) == 8
    assert str(nvidia.gpus[0].compute_capability) == "9.0"


def test_collect_env_is_never_run_on_a_live_or_recorded_machine() -> None:
    """It imports torch and takes seconds: only a replayed capture is asked for it."""
    from resolver.plan.probe import probe_machine
    from resolver.plan.probe.capture import RecordingSystem
    from resolver.plan.probe.system import LiveSystem

    recorder = RecordingSystem(LiveSystem())
    probe_machine(system=recorder)
    assert not any("torch.utils.collect_env" in argv for argv in recorder.commands)
