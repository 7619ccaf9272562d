"""The sysroot layout (docs/sysroot.md): replay, isolation from the live machine, malformed folders,
CONDA_OVERRIDE_*, and ``--capture`` of this machine."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support import DATA, cli

from resolver.core.errors import BadInput
from resolver.plan.probe import probe_machine
from resolver.plan.probe.capture import capture_machine
from resolver.plan.probe.sysroot import SysrootSystem

MACHINES = DATA / "machines"


def _sysroot(tmp_path: Path, meta: str = 'system = "Linux"\nmachine = "x86_64"\npython = "3.11.7"\n',
             commands: str | None = None, files: dict[str, str] | None = None) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / "_meta.toml").write_text(meta)
    if commands is not None:
        (root / "commands.toml").write_text(commands)
    for path, text in (files or {}).items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


# ------------------------------------------------------------------------------------- malformed

@pytest.mark.parametrize("meta,fragment", [
    ('system = "Linux"\nmachine = "x86_64"\n', "'python'"),
    ('system = "Linux"\npython = "3.11"\n', "'machine'"),
    ('system = "Linux"\nmachine = "x86_64"\npython = 3.11\n', "'python'"),
    ('system = "Linux\nmachine', "not valid TOML"),
    ('system = "Linux"\nmachine = "x86_64"\npython = "3.11"\n[environ]\nCUDA_HOME = 1\n', "[environ]"),
])
def test_malformed_meta_is_one_sentence(tmp_path: Path, meta: str, fragment: str) -> None:
    with pytest.raises(BadInput) as info:
        probe_machine(_sysroot(tmp_path, meta))
    assert fragment in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("commands,fragment", [
    ('[[command]]\nargv = "nvidia-smi"\n', "'argv'"),
    ('[[command]]\nargv = []\n', "'argv'"),
    ('[[command]]\nargv = ["nvcc"]\nexit_code = "0"\n', "'exit_code'"),
    ('[[command]]\nargv = ["nvcc"]\nstdout_file = "_commands/missing.txt"\n', "missing.txt"),
    ('command = 3\n', "array of tables"),
])
def test_malformed_commands_is_one_sentence(tmp_path: Path, commands: str, fragment: str) -> None:
    with pytest.raises(BadInput) as info:
        probe_machine(_sysroot(tmp_path, commands=commands))
    assert fragment in str(info.value)


def test_missing_and_file_sysroots(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        probe_machine(tmp_path / "nope")
    (tmp_path / "f").write_text("x")
    with pytest.raises(BadInput, match="not a folder"):
        probe_machine(tmp_path / "f")
    with pytest.raises(BadInput, match="_meta.toml"):
        probe_machine(tmp_path)


def test_unknown_platform_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="riscv64"):
        probe_machine(_sysroot(tmp_path, 'system = "Linux"\nmachine = "riscv64"\npython = "3.12"\n'))


def test_cli_malformed_sysroot_is_one_line(tmp_path: Path) -> None:
    root = _sysroot(tmp_path, 'system = "Linux"\n')
    out = cli.run("probe", "--sysroot", str(root), timeout=60)
    assert out.returncode == 3 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: ") and "Traceback" not in out.stderr


# ------------------------------------------------------------------------------------- isolation

def test_nothing_live_leaks_into_a_sysroot(tmp_path: Path) -> None:
    """This machine has nvcc 13.0, glibc, /proc files and a PATH; an empty sysroot shows none of them."""
    profile = probe_machine(_sysroot(tmp_path), environ={"PATH": os.environ.get("PATH", "")})
    assert profile.cuda_toolkit is None and profile.glibc is None and profile.nvidia is None
    assert profile.memory_available_mib is None and profile.cpu_count is None and not profile.container


def test_symlink_out_of_the_sysroot_is_not_followed(tmp_path: Path) -> None:
    root = _sysroot(tmp_path)
    (root / "proc").mkdir()
    os.symlink("/proc/meminfo", root / "proc" / "meminfo")
    system = SysrootSystem(root)
    assert system.read("/proc/meminfo") is None
    assert probe_machine(root).memory_available_mib is None


def test_tool_exit_code_and_stderr_replay(tmp_path: Path) -> None:
    commands = ('[[command]]\nargv = ["nvidia-smi", "--query-gpu=name,compute_cap,driver_version,memory.total,uuid",'
                ' "--format=csv,noheader"]\nexit_code = 9\nstderr = "NVIDIA-SMI has failed because it couldn\'t '
                'communicate with the NVIDIA driver."\n')
    profile = probe_machine(_sysroot(tmp_path, commands=commands))
    assert profile.nvidia is None
    assert any("exited 9: NVIDIA-SMI has failed" in n for n in profile.notes)


def test_glibc_from_a_captured_ldd_and_from_a_libc_file_name(tmp_path: Path) -> None:
    ldd = '[[command]]\nargv = ["ldd", "--version"]\nstdout = "ldd (GNU libc) 2.17\\n"\n'
    assert str(probe_machine(_sysroot(tmp_path, commands=ldd)).glibc) == "2.17"
    other = tmp_path / "other"
    other.mkdir()
    root = _sysroot(other, files={"/lib/x86_64-linux-gnu/libc-2.31.so": ""})
    assert str(probe_machine(root).glibc) == "2.31"


def test_rocm_path_without_version_is_noted(tmp_path: Path) -> None:
    meta = 'system = "Linux"\nmachine = "x86_64"\npython = "3.10"\n[environ]\nROCM_PATH = "/opt/rocm-6.2.4"\n'
    root = _sysroot(tmp_path, meta, files={"/opt/rocm-6.2.4/include/rocm-core/rocm_version.h":
                                           "#define ROCM_VERSION_MAJOR 6\n#define ROCM_VERSION_MINOR 2\n"
                                           "#define ROCM_VERSION_PATCH 4\n"})
    amd = probe_machine(root).amd
    assert str(amd.rocm_version) == "6.2.4" and amd.rocm_root == "/opt/rocm-6.2.4" and amd.gpus == ()


def test_nvidia_driver_without_gpus_from_module_version_only(tmp_path: Path) -> None:
    profile = probe_machine(_sysroot(tmp_path, files={"/sys/module/nvidia/version": "570.133.07\n"}))
    assert str(profile.nvidia.driver_version) == "570.133.07" and profile.nvidia.gpus == ()
    assert profile.nvidia.sources[0] == "/sys/module/nvidia/version"
    assert profile.nvidia.cuda_driver_version_derived and profile.nvidia.sources[1].startswith("CUDA version: derived")


# ------------------------------------------------------------------------------- CONDA_OVERRIDE_*

H100 = MACHINES / "h100-8x-ubuntu2204"


def test_override_cuda_sets_the_driver_cuda_version() -> None:
    profile = probe_machine(H100, environ={"CONDA_OVERRIDE_CUDA": "12.4"})
    assert str(profile.nvidia.cuda_driver_version) == "12.4"
    assert str(profile.nvidia.driver_version) == "550.54.15" and len(profile.nvidia.gpus) == 8
    assert dict(profile.overrides) == {"CONDA_OVERRIDE_CUDA": "12.4"}
    assert "CONDA_OVERRIDE_CUDA" in profile.nvidia.sources


def test_override_cuda_empty_means_no_cuda_driver() -> None:
    profile = probe_machine(H100, environ={"CONDA_OVERRIDE_CUDA": ""})
    assert profile.nvidia is None and dict(profile.overrides) == {"CONDA_OVERRIDE_CUDA": ""}
    assert any("hides the detected NVIDIA driver" in n for n in profile.notes)


def test_override_cuda_on_a_machine_without_nvidia() -> None:
    profile = probe_machine(MACHINES / "cpu-only-ubuntu2410", environ={"CONDA_OVERRIDE_CUDA": "12.8"})
    assert str(profile.nvidia.cuda_driver_version) == "12.8"
    assert profile.nvidia.driver_version is None and profile.nvidia.gpus == ()


def test_override_glibc_set_and_empty() -> None:
    assert str(probe_machine(H100, environ={"CONDA_OVERRIDE_GLIBC": "2.17"}).glibc) == "2.17"
    profile = probe_machine(H100, environ={"CONDA_OVERRIDE_GLIBC": ""})
    assert profile.glibc is None and dict(profile.overrides) == {"CONDA_OVERRIDE_GLIBC": ""}


def test_override_that_is_not_a_version_is_refused() -> None:
    with pytest.raises(BadInput, match="CONDA_OVERRIDE_CUDA='twelve'"):
        probe_machine(H100, environ={"CONDA_OVERRIDE_CUDA": "twelve"})


def test_overrides_from_the_sysroot_environment(tmp_path: Path) -> None:
    meta = 'system = "Linux"\nmachine = "x86_64"\npython = "3.11"\n[environ]\nCONDA_OVERRIDE_GLIBC = "2.28"\n'
    assert str(probe_machine(_sysroot(tmp_path, meta)).glibc) == "2.28"


def test_overrides_on_the_live_machine() -> None:
    profile = probe_machine(environ={**os.environ, "CONDA_OVERRIDE_CUDA": "12.6", "CONDA_OVERRIDE_GLIBC": "2.28"})
    assert str(profile.nvidia.cuda_driver_version) == "12.6" and str(profile.glibc) == "2.28"
    assert dict(profile.overrides) == {"CONDA_OVERRIDE_CUDA": "12.6", "CONDA_OVERRIDE_GLIBC": "2.28"}


# ---------------------------------------------------------------------------------------- capture

def test_capture_replays_this_machine(tmp_path: Path) -> None:
    report = capture_machine(tmp_path / "me")
    assert report.replay_matches
    replay = probe_machine(tmp_path / "me")
    assert replay.cuda_toolkit == report.profile.cuda_toolkit and replay.glibc == report.profile.glibc
    assert (tmp_path / "me" / "_meta.toml").is_file()
    meta = (tmp_path / "me" / "_meta.toml").read_text()
    assert "PATH" not in meta  # only what the probe looked at is recorded


def test_capture_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("keep me")
    with pytest.raises(BadInput, match="not empty"):
        capture_machine(tmp_path)


def test_capture_cli(tmp_path: Path) -> None:
    out = cli.run("probe", "--capture", str(tmp_path / "cap"), "--json", timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["replay_matches"] is True and data["profile"]["platform"] == "linux-64"


def test_nvidia_smi_recorded_by_capture_replays(tmp_path: Path) -> None:
    """A fake nvidia-smi on PATH: captured, then replayed without it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text('#!/bin/sh\nif [ "$1" = "" ]; then echo "| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   '
                   'CUDA Version: 12.4 |"; else echo "NVIDIA H100 80GB HBM3, 9.0, 550.54.15, 81559 MiB, GPU-1"; fi\n')
    smi.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    report = capture_machine(tmp_path / "cap", environ=env)
    assert report.replay_matches
    replay = probe_machine(tmp_path / "cap")
    assert replay.nvidia.gpus[0].memory_mib == 81559 and str(replay.nvidia.cuda_driver_version) == "12.4"
    shutil.rmtree(bin_dir)
    assert probe_machine(tmp_path / "cap").nvidia is not None  # the capture no longer needs the tool


