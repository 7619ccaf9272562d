"""`python -m resolver setup` (also the bare `python -m resolver`): the whole pipeline, resumable."""

from __future__ import annotations

HELP = "probe → plan → lock → install → patch → build → verify, skipping what is current"


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_python_argument, add_source_arguments, add_target_argument

    add_target_argument(parser)
    add_python_argument(parser, "the Python version of the environment (default: the Python running here, if supported)")
    parser.add_argument("--profile", metavar="FILE",
                        help="plan for the machine described by this `probe --json` file instead of this one (stops "
                             "after the lock)")
    parser.add_argument("--dry-run", action="store_true", help="list the steps that would run, and why")
    parser.add_argument("--no-wait", action="store_true", help="exit (code 6) instead of waiting for another run")
    parser.add_argument("--force", action="store_true", help="run every step even when its stamp is current")
    parser.add_argument("--kernel-channel", metavar="URL_OR_DIR",
                        help="on a fleet's node: the shared channel its class's kernels are published to (default: "
                             "$RESOLVER_KERNEL_CHANNEL, else [tool.resolver.fleet] kernel-channel in pixi.toml)")
    parser.add_argument("--sysroot", metavar="DIR",
                        help="a machine double: the GPUs, drivers and ROCm of the capture in DIR (docs/sysroot.md), "
                             "everything else from this machine; same as RESOLVER_SYSROOT=DIR")
    add_source_arguments(parser)


def run(args, out) -> int:
    from pathlib import Path

    from resolver.core.model import Request, Target
    from resolver.project.paths import ProjectPaths
    from resolver.workflows.setup import SetupOptions, run_setup, summary_text
    from resolver.workflows.steps import append_to_log

    if args.sysroot:
        import os

        from resolver.plan.probe.double import SYSROOT_VAR

        # every probe of this run (and of its child processes) sees the double, not just setup's own
        os.environ[SYSROOT_VAR] = str(Path(args.sysroot).resolve())
    from resolver.commands.flags import source_flags

    request = Request(target=Target.parse(args.target), python=args.python)
    options = SetupOptions(request=request, profile_file=Path(args.profile) if args.profile else None,
                           dry_run=args.dry_run, wait=not args.no_wait, force=args.force,
                           kernel_channel=args.kernel_channel, sources=tuple(source_flags(args).items()))
    project = ProjectPaths.discover()
    if not out.quiet and not out.json_mode:
        from resolver.core.names import printable

        print(f"mamba-resolver setup --dry-run in {printable(str(project.root))}: the steps that would run, and why; "
              "nothing is changed" if args.dry_run else f"mamba-resolver setup in {printable(str(project.root))}")
    result = run_setup(project, options, quiet=out.quiet, json_mode=out.json_mode, on_wait=out.info)
    text = summary_text(result, dry_run=args.dry_run)
    out.result(result_json(result), text)
    append_to_log(result.log_file, text)  # with --json too: the log is the run's whole record
    return 0


def result_json(result) -> dict:
    return {
        "complete": result.complete,
        "plan": result.plan.to_json() if result.plan else None,
        "environment": str(result.environment) if result.environment else None,
        "steps": [s.to_json() for s in result.steps],
        "verify": result.verify,
        "remaining": result.remaining,
        "notes": result.notes,
        "caveats": [{"step": step, **caveat.to_json()} for step, caveat in result.caveats],
        "log": str(result.log_file) if result.log_file else None,
    }
