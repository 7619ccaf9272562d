"""The small rules under doctor's texts, pinned: a `[[...]]` segment is said only when every value in it is
known, ` --env {env}` goes when no environment fits, a signature's default target, where a match's line
starts and ends, the tail an at_end signature looks at, the literals a pattern starts with, and the
closest families of a log nothing matched."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolver.core.errors import BadInput
from resolver.doctor.context import UNKNOWN, FixContext
from resolver.doctor.needles import Haystack, needles
from resolver.doctor.signatures import _line_at, _tail_start, closest_families, load_signatures, match_log

SIGNATURES = load_signatures()


@pytest.mark.parametrize("ctx,template,expected", [
    (FixContext(cuda="12.6"), "a[[ ({cuda})]] b", "a (12.6) b"),
    (FixContext(), "a[[ ({cuda})]] b", "a b"),
    (FixContext(cuda="12.6"), "a[[ ({cuda}, {driver_cuda})]] b", "a b"),  # one unknown value drops the segment
    (FixContext(), "x[[ {env}]][[ {torch}]]", "x the installed torch"),
    (FixContext(env="cu126"), "build --env {env} --arch {arch}", "build --env cu126"),
    (FixContext(arch="8.6"), "build --env {env} --arch {arch}", "build --arch 8.6"),
    (FixContext(), "lock --target {driver_target}", "lock --target auto"),
    (FixContext(), "[[{nothing}]]", ""),
])
def test_a_template_says_only_what_is_known(ctx, template, expected):
    assert ctx.render(template) == expected


def test_a_match_group_fills_a_segment_and_outranks_the_defaults():
    ctx = FixContext()
    assert ctx.render("[[driver {driver_cuda}: ]]--target {driver_target}",
                      {"driver_cuda": "11.4", "driver_target": "cuda11.8"}) == "driver 11.4: --target cuda11.8"
    assert ctx.render("[[v{version}]]", {"version": ""}) == ""  # an empty group is not a value


def test_the_unknown_values_are_the_context_defaults():
    defaults = FixContext()
    assert {key: getattr(defaults, key) for key in UNKNOWN} == UNKNOWN


def test_a_line_is_found_from_an_offset():
    text = "one\ntwo words\nthree"
    assert _line_at(text, 0) == (1, "one")
    assert _line_at(text, 4) == (2, "two words")
    assert _line_at(text, 8) == (2, "two words")
    assert _line_at(text, len(text) - 1) == (3, "three")
    assert _line_at("a\n", 2) == (2, "")


@pytest.mark.parametrize("text,start", [
    ("", 0), ("a", 0), ("a\nb\nc\nd\ne\nf", 2), ("a\nb\nc\nd\ne\nf\n", 2), ("a\nb\n\n\nc\nd\ne\nf\n\n", 2),
    ("\n\n\n", 0), ("x\n" * 3, 0),
])
def test_the_tail_is_the_last_five_lines_that_hold_text(text, start):
    assert _tail_start(text) == start


def test_a_pattern_is_run_from_its_literal_and_not_at_all_without_it():
    hay = Haystack("aaa ninja: error: x\nSegmentation FAULT here")
    assert hay.first(re.compile("ninja: error")) == 4
    assert hay.first(re.compile("nvcc fatal")) is None
    assert hay.first(re.compile("(?i)segmentation fault")) == hay.text.index("Segmentation")
    assert hay.first(re.compile("[a-z]+ x")) == 0  # no literal: from the start
    assert hay.first(re.compile("ninja"), after=5) is None
    assert [m.group() for m in hay.finditer(re.compile("a{2}"))] == ["aa"]
    assert hay.search(re.compile("nvcc")) is None
    wide = Haystack("\u0130 x ninja")  # the one letter whose lower case is longer: offsets still carry over
    assert wide.first(re.compile("(?i)ninja")) == 4 and wide.first(re.compile("(?i)nvcc")) is None
    assert wide.search(re.compile("(?i)NINJA")).start() == 4


@pytest.mark.parametrize("pattern,expected", [
    ("abc", (("abc",), False)),
    ("ab?c", ((), False)),  # "a" alone is too short a literal
    ("abcd?e", (("abc",), False)),
    (r"abc\.def", (("abc.def",), False)),
    (r"abc\d", (("abc",), False)),
    ("abc|xyz(q)", (("abc", "xyz"), False)),
    ("abc(x|y)|def", (("abc", "def"), False)),
    ("(?i)ABC|Def", (("abc", "def"), True)),
    ("(?P<x>abc)", ((), False)),
    ("[ab]cde", ((), False)),
    ("abc(", ((), False)),  # unbalanced: no shortcut
    ("abc[|]def", (("abc",), False)),  # a | inside a class does not split
    ("abc{2}", (("ab",), False)),
])
def test_the_literals_a_pattern_starts_with(pattern, expected):
    if expected[0] and len(expected[0][0]) < 3:
        assert needles(pattern) == ((), False)
    else:
        assert needles(pattern) == expected


def test_a_required_pattern_is_read_before_the_patterns_and_its_groups_kept():
    log = "  torch.__version__  = 2.1.0+cu118\nThe build backend returned an error\n"
    match = next(m for m in match_log(log, SIGNATURES) if m.signature.id == "isolated-build-other-torch")
    assert match.groups["build_torch"] == "2.1.0+cu118" and match.line == 2


def test_closest_families_rank_by_shared_title_words_and_cap_at_three():
    words = " ".join(SIGNATURES[0].title.lower().split())
    near = closest_families(words, SIGNATURES)
    assert near[0].id == SIGNATURES[0].id and len(near) <= 3
    assert closest_families("kernel image", SIGNATURES, limit=1)[0].id == "no-kernel-image"


def _tail_start_by_lines(text: str) -> int:
    """The same answer read the slow way: the offsets of every line, the fifth from the end that holds text."""
    offsets, at = [], 0
    for line in text.split("\n"):
        offsets.append((at, line))
        at += len(line) + 1
    holding = [offset for offset, line in offsets if line.strip()]
    return holding[-5] if len(holding) >= 5 else 0


@given(st.text(alphabet="ab \n", max_size=40))
@settings(max_examples=400, derandomize=True, deadline=None)
def test_the_tail_and_a_line_agree_with_reading_every_line(text):
    assert _tail_start(text) == _tail_start_by_lines(text)
    lines = text.split("\n")
    for offset in range(len(text) + 1):
        number = text.count("\n", 0, offset) + 1
        assert _line_at(text, offset) == (number, lines[number - 1])


def test_a_signature_table_that_is_not_toml_is_named_with_its_fix(tmp_path):
    broken = tmp_path / "signatures.toml"
    broken.write_text("[[signature]\nid = ", encoding="utf-8")
    with pytest.raises(BadInput) as refused:
        load_signatures(broken)
    assert refused.value.message.startswith(f"{broken} is not valid TOML (")
    assert refused.value.fix == "restore it from the repository (git checkout resolver/doctor/signatures.toml)"
