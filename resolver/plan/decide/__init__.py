"""decide: ``(HardwareProfile, Request, Knowledge) -> PlanOutcome``, a pure function that explains
itself (:mod:`resolver.plan.decide.choose`, where the search and its rules are described).

Importing the package costs only its value types (:mod:`resolver.core.model`): ``lock`` and
``setup`` read plans without deciding, and the decision, its rules and the knowledge tables load on
the first use of :func:`decide`.
"""

from __future__ import annotations

from typing import Any

from resolver.core.model import Plan, PlanOutcome, Request, Target

__all__ = ["decide", "Plan", "PlanOutcome", "Request", "Target", "PYTHON_FALLBACKS"]


def __getattr__(name: str) -> Any:
    if name in ("decide", "PYTHON_FALLBACKS"):
        from resolver.plan.decide import choose

        return getattr(choose, name)
    raise AttributeError(f"module 'resolver.plan.decide' has no attribute {name!r}")
