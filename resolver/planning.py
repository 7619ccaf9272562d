"""Plan for this machine: probe it, then decide. The one place detection meets decision, so that
:mod:`resolver.decide` stays a pure function of its inputs.

Because it is pure, ``plan`` remembers what it answered (:class:`PlanMemo`, in the user's cache):
the same profile, request, knowledge tables and decision code give the same plan, so a second
``plan`` on a machine prints the remembered one without importing the decision stage (the import
is most of ``plan``'s time). The key holds every input decide reads: the profile (less the fields
listed in ``NOT_DECIDED_ON``, which vary from run to run and which decide never reads: a fact
``tests/test_decide.py`` checks), the request, and the size and mtime of every file of the
decision code and its tables.

>>> from resolver.decide.model import Request, Target
>>> plan_for(Request(Target.parse("cpu"))).backend
'cpu'
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resolver.decide.model import Plan, Request
    from resolver.probe.profile import HardwareProfile

NOT_DECIDED_ON = ("memory_available_mib",)  # changes from run to run; decide never reads it
# every module decide's answer depends on (what it imports, and what renders it)
_DECISION_CODE = ("decide", "knowledge", "knowledge/data", "versions.py", "platforms.py", "names.py",
                  "probe/profile.py", "planning.py", "commands/plan.py")
_KEPT = 64  # remembered plans per user


def plan_for(request: Request, profile: HardwareProfile | None = None) -> Plan:
    """The plan for ``profile`` (default: this machine, as the probe reads it, machine doubles included);
    raises the :class:`~resolver.errors.Refusal` when there is none."""
    from resolver.decide.model import Plan

    profile = profile if profile is not None else probe_here()
    memo = PlanMemo(profile, "request", repr(request))
    answer = memo.recall()
    if answer is not None:
        return Plan.from_json(answer["plan"])
    from resolver.decide import decide
    from resolver.knowledge import Knowledge

    outcome = decide(profile, request, Knowledge.load())
    if outcome.plan is None:
        raise outcome.refusal
    memo.keep({"plan": outcome.plan.to_json()})
    return outcome.plan


def plans_for(targets: list[str], profile_file: Path | None = None, compute_capability: str | None = None,
              gfx: str | None = None) -> list[Plan]:
    """One plan per target (default: auto) for this machine, or the one ``profile_file`` describes, its
    GPU architecture as stated (``lock``'s plans)."""
    from resolver.decide.model import Request, Target

    parsed = [Target.parse(t) for t in targets or ["auto"]]
    profile = None
    if profile_file is not None:
        from resolver.probe.profile import HardwareProfile

        profile = HardwareProfile.from_file(profile_file)
    if compute_capability or gfx:
        from resolver.probe.overrides import apply_gpu_overrides

        profile = apply_gpu_overrides(profile or probe_here(), compute_capability, gfx)
    return [plan_for(Request(target=t), profile) for t in parsed]


def probe_here() -> HardwareProfile:
    from resolver.probe import probe_machine

    return probe_machine()


class PlanMemo:
    """What ``plan`` answered for one set of inputs, kept as JSON in the user's cache."""

    def __init__(self, profile: HardwareProfile, *request: str | None) -> None:
        from resolver import __version__
        from resolver.paths import user_cache_dir

        decided_on = {k: v for k, v in profile.to_json().items() if k not in NOT_DECIDED_ON}
        self.inputs = json.dumps([__version__, decided_on, list(request), _code_stamp()], sort_keys=True)
        data = self.inputs.encode()
        base = user_cache_dir()
        self.file = None if base is None else \
            base / "plans" / f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}.json"

    def recall(self) -> dict[str, Any] | None:
        """The remembered answer, or None (never remembered, or remembered for other inputs)."""
        if self.file is None:
            return None
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data.get("answer") if isinstance(data, dict) and data.get("inputs") == self.inputs else None

    def keep(self, answer: dict[str, Any]) -> None:
        if self.file is None:
            return
        from resolver.fs import write_text_atomic

        try:
            write_text_atomic(self.file, json.dumps({"inputs": self.inputs, "answer": answer}), label="plan-memo")
            kept = sorted(self.file.parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[_KEPT:]:
                old.unlink(missing_ok=True)
        except OSError:  # a read-only cache: decide every time
            pass


def _code_stamp() -> list[list[Any]]:
    root = Path(__file__).resolve().parent
    stamp = []
    for part in _DECISION_CODE:
        path = root / part
        entries = sorted(os.scandir(path), key=lambda e: e.name) if path.is_dir() else [path]
        for entry in entries:
            if str(entry.name).endswith((".py", ".toml")):
                info = entry.stat()
                stamp.append([f"{part}/{entry.name}" if path.is_dir() else part, info.st_size, info.st_mtime_ns])
    return stamp
