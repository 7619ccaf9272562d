"""Getting a plan, in one place: :func:`plan_of` is the one caller of :func:`resolver.plan.decide.decide`
(a profile and a request in, a plan out); :func:`plan_for` probes this machine first; :func:`plans_for`
takes the plans the project's environments were locked from (:mod:`resolver.plan.locked`) when no target
is named. Commands only render what this module hands them, and decide stays a pure function of its inputs.

Because deciding is pure, its answer is remembered (:class:`PlanMemo`, in the user's cache): the same
profile, request and resolver give the same plan, so a second ``plan`` on a machine takes the
remembered one without importing the decision stage (the import is most of ``plan``'s time). The
key holds every input decide reads: the profile (less the fields listed in ``NOT_DECIDED_ON``, which
vary from run to run and which decide never reads: a fact ``tests/unit/plan/test_decide.py`` checks), the
request, the Python running it, and every file of the installed resolver package (its code and its
knowledge tables) by its size and times, so any edit to either is a new key. The record is a
:class:`~resolver.core.fingerprint.Memo`, keyed by :func:`~resolver.core.fingerprint.fingerprint`.

>>> from resolver.core.model import Request, Target
>>> plan_for(Request(Target.parse("cpu"))).backend
'cpu'
"""

from __future__ import annotations

import os
import sys
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
    """The plan decided for one set of inputs, kept in the user's cache: a
    :class:`~resolver.core.fingerprint.Memo` whose value is ``Plan.to_json()``, checked against
    :func:`plan_shape`, in a file named by the inputs' fingerprint."""

    def __init__(self, profile: HardwareProfile, target: str, python: str | None) -> None:
        from resolver import __version__
        from resolver.core.fingerprint import fingerprint
        from resolver.project.paths import plan_memos

        decided_on = {k: v for k, v in profile.to_json().items() if k not in NOT_DECIDED_ON}
        self.inputs = fingerprint(__version__, sys.version, decided_on, [target, python], package_digest())
        folder = plan_memos()
        self.file = None if folder is None else folder / f"{self.inputs[:32]}.json"

    def _memo(self):
        from resolver.core.fingerprint import Memo
        from resolver.plan.shape import plan_shape

        return Memo(self.file, plan_shape(), label="plan-memo", limit=4 << 20)

    def recall(self) -> dict[str, Any] | None:
        """The remembered plan's JSON form, or None (never remembered, remembered for other inputs, or not a
        record of a plan)."""
        return self._memo().recall(self.inputs)

    def keep(self, plan: dict[str, Any]) -> None:
        if self.file is None or not self._memo().keep(self.inputs, plan, in_order=True):  # the plan's own key order
            return  # a read-only cache: decide every time
        from resolver.core.errors import BadInput
        from resolver.core.fs import remove_file

        try:
            kept = sorted(self.file.parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[_KEPT:]:
                remove_file(old)
        except (OSError, BadInput):
            pass


def package_digest() -> str:
    """A key of the installed resolver package: the fingerprint of every file below it (code, knowledge
    tables), each by its relative path, size, mtime and ctime: an edit, a copy or a reinstall changes it
    (stat only: hashing the package's 1.5 MB would cost 20 ms, a third of a remembered `plan`)."""
    from resolver.core.fingerprint import fingerprint

    files = []
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
                info = entry.stat(follow_symlinks=False)
                files.append([entry.path[len(str(PACKAGE)):], info.st_size, info.st_mtime_ns, info.st_ctime_ns])
    return fingerprint(files)
