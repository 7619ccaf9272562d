"""What decide answers, word for word, for every machine of tests/unit/plan/test_decide.py and of the probe corpus:
the whole plan (torch, kernels, environment packages, warnings, the trace that says why, the summary)
or the whole refusal (the blocking fact, the fix, the trace), kept in tests/data/golden/decide.json.

The explanation is what a user reads to trust the plan; a change to any of it shows here as a diff to
review. After a deliberate change, write the new answers and read the diff before committing:

    RESOLVER_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/plan/test_decide_golden.py -p no:randomly
    git diff tests/data/golden/decide.json
"""

from __future__ import annotations

import json
import os

import pytest
from support import DATA, decide_cases
from support.corpus import MACHINES, NAMES

from resolver.core.model import Request, Target
from resolver.core.versions import DottedVersion
from resolver.plan.decide import decide
from resolver.plan.knowledge import Knowledge
from resolver.plan.probe.profile import HardwareProfile

GOLDEN = DATA / "golden" / "decide.json"
KNOWLEDGE = Knowledge.load()


def _outcome(profile: HardwareProfile, request: Request) -> dict:
    outcome = decide(profile, request, KNOWLEDGE)
    if outcome.plan is not None:
        return {"plan": outcome.plan.to_json()}
    refusal = outcome.refusal
    return {"refusal": {"message": refusal.message, "fix": refusal.fix, "because": refusal.because,
                        "exit": int(refusal.code)},
            "trace": [t.to_json() for t in outcome.trace]}


def _cases() -> dict[str, tuple[HardwareProfile, Request]]:
    cases = {}
    for case in decide_cases.CASES:
        request = Request(target=Target.parse(case.target),
                          python=DottedVersion.parse(case.python) if case.python else None)
        cases[f"case:{case.id}"] = (HardwareProfile.from_json(case.profile), request)
    from resolver.plan.probe import probe_machine

    for name in NAMES:
        cases[f"corpus:{name}"] = (probe_machine(MACHINES / name), Request())
    return cases


CASES = _cases()


def _golden() -> dict:
    try:
        return json.loads(GOLDEN.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


@pytest.fixture(scope="module")
def golden():
    if os.environ.get("RESOLVER_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        answers = {key: _outcome(*CASES[key]) for key in sorted(CASES)}
        GOLDEN.write_text(json.dumps(answers, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return _golden()


def test_every_case_has_its_answer_kept(golden):
    assert sorted(golden) == sorted(CASES), "run with RESOLVER_UPDATE_GOLDEN=1 and review the diff"


@pytest.mark.parametrize("key", sorted(CASES))
def test_the_answer_is_word_for_word_the_kept_one(golden, key):
    assert _outcome(*CASES[key]) == golden.get(key), f"{key}: run with RESOLVER_UPDATE_GOLDEN=1 and review the diff"
