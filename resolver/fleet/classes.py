"""Group a fleet's nodes into classes that can share one environment.

Each node gets its own plan from ``decide`` (the same pure function ``plan --profile`` uses). Nodes
whose plans agree on everything the environment is made of (platform, backend and its version, the
exact torch build and its index, Python, the conda packages, the header fixes, the kernel toolkit)
share a class; the class's kernels are built for the union of its nodes' GPU architectures. A node
``decide`` refuses is listed with the refusal's sentence (the blocking fact).

Deciding is memoized on what ``decide`` reads (GPU UUIDs, memory, CPU counts and notes are not read),
so 100,000 nodes of a few kinds cost a few decisions; the nodes are a stream (read one file at a time),
and what is kept per node is its name and its class.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Iterable

from resolver.core.errors import Refusal
from resolver.core.fs import sha256_text
from resolver.core.model import Plan, Request, TraceStep
from resolver.core.names import ENV_NAME_MAX
from resolver.core.versions import ComputeCapability
from resolver.fleet.nodes import Node, decision_inputs
from resolver.plan.knowledge import Knowledge
from resolver.plan.probe.profile import HardwareProfile


@dataclass(frozen=True)
class NodeClass:
    name: str  # the environment's name, e.g. cuda12-sm80-sm90
    plan: Plan  # the class's plan: the environment, kernels for every architecture of the class
    nodes: tuple[str, ...]
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.name, "nodes": list(self.nodes), "why": self.why, "plan": self.plan.to_json()}


@dataclass(frozen=True)
class Unserved:
    node: str
    file: str
    reason: str  # the refusal's sentence
    fix: str | None

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "file": self.file, "reason": self.reason, "fix": self.fix}


@dataclass(frozen=True)
class FleetPlan:
    classes: tuple[NodeClass, ...]
    unserved: tuple[Unserved, ...]
    membership: tuple[tuple[str, str], ...]  # (node, class environment), by node

    def to_json(self) -> dict[str, Any]:
        return {"classes": [c.to_json() for c in self.classes], "unserved": [u.to_json() for u in self.unserved],
                "nodes": dict(self.membership)}


def plan_fleet(nodes: Iterable[Node], request: Request | None = None, knowledge: Knowledge | None = None) -> FleetPlan:
    """The classes of ``nodes`` (read once, in any order) and the nodes no class can serve."""
    from resolver.plan.planning import plan_of

    request = request or Request()
    knowledge = knowledge or Knowledge.load()
    by_object: dict[int, tuple[HardwareProfile, Any, str | None]] = {}  # one kind's profile object → its decision
    by_value: dict[HardwareProfile, tuple[Any, str | None]] = {}
    groups: dict[str, _Members] = {}
    unserved: list[Unserved] = []
    for node in nodes:
        known = by_object.get(id(node.profile))
        if known is None:
            inputs = decision_inputs(node.profile)
            decided = by_value.get(inputs)
            if decided is None:
                try:
                    outcome: Plan | Refusal = plan_of(inputs, request, knowledge)
                except Refusal as refusal:
                    outcome = refusal
                decided = by_value[inputs] = (outcome, class_key(outcome) if isinstance(outcome, Plan) else None)
            known = by_object[id(node.profile)] = (node.profile, *decided)  # the profile kept, so its id stays its own
        _, outcome, key = known
        if key is None:
            unserved.append(Unserved(node.name, str(node.file), outcome.message, outcome.fix))
            continue
        members = groups.get(key)
        if members is None:
            members = groups[key] = _Members()
        members.add(node.name, outcome)
    merged = [members.merged() for _, members in sorted(groups.items())]
    names = class_names([plan for plan, _, _ in merged])
    classes = tuple(sorted((NodeClass(name, replace(plan, environment=name), nodes, why)
                            for name, (plan, nodes, why) in zip(names, merged)), key=lambda c: c.name))
    membership = tuple(sorted((node, c.name) for c in classes for node in c.nodes))
    return FleetPlan(classes, tuple(sorted(unserved, key=lambda u: u.node)), membership)


def class_key(plan: Plan) -> str:
    """What nodes must agree on to share an environment (JSON, so it sorts and compares)."""
    backend_version = None if plan.backend_version is None else str(plan.backend_version)
    return json.dumps([plan.platform, plan.backend, backend_version, str(plan.python), plan.torch.requirement,
                       plan.torch.variant, plan.torch.source.url, sorted(plan.conda_packages),
                       [p.id for p in plan.patches], plan.kernels.toolkit, plan.kernels.toolkit_source,
                       plan.kernels.strategy == "none"])


class _Members:
    """The nodes of one class as they are read: their names, and each distinct plan with the first node (by
    name) that has it (nodes of one kind share one plan object)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.plans: dict[int, list] = {}  # id(plan) → [plan, its first node's name]

    def add(self, name: str, plan: Plan) -> None:
        self.names.append(name)
        seen = self.plans.get(id(plan))
        if seen is None:
            self.plans[id(plan)] = [plan, name]
        elif name < seen[1]:
            seen[1] = name

    def merged(self) -> tuple[Plan, tuple[str, ...], str]:
        """(one plan for the class, its nodes by name, why): the first node's plan with the union of the
        architectures, the oldest glibc and driver (the lock must install on every node) and every node's
        warnings."""
        nodes = tuple(sorted(self.names))
        plans = [plan for plan, _ in sorted(self.plans.values(), key=lambda entry: entry[1])]
        first = plans[0]
        archs = sort_archs({a for plan in plans for a in plan.kernels.arch_list})
        strategies = {plan.kernels.strategy for plan in plans}
        strategy = "build" if "build" in strategies else first.kernels.strategy
        glibcs = [p.glibc for p in plans if p.glibc]
        drivers = [p.cuda_driver for p in plans if p.cuda_driver]
        warnings = tuple(dict.fromkeys(w for p in plans for w in p.warnings))
        trace = first.trace + (TraceStep("fleet", f"{len(nodes)} node(s)",
                                         f"kernels for {', '.join(archs) or 'no GPU'}: the union of {brief_list(nodes)}"),)
        plan = replace(first, kernels=replace(first.kernels, arch_list=archs, strategy=strategy),
                       glibc=min(glibcs, key=_version_key) if glibcs else None,
                       cuda_driver=min(drivers, key=_version_key) if drivers else None,
                       warnings=warnings, trace=trace, runnable_here=False)
        return plan, nodes, _why(plan, len(nodes), len({tuple(p.kernels.arch_list) for p in plans}) > 1)


