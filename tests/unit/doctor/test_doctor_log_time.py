"""`doctor --log` costs time linear in the log, with a small constant: a log of the largest accepted
size (64 MiB) is read in seconds whatever its shape. Each shape below is one a slow reader paid for
line by line (millions of blank lines, lines of blanks) or pattern by pattern (every line a near miss of
a signature, a case-insensitive one crawling the whole text). Measured as the child's CPU time, so a
busy machine does not fail it; the bound (16 MiB in 6 s of CPU, 64 MiB in ~24 s) is generous and still
far below what the line-by-line reader took (16 MiB of blank lines: 11 s of CPU for the blank-line tail
alone, over 5 minutes of wall time for 64 MiB)."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
from support import cli
from support.hostile_pastes import LOG_SHAPES as SHAPES

SIZE = 16 << 20
CPU_BOUND_S = 6.0


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_large_log_of_any_shape_is_read_in_linear_time(tmp_path: Path, shape: str) -> None:
    unit = SHAPES[shape]
    log = tmp_path / "big.log"
    log.write_text(unit * (SIZE // len(unit.encode())), encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    before = _cpu_of_children()
    done = cli.run("doctor", "--log", str(log), project=project, timeout=600)
    spent = _cpu_of_children() - before
    assert done.returncode in (0, 1, 8) and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert spent < CPU_BOUND_S, f"{shape}: {spent:.1f} s of CPU for {SIZE >> 20} MiB"
