"""`python -m resolver lock [--target T ...] [--profile FILE] [--platform SUBDIR ...]`: pixi.toml + pixi.lock for
the targets; nothing to do when pixi.lock already satisfies pixi.toml and the plans. `--platform SUBDIR` locks
the CPU environments for another machine's platform too (a GPU environment serves its plan's).

`lock --check`: whether it does, and why not (exit 1), without solving anything.

`lock --fleet DIR [--profile FILE ...]`: one environment per class of the fleet (docs/fleet.md), the classes
recorded under [tool.resolver.fleet] of pixi.toml."""

from __future__ import annotations

import time
from pathlib import Path

HELP = "resolve environments (conda via py-rattler, PyPI via uv) into pixi.toml + pixi.lock"


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_python_argument, add_source_arguments, add_target_argument

    add_target_argument(parser, repeatable=True,
                        help="target to lock (cpu, cudaX.Y, rocmX.Y[.Z], auto); repeatable. Default: the plans locked "
                             "here before, else auto. Nothing is resolved while pixi.lock satisfies them (--force)")
    parser.add_argument("--profile", type=Path, metavar="FILE", action="append", default=[],
                        help="plan for the machine described by this `probe --json` file instead of this one "
                             "(repeatable: each is a node of a fleet, with or without --fleet)")
    add_source_arguments(parser)
    parser.add_argument("--no-conda", action="store_true",
                        help="lock without the conda part; the environment falls back to a virtual environment of "
                             "this machine's Python (pixi cannot install it)")
    parser.add_argument("--no-pypi", action="store_true", help="lock without the PyPI part (conda packages only)")
    parser.add_argument("--check", action="store_true",
                        help="only say whether pixi.lock satisfies pixi.toml and the plans (exit 0) or why not "
                             "(exit 1); solves nothing, writes nothing. Default plans: the ones locked here before")
    parser.add_argument("--platform", action="append", default=[], metavar="SUBDIR", type=_subdir,
                        help="lock the CPU environments for this platform too (a conda subdir: osx-arm64, win-64 "
                             "...), for a teammate on another machine: it is added to [workspace] platforms and to "
                             "their features; a GPU environment serves its plan's machines (repeatable)")
    parser.add_argument("--force", action="store_true",
                        help="resolve again even when pixi.lock already satisfies pixi.toml and the plans")
    parser.add_argument("--fleet", type=Path, metavar="DIR",
                        help="lock one environment per class of this fleet (a folder of `probe --json` files, one per "
                             "node; --profile adds nodes)")
    add_python_argument(parser, "with --fleet: the Python of every class's environment")
    parser.add_argument("--kernel-channel", metavar="URL_OR_DIR",
                        help="with --fleet: the shared channel nodes take their prebuilt kernels from (recorded in "
                             "pixi.toml)")
    from resolver.plan.probe.overrides import add_gpu_arguments

    add_gpu_arguments(parser)


def _subdir(text: str) -> str:
    from resolver.core.errors import UsageError
    from resolver.core.platforms import KNOWN

    if text not in KNOWN:
        raise UsageError(f"--platform {text!r} is not a platform the resolver locks for",
                         fix=f"name one of: {', '.join(KNOWN)}")
    return text


def _platforms_edit(project, subdirs: list[str]):
    """What ``--platform`` changes in pixi.toml before the lock: each subdir declared in [workspace] platforms
    and served by every CPU environment locked here (None: nothing to change)."""
    if not subdirs:
        return None
    from resolver.project.manifest import Manifest

    manifest = Manifest.load(project.manifest) if project.manifest.is_file() else None
    cpu = [name for name in (manifest.environment_names() if manifest is not None else ()) if _serves_cpu(project, name)]
    if manifest is not None and all(
            any(p.subdir == subdir for p in manifest.platforms().values())
            and all(any(p.subdir == subdir for p in manifest.environment(name).platforms) for name in cpu)
            for subdir in subdirs):
        return None
    return lambda manifest: [manifest.serve_platform(subdir, cpu) for subdir in subdirs]


def _serves_cpu(project, name: str) -> bool:
    """Whether environment ``name`` is a CPU one of the resolver's: by the plan it was locked from here, else
    (a fresh clone holds no plans) by its name."""
    from resolver.plan import locked

    plan = locked.read(project, name)
    return plan.backend == "cpu" if plan is not None else name == "cpu"


def _fleet_request(args):
    """The one request every node of the fleet plans with (``--target``, ``--python``)."""
    from resolver.core.errors import UsageError
    from resolver.core.model import Request, Target

    if len(args.target) > 1:
        raise UsageError("--fleet takes one --target (every node plans with it)", fix="pass one, e.g. --target cuda12.6")

    return Request(target=Target.parse(args.target[0] if args.target else "auto"), python=args.python)


