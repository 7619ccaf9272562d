"""The structural fix on the synthetic headers and on hand-written edge cases."""

from __future__ import annotations

import pytest
from support.patch_support import FIXTURES, HEADER, SIX

from resolver.patch.transform import add_static_inline

SOURCE_60 = (FIXTURES / "root-6.0" / HEADER).read_text(encoding="latin-1")
SOURCE_61 = (FIXTURES / "amd_hip_bf16-6.1.h").read_text(encoding="latin-1")


def _definition_lines(text: str) -> dict[str, str]:
    return {name: next(line for line in text.splitlines() if f" {name}(" in line and line.startswith("__HOST_DEVICE__"))
            for name in SIX}


def test_six_definitions_get_static_inline_and_nothing_else_changes():
    result = add_static_inline(SOURCE_60, SIX)
    assert result.changed_functions == SIX
    assert not result.missing and not result.already_inline
    before, after = SOURCE_60.splitlines(), result.text.splitlines()
    assert len(before) == len(after)
    differing = [i + 1 for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert differing == [c.line for c in result.changes]
    for change in result.changes:
        assert before[change.line - 1] == change.before
        assert after[change.line - 1] == change.after == change.before.replace("__HOST_DEVICE__ ", "__HOST_DEVICE__ static inline ", 1)


def test_calls_declarations_and_already_inline_definitions_are_left_alone():
    result = add_static_inline(SOURCE_60, SIX + ("__synthetic_lane_sum", "__bfloat162float"))
    assert set(result.already_inline) == {"__synthetic_lane_sum", "__bfloat162float"}
    assert "__HOST_DEVICE__ float __synthetic_lane_sum(const __hip_bfloat162 a);" in result.text
    assert "return __low2float(a) + __high2float(a);" in result.text
    assert result.text.count("static inline") == 6


def test_second_run_changes_nothing():
    once = add_static_inline(SOURCE_60, SIX)
    twice = add_static_inline(once.text, SIX)
    assert twice.text == once.text and twice.changes == ()
    assert twice.already_inline == SIX


def test_macro_that_already_expands_to_static_inline_is_not_doubled():
    """ROCm 6.1's way: __HOST_DEVICE__ itself carries `static inline`; a 6.0 fix there would double it."""
    result = add_static_inline(SOURCE_61, SIX)
    assert result.text == SOURCE_61
    assert result.already_inline == SIX
    assert "SYNTHETIC_BF16_ONE __float2bfloat16(1.0f)" in result.text  # a #define using the name is no definition


def test_nested_macros_are_followed():
    text = ("#define __A__ __host__ __device__\n#define __S__ __A__ static inline\n"
            "__S__ float f(int x) { return x; }\n__A__ float g(int x) { return x; }\n")
    result = add_static_inline(text, ["f", "g"])
    assert result.already_inline == ("f",)
    assert [c.function for c in result.changes] == ["g"]
    assert "__A__ static inline float g(int x)" in result.text


def test_macro_with_one_non_inline_branch_still_needs_the_fix():
    text = "#ifdef RTC\n#define __HD__ __device__ static\n#else\n#define __HD__ __host__ __device__\n#endif\n" \
           "__HD__ float f(int x) { return x; }\n"
    assert [c.function for c in add_static_inline(text, ["f"]).changes] == ["f"]


@pytest.mark.parametrize("text", [
    "float f(int x) { return x; }\n",
    "float f(int x)\n{\n  return x;\n}\n",
    "float f(int x) // comment\n{ return x; }\n",
])
def test_definition_without_attribute_macro(text):
    result = add_static_inline(text, ["f"])
    assert result.text.startswith("static inline float f(")
    assert result.changes[0].line == 1


def test_definitions_inside_comments_and_missing_functions():
    text = "/*\n__HD__ float f(int x) { return x; }\n*/\n"
    result = add_static_inline(text, ["f", "nowhere"])
    assert result.text == text
    assert result.missing == ("f", "nowhere")


def test_definition_in_two_preprocessor_branches_is_fixed_in_both():
    text = "#if A\n__HD__ float f(int x) { return x; }\n#else\n__HD__ float f(int x) { return -x; }\n#endif\n"
    result = add_static_inline(text, ["f"])
    assert [c.line for c in result.changes] == [2, 4]
    assert result.text.count("__HD__ static inline float f(") == 2