def test_driver_library_mismatch_falls_back_to_proc(tmp_path: Path) -> None:
    """zzzhouuu/truenas-nvidia-drivers#19: nvidia-smi cannot start NVML, /proc still names the kernel module."""
    query = '"nvidia-smi", "--query-gpu=name,compute_cap,driver_version,memory.total,uuid", "--format=csv,noheader"'
    commands = (f'[[command]]\nargv = [{query}]\nexit_code = 18\n'
                'stdout = "Failed to initialize NVML: Driver/library version mismatch\\nNVML library version: 580.178\\n"\n')
    root = _sysroot(tmp_path, commands=commands, files={
        "/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.173.02  "
                                       "Tue Jun 23 08:38:17 UTC 2026\nGCC version:  gcc version 14.2.0 "
                                       "(Ubuntu 14.2.0-4ubuntu2~24.04.1)\n"})
    profile = probe_machine(root)
    assert str(profile.nvidia.driver_version) == "580.173.02"
    assert profile.nvidia.sources[0] == "/proc/driver/nvidia/version"
    assert profile.nvidia.cuda_driver_version_derived and profile.nvidia.sources[1].startswith("CUDA version: derived")
    assert any("Driver/library version mismatch" in n for n in profile.notes)


KFD_GPU = {"/sys/class/kfd/kfd/topology/nodes/0/properties": "cpu_cores_count 64\ngfx_target_version 0\n",
           "/sys/class/kfd/kfd/topology/nodes/2/properties": "cpu_cores_count 0\ngfx_target_version 90010\n"
                                                              "drm_render_minor 129\n",
           "/sys/class/drm/renderD129/device/product_name": "AMD Instinct MI210\n",
           "/opt/rocm/.info/version": "6.0.2-115\n"}