def run(args, out) -> int:
    from resolver.core.errors import ExitCode, UsageError
    from resolver.lock import current
    from resolver.plan.planning import plans_for
    from resolver.project.paths import ProjectPaths

    project = ProjectPaths.discover()
    started = time.monotonic()
    fleet, request = None, None
    if args.platform and (args.check or args.fleet is not None or len(args.profile) > 1):
        raise UsageError(f"--platform adds a platform to pixi.toml, which {'--check' if args.check else '--fleet'} "
                         "does not change", fix="run `lock --platform SUBDIR` on its own first")
    if args.fleet is not None or len(args.profile) > 1:  # several profiles are a fleet too
        if args.check:
            raise UsageError("--check takes the plans of one machine, not a fleet",
                             fix="run `lock --check` (the plans locked before) or `lock --check --target T`")
        request = _fleet_request(args)
        if args.kernel_channel is not None:
            from resolver.core.names import channel_problem, printable

            problem = channel_problem(args.kernel_channel)
            if problem:  # pixi.toml records it, and `build --matrix` writes it into CI files: refused before both
                raise UsageError(f"--kernel-channel {printable(repr(args.kernel_channel))} {problem}",
                                 fix="pass the channel's http(s):// URL or folder, e.g. "
                                     "--kernel-channel https://kernels.example.org/mamba/")
    else:
        if args.python or args.kernel_channel:
            raise UsageError(f"{'--python' if args.python else '--kernel-channel'} applies to a fleet only",
                             fix="add --fleet DIR, or leave it out (`lock --target T` takes the plan's Python)")
        # no target: the plans locked here before (none: this machine's)
        explicit = args.target or args.profile or args.compute_capability or args.gfx
        plans = plans_for(project, args.target, args.profile[0] if args.profile else None,
                          compute_capability=args.compute_capability, gfx=args.gfx) if explicit else None
    if args.check:
        status = current.lock_status(project, plans, pypi=not args.no_pypi)
        out.result({"lockfile": str(project.lockfile), "manifest": str(project.manifest), **status.to_json(),
                    "seconds": round(time.monotonic() - started, 3)}, _check_text(project, status))
        return int(ExitCode.OK if status.current else ExitCode.CHECK_FAILED)

    def sources():
        from resolver.project.sources import Sources

        return Sources.load(project.root, flags={
            "conda-channels": args.channel, "torch-index": args.torch_index,
            "extra-index-urls": args.extra_index_url, "find-links": args.find_links})

    changes = ()
    if request is not None:
        from resolver.fleet.fleet_lock import lock_fleet

        summary, changes, fleet = lock_fleet(project, request, args.fleet, tuple(args.profile), args.kernel_channel,
                                             sources, no_conda=args.no_conda, no_pypi=args.no_pypi, info=out.info)
    else:
        summary = current.lock_project(project, plans, plan_here=lambda: plans_for(project, []), force=args.force,
                                       sources=sources, no_conda=args.no_conda, no_pypi=args.no_pypi, info=out.info,
                                       on_wait=out.info, edit=_platforms_edit(project, args.platform))
    data = summary.to_json()
    if fleet is not None:
        data["fleet"] = {**fleet.to_json(), "changes": [c.to_json() for c in changes]}
    data["seconds"] = round(time.monotonic() - started, 3)
    out.result(data, _summary_text(project, summary, fleet, changes))
    return 0


def _check_text(project, status) -> str:
    if status.current:
        return f"{project.lockfile} is current: it satisfies pixi.toml and the plans"
    return "\n".join([f"{project.lockfile} is stale:", *(f"  {r.sentence}" for r in status.reasons),
                      "fix: python -m resolver lock"])


def _summary_text(project, summary, fleet, changes) -> str:
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
    if summary.added:
        lines.append(f"  added to pixi.toml: {', '.join(summary.added)}")
    if summary.carried_over:
        lines.append(f"  kept unchanged: {', '.join(summary.carried_over)}")
    if fleet is not None:
        from resolver.commands.plan import unserved_lines
        from resolver.fleet.record import NODE_LIST, lists_nodes

        done = {"new": "solved", "changed": "solved", "unlocked": "solved", "kept": "kept", "gone": "removed"}
        lines += [f"  class {c.environment}: {done[c.status]}: {c.why}" for c in changes]
        lines += [f"  no class for {line}" for line in unserved_lines(fleet)]
        if not lists_nodes(fleet):
            lines.append(f"  every node's class: {project.root / NODE_LIST}")
        lines.append("next: python -m resolver build --matrix (the kernel variants to build in CI)")
    else:
        lines.append(f"next: python -m resolver install --env {summary.locked[0].name if summary.locked else 'NAME'}")
    return "\n".join(lines)
