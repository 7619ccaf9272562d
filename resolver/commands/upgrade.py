"""`python -m resolver upgrade [--target T | --torch X.Y | --latest] [--promote] [--json]`: a new PyTorch/CUDA
beside the current environment, proven against it on the same checkpoint and inputs, then promoted.

    python -m resolver upgrade --torch 2.14            # plan, lock beside, install, kernels, prove, report
    python -m resolver upgrade --promote               # make the proven candidate the default
    python -m resolver rollback                        # the previous default again
    python -m resolver upgrade --target cuda13.0 --profile node.json   # for another machine: plan + lock
    python -m resolver upgrade --fleet DIR --torch 2.14                # every class of a fleet: plan + CI variants

The stage is resolver/workflows/upgrade/ (docs/upgrade.md).
"""

from __future__ import annotations

from pathlib import Path

HELP = "build a new torch/CUDA environment beside the current one, prove it against it, report; --promote switches"


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_env_argument, add_python_argument, add_source_arguments, add_target_argument

    add_target_argument(parser, default=None, help="another backend or toolkit: cpu, cudaX.Y, rocmX.Y[.Z], auto "
                        "(default: the current environment's)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--torch", metavar="X.Y", help="the torch release to upgrade to (e.g. 2.14)")
    which.add_argument("--latest", action="store_true",
                       help="the newest torch release the knowledge base lists, even one it marks unconfirmed")
    add_python_argument(parser, "the new environment's Python (default: the current one's, when the new torch "
                        "supports it)")
    add_env_argument(parser, "to upgrade", default="the project's default, else the only one")
    parser.add_argument("--promote", action="store_true",
                        help="make the new environment the default once its proof passes (alone: promote the "
                             "pending upgrade, finishing it first)")
    parser.add_argument("--allow-removal", metavar="NAME", action="append", default=[],
                        help="let --promote switch although your dependency NAME cannot come along into the new "
                             "environment (repeatable); without it such a removal keeps the current default")
    parser.add_argument("--plan-only", action="store_true", help="say what would change and the risks; write nothing")
    parser.add_argument("--profile", type=Path, metavar="FILE", action="append", default=[],
                        help="plan for the machine this `probe --json` file describes: plan and lock here, build and "
                             "prove there (repeatable with --fleet)")
    parser.add_argument("--fleet", type=Path, metavar="DIR",
                        help="plan the step for every class of a fleet (a folder of `probe --json` files): changes, "
                             "risks, the kernel variants CI builds; refused when a node served today would be left out")
    parser.add_argument("--sysroot", metavar="DIR", help="a machine double (docs/sysroot.md): its GPUs and driver, "
                        "everything else from this machine; same as RESOLVER_SYSROOT=DIR")
    proof = parser.add_argument_group("the proof")
    proof.add_argument("--model", metavar="DIR", help="the checkpoint both environments run (default: the built-in tiny one)")
    proof.add_argument("--dtypes", metavar="LIST", default="",
                       help="comma list of float32,bfloat16,float16 (default: float32 on CPU, float32,bfloat16 on GPU)")
    proof.add_argument("--prompt-len", type=int, default=64, help="prompt tokens (default 64)")
    proof.add_argument("--new-tokens", type=int, default=16, help="greedy tokens generated (default 16)")
    proof.add_argument("--repeat", type=int, default=5, help="timed repetitions for the speed (default 5)")
    proof.add_argument("--tolerance", metavar="DTYPE=REL", action="append", default=[],
                       help="the largest relative logit difference allowed for a dtype, e.g. float32=1e-4 "
                            "(defaults: float32 1e-3, bfloat16 4e-2, float16 1e-2)")
    proof.add_argument("--max-slowdown", type=float, metavar="FRACTION",
                       help="fail the proof when the new environment is slower by more than this (0.2 = 20 %%); "
                            "default: speed is reported, not a gate")
    proof.add_argument("--cpu", action="store_true", help="run the proof on the CPU even when a GPU is visible")
    parser.add_argument("--report", type=Path, metavar="DIR", help="where the Markdown and JSON reports go "
                        "(default: .resolver/reports)")
    parser.add_argument("--no-wait", action="store_true", help="exit (code 6) instead of waiting for another run")
    add_source_arguments(parser.add_argument_group("sources (as for `lock`)"))


