"""Getting a plan, in one place: :func:`plan_of` is the one caller of :func:`resolver.plan.decide.decide`
(a profile and a request in, a plan out); :func:`plan_for` probes this machine first; :func:`plans_for`
takes the plans the project's environments were locked from (:mod:`resolver.plan.locked`) when no target
is named. Commands only render what this module hands them, and decide stays a pure function of its inputs.

Because deciding is pure, its answer is remembered (:class:`PlanMemo`, in the user's cache): the same
profile, request and resolver give the same plan, so a second ``plan`` on a machine takes the
remembered one without importing the decision stage (the import is most of ``plan``'s time). The
key holds every input decide reads: the profile (less the fields listed in ``NOT_DECIDED_ON``, which
vary from run to run and which decide never reads: a fact ``tests/unit/plan/test_decide.py`` checks), the
request, the Python running it, and the content of every file of the installed resolver package (its
code and its knowledge tables), so any edit to either is a new key.

>>> from resolver.core.model import Request, Target
>>> plan_for(Request(Target.parse("cpu"))).backend
'cpu'
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resolver.core.model import Plan, Request
    from resolver.plan.knowledge import Knowledge
    from resolver.plan.probe.profile import HardwareProfile
    from resolver.project.paths import ProjectPaths

NOT_DECIDED_ON = ("memory_available_mib",)  # changes from run to run; decide never reads it
_KEPT = 64  # remembered plans per user
PACKAGE = Path(__file__).resolve().parents[1]  # the whole resolver package


# ------------------------------------------------------------------------------------ a plan here


def plan_for(request: Request, profile: HardwareProfile | None = None) -> Plan:
    """The plan for ``profile`` (default: this machine, as the probe reads it, machine doubles included);
    raises the :class:`~resolver.core.errors.Refusal` when there is none."""
    from resolver.core.errors import ResolverError
    from resolver.core.model import Plan

    profile = profile if profile is not None else probe_here()
    memo = PlanMemo(profile, str(request.target), str(request.python) if request.python else None)
    known = memo.recall()
    if known is not None:
        try:
            return Plan.from_json(known)
        except (ResolverError, ValueError, TypeError, KeyError):
            pass  # not a plan after all: decide again
    plan = plan_of(profile, request)
    memo.keep(plan.to_json())
    return plan


def plan_document(profile: HardwareProfile | None, target: str, python: str | None) -> dict[str, Any]:
    """The plan for a target and Python given as the user typed them, in its JSON form (what ``plan``
    prints and renders): remembered ones are taken without importing the decision stage at all."""
    profile = profile if profile is not None else probe_here()
    memo = PlanMemo(profile, target, python)
    known = memo.recall()
    if known is None:
        known = plan_of(profile, request_of(target, python)).to_json()
        memo.keep(known)
    return known


def request_of(target: str, python: str | None) -> Request:
    """The request for ``--target`` and ``--python`` as typed; one sentence when either is not one."""
    from resolver.core.model import Request, Target
    from resolver.core.versions import python_release

    return Request(target=Target.parse(target), python=python_release(python) if python is not None else None)


def plan_of(profile: HardwareProfile, request: Request, knowledge: Knowledge | None = None) -> Plan:
    """The plan ``decide`` makes for ``profile`` and ``request`` (with ``knowledge``, default the shipped
    tables); raises the :class:`~resolver.core.errors.Refusal` when there is none."""
    from resolver.plan.decide import decide

    if knowledge is None:
        from resolver.plan.knowledge import Knowledge

        knowledge = Knowledge.load()
    outcome = decide(profile, request, knowledge)
    if outcome.plan is None:
        raise outcome.refusal
    return outcome.plan


def probe_here() -> HardwareProfile:
    from resolver.plan.probe import probe_machine

    return probe_machine()


def plans_for(project: ProjectPaths, targets: list[str], profile_file: Path | None = None, *,
              compute_capability: str | None = None, gfx: str | None = None) -> list[Plan]:
    """One plan per target (for this machine, or the machine ``profile_file`` describes, with the GPU
    architecture the user states applied); without targets and without a stated architecture, the plans
    the project's environments were locked from, else this machine's ``auto`` plan."""
    from resolver.core.model import Request, Target

    if not targets and not (compute_capability or gfx):
        if profile_file is None:
            from resolver.plan import locked

            stored = locked.read_all(project)
            if stored:
                return stored
    parsed = [Target.parse(t) for t in targets or ["auto"]]
    profile = None
    if profile_file is not None:
        from resolver.plan.probe.profile import HardwareProfile

        profile = HardwareProfile.from_file(profile_file)
    if compute_capability or gfx:
        from resolver.plan.probe.overrides import apply_gpu_overrides

        profile = apply_gpu_overrides(profile or probe_here(), compute_capability, gfx)
    return [plan_for(Request(target=t), profile) for t in parsed]


class PlanMemo:
    """The plan decided for one set of inputs, kept in the user's cache: one record shape,
    ``{"inputs": ..., "plan": <Plan.to_json()>}``, the plan checked against :func:`plan_shape`."""

    def __init__(self, profile: HardwareProfile, target: str, python: str | None) -> None:
        from resolver import __version__
        from resolver.project.paths import plan_memos

        decided_on = {k: v for k, v in profile.to_json().items() if k not in NOT_DECIDED_ON}
        self.inputs = json.dumps([__version__, sys.version, decided_on, [target, python], package_digest()],
                                 sort_keys=True)
        data = self.inputs.encode()
        folder = plan_memos()
        self.file = None if folder is None else \
            folder / f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}.json"

    def recall(self) -> dict[str, Any] | None:
        """The remembered plan's JSON form, or None (never remembered, remembered for other inputs, or not a
        record of a plan)."""
        from resolver.core.records import Fields, Text, read_record

        if self.file is None:
            return None
        from resolver.core.model import plan_shape

        data = read_record(self.file, Fields({"inputs": Text(max_len=1 << 20), "plan": plan_shape()}), limit=4 << 20)
        return data["plan"] if data is not None and data["inputs"] == self.inputs else None

    def keep(self, plan: dict[str, Any]) -> None:
        from resolver.core.records import write_record

        if self.file is None or not write_record(self.file, {"inputs": self.inputs, "plan": plan},
                                                 label="plan-memo", in_order=True):  # the plan's own key order
            return  # a read-only cache: decide every time
        try:
            kept = sorted(self.file.parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[_KEPT:]:
                old.unlink(missing_ok=True)
        except OSError:
            pass


def package_digest() -> str:
    """A content key of the installed resolver package: every file below it (code, knowledge tables)
    read and folded into crc32 + adler32 + length (no sha256: loading OpenSSL costs more than this)."""
    crc, adler, size = 0, 1, 0
    stack = [str(PACKAGE)]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as found:
            entries = sorted(found, key=lambda e: e.name)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    stack.append(entry.path)
            elif entry.name.endswith((".py", ".toml")):
                with open(entry.path, "rb") as handle:
                    data = entry.path[len(str(PACKAGE)):].encode() + b"\0" + handle.read()
                crc, adler, size = zlib.crc32(data, crc), zlib.adler32(data, adler), size + len(data)
    return f"{crc:08x}{adler:08x}{size:x}"
