"""Every doctor signature's exact fix, pinned: for each log excerpt (tests/data/logs/), the signature doctor
names first and the command it gives, filled for one environment. A fix swapped between two
signatures in signatures.toml, or a template that no longer fills, fails here."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from support import DATA

from resolver.doctor.context import FixContext, _release, applies, arch_of, build_context, target_of
from resolver.doctor.signatures import decode_log, load_signatures, match_log, rocm_in_log

LOGS = DATA / "logs"
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
    'block-sparse-attention-15-compute-120.log': ('nvcc-unsupported-arch', 'python -m resolver build --env cuda13 --arch 9.0'),
    'yolo34py-140-unsupported-gnu.log': ('host-compiler-too-new', 'python -m resolver build --env cuda13'),
    'mamba-634-sdist-missing-csrc.log': ('sdist-missing-csrc', 'python -m resolver build --env cuda13'),
    'llama-cpp-python-1840-glibc.log': ('glibc-too-old', 'python -m resolver build --env cuda13 --no-prebuilt'),
    'flash-attention-304-cuda-bf16-missing.log': ('cuda-bf16-header-missing', 'python -m resolver build --env cuda13'),
    'knn-cuda-14-ninja-required.log': ('ninja-missing', 'python -m resolver build --env cuda13'),
    'changemamba-41-msvc-required.log': ('msvc-missing', 'python -m resolver plan'),
    'flash-attention-966-undefined-symbol.log': ('flash-attn-abi', 'python -m resolver verify --env cuda13'),
    'minference-51-flash-attn-ampere.log': ('flash-attn-needs-ampere', 'python -m resolver verify --env cuda13'),
    'mamba-386-triton-kernel-image-invalid.log': ('triton-kernel-image-invalid', 'python -m resolver lock --target auto && python -m resolver install --env cuda13'),
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


# ------------------------------------------------------------------------------- the table as it is read
def table(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "sigs.toml"
    path.write_text(rows)
    return path


MINIMAL = '[[signature]]\nid = "{id}"\ntitle = "t"\npatterns = ["{pattern}"]\ncause = "c"\nfix = "f"\nsources = ["s"]\n'


def test_every_field_of_the_shipped_table_is_read_as_written():
    from resolver.core.toml import parse_toml
    from resolver.doctor.signatures import DATA_FILE

    rows = parse_toml(DATA_FILE.read_text(encoding="utf-8"), what="signatures", fix="")["signature"]
    signatures = load_signatures()  # read here, not at import: the reading is what is tested
    assert [s.id for s in signatures] == [row["id"] for row in rows]
    for sig, row in zip(signatures, rows):
        assert (sig.title, sig.cause, sig.fix, sig.sources) == (row["title"], row["cause"], row["fix"], tuple(row["sources"]))
        assert [p.pattern for p in sig.patterns] == row["patterns"]
        assert [p.pattern for p in sig.requires] == row.get("requires", [])
        assert sig.fix_detail == row.get("fix_detail", "") and sig.logs == tuple(row.get("logs", ()))
        assert sig.at_end is row.get("at_end", False) and sig.category == row.get("category", "")
        assert sig.specificity == row.get("specificity", 50) and sig.unless_same == tuple(row.get("unless_same", ()))
        assert (sig.rocm, sig.rocm_not) == (tuple(row.get("rocm", ())), tuple(row.get("rocm_not", ())))


def test_a_row_with_only_the_required_keys_takes_the_defaults(tmp_path):
    (sig,) = load_signatures(table(tmp_path, MINIMAL.format(id="a", pattern="x")))
    assert (sig.id, sig.title, sig.cause, sig.fix, [p.pattern for p in sig.patterns]) == ("a", "t", "c", "f", ["x"])
    assert (sig.logs, sig.requires, sig.at_end, sig.fix_detail, sig.category, sig.specificity) == ((), (), False, "", "", 50)
    assert (sig.unless_same, sig.rocm, sig.rocm_not, sig.sources) == ((), (), (), ("s",))
    assert load_signatures(table(tmp_path, "# no signatures\n")) == ()


def test_a_full_row_is_read_whole(tmp_path):
    (sig,) = load_signatures(table(tmp_path, MINIMAL.format(id="a", pattern="x") + (
        'requires = ["y"]\nfix_detail = "d"\nlogs = ["l.log"]\nat_end = true\ncategory = "build"\nspecificity = 70\n'
        'unless_same = ["g", "torch"]\nrocm = ["6.0"]\nrocm_not = ["6.1"]\n')))
    assert ([p.pattern for p in sig.requires], sig.fix_detail, sig.logs, sig.at_end, sig.category, sig.specificity) == \
        (["y"], "d", ("l.log",), True, "build", 70)
    assert (sig.unless_same, sig.rocm, sig.rocm_not) == (("g", "torch"), ("6.0",), ("6.1",))


@pytest.mark.parametrize("rows, message", [
    (MINIMAL.format(id="a", pattern="x").replace('fix = "f"\n', ""), "sigs.toml: a: missing 'fix'"),
    (MINIMAL.format(id="a", pattern="x").replace('id = "a"\n', ""), "sigs.toml: ?: missing 'id'"),
    (MINIMAL.format(id="a", pattern="(x"), "sigs.toml: a: bad regular expression (missing ), unterminated subpattern"),
    (MINIMAL.format(id="a", pattern="x") + 'requires = ["[y"]\n', "sigs.toml: a: bad regular expression (unterminated"),
    (MINIMAL.format(id="a", pattern="x") + MINIMAL.format(id="a", pattern="y"), "sigs.toml: duplicate signature ids"),
])
def test_a_broken_table_says_which_row_and_what(tmp_path, rows, message):
    with pytest.raises(ValueError) as caught:
        load_signatures(table(tmp_path, rows))
    assert str(caught.value).startswith(message)


def test_patterns_match_at_every_line_start(tmp_path):
    sigs = load_signatures(table(tmp_path, MINIMAL.format(id="a", pattern="^error: x")))
    assert [m.line for m in match_log("first line\nerror: x\n", sigs)] == [2]


def test_an_at_end_signature_sees_the_last_five_non_empty_lines(tmp_path):
    sigs = load_signatures(table(tmp_path, MINIMAL.format(id="a", pattern="MARK") + "at_end = true\n"))
    assert [m.line for m in match_log("MARK\na\n\nb\nc\nd\n", sigs)] == [1]
    assert match_log("MARK\na\nb\nc\nd\ne\n", sigs) == []


def _match(tmp_path, extra: str, groups: dict):
    from resolver.doctor.signatures import Match

    (sig,) = load_signatures(table(tmp_path, MINIMAL.format(id="a", pattern="x") + extra))
    return Match(sig, 1, "x", groups)


@pytest.mark.parametrize("rocm, applies_here", [("6.0", True), ("6.0.2", True), ("6.01", False), ("6.1", False),
                                                (None, True)])
def test_a_rocm_only_signature_applies_on_those_releases_or_an_unknown_one(tmp_path, rocm, applies_here):
    assert applies(_match(tmp_path, 'rocm = ["6.0"]\n', {}), FixContext(rocm=rocm)) is applies_here
    if rocm:  # the release the log names outranks the probe's
        assert applies(_match(tmp_path, 'rocm = ["6.0"]\n', {"log_rocm": rocm}), FixContext(rocm="7.0")) is applies_here


@pytest.mark.parametrize("rocm, applies_here", [("6.0", False), ("6.0.2", False), ("6.01", True), ("6.1", True),
                                                (None, False)])
def test_a_rocm_not_signature_applies_only_on_a_known_other_release(tmp_path, rocm, applies_here):
    assert applies(_match(tmp_path, 'rocm_not = ["6.0"]\n', {}), FixContext(rocm=rocm)) is applies_here


def test_unless_same_naming_no_fact_of_the_context_still_applies(tmp_path):
    assert applies(_match(tmp_path, 'unless_same = ["v", "nothing"]\n', {"v": "2.1"}), FixContext())
    assert not applies(_match(tmp_path, 'unless_same = ["v", "torch"]\n', {"v": "2.1+cpu"}), FixContext(torch="2.1"))


# ------------------------------------------------------------------------- this environment's facts
def _profile(**gpus):
    from resolver.plan.probe.profile import HardwareProfile

    base = {"platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "nvidia": None, "amd": None,
            "cuda_toolkit": None}
    if "nvidia" in gpus:
        base["nvidia"] = {"driver_version": "580.65.06", "cuda_driver_version": None, "gpus": [
            {"name": f"GPU {cc}", "compute_capability": cc, "uuid": None, "memory_mib": None} for cc in gpus["nvidia"]]}
    if "amd" in gpus:
        base["amd"] = {"rocm_version": gpus.get("rocm"), "gpus": [{"name": f"AMD {g}", "gfx_arch": g} for g in gpus["amd"]]}
    return HardwareProfile.from_json(base)


CUDA_FACTS = {"torch": {"version": "2.14.1+cu128", "cuda": "12.8.1", "hip": None},
              "device": {"kind": "cuda", "devices": [{"arch": "sm_90", "capability": "9.0"}, {"capability": "8.0"}]}}


def test_the_fix_context_of_an_environment_with_torch():
    assert build_context("cuda12", CUDA_FACTS, None) == FixContext(env="cuda12", arch="9.0", torch="2.14.1+cu128",
                                                                   cuda="12.8", target="cuda12.8", rocm=None)


def test_the_fix_context_of_nothing_known_names_placeholders():
    assert build_context(None, None, None) == FixContext() == FixContext(
        env="NAME", arch="ARCH", torch="the installed torch", cuda="X.Y", target="auto", rocm=None)
    assert build_context("e", {"torch": {}}, None) == FixContext(env="e")  # an empty torch document is no torch
    assert build_context("e", {"torch": {"version": "2.14.1+cpu"}}, None) == FixContext(env="e", torch="2.14.1+cpu",
                                                                                        target="cpu")


def test_the_fix_context_takes_the_probe_where_the_environment_is_silent():
    amd = _profile(amd=["gfx90a", "gfx942"], rocm="6.0.2")
    assert build_context("rocm", None, amd) == FixContext(env="rocm", arch="gfx90a", rocm="6.0.2")
    assert build_context("rocm", None, _profile(amd=["gfx90a"])).rocm is None
    assert build_context("c", None, _profile(nvidia=["8.9", "9.0"])).arch == "8.9"
    assert build_context("c", CUDA_FACTS, _profile(nvidia=["8.9"])).arch == "9.0"  # torch's own view first


def test_the_architecture_from_torch_then_the_probe():
    assert arch_of({"device": {"devices": [{"arch": "gfx90a"}]}}, None) == "gfx90a"
    assert arch_of({"device": {"devices": [{"name": "x"}, {"capability": "8.0"}]}}, None) == "8.0"
    assert arch_of(None, _profile(nvidia=[])) is None and arch_of(None, _profile(amd=[])) is None
    assert arch_of(None, _profile()) is None and arch_of(None, None) is None


# ------------------------------------------------------------------------------ where a match is
def test_a_match_names_its_line_and_its_trimmed_excerpt(tmp_path):
    sigs = load_signatures(table(tmp_path, MINIMAL.format(id="a", pattern="error: x")))
    (m,) = match_log("\nfirst\n   error: x here  \nlast", sigs)
    assert (m.line, m.excerpt) == (3, "error: x here")
    (m,) = match_log("error: x" + "y" * 500, sigs)
    assert (m.line, m.excerpt) == (1, "error: x" + "y" * 392)
    (m,) = match_log("", load_signatures(table(tmp_path, MINIMAL.format(id="a", pattern="^"))))
    assert (m.line, m.excerpt) == (1, "")


def test_the_most_specific_match_comes_first_then_the_earliest(tmp_path):
    rows = (MINIMAL.format(id="late", pattern="b") + MINIMAL.format(id="early", pattern="a")
            + MINIMAL.format(id="specific", pattern="c") + "specificity = 90\n")
    assert [m.signature.id for m in match_log("a\nb\nc\n", load_signatures(table(tmp_path, rows)))] == \
        ["specific", "early", "late"]


def test_an_at_end_signature_takes_a_later_match_of_the_same_pattern(tmp_path):
    sigs = load_signatures(table(tmp_path, MINIMAL.format(id="a", pattern="MARK") + "at_end = true\n"))
    assert [m.line for m in match_log("MARK\n1\n2\n3\n4\n5\nMARK\n", sigs)] == [7]