def run(args, out) -> int:
    import os

    from resolver.core.errors import ExitCode
    from resolver.project.paths import ProjectPaths

    if args.sysroot:
        from resolver.plan.probe.double import SYSROOT_VAR

        os.environ[SYSROOT_VAR] = str(Path(args.sysroot).resolve())
    wanted = _wanted(args)
    project = ProjectPaths.discover()
    if args.fleet is not None or len(args.profile) > 1:
        return _fleet(args, wanted, project, out)
    from resolver.workflows.upgrade.journey import UpgradeOptions, run_upgrade
    from resolver.workflows.upgrade.report import summary_text, verdict

    options = UpgradeOptions(wanted=wanted, proof=_proof_options(args), promote=args.promote, plan_only=args.plan_only,
                             profile_file=args.profile[0] if args.profile else None, report_dir=args.report,
                             wait=not args.no_wait, source_flags={
                                 "conda-channels": args.channel, "torch-index": args.torch_index,
                                 "extra-index-urls": args.extra_index_url, "find-links": args.find_links},
                             allow_removal=tuple(args.allow_removal))
    result = run_upgrade(project, options, out)
    data = result.to_json()
    data["verdict"] = verdict(result)
    out.result(data, summary_text(result))
    if not result.ok:
        import sys

        print(f"error: {verdict(result)}", file=sys.stderr)
        return int(ExitCode.CHECK_FAILED)
    return 0


def _wanted(args):
    from resolver.core.model import Target
    from resolver.workflows.upgrade.step import Wanted, _version_flag

    if args.target:
        Target.parse(args.target)  # a bad spelling is one usage sentence, before anything runs
    if args.torch:
        _version_flag(args.torch, "--torch", "2.14")
    return Wanted(target=args.target, torch=args.torch, latest=args.latest,
                  python=str(args.python) if args.python else None, env=args.env)


def _proof_options(args):
    from resolver.commands.verify import check_dtypes
    from resolver.core.errors import UsageError
    from resolver.workflows.upgrade.proof import ProofOptions

    check_dtypes(args.dtypes, "--dtypes")
    if min(args.prompt_len, args.new_tokens, args.repeat) < 1:
        raise UsageError("--prompt-len, --new-tokens and --repeat must be at least 1", fix="pass positive numbers")
    if args.max_slowdown is not None and not 0 <= args.max_slowdown < 1:
        raise UsageError(f"--max-slowdown {args.max_slowdown} is not a fraction from 0 to 1",
                         fix="pass e.g. --max-slowdown 0.2 (20 % slower at most)")
    tolerance = {}
    for item in args.tolerance:
        dtype, _, value = item.partition("=")
        check_dtypes(dtype.strip(), "--tolerance", one=True)
        try:
            tolerance[dtype.strip()] = float(value)
        except ValueError:
            tolerance[dtype.strip()] = -1.0
        if not tolerance[dtype.strip()] >= 0:
            raise UsageError(f"--tolerance {item!r} is not DTYPE=REL with REL >= 0", fix="write e.g. float32=1e-4")
    model = None
    if args.model:
        from resolver.project.paths import ProjectPaths
        from resolver.verify.in_env import resolve_model

        model = resolve_model(ProjectPaths.discover(), args.model)  # a bad --model is said before anything runs
    return ProofOptions(model=model, dtypes=args.dtypes, prompt_len=args.prompt_len, new_tokens=args.new_tokens,
                        repeat=args.repeat, tolerance=tolerance, max_slowdown=args.max_slowdown, cpu=args.cpu)


def _fleet(args, wanted, project, out) -> int:
    from resolver.core.errors import UsageError
    from resolver.workflows.upgrade.fleet import markdown, plan_fleet_upgrade, write_fleet_reports

    if args.promote:
        raise UsageError("--promote applies to one machine's upgrade, not a fleet's",
                         fix="promote on each node after its proof (`python -m resolver upgrade --promote` there)")
    plan = plan_fleet_upgrade(project, args.fleet, tuple(args.profile), wanted)
    data, text = plan.to_json(), markdown(plan, args.fleet)
    if not args.plan_only:
        data["report"] = write_fleet_reports(project, plan, args.fleet, args.report)
        text += f"\nreport: {data['report']['markdown']}, {data['report']['json']}"
    out.result(data, text)
    return 0
