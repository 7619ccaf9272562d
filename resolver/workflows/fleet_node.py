"""A node of a fleet: its class's environment from the shared lock, its kernels from the shared channel.

``setup`` (target ``auto``, this machine) calls :func:`join_fleet` right after planning: when pixi.toml
records a fleet, the node's own plan is matched to its class (the same torch build, and the class's
kernels cover the node's GPUs) and becomes the class's plan; a node that matches no class is refused with
how to add it. The kernel channel (``--kernel-channel``, ``RESOLVER_KERNEL_CHANNEL``, or
``[tool.resolver.fleet] kernel-channel``) is read before anything is installed, so an unreachable one
stops the run with one sentence naming it.
"""

from __future__ import annotations

import os

from resolver.core.model import Plan, Request
from resolver.plan.probe.profile import HardwareProfile
from resolver.project.paths import ProjectPaths

CHANNEL_VAR = "RESOLVER_KERNEL_CHANNEL"


def join_fleet(project: ProjectPaths, plan: Plan, profile: HardwareProfile,
               channel_flag: str | None = None) -> tuple[Plan, str | None, str]:
    """(the plan to set up, the kernel channel or None, a sentence for the step log); ``plan`` unchanged
    and no channel when the project is no fleet's. The node plans again with the fleet's request (its
    ``--target`` and ``--python``) when that is not the default."""
    if not project.manifest.is_file():
        return plan, None, ""
    from resolver.fleet import record
    from resolver.project.manifest import Manifest
    from resolver.project.pixi_toml import read_pixi_toml

    manifest = Manifest.view(read_pixi_toml(project.manifest))
    if not record.read_classes(manifest):
        return plan, None, ""
    request = record.fleet_request(manifest)
    if request != Request():
        from resolver.plan.planning import plan_for

        plan = plan_for(request, profile)
    stored = record.class_for(plan, manifest)
    channel = channel_flag or os.environ.get(CHANNEL_VAR, "").strip() or record.kernel_channel(manifest)
    if channel and plan.kernels.strategy != "none":
        from resolver.fleet.channel import read_index
        from resolver.kernels.recipe_run import SUBDIR

        read_index(channel, SUBDIR)  # reachable and a channel, before anything is installed
    where = f"; kernels from {channel}" if channel else "; no kernel channel set: kernels are built here"
    return record.class_plan(plan, stored), channel, f"fleet class {stored.name}{where}"
