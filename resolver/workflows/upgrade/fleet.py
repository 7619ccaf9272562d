"""``upgrade --fleet DIR``: the step for every class of a fleet, the kernel variants CI builds for it, and a
refusal when the step would leave nodes that are served today without an environment.

The current classes are what the fleet's request plans today (pixi.toml's ``[tool.resolver.fleet]`` target
and Python, else what ``plan --fleet`` chooses); the new ones are what the upgraded request plans (``--torch``,
``--latest``, ``--target``), from the same node profiles with the same ``decide``. Each new class is
compared with the class its nodes are in today: what changes and the risks, as for one machine. Nothing in
the project is written: the classes are locked with ``lock --fleet`` and proven on a node of each class
(docs/upgrade.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resolver.core.errors import Refusal
from resolver.core.model import Request, Target
from resolver.fleet.classes import FleetPlan, plan_fleet
from resolver.plan.knowledge import Knowledge
from resolver.project.paths import ProjectPaths
from resolver.workflows.upgrade.risks import Change, Risk, changes, risks
from resolver.workflows.upgrade.step import Wanted, _version_flag


@dataclass(frozen=True)
class ClassStep:
    name: str  # the new class's environment
    nodes: tuple[str, ...]
    was: tuple[str, ...]  # the classes its nodes are in today
    changes: tuple[Change, ...]
    risks: tuple[Risk, ...]

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.name, "nodes": list(self.nodes), "was": list(self.was),
                "changes": [c.to_json() for c in self.changes], "risks": [r.to_json() for r in self.risks]}


@dataclass(frozen=True)
class FleetUpgrade:
    current_request: Request
    new_request: Request
    current: FleetPlan
    new: FleetPlan
    classes: tuple[ClassStep, ...]
    variants: tuple[dict[str, Any], ...]  # the CI build matrix of the new classes (build --matrix's entries)

    def to_json(self) -> dict[str, Any]:
        def request(r: Request) -> dict[str, Any]:
            return {"target": str(r.target), "python": str(r.python) if r.python else None,
                    "torch": str(r.torch) if r.torch else None}

        return {"current_request": request(self.current_request), "new_request": request(self.new_request),
                "classes": [c.to_json() for c in self.classes], "ci_variants": list(self.variants),
                "current": self.current.to_json(), "new": self.new.to_json()}


def plan_fleet_upgrade(project: ProjectPaths, folder: Path | None, profiles: tuple[Path, ...], wanted: Wanted,
                       knowledge: Knowledge | None = None) -> FleetUpgrade:
    from resolver.fleet.nodes import read_nodes

    knowledge = knowledge or Knowledge.load()
    nodes = read_nodes(folder, profiles)
    manifest = _manifest(project)
    current_request = _current_request(manifest)
    torch = _version_flag(wanted.torch, "--torch", "2.14") if wanted.torch else \
        (knowledge.releases_newest_first()[0].version if wanted.latest else None)
    new_request = Request(target=Target.parse(wanted.target) if wanted.target else current_request.target,
                          python=_version_flag(wanted.python, "--python", "3.11") if wanted.python
                          else current_request.python, torch=torch)
    current = plan_fleet(nodes, current_request, knowledge)
    new = plan_fleet(nodes, new_request, knowledge)
    served_now = {node for node, _ in current.membership}
    left_out = [u for u in new.unserved if u.node in served_now]
    if left_out:
        before = dict(current.membership)
        lines = "; ".join(f"{u.node} (class {before[u.node]} today): {u.reason}" for u in left_out[:4])
        more = f" and {len(left_out) - 4} more" if len(left_out) > 4 else ""
        raise Refusal(f"the step would leave {len(left_out)} node(s) of the fleet without an environment: {lines}{more}",
                      fix="choose a step every class can take (e.g. a --target whose toolkit still builds their "
                          "architectures), or move those nodes out of the fleet folder and serve them on their own")
    before = dict(current.membership)
    by_name = {c.name: c for c in current.classes}
    steps = []
    for cls in new.classes:
        was = tuple(sorted({before[n] for n in cls.nodes if n in before}))
        old = by_name[was[0]].plan if was else cls.plan
        steps.append(ClassStep(cls.name, cls.nodes, was, changes(old, cls.plan, knowledge),
                               risks(old, cls.plan, None, knowledge)))
    return FleetUpgrade(current_request, new_request, current, new, tuple(steps),
                        tuple(_variants(manifest, new, new_request)))


def _manifest(project: ProjectPaths):
    from resolver.project.manifest import Manifest

    if project.manifest.is_file():
        return Manifest.load(project.manifest)
    return Manifest.new(project.root.name or "fleet", team=False)


def _current_request(manifest) -> Request:
    from resolver.fleet.record import fleet_request, read_classes

    if read_classes(manifest):
        return fleet_request(manifest)
    return Request()  # no fleet recorded: today's is what `plan --fleet` chooses


def _variants(manifest, fleet: FleetPlan, request: Request) -> list[dict[str, Any]]:
    """``build --matrix``'s entries for the new classes, from a copy of pixi.toml (the file is not written)."""
    from resolver.fleet.ci import package_names
    from resolver.fleet.record import matrix, write_fleet
    from resolver.project.manifest import Manifest

    copy = Manifest.parse(manifest.dumps(), manifest.path)
    write_fleet(copy, fleet, None, request)
    return matrix(copy, package_names())


def write_fleet_reports(project: ProjectPaths, plan: FleetUpgrade, folder: Path | None,
                        report_dir: Path | None) -> dict[str, str]:
    """``upgrade-fleet.{md,json}`` in ``report_dir`` (default ``.resolver/reports``); their paths."""
    from resolver.core.fs import write_json_atomic, write_text_atomic

    base = (report_dir if report_dir is not None else project.reports) / "upgrade-fleet"
    write_json_atomic(base.with_suffix(".json"), plan.to_json(), label="upgrade-report")
    write_text_atomic(base.with_suffix(".md"), markdown(plan, folder), label="upgrade-report")
    return {"markdown": str(base.with_suffix(".md")), "json": str(base.with_suffix(".json"))}


def markdown(plan: FleetUpgrade, folder: Path | None) -> str:
    new = plan.new_request
    asked = " ".join(x for x in (f"--target {new.target}", f"--torch {new.torch}" if new.torch else "",
                                 f"--python {new.python}" if new.python else "") if x)
    lines = [f"# Fleet upgrade ({asked}){f' of {folder}' if folder else ''}", "",
             f"{len(plan.classes)} class(es) after the step, {sum(len(c.nodes) for c in plan.classes)} node(s) served; "
             f"{len(plan.new.unserved)} node(s) unserved (none of them served today).", ""]
    for cls in plan.classes:
        lines += [f"## `{cls.name}` (nodes: {', '.join(cls.nodes)}; today in {', '.join(cls.was) or 'no class'})", "",
                  "| | before | after |", "|---|---|---|"]
        for change in cls.changes:
            if change.changed:
                lines.append(f"| {change.what} | {change.before} | {change.after} |")
        lines.append("")
        for risk in cls.risks:
            lines.append(f"- **{risk.level}** ({risk.kind}): {risk.text}. *Source:* {risk.source}")
        lines.append("")
    lines += ["## Kernel variants CI builds (one job each: `python -m resolver build --variant KEY`)", ""]
    lines += [f"- `{v['variant']}`: {v['archs']} on {v['runs-on']} ({v['requires']})" for v in plan.variants] or \
        ["- none: no class builds kernels"]
    for unserved in plan.new.unserved:
        lines.append(f"- unserved today and after: {unserved.node}: {unserved.reason}")
    return "\n".join(lines) + "\n"
