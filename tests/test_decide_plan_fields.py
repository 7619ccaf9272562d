"""The fields of a plan and of a target that users and JSON readers see: how ``--target`` is read (the
wheel-tag form, separators, the hint for a typo), which environment a target re-locks, what a stored
plan reads back as when it was written before a field existed, the kernel sentence of a summary, the
compiler a plan promises and the conda-forge build a plan for another machine names."""

from __future__ import annotations

import dataclasses

import pytest
from test_decide import A100, nvidia

from resolver.core.errors import BadInput, UsageError
from resolver.core.model import KernelChoice, Plan, Request, Target
from resolver.core.versions import DottedVersion
from resolver.plan.decide import decide
from resolver.plan.decide.explain import kernel_text
from resolver.plan.knowledge import CondaForgeBuild, Knowledge
from resolver.plan.probe.profile import HardwareProfile

K = Knowledge.load()


# ------------------------------------------------------------------------------------ --target

@pytest.mark.parametrize("text,expected", [
    ("cu126", "cuda12.6"), ("cu118", "cuda11.8"), ("cu130", "cuda13.0"), ("CU129", "cuda12.9"),
    ("cuda-12.6", "cuda12.6"), ("CUDA_12.8", "cuda12.8"), ("rocm-6.2", "rocm6.2"), ("rocm_6.0.2", "rocm6.0.2"),
    (" cuda13 ", "cuda13"), ("cuda12.6", "cuda12.6"), ("cpu", "cpu"), ("auto", "auto")])
def test_a_target_is_read_in_the_wheel_tag_form_and_with_separators(text, expected):
    assert str(Target.parse(text)) == expected


@pytest.mark.parametrize("text", ["sm120", "sm_86", "xx126", "cu12", "cuda", "rocm"])
def test_what_is_not_a_target_is_refused_as_a_usage_error(text):
    """A compute capability (sm120) is not a CUDA version, nor is a wheel tag too short to hold one."""
    with pytest.raises(UsageError):
        Target.parse(text)


@pytest.mark.parametrize("text,hint", [("cuda12.6x", "did you mean 'cuda12.6'? "), ("rocn6.0", "did you mean 'rocm6.0'? "),
                                       ("c", "did you mean 'cpu'? "), ("cux12", "did you mean 'cuda12.9'? "),
                                       ("metal", "")])
def test_a_target_typo_is_answered_with_the_nearest_form_and_every_form(text, hint):
    with pytest.raises(UsageError) as info:
        Target.parse(text)
    assert info.value.message == f"unknown target {text!r}"
    assert info.value.fix == f"{hint}use one of auto, cpu, cudaX.Y, rocmX.Y[.Z] (e.g. cuda12.6, rocm6.2)"


@pytest.mark.parametrize("name,target", [("cuda12", "cuda12"), ("cuda13", "cuda13"), ("rocm6", "rocm6"), ("cpu", "cpu"),
                                         ("auto", "TARGET"), ("cuda12.6", "TARGET"), ("cuda12-sm80", "TARGET"),
                                         ("rocm6.2", "TARGET"), ("gpu-a", "TARGET")])
def test_the_target_that_locks_an_environment_again_is_its_family_name_or_a_placeholder(name, target):
    assert Target.for_environment(name) == target


# ------------------------------------------------------------------------------------ stored plans

def _stored(**extra) -> dict:
    """The fewest keys a stored plan can have: what every version of ``plan --json`` wrote."""
    return {"backend": "cuda", "backend_version": "12.6", "python": "3.11",
            "torch": {"version": "2.9.1", "variant": "cu126",
                      "source": {"kind": "pypi-index", "url": "https://download.pytorch.org/whl/cu126"}},
            "kernels": {"strategy": "build", "arch_list": ["8.0"]}, **extra}


def test_a_stored_plan_without_the_later_fields_reads_back_with_their_defaults():
    plan = Plan.from_json(_stored())
    assert (plan.platform, plan.target, plan.torch.cxx11_abi, plan.torch.conda, plan.torch.local_version) == \
        ("linux-64", "auto", True, None, None)
    assert (plan.kernels.packages, plan.kernels.prebuilt_wheels, plan.kernels.toolkit, plan.kernels.toolkit_source) == \
        ((), (), None, None)
    assert (plan.patches, plan.warnings, plan.trace, plan.conda_packages) == ((), (), (), ())
    assert (plan.glibc, plan.cuda_driver, plan.runnable_here, plan.summary, plan.environment) == \
        (None, None, True, "", None)
    assert plan.env_name == "cuda12" and plan.torch.requirement == "torch==2.9.1"
    assert plan.to_json()["environment"] == "cuda12"


