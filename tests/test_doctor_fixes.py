"""Every doctor signature's exact fix, pinned: for each log excerpt (tests/logs/), the signature doctor
names first and the command it gives, filled for one environment. A fix swapped between two
signatures in signatures.toml, or a template that no longer fills, fails here."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from resolver.doctor.context import FixContext, applies
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
