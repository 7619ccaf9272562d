"""Group a fleet's nodes into classes that can share one environment.

Each node gets its own plan from ``decide`` (the same pure function ``plan --profile`` uses). Nodes
whose plans agree on everything the environment is made of (platform, backend and its version, the
exact torch build and its index, Python, the conda packages, the header fixes, the kernel toolkit)
share a class; the class's kernels are built for the union of its nodes' GPU architectures. A node
``decide`` refuses is listed with the refusal's sentence (the blocking fact).

Deciding is memoized on what ``decide`` reads (GPU UUIDs, memory, CPU counts and notes are not read),
so a thousand nodes of a few kinds cost a few decisions.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

from resolver.decide.model import Plan, Request, TraceStep
from resolver.fleet.nodes import Node
from resolver.knowledge import Knowledge
from resolver.names import ENV_NAME_MAX
from resolver.probe.profile import HardwareProfile
from resolver.versions import ComputeCapability


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


def plan_fleet(nodes: tuple[Node, ...], request: Request | None = None, knowledge: Knowledge | None = None) -> FleetPlan:
    """The classes of ``nodes`` and the nodes no class can serve."""
    from resolver.decide import decide

    request = request or Request()

    knowledge = knowledge or Knowledge.load()
    memo: dict[HardwareProfile, Any] = {}
    groups: dict[str, list[tuple[Node, Plan]]] = {}
    unserved: list[Unserved] = []
    for node in sorted(nodes, key=lambda n: n.name):
        key = decision_inputs(node.profile)
        outcome = memo.get(key)
        if outcome is None:
            outcome = memo[key] = decide(node.profile, request, knowledge)
        if outcome.plan is None:
            unserved.append(Unserved(node.name, str(node.file), outcome.refusal.message, outcome.refusal.fix))
            continue
        groups.setdefault(class_key(outcome.plan), []).append((node, outcome.plan))
    merged = [_merge(members) for _, members in sorted(groups.items())]
    names = class_names([plan for plan, _ in merged])
    classes = tuple(sorted((NodeClass(name, replace(plan, environment=name), tuple(n.name for n, _ in members),
                                      _why(plan, members))
                            for name, (plan, members) in zip(names, merged)), key=lambda c: c.name))
    membership = tuple(sorted((node, c.name) for c in classes for node in c.nodes))
    return FleetPlan(classes, tuple(unserved), membership)


def servable_fleet(nodes: tuple[Node, ...], request: Request | None = None) -> FleetPlan:
    """:func:`plan_fleet`, refused in one sentence (the first node's blocking fact) when no class can
    serve any node."""
    from resolver.errors import Refusal

    fleet = plan_fleet(nodes, request)
    if not fleet.classes:
        first = fleet.unserved[0]
        raise Refusal(f"no node of the fleet can be served: {first.node} ({first.file}): {first.reason}",
                      fix=first.fix or "see `python -m resolver plan --profile FILE` for each node")
    return fleet


def decision_inputs(profile: HardwareProfile) -> HardwareProfile:
    """``profile`` less what ``decide`` never reads (UUIDs, memory, CPU count, notes, sources): equal for two
    nodes of one kind, so one decision serves both."""
    nvidia = profile.nvidia and replace(profile.nvidia, sources=(), gpus=tuple(
        replace(g, memory_mib=None, uuid=None) for g in profile.nvidia.gpus))
    amd = profile.amd and replace(profile.amd, sources=())
    return replace(profile, nvidia=nvidia, amd=amd, notes=(), sources=(), cpu_count=None,
                   memory_available_mib=None, container=False)


def class_key(plan: Plan) -> str:
    """What nodes must agree on to share an environment (JSON, so it sorts and compares)."""
    return json.dumps([plan.platform, plan.backend, plan.backend_version, plan.python, plan.torch.requirement,
                       plan.torch.variant, plan.torch.source.url, sorted(plan.conda_packages),
                       [p.id for p in plan.patches], plan.kernels.toolkit, plan.kernels.toolkit_source,
                       plan.kernels.strategy == "none"])


def _merge(members: list[tuple[Node, Plan]]) -> tuple[Plan, list[tuple[Node, Plan]]]:
    """One plan for the class: the first node's, with the union of the architectures, the oldest glibc and
    driver (the lock must install on every node) and every node's warnings."""
    first = members[0][1]
    archs = sort_archs({a for _, plan in members for a in plan.kernels.arch_list})
    strategies = {plan.kernels.strategy for _, plan in members}
    strategy = "build" if "build" in strategies else first.kernels.strategy
    glibcs = [p.glibc for _, p in members if p.glibc]
    drivers = [p.cuda_driver for _, p in members if p.cuda_driver]
    warnings = tuple(dict.fromkeys(w for _, p in members for w in p.warnings))
    nodes = ", ".join(n.name for n, _ in members)
    trace = first.trace + (TraceStep("fleet", f"{len(members)} node(s)",
                                     f"kernels for {', '.join(archs) or 'no GPU'}: the union of {nodes}"),)
    plan = replace(first, kernels=replace(first.kernels, arch_list=archs, strategy=strategy),
                   glibc=min(glibcs, key=_version_key) if glibcs else None,
                   cuda_driver=min(drivers, key=_version_key) if drivers else None,
                   warnings=warnings, trace=trace, runnable_here=False)
    return plan, members


def _why(plan: Plan, members: list[tuple[Node, Plan]]) -> str:
    own = {tuple(p.kernels.arch_list) for _, p in members}
    archs = f"kernels for {', '.join(plan.kernels.arch_list)}" if plan.kernels.arch_list else "no kernels"
    shared = (f"{len(members)} node(s) share torch {plan.torch.requirement.split('==', 1)[1]} ({plan.torch.variant}) "
              f"for Python {plan.python} on {plan.platform}")
    if len(own) > 1:
        return f"{shared}; {archs}, the union of their GPUs"
    return f"{shared}; {archs}"


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
    qualifiers = [lambda p: p.torch.variant.replace(".", ""), lambda p: "py" + p.python.replace(".", ""),
                  lambda p: "v" + (p.backend_version or "").replace(".", "")]
    names = list(bases)
    for qualify in qualifiers:
        clashing = {n for n in names if names.count(n) > 1}
        if not clashing:
            break
        names = [_name([n, qualify(p)]) if n in clashing else n for n, p in zip(names, plans)]
    clashing = {n for n in names if names.count(n) > 1}
    return [_name([n, hashlib.sha256(class_key(p).encode()).hexdigest()[:6]]) if n in clashing else n for n, p in zip(names, plans)]


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
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return name[:ENV_NAME_MAX - 9].rstrip("-") + "-" + digest


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in str(text).split("."))
