"""The paste corpus: what people pasted about their machines in public threads, read as ``probe --from-report``.

Each ``tests/data/pastes/<name>.txt`` is one paste (trimmed to the part about the machine) and
``<name>.json`` beside it gives its source and the facts a person reads from it. A fact the paste
does not state is null: the reader must not invent it (a driver's CUDA version may be derived from
the desktop driver table, and says so, but never for a Jetson).
"""

from __future__ import annotations

import pytest
from support import DATA, TESTS
from support.pastes import NAMES, PASTES, expected, facts, mismatches


def test_every_paste_has_its_own_source_not_used_before() -> None:
    assert len(NAMES) >= 40
    sources = [expected(name)["source"] for name in NAMES]
    assert all(source.startswith("https://github.com/") for source in sources)
    assert len(set(sources)) == len(sources), "one paste a thread"
    # the machine corpus and the parser tests cite the threads they used
    cited = " ".join(path.read_text() for path in [*(DATA / "machines").rglob("*.md"), *TESTS.rglob("test_probe_*.py")])
    assert [source for source in sources if source in cited] == []


@pytest.mark.parametrize("name", NAMES)
def test_paste_read_as_a_person_reads_it(name: str) -> None:
    assert mismatches(name, facts((PASTES / f"{name}.txt").read_text())) == []
