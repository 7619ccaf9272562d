"""The tolerant reader on pastes made to be slow: 1 MB of what it looks for (brand words, PCI ids, gfx
targets, labels without values, one endless line) answers in under two seconds, like every parser."""

from __future__ import annotations

import time

import pytest

from resolver.core.errors import BadInput
from resolver.plan.probe.report import profile_from_report
from resolver.plan.probe.tolerant import read_facts

BOUND_S = 2.0
MB = 1 << 20

CRAFTED = {
    "brand words": "NVIDIA GeForce AMD Radeon Instinct Navi 31 " * 40 + "\n",
    "PCI ids": "1002:744c 10de:2684 0x1002:0x74a1 [AMD/ATI] Device 67df Device ID: 0x7550 " * 50 + "\n",
    "gfx targets": "gfx1100 " * 400 + "\n",
    "labels without values": "Driver Version: " + " " * 3000 + "ROCm version: " + " " * 1000 + "\n",
    "one endless line": "NVIDIA " + "A" * (MB - 10),
    "same-shaped lines": "card=\"0\" type=\"AMD Instinct MI210\"\n",
    "markup": "&gt;&amp;```**<details>" * 200 + "\n",
}


@pytest.mark.parametrize("kind", sorted(CRAFTED))
def test_a_crafted_1mb_paste_is_read_in_bounded_time(kind: str) -> None:
    text = (CRAFTED[kind] * (MB // len(CRAFTED[kind]) + 1))[:MB]
    started = time.perf_counter()
    read_facts(text)
    try:
        profile_from_report(text)
    except BadInput:  # refused in one sentence: as good an answer as any
        pass
    seconds = time.perf_counter() - started
    assert seconds < 2 * BOUND_S, f"{kind}: {seconds:.2f} s"  # both readers, each under BOUND_S


def test_facts_are_capped_however_many_lines_name_gpus() -> None:
    text = "GPU: AMD Instinct MI210\n" * 19_000
    assert len(read_facts(text).facts) <= 4096
    with pytest.raises(BadInput, match="GPUs; one machine has at most"):
        profile_from_report(text)
