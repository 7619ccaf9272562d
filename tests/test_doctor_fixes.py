"""Every doctor signature's exact fix, pinned: for each log excerpt (tests/logs/), the signature doctor
names first and the command it gives, filled for one environment. A fix swapped between two
signatures in signatures.toml, or a template that no longer fills, fails here."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from resolver.doctor.context import FixContext, _release, applies, target_of
from resolver.doctor.signatures import decode_log, load_signatures, match_log, rocm_in_log

LOGS = Path(__file__).parent / "logs"
SIGNATURES = load_signatures()
CONTEXT = FixContext(env="cuda13", arch="9.0", torch="2.14.1+cu130", cuda="13.0", target="cuda13.0")

# log -> (the signature named first, its fix for CONTEXT)
EXPECTED = {
    'mamba-267-no-kernel-image.log': ('no-kernel-image', 'python -m resolver build --env cuda13 --arch 9.0'),
    'cao-ronet-2-causal-conv1d-no-kernel-image.log': ('no-kernel-image', 'python -m resolver build --env cuda13 --arch 9.0'),
    'mamba-217-undefined-c10.log': ('undefined-c10-symbol', 'python -m resolver build --env cuda13 --no-prebuilt'),
    'causal-conv1d-35-undefined-c10.log': ('undefined-c10-symbol', 'python -m resolver build --env cuda13 --no-prebuilt'),
    'mamba-149-undefined-aten.log': ('undefined-aten-symbol', 'python -m resolver build --env cuda13 --no-prebuilt'),
    'mmdetection-1171-cxxabi.log': ('cxxabi-not-found', 'python -m resolver install --env cuda13 --force'),
    'mamba-297-torch-no-attribute.log': ('torch-missing-attribute', 'python -m resolver plan && python -m resolver lock --target cuda13.0 && python -m resolver install --env cuda13'),
    'lassm-4-torch-no-attribute.log': ('torch-missing-attribute', 'python -m resolver plan && python -m resolver lock --target cuda13.0 && python -m resolver install --env cuda13'),
    'rocm-2061-hip-no-binary.log': ('hip-no-binary-for-gpu', 'python -m resolver build --env cuda13 --arch 9.0'),
    'torch-xpu-ops-1588-half-bias.log': ('half-bias-type-mismatch', 'python -m resolver verify --env cuda13 --dtypes float16'),
    'mamba-602-nvcc-missing.log': ('nvcc-missing', 'export CUDA_HOME=/usr/local/cuda-13.0 PATH=/usr/local/cuda-13.0/bin:$PATH && python -m resolver build --env cuda13'),
    'storm-14-cuda-home.log': ('cuda-home-unset', 'export CUDA_HOME=/usr/local/cuda-13.0 && python -m resolver build --env cuda13'),
    'nvdiffrast-183-killed.log': ('build-killed-oom', 'python -m resolver build --env cuda13 --arch 9.0 --jobs 1'),
    'mamba-720-isolated-build.log': ('isolated-build-other-torch', 'python -m resolver build --env cuda13'),
    'mamba-671-rocm-isolated.log': ('rocm-build-got-cuda-torch', 'python -m resolver build --env cuda13 --arch 9.0'),
    'mamba-pr-1000-cxx20.log': ('cxx20-required-by-aten', 'python -m resolver build --env cuda13'),
    'mamba-345-triton-compilation.log': ('triton-compilation-error', 'python -m resolver install --env cuda13 --force'),
    'mamba-438-triton-out-of-resources.log': ('triton-out-of-resources', 'python -m resolver install --env cuda13 --force'),
    'mamba-363-triton-ldconfig.log': ('triton-ldconfig-missing', 'export PATH=$PATH:/sbin:/usr/sbin && python -m resolver verify --env cuda13'),
    'mamba-516-triton-map-at.log': ('triton-map-at', 'python -m resolver doctor --env cuda13'),
    'ctranslate2-rocm-2-bf16-multiple-definition.log': ('rocm60-bf16-multiple-definition', 'python -m resolver patch && python -m resolver build --env cuda13 --arch 9.0'),
    'mamba-100-wheel-download.log': ('prebuilt-wheel-download-failed', 'python -m resolver build --env cuda13 --no-prebuilt'),
    'mamba-277-wheel-ssl.log': ('prebuilt-wheel-download-failed', 'python -m resolver build --env cuda13 --no-prebuilt'),
    'mamba-302-build-stuck.log': ('build-seems-stuck', 'python -m resolver build --env cuda13 --arch 9.0'),
    'hhhhpaaa-mamba-ssm-2-cuda-mismatch.log': ('cuda-version-mismatch-build', 'export CUDA_HOME=/usr/local/cuda-12.1 && python -m resolver build --env cuda13'),
    'fooocus-1313-driver-too-old.log': ('driver-too-old', 'python -m resolver lock --target auto && python -m resolver install --env cuda13'),
    'nunif-702-driver-insufficient.log': ('driver-too-old', 'python -m resolver lock --target auto && python -m resolver install --env cuda13'),
    'causal-conv1d-9-missing-module.log': ('extension-module-missing', 'python -m resolver build --env cuda13'),
    'mamba-install-1-libc10.log': ('libc10-not-found', 'python -m resolver verify --env cuda13'),
    'mamba-467-causal-conv1d-none.log': ('causal-conv1d-none', 'python -m resolver build --env cuda13 --package causal-conv1d'),
    'mamba-pr-675-no-triton.log': ('triton-missing', 'python -m resolver install --env cuda13 --force'),
    'koboldcpp-1767-rocm7-bf16-duplicate.log': ('rocm-bf16-duplicate-other-header', 'python -m resolver build --env cuda13 --arch 9.0'),
    'mamba-660-causal-conv1d-incompatible-arguments.log': ('causal-conv1d-out-of-step', 'python -m resolver build --env cuda13'),
    'hi3dgen-5-sm120-not-compatible.log': ('torch-lacks-gpu-arch', 'python -m resolver lock --target auto && python -m resolver install --env cuda13'),
    'brokenhill-12-build-isolation-no-torch.log': ('build-isolation-no-torch', 'python -m resolver build --env cuda13'),
    'mamba-706-libcudart-12.log': ('cuda-runtime-library-missing', 'python -m resolver build --env cuda13 --no-prebuilt'),
    'mamba-725-segmentation-fault.log': ('segmentation-fault', 'python -m resolver verify --env cuda13'),
}


def test_every_log_has_its_fix_pinned():
    assert sorted(EXPECTED) == sorted(log for s in SIGNATURES for log in s.logs)
    assert {sig for sig, _ in EXPECTED.values()} == {s.id for s in SIGNATURES if s.logs}


@pytest.mark.parametrize("log", sorted(EXPECTED))
def test_the_fix_doctor_gives_for_each_log(log):
    text = decode_log((LOGS / log).read_bytes())
    rocm = rocm_in_log(text)
    matches = [m for m in match_log(text, SIGNATURES)
               if applies(replace(m, groups={**m.groups, **({"log_rocm": rocm} if rocm else {})}), FixContext())]
    first = matches[0]
    assert (first.signature.id, CONTEXT.render(first.signature.fix, first.groups)) == EXPECTED[log]


def test_a_fix_names_the_package_and_the_rocm_when_known():
    assert FixContext(package="mamba-ssm").render("build{package_flag}.") == "build --package mamba-ssm."
    assert FixContext().render("build{package_flag}.") == "build."
    assert FixContext(rocm="6.0.2").render("for {rocm}") == "for 6.0.2"
    assert FixContext().render("for {rocm}") == "for the installed ROCm"


def test_an_unknown_architecture_is_left_out_of_the_fix():
    template = "python -m resolver build --env {env} --arch {arch}"
    assert FixContext(env="e").render(template) == "python -m resolver build --env e"
    assert FixContext(env="e", arch="").render(template) == "python -m resolver build --env e"
    assert FixContext(env="e", arch="gfx90a").render(template) == "python -m resolver build --env e --arch gfx90a"


@pytest.mark.parametrize("facts, target", [
    ({"cuda": "12.8.1", "hip": None, "version": "2.14.1+cu128"}, "cuda12.8"),
    ({"cuda": None, "hip": "6.2.41133-dd7f95766", "version": "2.14.1+rocm6.2"}, "rocm6.2"),
    ({"cuda": None, "hip": None, "version": "2.14.1+cpu"}, "cpu"),
    ({"cuda": None, "hip": None, "version": None}, "auto"),
    (None, "auto"),
])
def test_the_target_of_a_torch_build(facts, target):
    assert target_of(facts) == target


def test_a_release_is_the_version_without_its_local_part():
    assert _release(" 2.14.1+cu130 ") == "2.14.1" and _release("2.14.1") == "2.14.1"


def test_a_log_is_decoded_without_colours_and_with_one_kind_of_line_end():
    assert decode_log(b"\x1b[31merror\x1b[0m: a\r\nb\rc\xff") == "error: a\nb\nc\ufffd"


def test_a_rocm_release_past_4000_characters_of_a_line_is_not_read():
    assert rocm_in_log(" " * 3992 + "ROCm 6.0") == "6.0"  # ends at the 4000th character
    assert rocm_in_log(" " * 3993 + "ROCm 6.0") is None