def _why(plan: Plan, count: int, several_archs: bool) -> str:
    archs = f"kernels for {', '.join(plan.kernels.arch_list)}" if plan.kernels.arch_list else "no kernels"
    shared = (f"{count} node(s) share torch {plan.torch.requirement.split('==', 1)[1]} ({plan.torch.variant}) "
              f"for Python {plan.python} on {plan.platform}")
    if several_archs:
        return f"{shared}; {archs}, the union of their GPUs"
    return f"{shared}; {archs}"


def brief_list(names, limit: int = 8) -> str:
    """Names joined, or the first few and how many more: a list a person can read at any size.

    >>> brief_list(["a", "b"]), brief_list([f"n{i}" for i in range(12000)], limit=3)
    ('a, b', 'n0, n1, n2 and 11,997 more')
    """
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[:limit])} and {len(names) - limit:,} more"


def sort_archs(archs) -> tuple[str, ...]:
    """Compute capabilities by number, gfx targets by name.

    >>> sort_archs({"9.0", "10.0", "8.0"}), sort_archs({"gfx942", "gfx90a"})
    (('8.0', '9.0', '10.0'), ('gfx90a', 'gfx942'))
    """
    def key(arch: str):
        try:
            cc = ComputeCapability.parse(arch)
            return (0, cc.major, cc.minor, arch)
        except ValueError:
            return (1, 0, 0, arch)
    return tuple(sorted(archs, key=key))


def class_names(plans: list[Plan]) -> list[str]:
    """A pixi environment name per class, readable and deterministic: the backend family, the platform
    when not linux-64, the architectures; qualified by the torch build, then the Python, then the backend
    version where two classes would share a name (then a digest of what tells them apart).
    """
    bases = [_name([p.env_name, _platform_part(p.platform), *map(arch_tag, p.kernels.arch_list)]) for p in plans]
    qualifiers = [lambda p: p.torch.variant.replace(".", ""), lambda p: f"py{p.python.major}{p.python.minor}",
                  lambda p: "v" + (str(p.backend_version).replace(".", "") if p.backend_version else "")]
    names = list(bases)
    for qualify in qualifiers:
        clashing = {n for n in names if names.count(n) > 1}
        if not clashing:
            break
        names = [_name([n, qualify(p)]) if n in clashing else n for n, p in zip(names, plans)]
    clashing = {n for n in names if names.count(n) > 1}
    return [_name([n, sha256_text(class_key(p))[:6]]) if n in clashing else n for n, p in zip(names, plans)]


def arch_tag(arch: str) -> str:
    """``9.0`` → ``sm90``; a gfx target as it is.

    >>> arch_tag("9.0"), arch_tag("10.0"), arch_tag("gfx90a")
    ('sm90', 'sm100', 'gfx90a')
    """
    return "sm" + arch.replace(".", "") if arch[:1].isdigit() else arch.lower()


def _platform_part(platform: str) -> str:
    return "" if platform == "linux-64" else platform.replace("linux-", "")


def _name(parts: list[str]) -> str:
    """Parts joined with '-' as a valid pixi name; a name too long keeps its start and a digest of the rest."""
    import re

    name = re.sub(r"[^a-z0-9-]+", "-", "-".join(p for p in parts if p).lower()).strip("-")
    if len(name) <= ENV_NAME_MAX:
        return name
    digest = sha256_text(name)[:8]
    return name[:ENV_NAME_MAX - 9].rstrip("-") + "-" + digest


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in str(text).split("."))
