"""Table-driven tests of resolver.plan.decide: one row per machine (a `probe --json` style profile dict),
request and expected outcome. Every rule of the decision tree and every example of issue 2 has a row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from resolver.core.model import Plan, Request, Target
from resolver.core.versions import DottedVersion
from resolver.plan.decide import decide
from resolver.plan.knowledge import Knowledge
from resolver.plan.probe.profile import HardwareProfile

KNOWLEDGE = Knowledge.load()


def nvidia(*gpus: tuple[str, str], driver: str | None = "580.82.07", cuda: str | None = None, python: str = "3.11.7",
           glibc: str | None = "2.35", platform: str = "linux-64", **extra) -> dict:
    return {"platform": platform, "glibc": glibc, "python": python, "amd": None, "cuda_toolkit": None,
            "nvidia": {"driver_version": driver, "cuda_driver_version": cuda,
                       "gpus": [{"name": n, "compute_capability": c} for n, c in gpus]}, **extra}


def amd(*gpus: tuple[str, str], rocm: str | None, python: str = "3.11.7", glibc: str = "2.35") -> dict:
    return {"platform": "linux-64", "glibc": glibc, "python": python, "nvidia": None, "cuda_toolkit": None,
            "amd": {"rocm_version": rocm, "gpus": [{"name": n, "gfx_arch": g} for n, g in gpus]}}


def cpu(python: str = "3.11.7", glibc: str | None = "2.36", platform: str = "linux-64") -> dict:
    return {"platform": platform, "glibc": glibc, "python": python, "nvidia": None, "amd": None, "cuda_toolkit": None}


V100 = ("Tesla V100-PCIE-16GB", "7.0")
GTX1080TI = ("NVIDIA GeForce GTX 1080 Ti", "6.1")
H100 = ("NVIDIA H100 80GB HBM3", "9.0")
A100 = ("NVIDIA A100-SXM4-80GB", "8.0")
T4 = ("Tesla T4", "7.5")
RTX5090 = ("NVIDIA GeForce RTX 5090", "12.0")
RTX4090 = ("NVIDIA GeForce RTX 4090", "8.9")
B300 = ("NVIDIA B300", "10.3")
MI250X = ("AMD Instinct MI250X", "gfx90a")
MI300X = ("AMD Instinct MI300X", "gfx942")


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


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_decide(case: Case) -> None:
    profile = HardwareProfile.from_json(case.profile)
    request = Request(target=Target.parse(case.target),
                      python=DottedVersion.parse(case.python) if case.python else None)
    outcome = decide(profile, request, KNOWLEDGE)
    trace_text = "\n".join(f"{t.rule} {t.result} {t.because}" for t in outcome.trace)
    assert outcome.trace, "every outcome explains itself"
    if case.refused is not None or (case.fix is not None and case.torch is None and case.variant is None):
        assert outcome.plan is None, f"expected a refusal, got {outcome.plan and outcome.plan.summary}"
        if case.refused:
            assert case.refused in outcome.refusal.message
        if case.fix:
            assert case.fix in (outcome.refusal.fix or "")
        assert outcome.refusal.code == 2
        return
    assert outcome.refusal is None, f"refused: {outcome.refusal}"
    plan = outcome.plan
    checks = {"backend": plan.backend, "torch": plan.torch.version, "variant": plan.torch.variant,
              "strategy": plan.kernels.strategy, "arch_list": plan.kernels.arch_list,
              "packages": dict(plan.kernels.packages), "patches": tuple(p.id for p in plan.patches),
              "runnable_here": plan.runnable_here, "toolkit": plan.kernels.toolkit,
              "source_kind": plan.torch.source.kind}
    for key, actual in checks.items():
        expected = getattr(case, key)
        if expected is not None:
            assert actual == expected, f"{key}: {actual!r} != {expected!r}"
    if case.conda != "unchecked":
        assert (plan.torch.conda.spec if plan.torch.conda else None) == case.conda
    if case.warning:
        assert any(case.warning in w for w in plan.warnings), plan.warnings
    for fragment in case.trace:
        assert fragment in trace_text, f"{fragment!r} not in trace:\n{trace_text}"
    if case.prebuilt is not None:
        assert tuple(w for _, w in plan.kernels.prebuilt_wheels) == case.prebuilt
    # invariants of every plan
    expected_python = case.env_python or case.python or f"{profile.python.major}.{profile.python.minor}"
    assert plan.summary and plan.python == expected_python
    if plan.backend == "cpu":
        assert plan.kernels.strategy == "none" and not plan.kernels.packages
    else:
        if plan.kernels.strategy != "none":
            assert set(dict(plan.kernels.packages)) == {"causal-conv1d", "mamba-ssm"}
            assert plan.kernels.arch_list
    if plan.backend == "cuda" and plan.torch.source.kind == "pypi-index":
        assert plan.torch.source.url == f"https://download.pytorch.org/whl/{plan.torch.variant}"
        default = KNOWLEDGE.release(plan.torch.version).pypi_default == plan.torch.variant
        suffix = "" if default and plan.platform == "linux-64" else f"+{plan.torch.variant}"
        assert plan.torch.requirement == f"torch=={plan.torch.version}{suffix}"
    if plan.backend == "rocm":
        assert plan.torch.conda is None and plan.cuda_driver is None
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))) == plan


def test_enough_cases() -> None:
    assert len(CASES) >= 40


def test_decide_is_pure() -> None:
    profile = HardwareProfile.from_json(nvidia(GTX1080TI))
    first = decide(profile, Request(), KNOWLEDGE)
    second = decide(profile, Request(), KNOWLEDGE)
    assert first == second


def test_unconfirmed_rows_only_on_explicit_target() -> None:
    """torch 2.14's cpu row rests on the release-candidate matrix: auto skips it; 2.11's cu130 row too,
    but an explicit target that nothing confirmed satisfies may use it (with a warning)."""
    assert not next(v for v in KNOWLEDGE.release("2.14").variants if v.tag == "cpu").confirmed
    auto = decide(HardwareProfile.from_json(cpu()), Request(), KNOWLEDGE).plan
    assert auto.torch.version == "2.13.0"
    assert any("not confirmed" in t.because for t in auto.trace)
    rocm = decide(HardwareProfile.from_json(amd(MI300X, rocm="7.14.0")), Request(), KNOWLEDGE)
    assert rocm.plan is None and "unconfirmed" in str(rocm.refusal)
    targeted = decide(HardwareProfile.from_json(amd(MI300X, rocm="7.14.0")),
                      Request(Target.parse("rocm7.14")), KNOWLEDGE).plan
    assert targeted.torch.variant == "rocm7.14" and any("unconfirmed" in w for w in targeted.warnings)


def test_every_rule_leaves_a_trace() -> None:
    plan = decide(HardwareProfile.from_json(amd(MI250X, rocm="6.0.2")), Request(), KNOWLEDGE).plan
    rules = {t.rule for t in plan.trace}
    assert {"python", "platform", "backend", "rocm-version", "torch-release", "rocm-patch", "kernels", "conda"} <= rules
    plan = decide(HardwareProfile.from_json(nvidia(GTX1080TI)), Request(), KNOWLEDGE).plan
    assert {"driver", "arch-coverage", "variant", "kernels-arch", "kernels"} <= {t.rule for t in plan.trace}


def test_plan_for_raises_the_refusal() -> None:
    from resolver.core.errors import Refusal
    from resolver.plan.planning import plan_for

    with pytest.raises(Refusal, match="CUDA 13 dropped sm_70"):
        plan_for(Request(Target.parse("cuda13.0")), HardwareProfile.from_json(nvidia(V100)))
    assert plan_for(Request(), HardwareProfile.from_json(cpu())).backend == "cpu"


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "resolver", "plan", *args], capture_output=True, text=True,
                          timeout=60, env=env)


def test_cli_json_and_refusal(tmp_path) -> None:
    path = tmp_path / "v100.json"
    path.write_text(json.dumps(nvidia(V100)))
    ok = _cli("--profile", str(path), "--json")
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    for key in ("backend", "backend_version", "python", "torch", "kernels", "patches", "warnings", "trace"):
        assert key in data
    assert data["torch"]["variant"] == "cu126" and data["kernels"]["arch_list"] == ["7.0"]
    refused = _cli("--profile", str(path), "--target", "cuda13.0", "--json")
    assert refused.returncode == 2
    assert "Traceback" not in refused.stderr + refused.stdout
    err = json.loads(refused.stdout)
    assert "CUDA 13 dropped sm_70" in err["error"] and err["because"]
    assert refused.stderr.strip().count("\n") == 0  # one line
    human = _cli("--profile", str(path))
    assert human.returncode == 0 and "trace:" not in human.stdout and "cu126" in human.stdout
    assert "add --trace" in human.stdout
    traced = _cli("--profile", str(path), "--trace")
    assert traced.returncode == 0 and traced.stdout.startswith(human.stdout.split("\n\nevery rule")[0])
    assert "trace:" in traced.stdout and traced.stdout != human.stdout


def test_what_the_plan_memo_leaves_out_of_its_key_changes_no_plan() -> None:
    from resolver.plan.planning import NOT_DECIDED_ON

    for machine in (cpu(), nvidia(V100), nvidia(H100), amd(MI250X, rocm="6.0.2")):
        plans = []
        for value in (1, 10**7):
            profile = HardwareProfile.from_json({**machine, **{k: value for k in NOT_DECIDED_ON}})
            plans.append(decide(profile, Request(), KNOWLEDGE).plan.to_json())
        assert plans[0] == plans[1]


def test_plan_remembers_its_answer_only_for_the_same_inputs(tmp_path, monkeypatch) -> None:
    """A second `plan` prints the remembered answer, byte for byte what deciding again prints; a memo
    of other inputs (another profile, another resolver package) is never taken."""
    from resolver.core.model import Request
    from resolver.plan import planning

    path = tmp_path / "h100.json"
    path.write_text(json.dumps(nvidia(H100)))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first, second = (_cli("--profile", str(path), "--json") for _ in range(2))
    assert first.returncode == 0 and first.stdout == second.stdout
    memos = list((tmp_path / "cache" / "mamba-resolver" / "plans").glob("*.json"))
    assert len(memos) == 1
    human = _cli("--profile", str(path), "--quiet")
    assert human.returncode == 0 and "trace:" not in human.stdout and "kernels" in human.stdout
    assert "trace:" in _cli("--profile", str(path), "--trace").stdout  # rendered from the remembered plan as from a decided one
    profile = HardwareProfile.from_file(path)
    memo = planning.PlanMemo(profile, "auto", None)
    assert memo.file == memos[0] and {"schema_version": 1, **memo.recall()} == json.loads(first.stdout)
    assert {"schema_version": 1, **planning.plan_for(Request(), profile).to_json()} == json.loads(first.stdout)  # the same memo
    monkeypatch.setattr(planning, "package_digest", lambda: "0" * 20)  # the installed resolver changed
    assert planning.PlanMemo(profile, "auto", None).recall() is None
    monkeypatch.undo()
    other = json.loads(memos[0].read_text())
    other["inputs_digest"] = "0" * 64  # a colliding file written for other inputs
    other["value"]["backend"] = "wrong"
    memos[0].write_text(json.dumps(other))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert json.loads(_cli("--profile", str(path), "--json").stdout) == json.loads(first.stdout)


def test_the_plan_memo_is_keyed_by_every_file_of_the_package(tmp_path, monkeypatch) -> None:
    """Any file of the resolver package, whatever decide imports, is part of the key: a copy of the
    package with one byte changed in a module no list names gives another key."""
    import shutil

    from resolver.plan import planning

    copy = tmp_path / "resolver"
    shutil.copytree(planning.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(planning, "PACKAGE", copy)
    before = planning.package_digest()
    assert planning.package_digest() == before
    module = copy / "plan" / "decide" / "context.py"
    module.write_text(module.read_text() + "\n")
    edited = planning.package_digest()
    table = copy / "plan" / "knowledge" / "data" / "gpus.toml"
    table.write_text(table.read_text().replace("H100", "H1OO", 1))
    assert len({before, edited, planning.package_digest()}) == 3


def test_plan_for_gives_the_same_plan_from_its_memo(tmp_path, monkeypatch) -> None:
    """lock and setup take plans through plan_for: the remembered plan equals the decided one, for
    every kind of plan (CPU, CUDA with kernels, ROCm with header fixes)."""
    from resolver.plan.planning import plan_for

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for machine in (cpu(), nvidia(V100), nvidia(H100), amd(MI250X, rocm="6.0.2")):
        profile = HardwareProfile.from_json(machine)
        decided = decide(profile, Request(), KNOWLEDGE).plan
        assert plan_for(Request(), profile) == decided  # decided, then remembered
        assert plan_for(Request(), profile) == decided  # from the memo
    assert len(list((tmp_path / "mamba-resolver" / "plans").glob("*.json"))) == 4


def test_cli_bad_python(tmp_path) -> None:
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(cpu()))
    bad = _cli("--profile", str(path), "--python", "three")
    assert bad.returncode != 0 and "--python" in bad.stderr and "Traceback" not in bad.stderr


def test_requested_python_is_never_swapped() -> None:
    outcome = decide(HardwareProfile.from_json(nvidia(V100, python="3.12.1")),
                     Request(python=DottedVersion.parse("3.8")), KNOWLEDGE)
    assert outcome.plan is None and "3.8" in outcome.refusal.message


def test_conda_forge_build_chosen_for_the_gpus() -> None:
    """When conda-forge's builds of the chosen torch are known, the spec names the CUDA build whose
    arch list covers the GPUs (12.9 for a GTX 1080 Ti: conda-forge's 13.0 build starts at sm_75)."""
    import dataclasses

    from resolver.plan.knowledge import CondaForgeBuild

    cf = KNOWLEDGE.conda_forge
    extra = CondaForgeBuild("2.14.1", "linux-64", (DottedVersion.parse("12.9"), DottedVersion.parse("13.0")), "test")
    knowledge = dataclasses.replace(KNOWLEDGE, conda_forge=cf._replace(builds=cf.builds + (extra,)))
    old = decide(HardwareProfile.from_json(nvidia(GTX1080TI)), Request(), knowledge).plan
    assert old.torch.conda.spec == "pytorch 2.14.1 cuda129*"
    new = decide(HardwareProfile.from_json(nvidia(H100)), Request(), knowledge).plan
    assert new.torch.conda.spec == "pytorch 2.14.1 cuda130*"


def test_pypi_default_build_is_pinned_without_local_label() -> None:
    """2.14.1's PyPI wheel is the cu130 build (inspected first-hand), so a cu130 plan pins torch==2.14.1;
    every other variant keeps its +label so pip cannot pick PyPI's different default build."""
    elsewhere = decide(HardwareProfile.from_json(cpu()), Request(Target.parse("cuda13.0")), KNOWLEDGE).plan
    assert elsewhere.torch.requirement == "torch==2.14.1"
    assert any(t.rule == "torch-pin" for t in elsewhere.trace)
    h100 = decide(HardwareProfile.from_json(nvidia(H100)), Request(), KNOWLEDGE).plan
    assert h100.torch.requirement == "torch==2.14.1+cu132"
    cpu_plan = decide(HardwareProfile.from_json(cpu()), Request(), KNOWLEDGE).plan
    assert cpu_plan.torch.requirement == "torch==2.13.0+cpu"
    arm = decide(HardwareProfile.from_json(nvidia(("Orin (nvgpu)", "8.7"), platform="linux-aarch64")), Request(),
                 KNOWLEDGE).plan
    assert arm.torch.requirement.endswith("+" + arm.torch.variant)


def test_ptx_runs_forward_only_with_the_full_driver_floor() -> None:
    """A GPU newer than every cubin runs the wheel's PTX, JIT-compiled by the driver, which needs the
    toolkit's full driver floor (minor-version compatibility is not enough for PTX)."""
    import dataclasses

    release = KNOWLEDGE.release("2.14")
    variant = next(v for v in release.variants if v.tag == "cu126" and "linux-64" in v.platforms)
    ptx_variant = variant._replace(archs=("8.0",), ptx=("8.0",))  # kernels only as sm_80 cubins + compute_80 PTX
    only = release._replace(variants=(ptx_variant,))
    knowledge = dataclasses.replace(KNOWLEDGE, releases=(only,))
    new_driver = decide(HardwareProfile.from_json(nvidia(H100, driver="560.35.03")), Request(), knowledge)
    assert new_driver.plan.torch.variant == "cu126"
    assert any("compute_80 PTX, JIT-compiled" in t.because for t in new_driver.trace)
    old_driver = decide(HardwareProfile.from_json(nvidia(H100, driver="550.54.15")), Request(), knowledge)
    assert old_driver.plan is None and "only through PTX" in old_driver.refusal.message
    assert "560.28.03" in old_driver.refusal.message  # CUDA 12.6's full floor
    # nothing runs backwards across majors: PTX for 8.0 does not serve a 7.5 GPU
    t4 = decide(HardwareProfile.from_json(nvidia(T4)), Request(), knowledge)
    assert t4.plan is None


@pytest.mark.parametrize("nvcc,source", [(None, "missing"), ("11.8.89", "system"), ("12.4.131", "missing")])
def test_a_cuda_major_conda_forge_has_no_compiler_for_builds_with_the_machines_nvcc(nvcc, source) -> None:
    """conda-forge packages no CUDA 11 nvcc (its split toolkit starts at 12): a cu118 plan asks for no toolkit
    package and promises only an nvcc 11.x the probe found, else says it is missing (setup refuses before
    installing anything); a CUDA 12+ plan takes the environment's own nvcc whatever the machine has."""
    assert not KNOWLEDGE.conda_forge.toolkit_specs(DottedVersion.parse("11.8"))
    plan = decide(HardwareProfile.from_json(nvidia(A100, driver="470.82.01", cuda_toolkit=nvcc)), Request(),
                  KNOWLEDGE).plan
    assert plan.torch.variant == "cu118" and plan.kernels.strategy == "build"
    assert plan.kernels.toolkit_source == source and plan.kernels.toolkit == "nvcc 11.8"
    assert set(dict(plan.conda_packages)) == {"python", "pip"}
    assert any("no CUDA 11 compiler" in t.because for t in plan.trace if t.rule == "environment")
    assert any("need nvcc 11.x" in w for w in plan.warnings) == (source == "missing")
    newer = decide(HardwareProfile.from_json(nvidia(H100, cuda_toolkit=nvcc)), Request(), KNOWLEDGE).plan
    assert newer.kernels.toolkit_source == "environment" and "cuda-nvcc" in dict(newer.conda_packages)
    other = decide(HardwareProfile.from_json(cpu()), Request(Target.parse("cuda11.8")), KNOWLEDGE).plan
    assert other.kernels.toolkit_source == "target" and "on the target machine" in other.summary