def test_a_stored_plan_keeps_every_field_it_has():
    data = _stored(platform="linux-aarch64", target="cuda12.6", patches=[{"id": "p", "file": "include/x.h"}],
                   warnings=["w"], trace=[{"rule": "r", "result": "x", "because": "b"}], glibc="2.35",
                   cuda_driver="12.8", runnable_here=False, summary="s", conda_packages={"python": "3.11.*"},
                   environment="cuda12-sm80")
    data["torch"].update(conda={"channel": "conda-forge", "spec": "pytorch 2.9.1 cuda12*"}, cxx11_abi=False,
                         requirement="torch==2.9.1+cu126")
    data["kernels"].update(packages={"mamba-ssm": "2.3.1", "causal-conv1d": "1.6.1"}, toolkit="nvcc 12.6",
                           toolkit_source="environment", prebuilt_wheels={"mamba-ssm": "m.whl"})
    plan = Plan.from_json(data)
    assert plan.to_json() == {**data, "kernels": {**data["kernels"], "arch_list": ["8.0"]},
                              "torch": {**data["torch"]}}
    assert tuple((name, str(version)) for name, version in plan.kernels.packages) == (("causal-conv1d", "1.6.1"), ("mamba-ssm", "2.3.1"))
    assert plan.torch.local_version == "cu126" and plan.env_name == "cuda12-sm80"


def test_a_stored_environment_name_equal_to_the_backend_family_is_not_kept_as_a_class():
    assert Plan.from_json(_stored(environment="cuda12")).environment is None
    assert Plan.from_json({**_stored(environment="cpu"), "backend": "cpu", "backend_version": None}).environment is None
    with pytest.raises(BadInput, match="environment name .* in the stored plan is not valid"):
        Plan.from_json(_stored(environment="no spaces allowed"))


@pytest.mark.parametrize("missing", ["backend", "torch", "kernels"])
def test_a_stored_plan_without_a_field_every_plan_has_is_refused_as_malformed(missing):
    data = _stored()
    del data[missing]
    with pytest.raises(BadInput, match=f"stored plan is malformed \\(missing '{missing}'\\)") as info:
        Plan.from_json(data)
    assert info.value.fix == "run `python -m resolver plan` again"


# ------------------------------------------------------------------------------------ plan texts and choices

@pytest.mark.parametrize("source,where", [
    ("system", "this machine's nvcc 12.6"), ("environment", "the environment's own nvcc 12.6"),
    ("target", "nvcc 12.6 on the target machine"), ("missing", "nvcc 12.6, which this machine lacks (see the warning)"),
    (None, "nvcc 12.6"), ("elsewhere", "nvcc 12.6")])
def test_the_kernel_sentence_says_where_the_compiler_comes_from(source, where):
    kernels = KernelChoice(strategy="build", arch_list=("8.0", "9.0"), packages=(("causal-conv1d", "1.6.1"),),
                           toolkit="nvcc 12.6", toolkit_source=source)
    assert kernel_text(kernels) == f"Mamba kernels (causal-conv1d 1.6.1) are built with {where} for 8.0, 9.0 only."


def test_a_compiler_of_the_wrong_major_is_named_in_the_warning_and_the_trace():
    plan = decide(HardwareProfile.from_json(nvidia(A100, driver="470.82.01", cuda_toolkit="12.4.131")), Request(),
                  K).plan
    assert (plan.kernels.toolkit, plan.kernels.toolkit_source) == ("nvcc 11.8", "missing")
    assert "the kernels need nvcc 11.x (torch is CUDA 11.8) and this machine has nvcc 12.4.131: install the CUDA 11 " \
           "toolkit (or point CUDA_HOME at it) before building" in plan.warnings
    assert [t.because for t in plan.trace if t.rule == "kernels-compiler"] == [
        "the kernels need nvcc 11.x to match torch's CUDA 11.8; this machine has nvcc 12.4.131"]


def test_a_plan_for_another_machine_names_the_conda_forge_build_of_its_cuda():
    """No GPU here, --target cuda13.0: conda-forge's builds of that torch are known, the CUDA 13.0 one is named."""
    cf = K.conda_forge
    extra = CondaForgeBuild("2.14.1", "linux-64", (DottedVersion.parse("12.9"), DottedVersion.parse("13.0")), "test")
    knowledge = dataclasses.replace(K, conda_forge=cf._replace(builds=cf.builds + (extra,)))
    cpu_box = HardwareProfile.from_json({"platform": "linux-64", "glibc": "2.36", "python": "3.11.7", "nvidia": None,
                                         "amd": None, "cuda_toolkit": None})
    plan = decide(cpu_box, Request(Target.parse("cuda13.0")), knowledge).plan
    assert plan.runnable_here is False and plan.torch.conda.spec == "pytorch 2.14.1 cuda130*"
    assert [t.because for t in plan.trace if t.rule == "conda"] == [
        "conda-forge builds pytorch 2.14.1 with CUDA 12.9, 13.0; CUDA 13.0 covers these GPUs"]
