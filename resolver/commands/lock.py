"""`python -m resolver lock [--target T ...] [--profile FILE]`: pixi.toml + pixi.lock for the targets;
nothing to do when pixi.lock already satisfies pixi.toml and the plans.

`lock --check`: whether it does, and why not (exit 1), without solving anything.

`lock --fleet DIR [--profile FILE ...]`: one environment per class of the fleet (docs/fleet.md), the classes
recorded under [tool.resolver.fleet] of pixi.toml."""

from __future__ import annotations

import time
from pathlib import Path

HELP = "resolve environments (conda via py-rattler, PyPI via uv) into pixi.toml + pixi.lock"


def add_arguments(parser) -> None:
    parser.add_argument("--target", "-t", action="append", default=[], metavar="T",
                        help="target to lock (cpu, cudaX.Y, rocmX.Y, auto); repeatable. Default: the plans locked here "
                             "before, else auto. Nothing is resolved while pixi.lock satisfies them (--force)")
    parser.add_argument("--profile", type=Path, metavar="FILE", action="append", default=[],
                        help="plan for the machine described by this `probe --json` file instead of this one "
                             "(repeatable: each is a node of a fleet, with or without --fleet)")
    parser.add_argument("--channel", action="append", default=[], metavar="URL_OR_PATH",
                        help="a mirror of the manifest's conda channel (repeatable, in the channels' order); the lock "
                             "records the manifest's channel")
    parser.add_argument("--torch-index", metavar="URL", help="PyTorch wheel index; {variant} becomes cu126, cpu …")
    parser.add_argument("--extra-index-url", action="append", default=[], metavar="URL",
                        help="another PyPI-style index (repeatable)")
    parser.add_argument("--find-links", action="append", default=[], metavar="DIR_OR_URL",
                        help="a local wheelhouse (repeatable)")
    parser.add_argument("--no-conda", action="store_true",
                        help="lock without the conda part; the environment falls back to a virtual environment of "
                             "this machine's Python (pixi cannot install it)")
    parser.add_argument("--no-pypi", action="store_true", help="lock without the PyPI part (conda packages only)")
    parser.add_argument("--check", action="store_true",
                        help="only say whether pixi.lock satisfies pixi.toml and the plans (exit 0) or why not "
                             "(exit 1); solves nothing, writes nothing. Default plans: the ones locked here before")
    parser.add_argument("--force", action="store_true",
                        help="resolve again even when pixi.lock already satisfies pixi.toml and the plans")
    parser.add_argument("--fleet", type=Path, metavar="DIR",
                        help="lock one environment per class of this fleet (a folder of `probe --json` files, one per "
                             "node; --profile adds nodes)")
    parser.add_argument("--python", metavar="X.Y", help="with --fleet: the Python of every class's environment")
    parser.add_argument("--kernel-channel", metavar="URL_OR_DIR",
                        help="with --fleet: the shared channel nodes take their prebuilt kernels from (recorded in "
                             "pixi.toml)")
    from resolver.probe.overrides import add_gpu_arguments

    add_gpu_arguments(parser)


def _fleet(args):
    """The fleet's class plans, the manifest edit that records the classes, and the fleet plan."""
    from resolver.decide.model import Request, Target
    from resolver.errors import UsageError
    from resolver.fleet.classes import servable_fleet
    from resolver.fleet.nodes import read_nodes
    from resolver.fleet.record import write_fleet

    if len(args.target) > 1:
        raise UsageError("--fleet takes one --target (every node plans with it)", fix="pass one, e.g. --target cuda12.6")
    from resolver.commands.setup import _python

    request = Request(target=Target.parse(args.target[0] if args.target else "auto"), python=_python(args.python))
    fleet = servable_fleet(read_nodes(args.fleet, tuple(args.profile)), request)
    return [c.plan for c in fleet.classes], lambda manifest: write_fleet(manifest, fleet, args.kernel_channel, request), fleet


def run(args, out) -> int:
    from resolver.errors import ExitCode, UsageError
    from resolver.lock import current
    from resolver.paths import ProjectPaths
    from resolver.planning import plans_for

    project = ProjectPaths.discover()
    started = time.monotonic()
    fleet, edit = None, None
    if args.fleet is not None or len(args.profile) > 1:  # several profiles are a fleet too
        if args.check:
            raise UsageError("--check takes the plans of one machine, not a fleet",
                             fix="run `lock --check` (the plans locked before) or `lock --check --target T`")
        plans, edit, fleet = _fleet(args)
    else:
        if args.python or args.kernel_channel:
            raise UsageError(f"{'--python' if args.python else '--kernel-channel'} applies to a fleet only",
                             fix="add --fleet DIR, or leave it out (`lock --target T` takes the plan's Python)")
        # no target: the plans locked here before (none: this machine's)
        explicit = args.target or args.profile or args.compute_capability or args.gfx
        plans = plans_for(args.target, args.profile[0] if args.profile else None, args.compute_capability,
                          args.gfx) if explicit else None
    if args.check:
        status = current.lock_status(project, plans)
        out.result({"lockfile": str(project.lockfile), "manifest": str(project.manifest), **status.to_json(),
                    "seconds": round(time.monotonic() - started, 3)}, _check_text(project, status))
        return int(ExitCode.OK if status.current else ExitCode.CHECK_FAILED)

    def sources():
        from resolver.lock.sources import Sources

        return Sources.load(project.root, flags={
            "conda-channels": args.channel, "torch-index": args.torch_index,
            "extra-index-urls": args.extra_index_url, "find-links": args.find_links})

    summary = current.lock_project(project, plans, plan_here=lambda: plans_for([]), force=args.force,
                                   sources=sources, no_conda=args.no_conda, no_pypi=args.no_pypi, info=out.info,
                                   edit=edit, on_wait=out.info)
    data = summary.to_json()
    if fleet is not None:
        data["fleet"] = fleet.to_json()
    data["seconds"] = round(time.monotonic() - started, 3)
    out.result(data, _summary_text(summary, fleet))
    return 0


def _check_text(project, status) -> str:
    if status.current:
        return f"{project.lockfile} is current: it satisfies pixi.toml and the plans"
    return "\n".join([f"{project.lockfile} is stale:", *(f"  {r.sentence}" for r in status.reasons),
                      "fix: python -m resolver lock"])


def _summary_text(summary, fleet) -> str:
    if summary.up_to_date:
        return f"{summary.lockfile} is current: it satisfies pixi.toml and the plans (nothing resolved; " \
               "--force resolves again)"
    lines = [f"wrote {summary.lockfile} ({'pixi.toml updated' if summary.manifest_changed else 'pixi.toml unchanged'})"]
    lines += [f"  because {r.sentence}" for r in summary.reasons]
    for env in summary.locked:
        lines.append(f"  {env.name} [{env.platform}]: {env.conda_packages} conda + {env.pypi_packages} PyPI packages"
                     + (f", {env.torch}" if env.torch else ""))
        for url in env.skipped_indexes:
            lines.append(f"    note: {url} could not be reached and was left out")
    lines += [f"  note: {note}" for note in summary.notes]
    if summary.carried_over:
        lines.append(f"  kept unchanged: {', '.join(summary.carried_over)}")
    if fleet is not None:
        lines += [f"  class {c.name}: {', '.join(c.nodes)}" for c in fleet.classes]
        lines += [f"  no class for {u.node} ({u.file}): {u.reason}" for u in fleet.unserved]
        lines.append("next: python -m resolver build --matrix (the kernel variants to build in CI)")
    else:
        lines.append("next: python -m resolver install --env " + (summary.locked[0].name if summary.locked else "NAME"))
    return "\n".join(lines)