def test_failing_rocminfo_falls_back_to_kfd(tmp_path: Path) -> None:
    """rocminfo without access to /dev/kfd (the HSA_STATUS_ERROR_OUT_OF_RESOURCES failure of ROCm/TheRock#7952)."""
    commands = ('[[command]]\nargv = ["rocminfo"]\nexit_code = 1\nstdout = "ROCk module is loaded\\n'
                'hsa api call failure at: rocminfo.cc:1306\\nCall returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime '
                'failed to allocate the necessary resources.\\n"\n')
    amd = probe_machine(_sysroot(tmp_path, commands=commands, files=KFD_GPU)).amd
    assert [(g.name, str(g.gfx_arch)) for g in amd.gpus] == [("AMD Instinct MI210", "gfx90a")]
    assert str(amd.rocm_version) == "6.0.2"
    assert amd.sources == ("/opt/rocm/.info/version", "/sys/class/kfd/kfd/topology/nodes/*/properties")


def test_amd_smi_without_gfx_falls_back_to_kfd(tmp_path: Path) -> None:
    commands = ('[[command]]\nargv = ["/opt/rocm/bin/amd-smi", "static", "--asic"]\n'
                'stdout = "GPU: 0\\n    ASIC:\\n        MARKET_NAME: AMD Instinct MI210\\n        VENDOR_ID: 0x1002\\n"\n')
    profile = probe_machine(_sysroot(tmp_path, commands=commands, files=KFD_GPU))
    assert [str(g.gfx_arch) for g in profile.amd.gpus] == ["gfx90a"]
    assert any("names GPUs but not their gfx architecture" in n for n in profile.notes)


