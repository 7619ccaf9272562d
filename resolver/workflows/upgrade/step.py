"""Plan an upgrade step: the current environment and its plan, the new plan beside it, its name.

The current environment is ``--env``, else the project's default (pixi.toml ``[tool.resolver.upgrade]``),
else the only environment pixi.toml declares. Its plan is the one stored when it was locked; on a
checkout that never locked it, the one its recorded request (or its torch pin) gives again.

The new plan is ``decide``'s answer for the same target, Python and machine, with what the flags
change: ``--target`` another backend or toolkit, ``--torch X.Y`` a torch release, ``--latest`` the
newest release the tables know. It keeps the environment's Python when the new torch supports it.
A target this machine cannot run (a CUDA plan without an NVIDIA GPU here) is refused with the
blocking fact unless the step is planned for another machine (``--profile``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from resolver.core.errors import BadInput, Refusal, UsageError
from resolver.core.model import Plan, Request, Target
from resolver.core.versions import DottedVersion, major_minor, python_release
from resolver.plan.knowledge import Knowledge
from resolver.plan.planning import plan_of
from resolver.plan.probe.profile import HardwareProfile
from resolver.project.manifest import Manifest
from resolver.project.paths import ProjectPaths
from resolver.project.pixi_toml import read_pixi_toml
from resolver.project.upgrade_record import Choice, UpgradeRecord
from resolver.workflows.upgrade.risks import Change, Risk, changes, risks


@dataclass(frozen=True)
class Wanted:
    """What the user asked the upgrade for (the flags)."""

    target: str | None = None
    torch: str | None = None  # X.Y
    latest: bool = False
    python: str | None = None  # X.Y
    env: str | None = None  # the environment to upgrade (default: the project's default)

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "torch": self.torch, "latest": self.latest, "python": self.python,
                "env": self.env}


@dataclass(frozen=True)
class Side:
    environment: str
    plan: Plan
    choice: Choice

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.environment, "choice": self.choice.to_json(), "plan": self.plan.to_json()}


@dataclass(frozen=True)
class UpgradeStep:
    current: Side
    new: Side
    changes: tuple[Change, ...]
    risks: tuple[Risk, ...]
    here: bool  # True: the new environment is built and proven on this machine
    notes: tuple[str, ...] = ()

    @property
    def up_to_date(self) -> bool:
        """Nothing to upgrade: the new plan is the current one."""
        return self.new.environment == self.current.environment

    def to_json(self) -> dict[str, Any]:
        return {"current": self.current.to_json(), "new": self.new.to_json(),
                "changes": [c.to_json() for c in self.changes], "risks": [r.to_json() for r in self.risks],
                "here": self.here, "up_to_date": self.up_to_date, "notes": list(self.notes)}


def plan_step(project: ProjectPaths, wanted: Wanted, profile: HardwareProfile, *, here: bool,
              knowledge: Knowledge | None = None) -> UpgradeStep:
    """The step from the current environment to the one ``wanted`` asks for (a Refusal says why there is none)."""
    knowledge = knowledge or Knowledge.load()
    if not project.manifest.is_file():
        raise BadInput(f"{project.manifest} does not exist: there is no environment to upgrade",
                       fix="set one up first (`python -m resolver setup`), then upgrade it")
    manifest = Manifest.view(read_pixi_toml(project.manifest))
    record = manifest.tool.upgrade
    notes: list[str] = []
    current = current_side(project, manifest, record, wanted.env, profile, knowledge, notes)
    request = new_request(current, wanted, knowledge)
    plan = _new_plan(profile, request, knowledge, keep_python=wanted.python is None)
    if here and not plan.runnable_here:
        fact = plan.warnings[0] if plan.warnings else f"--target {plan.target} needs hardware this machine does not have"
        raise Refusal(f"this machine cannot run the upgrade to {plan.target}: {fact}",
                      fix=f"plan it for the machine it is for: `python -m resolver upgrade --target {plan.target} "
                          "--profile FILE` (FILE from `python -m resolver probe --json` there), or run the upgrade there")
    name = new_environment_name(project, manifest, plan, current)
    new_plan = replace(plan, environment=name if name != plan.env_name else plan.environment)
    new = Side(name, new_plan, Choice(name, str(request.target), str(new_plan.torch.version.truncate(2)), str(new_plan.python)))
    return UpgradeStep(current, new, changes(current.plan, new_plan, knowledge),
                       risks(current.plan, new_plan, profile, knowledge), here, tuple(notes))


def current_side(project: ProjectPaths, manifest: Manifest, record: UpgradeRecord, name: str | None,
                 profile: HardwareProfile, knowledge: Knowledge, notes: list[str]) -> Side:
    from resolver.plan import locked

    declared = [n for n in manifest.environment_names() if n != "default" or _has_torch(manifest, n)]
    if name is None:
        name = record.default
    if name is None:
        with_torch = [n for n in declared if _has_torch(manifest, n)]
        if len(with_torch) == 1:
            name = with_torch[0]
        elif not with_torch:
            raise BadInput(f"{project.manifest} declares no environment with torch to upgrade",
                           fix="set one up first (`python -m resolver setup`), then upgrade it")
        else:
            raise UsageError(f"pixi.toml declares several environments ({', '.join(with_torch)}) and names no default",
                             fix=f"choose the one to upgrade with --env, e.g. --env {with_torch[0]}")
    if name not in manifest.environment_names():
        raise UsageError(f"pixi.toml has no environment '{name}' to upgrade (it has: "
                         f"{', '.join(declared) or 'none'})", fix="choose one of them with --env NAME")
    plan = locked.read(project, name)
    choice = record.choice(name)
    if plan is None:
        pin = dict(manifest.environment(name).pypi).get("torch", {}).get("version", "")
        choice = choice or Choice(name, _family_target(name), _mm(pin.lstrip("=").split("+")[0]) if pin else None)
        try:
            planned = plan_of(profile, choice.request(), knowledge)
        except Refusal as refusal:
            raise Refusal(f"the current environment '{name}' cannot be planned again here: {refusal.message}",
                          fix=refusal.fix or f"run the upgrade where '{name}' was set up") from None
        plan = replace(planned, environment=None if name == planned.env_name else name)
        notes.append(f"no plan was stored for '{name}' on this machine: it is planned again from pixi.toml "
                     f"({choice.target}, torch {choice.torch or 'as decided'})")
    return Side(name, plan, choice or Choice.of(plan, name))


def new_request(current: Side, wanted: Wanted, knowledge: Knowledge) -> Request:
    target = Target.parse(wanted.target) if wanted.target else Target.parse(current.choice.target or "auto")
    torch = None
    if wanted.torch:
        torch = _version_flag(wanted.torch, "--torch", "2.14")
    elif wanted.latest:
        torch = knowledge.releases_newest_first()[0].version
    python = python_release(wanted.python) if wanted.python else current.plan.python
    return Request(target=target, python=python, torch=torch)


def _new_plan(profile: HardwareProfile, request: Request, knowledge: Knowledge, *, keep_python: bool) -> Plan:
    """The new plan; the environment's own Python first, any Python the new torch supports when it cannot."""
    try:
        return plan_of(profile, request, knowledge)
    except Refusal as refusal:
        if not keep_python:
            raise
        first = refusal
    try:
        return plan_of(profile, replace(request, python=None), knowledge)
    except Refusal:
        raise first from None


