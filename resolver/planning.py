"""Plan for this machine: probe it, then decide. The one place detection meets decision, so that
:mod:`resolver.decide` stays a pure function of its inputs.

>>> from resolver.decide.model import Request, Target
>>> plan_for(Request(Target.parse("cpu"))).backend
'cpu'
"""

from __future__ import annotations

from resolver.decide.model import Plan, Request
from resolver.probe.profile import HardwareProfile


def plan_for(request: Request, profile: HardwareProfile | None = None) -> Plan:
    """The plan for ``profile`` (default: this machine, as the probe reads it, machine doubles included);
    raises the :class:`~resolver.errors.Refusal` when there is none."""
    from resolver.decide import decide
    from resolver.knowledge import Knowledge

    outcome = decide(profile if profile is not None else probe_here(), request, Knowledge.load())
    if outcome.plan is None:
        raise outcome.refusal
    return outcome.plan


def probe_here() -> HardwareProfile:
    from resolver.probe import probe_machine

    return probe_machine()
