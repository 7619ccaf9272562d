"""The fields of a plan and of a target that users and JSON readers see: how ``--target`` is read (the
wheel-tag form, separators, the hint for a typo), which environment a target re-locks, what a stored
plan reads back as when it was written before a field existed, the kernel sentence of a summary, the
compiler a plan promises and the conda-forge build a plan for another machine names."""

from __future__ import annotations

import dataclasses
import json

import pytest
from support.profiles import A100, nvidia

from resolver.core.errors import BadInput, UsageError
from resolver.core.model import KernelChoice, Plan, Request, Target
from resolver.core.versions import DottedVersion, ReleaseVersion
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


# ------------------------------------------------------------------------------------ typed versions

def _plans() -> list[Plan]:
    """A plan of each backend, one for another machine, one for a fleet's class."""
    from support.profiles import H100, MI300X, cpu
    from support.profiles import amd as amd_profile

    cpu_plan = decide(HardwareProfile.from_json(cpu()), Request(), K).plan
    cuda = decide(HardwareProfile.from_json(nvidia(H100)), Request(), K).plan
    rocm = decide(HardwareProfile.from_json(amd_profile(MI300X, rocm="6.3.1")), Request(), K).plan
    other = decide(HardwareProfile.from_json(cpu()), Request(Target.parse("cuda12.6")), K).plan
    return [cpu_plan, cuda, rocm, other, dataclasses.replace(cuda, environment="cuda12-sm90")]


@pytest.mark.parametrize("index", range(5))
def test_a_plan_reads_back_from_its_json_byte_for_byte_with_typed_versions(index):
    plan = _plans()[index]
    text = json.dumps(plan.to_json())
    again = Plan.from_json(json.loads(text))
    assert json.dumps(again.to_json()) == text and again == plan
    assert isinstance(again.python, DottedVersion) and isinstance(again.torch.version, DottedVersion)
    assert again.backend_version is None if again.backend == "cpu" else isinstance(again.backend_version, DottedVersion)
    assert all(isinstance(v, ReleaseVersion) for _, v in again.kernels.packages)
    data = json.loads(text)
    assert data["python"] == str(again.python) and data["torch"]["version"] == str(again.torch.version)


def test_a_kernel_release_with_a_suffix_keeps_its_text():
    data = _plans()[1].to_json()
    data["kernels"]["packages"] = {"causal-conv1d": "1.6.1", "mamba-ssm": "2.3.2.post1"}
    again = Plan.from_json(data)
    assert dict(again.kernels.packages)["mamba-ssm"] == ReleaseVersion(DottedVersion((2, 3, 2)), ".post1")
    assert again.to_json()["kernels"]["packages"] == data["kernels"]["packages"]


@pytest.mark.parametrize("field,value", [("python", "3.11abc"), ("backend_version", "twelve"), ("python", "v3.11"),
                                         ("backend_version", 12.6), ("torch", "2.13.0-cu126"),
                                         ("kernels", "2.3.2-1")])
def test_a_stored_plan_whose_version_is_not_one_is_refused_as_malformed(field, value):
    data = _plans()[1].to_json()
    if field == "torch":
        data["torch"] = {**data["torch"], "version": value}
    elif field == "kernels":
        data["kernels"] = {**data["kernels"], "packages": {"mamba-ssm": value}}
    else:
        data[field] = value
    with pytest.raises(BadInput) as refused:
        Plan.from_json(data)
    assert refused.value.message.startswith("stored plan is malformed (not a")
    assert refused.value.fix == "run `python -m resolver plan` again"


def test_a_plan_made_from_version_values_equals_one_made_from_their_text():
    plan = _plans()[1]
    typed = dataclasses.replace(plan, python=DottedVersion.parse(str(plan.python)),
                                backend_version=DottedVersion.parse(str(plan.backend_version)))
    assert typed == plan and typed.env_name == plan.env_name == "cuda13"


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