def new_environment_name(project: ProjectPaths, manifest: Manifest, plan: Plan, current: Side) -> str:
    """The current environment's name when the plan is its own (nothing to upgrade); an environment pixi.toml
    already holds exactly as ``plan`` locks it; else the backend family (``cuda13``) when free, else the family
    with the torch release (``cpu-torch2-14``), qualified further only where that is taken."""
    from resolver.lock.current import holds
    from resolver.plan import locked

    if _same_plan(plan, current.plan):
        return current.environment
    names = manifest.environment_names()
    for name in names:
        if name != "default" and holds(project, replace(plan, environment=name)) and \
                _same_kernels(plan, locked.read(project, name)):
            return name
    family = plan.env_name
    major, minor = str(plan.torch.version.major), str(plan.torch.version.minor)
    candidates = [family, _name([family, f"torch{major}", minor]),
                  _name([family, f"torch{major}", minor, plan.torch.variant.replace(".", "")]),
                  _name([family, f"torch{major}", minor, plan.torch.variant.replace(".", ""),
                         f"py{plan.python.major}{plan.python.minor}"])]
    for name in candidates:
        if name not in names:
            return name
    return _name([candidates[-1], str(len(names))])


def _name(parts: list[str]) -> str:
    """Parts joined with '-' as a valid pixi environment name (its rule: lowercase letters, digits, '-').

    >>> _name(["cuda13", "torch2", "14", "cu132"])
    'cuda13-torch2-14-cu132'
    """
    import re

    from resolver.core.names import ENV_NAME_MAX

    name = re.sub(r"[^a-z0-9-]+", "-", "-".join(p for p in parts if p).lower()).strip("-")
    return name[:ENV_NAME_MAX].rstrip("-")


def _same_plan(a: Plan, b: Plan) -> bool:
    from resolver.plan.locked import plan_key

    return {**plan_key(a), "environment": None} == {**plan_key(b), "environment": None} and _same_kernels(a, b)


def _same_kernels(a: Plan, b: Plan | None) -> bool:
    return b is not None and (a.kernels.strategy, a.kernels.packages, a.kernels.arch_list, a.kernels.toolkit) == \
        (b.kernels.strategy, b.kernels.packages, b.kernels.arch_list, b.kernels.toolkit)


def _has_torch(manifest: Manifest, name: str) -> bool:
    try:
        return "torch" in dict(manifest.environment(name).pypi)
    except BadInput:
        return False


def _family_target(name: str) -> str:
    """The target an environment named by its backend family was planned with (``cuda13`` → cuda13)."""
    head = name.split("-", 1)[0]
    try:
        return str(Target.parse(head))
    except UsageError:
        return "auto"


def _mm(version: str) -> str | None:
    parts = version.split(".")
    return major_minor(version) if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None


def _version_flag(text: str, flag: str, example: str) -> DottedVersion:
    try:
        return DottedVersion.parse(text).truncate(2)
    except ValueError:
        raise UsageError(f"{flag} {text!r} is not a release", fix=f"use X.Y, e.g. {flag} {example}") from None
