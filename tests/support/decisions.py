"""Deciding for a machine written as a ``probe --json`` dictionary, as the decision tests do."""

from __future__ import annotations

from resolver.core.model import Request, Target
from resolver.core.versions import DottedVersion
from resolver.plan.decide import decide
from resolver.plan.knowledge import Knowledge
from resolver.plan.probe.profile import HardwareProfile

K = Knowledge.load()


def outcome(machine: dict, target: str = "auto", *, python: str | None = None, torch: str | None = None,
            knowledge: Knowledge = K):
    request = Request(Target.parse(target), DottedVersion.parse(python) if python else None,
                      DottedVersion.parse(torch) if torch else None)
    return decide(HardwareProfile.from_json(machine), request, knowledge)


def refusal(machine: dict, target: str = "auto", **kwargs) -> tuple[str, str | None, str]:
    result = outcome(machine, target, **kwargs)
    assert result.plan is None, result.plan and result.plan.summary
    return result.refusal.message, result.refusal.fix, result.refusal.because
