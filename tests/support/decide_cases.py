"""The machines and requests whose plans are checked word for word (and kept in data/golden)."""

from __future__ import annotations

from dataclasses import dataclass, field

from support.profiles import A100, B300, GTX1080TI, H100, MI250X, MI300X, RTX4090, RTX5090, T4, V100, amd, cpu, nvidia


@dataclass
class Case:
    id: str
    profile: dict
    target: str = "auto"
    python: str | None = None
    # expectations (None = not checked)
    backend: str | None = None
    torch: str | None = None
    variant: str | None = None
    strategy: str | None = None
    arch_list: tuple[str, ...] | None = None
    packages: dict | None = None
    patches: tuple[str, ...] | None = None
    runnable_here: bool | None = None
    toolkit: str | None = None
    conda: str | None = "unchecked"
    source_kind: str | None = None
    refused: str | None = None  # substring of the refusal message
    fix: str | None = None  # substring of the refusal's fix
    warning: str | None = None  # substring of some warning
    trace: tuple[str, ...] = field(default_factory=tuple)  # substrings that must appear in the trace text
    prebuilt: tuple[str, ...] | None = None
    env_python: str | None = None  # the environment's Python when it is not the request's / the host's


CASES = [
    # --- driver floors (minor-version compatibility per CUDA major)
    Case("h100-driver-550", nvidia(H100, driver="550.54.15"), backend="cuda", torch="2.14.1", variant="cu126",
         arch_list=("9.0",), strategy="build", toolkit="nvcc 12.6", conda="pytorch 2.14.1 cuda12*",
         trace=("580.65.06", "cu126, not cu130")),
    Case("h100-driver-580", nvidia(H100), torch="2.14.1", variant="cu132", arch_list=("9.0",), toolkit="nvcc 13.2"),
    Case("python-request-over-host", nvidia(H100, python="3.9.18"), python="3.13", torch="2.14.1"),
    Case("t4-driver-440-refused", nvidia(T4, driver="440.33"), refused="older than 450.80.02",
         fix="525.60.13"),
    Case("a100-driver-470-cuda11", nvidia(A100, driver="470.82.01"), variant="cu118", torch="2.5.1",
         arch_list=("8.0",), packages={"causal-conv1d": "1.6.1", "mamba-ssm": "2.3.1"}, trace=("525.60.13",)),
    Case("driver-reports-cuda-12.4-only", nvidia(A100, driver=None, cuda="12.4"), variant="cu126", torch="2.14.1"),
    Case("driver-unknown-warns", nvidia(A100, driver=None, cuda=None), variant="cu132",
         warning="driver version unknown"),
    Case("cuda13-target-on-old-driver-refused", nvidia(H100, driver="550.54.15"), target="cuda13.0",
         refused="needs NVIDIA driver >= 580.65.06", fix="cuda12.6"),
    # --- compiled architectures of the wheel and of nvcc (issue 2 examples)
    Case("v100-auto", nvidia(V100), variant="cu126", arch_list=("7.0",), warning="below the architectures upstream"),
    Case("v100-cuda13-refused", nvidia(V100), target="cuda13.0",
         refused="CUDA 13.0 cannot target compute capability 7.0 (Tesla V100-PCIE-16GB): CUDA 13 dropped sm_70",
         fix="Use --target cuda12.6"),
    Case("v100-cuda12.6-ok", nvidia(V100), target="cuda12.6", variant="cu126", torch="2.14.1"),
    Case("v100-cuda12.8-wheels-lack-sm70", nvidia(V100), target="cuda12.8", torch="2.10.0", variant="cu128",
         strategy="build", arch_list=("7.0",), prebuilt=(),
         trace=("mamba_ssm-2.3.2.post1+cu12torch2.10cxx11abiTRUE-cp311-cp311-linux_x86_64.whl has no kernels for sm_70",)),
    Case("a100-cuda12.9-prebuilt", nvidia(A100), target="cuda12.9", torch="2.8.0", variant="cu129",
         strategy="prebuilt", arch_list=("8.0",), packages={"causal-conv1d": "1.6.1", "mamba-ssm": "2.3.1"},
         prebuilt=("causal_conv1d-1.6.1+cu12torch2.8cxx11abiTRUE-cp311-cp311-linux_x86_64.whl",
                   "mamba_ssm-2.3.1+cu12torch2.8cxx11abiTRUE-cp311-cp311-linux_x86_64.whl")),
    Case("gtx1080ti-cu126-not-cu130", nvidia(GTX1080TI), variant="cu126", torch="2.14.1", arch_list=("6.1",),
         trace=("cu126, not cu130", "GTX 1080 Ti is sm_61 and cu130 wheels start at sm_75", "sm_60 cubin")),
    Case("gtx1080ti-py39-env-gets-3.12", nvidia(GTX1080TI, python="3.9.18"), variant="cu126", torch="2.14.1",
         env_python="3.12", warning="Python 3.9 here cannot run this plan"),
    Case("gtx1080ti-py39-requested-cu126-not-cu128", nvidia(GTX1080TI), python="3.9", variant="cu126", torch="2.8.0",
         trace=("cu126, not cu128", "GeForce GTX 1080 Ti is sm_61 and cu128 wheels start at sm_70")),
    Case("gtx1080ti-cuda12.8-refused", nvidia(GTX1080TI), target="cuda12.8",
         refused="no kernels for compute capability 6.1", fix="Use --target cuda12.6"),
    Case("gtx1080ti-cuda13-refused", nvidia(GTX1080TI), target="cuda13.0", refused="CUDA 13 dropped sm_61"),
    Case("rtx5090-driver-570", nvidia(RTX5090, driver="570.133.07"), torch="2.11.0", variant="cu128",
         arch_list=("12.0",), strategy="build", trace=("no usable upstream wheel",)),
    Case("rtx5090-cuda12.6-refused", nvidia(RTX5090), target="cuda12.6",
         refused="sm_120 needs CUDA 12.8 or newer", fix="Use --target cuda13.2"),
    Case("rtx5090-driver-580", nvidia(RTX5090), torch="2.14.1", variant="cu132", arch_list=("12.0",)),
    Case("rtx4090", nvidia(RTX4090, driver="560.35.03"), variant="cu126", arch_list=("8.9",)),
    Case("t4-driver-535", nvidia(T4, driver="535.183.01"), variant="cu126", torch="2.14.1", arch_list=("7.5",)),
    Case("b300-nvcc13-uses-sm100", nvidia(B300), variant="cu132", arch_list=("10.0",),
         trace=("10.0 instead of 10.3", "#105")),
    Case("b300-cuda12-builds-sm100", nvidia(B300, driver="570.133.07"), variant="cu128", arch_list=("10.0",),
         trace=("nvcc 12.8 has no sm_103",)),
    Case("gb10-sm121", nvidia(("NVIDIA GB10", "12.1"), platform="linux-aarch64"), variant="cu130",
         arch_list=("12.1",)),
    Case("gb200-aarch64-driver-570-refused", nvidia(("NVIDIA GB200", "10.0"), driver="570.124.06",
                                                 platform="linux-aarch64"),
         refused="sm_100 needs CUDA 12.8 or newer", fix="--target cuda12.9"),
    Case("gb200-aarch64-cuda12.9-unconfirmed", nvidia(("NVIDIA GB200", "10.0"), driver="570.124.06",
                                                   platform="linux-aarch64"),
         target="cuda12.9", torch="2.8.0", variant="cu129", arch_list=("10.0",), warning="unconfirmed"),
    Case("jetson-orin-aarch64", nvidia(("Orin (nvgpu)", "8.7"), platform="linux-aarch64"), variant="cu130",
         arch_list=("8.7",), trace=("sm_80 cubin",)),
    Case("k80-kepler", nvidia(("Tesla K80", "3.7"), driver="470.82.01"), variant="cu118", arch_list=("3.7",)),
    # --- mixed GPUs: union of architectures, one variant covering all
    Case("mixed-v100-a100-h100", nvidia(A100, V100, H100), variant="cu126", arch_list=("7.0", "8.0", "9.0")),
    Case("mixed-t4-a100", nvidia(T4, A100, A100), variant="cu132", arch_list=("7.5", "8.0")),
    Case("mixed-1080ti-rtx5090", nvidia(GTX1080TI, RTX5090),
         refused="no single PyTorch CUDA build has kernels for every GPU in this node", fix="CUDA_VISIBLE_DEVICES"),
    Case("nvidia-and-amd-in-one-box", {**nvidia(A100), "amd": {"rocm_version": "6.2.4",
                                                              "gpus": [{"name": "AMD Instinct MI210", "gfx_arch": "gfx90a"}]}},
         backend="cuda", arch_list=("8.0",), warning="NVIDIA and AMD GPUs in one machine"),
    # --- ROCm
    Case("mi250x-rocm6.0.2-patch", amd(MI250X, rocm="6.0.2", python="3.10.12"), backend="rocm", torch="2.4.1",
         variant="rocm6.0", arch_list=("gfx90a",), patches=("rocm6.0-bf16-inline",), toolkit="hipcc 6.0", conda=None,
         trace=("amd_hip_bf16.h",)),
    Case("mi300x-rocm6.1-no-patch", amd(MI300X, rocm="6.1.3"), variant="rocm6.1", torch="2.6.0", patches=(),
         arch_list=("gfx942",), toolkit="hipcc 6.1"),
    Case("mi210-rocm5.7-refused", amd(("AMD Instinct MI210", "gfx90a"), rocm="5.7.1"), refused="older than 6.0"),
    Case("rx7900xtx-rocm6.2.4", amd(("AMD Radeon RX 7900 XTX", "gfx1100"), rocm="6.2.4"), variant="rocm6.2.4",
         torch="2.7.1", arch_list=("gfx1100",), patches=()),
    Case("mi300x-rocm6.4", amd(MI300X, rocm="6.4.1"), variant="rocm6.4", torch="2.9.1"),
    Case("mi355x-rocm7.2", amd(("AMD Instinct MI355X", "gfx950"), rocm="7.2.1"), variant="rocm7.2", torch="2.13.0"),
    Case("rx9070-rocm6.0-refused", amd(("AMD Radeon RX 9070 XT", "gfx1201"), rocm="6.0.2"), refused="gfx1201"),
    Case("rocm-target-mismatch-refused", amd(MI300X, rocm="6.1.3"), target="rocm6.0", fix="Use --target rocm6.1"),
    Case("amd-without-rocm-cpu", amd(MI250X, rocm=None), backend="cpu", warning="ROCm is not installed"),
    Case("rocm-target-on-laptop", cpu(), target="rocm6.0", backend="rocm", variant="rocm6.0", runnable_here=False,
         patches=("rocm6.0-bf16-inline",), warning="another machine"),
    # --- CPU, glibc, macOS, Windows
    Case("cpu-linux", cpu(), backend="cpu", torch="2.13.0", variant="cpu", strategy="none", packages={},
         conda="pytorch 2.13.0 cpu*"),
    Case("centos7-glibc-2.17-cpu", cpu(glibc="2.17"), torch="2.5.1", variant="cpu", trace=("glibc >= 2.28",)),
    Case("centos7-glibc-2.17-v100", nvidia(V100, glibc="2.17"), torch="2.5.1", variant="cu124", arch_list=("7.0",)),
    Case("macos-arm64", cpu(platform="osx-arm64", glibc=None), backend="cpu", torch="2.13.0", strategy="none",
         source_kind="pypi"),
    Case("macos-x86-last-2.2", cpu(platform="osx-64", glibc=None), torch="2.2.2"),
    Case("macos-cuda-target-refused", cpu(platform="osx-arm64", glibc=None), target="cuda12.6", refused="macOS"),
    Case("windows-rtx3090-no-kernels", nvidia(("NVIDIA GeForce RTX 3090", "8.6"), driver="560.94", glibc=None,
                                              platform="win-64"),
         variant="cu126", strategy="none", warning="target Linux"),
    Case("wsl-rtx4090", nvidia(RTX4090, driver="566.36", wsl=True), variant="cu126", arch_list=("8.9",)),
    Case("wsl-windows-driver-floors", nvidia(RTX4090, driver="527.41", wsl=True), variant="cu118",
         trace=("528.33",)),
    Case("linux-same-driver-is-enough", nvidia(RTX4090, driver="527.41"), variant="cu126"),
    Case("cpu-target-on-h100", nvidia(H100), target="cpu", backend="cpu", strategy="none"),
    # --- targets whose hardware is absent here: a plan for another machine
    Case("cuda13-target-on-cpu-box", cpu(), target="cuda13.0", variant="cu130", torch="2.14.1", runnable_here=False,
         arch_list=("7.5", "8.0", "8.6", "9.0", "10.0", "12.0"), warning="another machine"),
    Case("cuda12.6-target-on-cpu-box", cpu(), target="cuda12.6", variant="cu126", torch="2.14.1",
         runnable_here=False, arch_list=("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")),
    Case("cuda-major-only-target", nvidia(V100), target="cuda12", variant="cu126", torch="2.14.1"),
    Case("cuda11.8-target-on-h100", nvidia(H100), target="cuda11.8", variant="cu118", torch="2.5.1",
         toolkit="nvcc 11.8", packages={"causal-conv1d": "1.6.1", "mamba-ssm": "2.3.1"}),
    Case("rocm-target-on-nvidia-box", nvidia(H100), target="rocm6.1", backend="rocm", variant="rocm6.1",
         runnable_here=False, patches=()),
    Case("rocm-exact-patch-target-warns", amd(MI250X, rocm="6.2.0"), target="rocm6.2.4", variant="rocm6.2.4",
         warning="matched on 6.2"),
    Case("rocm-unpublished-version-refused", amd(MI300X, rocm="6.5.0"), refused="no wheels for ROCm 6.5",
         fix="install one of ROCm"),
    # --- Python
    Case("python38-refused", nvidia(V100), python="3.8", refused="torch 2.5 and newer dropped Python 3.8",
         fix="--python 3.10"),
    Case("python38-cpu-ok", cpu(), python="3.8", target="cpu", torch="2.4.1"),
    Case("python315-refused", nvidia(H100), python="3.15", refused="no wheels for Python 3.15"),
    Case("host-python38-env-gets-3.12", nvidia(V100, python="3.8.10"), variant="cu126", torch="2.14.1",
         env_python="3.12", warning="Python 3.8 here cannot run this plan"),
    Case("host-python38-ubuntu1804-glibc227", nvidia(V100, python="3.8.10", glibc="2.27", driver="520.61.05"),
         torch="2.5.1", variant="cu118", env_python="3.12", trace=("glibc >= 2.28",)),
    Case("python-request-respected", nvidia(H100), python="3.12", torch="2.14.1", variant="cu132"),
    # --- ROCm edges: a target naming the installed minor, unconfirmed rows, AMD's official list, the refusals' fixes
    Case("rocm-target-minor-of-the-installed-patch", amd(MI250X, rocm="6.0.2"), target="rocm6.0", variant="rocm6.0",
         torch="2.4.1", patches=("rocm6.0-bf16-inline",)),
    Case("rocm-unconfirmed-only-on-explicit-target", amd(MI300X, rocm="7.14.0"), target="rocm7.14", variant="rocm7.14",
         warning="rests on one unconfirmed source"),
    Case("rocm-unconfirmed-refused-on-auto", amd(MI300X, rocm="7.14.0"), refused="rests on one unconfirmed source",
         fix="pass --target rocm7.14 to accept an unconfirmed build, or use --target cpu"),
    Case("rocm-python-too-new-refused", amd(MI250X, rocm="6.0.2"), python="3.14", refused="no wheels for Python 3.14",
         fix="change --python, or use --target cpu"),
    Case("rocm-target-unpublished-refused", amd(MI300X, rocm="6.5.0"), target="rocm6.5",
         refused="--target rocm6.5: PyTorch publishes no wheels for ROCm 6.5"),
    Case("mi50-gfx906-not-on-amds-list", amd(("AMD Instinct MI50", "gfx906"), rocm="6.2.0"), variant="rocm6.2.4",
         arch_list=("gfx906",), warning="not on AMD's official support list for ROCm 6.2"),
    Case("rocm-target-without-an-amd-gpu", cpu(), target="rocm6.2", variant="rocm6.2.4", runnable_here=False,
         warning="no AMD GPU here"),
    Case("cpu-target-python-too-new-refused", cpu(), target="cpu", python="3.15",
         refused="no torch release has CPU wheels for Python 3.15"),
]
