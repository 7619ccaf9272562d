"""A paste flattened to one line, wrapped at 80 columns, or cut after any line is read as the original
was, or as less of it: never a GPU, driver, CUDA or ROCm version the original does not give.

Run over every paste of the corpus (tests/data/pastes), derandomised so that a run is the same every
time. Wrapping breaks lines between words, as an issue form or a mail client does, or hard at the 80th
column, as a terminal does; a cut keeps the lines before it, or those after it.
"""

from __future__ import annotations

import textwrap
from collections import Counter

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is a test extra: pip install -e '.[test]'")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support.pastes import NAMES, PASTES  # noqa: E402

from resolver.core.errors import BadInput  # noqa: E402
from resolver.plan.probe.report import profile_from_report  # noqa: E402


def read(text: str) -> dict:
    """What a paste gives: the GPUs' targets (a multiset) and the versions it states (derived ones left out)."""
    try:
        profile = profile_from_report(text)
    except BadInput:  # nothing readable left: the fewest facts of all
        return {"gpus": Counter(), "driver": None, "cuda": None, "rocm": None}
    nv, amd = profile.nvidia, profile.amd
    gpus = Counter(str(g.compute_capability) for g in (nv.gpus if nv else ()))
    gpus.update(str(g.gfx_arch) for g in (amd.gpus if amd else ()))
    return {
        "gpus": gpus,
        "driver": str(nv.driver_version) if nv and nv.driver_version else None,
        "cuda": str(nv.cuda_driver_version) if nv and nv.cuda_driver_version and not nv.cuda_driver_version_derived
        else None,
        "rocm": str(amd.rocm_version) if amd and amd.rocm_version and "rocm" not in dict(profile.assumed) else None,
    }


def flattened(text: str) -> str:
    return " ".join(text.split("\n"))


def wrapped(text: str) -> str:
    return "\n".join(part for line in text.split("\n")
                     for part in (textwrap.wrap(line, 80, break_long_words=False, break_on_hyphens=False) or [""]))


def hard_wrapped(text: str) -> str:
    return "\n".join(line[i:i + 80] for line in text.split("\n") for i in range(0, max(len(line), 1), 80))


def assert_no_new_facts(original: dict, changed: dict) -> None:
    assert not changed["gpus"] - original["gpus"], (changed["gpus"], original["gpus"])
    for key in ("driver", "cuda", "rocm"):
        assert changed[key] in (None, original[key]), (key, changed[key], original[key])


ORIGINAL: dict[str, dict] = {}


def original(name: str) -> dict:
    if name not in ORIGINAL:
        ORIGINAL[name] = read((PASTES / f"{name}.txt").read_text())
    return ORIGINAL[name]


@pytest.mark.parametrize("name", NAMES)
def test_flattened_and_wrapped_read_the_same_or_less(name: str) -> None:
    text = (PASTES / f"{name}.txt").read_text()
    for changed in (flattened(text), wrapped(text), wrapped(flattened(text)), hard_wrapped(text)):
        assert_no_new_facts(original(name), read(changed))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=6, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(min_value=0.0, max_value=1.0), head=st.booleans(), flatten=st.booleans())
def test_cut_at_any_line_reads_the_same_or_less(name: str, cut: float, head: bool, flatten: bool) -> None:
    lines = (PASTES / f"{name}.txt").read_text().split("\n")
    at = round(cut * len(lines))
    kept = "\n".join(lines[:at] if head else lines[at:])
    assert_no_new_facts(original(name), read(flattened(kept) if flatten else kept))
