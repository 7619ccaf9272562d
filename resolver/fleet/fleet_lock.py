"""``lock --fleet DIR``: plan the fleet's classes, then lock only the classes that changed (one environment
per class, the classes recorded under ``[tool.resolver.fleet]`` of pixi.toml; docs/fleet.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from resolver.core.fs import remove_file
from resolver.core.model import Request
from resolver.project.paths import ProjectPaths


def lock_fleet(project: ProjectPaths, request: Request, nodes: Path, profiles: tuple[Path, ...],
               kernel_channel: str | None, sources: Callable[[], Any], *, no_conda: bool = False,
               no_pypi: bool = False, info: Callable[[str], None] = lambda text: None):
    """(the lock's summary, what happened to each class, the fleet plan); refused when no node can be served."""
    from resolver import lock
    from resolver.core.errors import Refusal
    from resolver.fleet import relock
    from resolver.fleet.classes import plan_fleet
    from resolver.fleet.nodes import iter_nodes
    from resolver.fleet.record import write_fleet
    from resolver.project.paths import project_lock

    fleet = plan_fleet(iter_nodes(nodes, profiles), request)
    if not fleet.classes:
        first = fleet.unserved[0]
        raise Refusal(f"no node of the fleet can be served: {first.node} ({first.file}): {first.reason}",
                      fix=first.fix or "see `python -m resolver plan --profile FILE` for each node")

    def edit(manifest):
        write_fleet(manifest, fleet, kernel_channel, request)

    with project_lock(project.stamps, on_wait=info):  # one writer of pixi.toml / pixi.lock at a time
        changes = relock.compare(*relock.project_state(project), fleet, edit)
        solve = relock.to_solve(changes)
        summary = lock.lock_plans(project, [c.plan for c in fleet.classes if c.name in solve], sources=sources(),
                                  no_conda=no_conda, no_pypi=no_pypi, info=info, edit=edit,
                                  team=False)
        changes = relock.settled(changes, {env.name for env in summary.locked})
        _write_node_list(project, fleet)
    return summary, changes, fleet


def _write_node_list(project: ProjectPaths, fleet) -> None:
    """The fleet's node list beside pixi.toml when pixi.toml counts the nodes instead of listing them; one
    written before and no longer needed goes."""
    from resolver.core.fs import write_text_atomic
    from resolver.fleet.record import NODE_LIST, node_list

    text = node_list(fleet)
    path = project.root / NODE_LIST
    if text is not None:
        write_text_atomic(path, text, label="fleet-nodes")
    elif path.is_file() and not path.is_symlink():
        remove_file(path)