def test_capture_and_sysroot_together_is_refused(tmp_path: Path) -> None:
    out = cli.run("probe", "--sysroot", str(H100), "--capture", str(tmp_path / "x"), "--json", timeout=60)
    assert out.returncode == 3 and "cannot be combined" in json.loads(out.stdout)["error"]
    assert not (tmp_path / "x").exists()


def test_cuda_home_wins_over_path_like_torch_cpp_extension(tmp_path: Path) -> None:
    meta = 'system = "Linux"\nmachine = "x86_64"\npython = "3.11"\n[environ]\nCUDA_HOME = "/usr/local/cuda-11.8"\n'
    commands = ('[[command]]\nargv = ["nvcc", "--version"]\nstdout = "Cuda compilation tools, release 12.4, V12.4.131\\n"\n'
                '[[command]]\nargv = ["/usr/local/cuda-11.8/bin/nvcc", "--version"]\n'
                'stdout = "Cuda compilation tools, release 11.8, V11.8.89\\n"\n')
    profile = probe_machine(_sysroot(tmp_path, meta, commands))
    assert str(profile.cuda_toolkit) == "11.8"
    assert "cuda_toolkit: /usr/local/cuda-11.8/bin/nvcc --version" in profile.sources
    assert str(probe_machine(tmp_path / "root", environ={"CUDA_HOME": ""}).cuda_toolkit) == "12.4"
