"""`python -m resolver plan`: choose torch and the Mamba kernels for a machine, and say why.

    python -m resolver plan [--target auto|cpu|cudaX.Y|rocmX.Y[.Z]] [--profile FILE] [--python X.Y] [--json]
    python -m resolver plan --fleet DIR [--profile FILE ...] [--python X.Y] [--json]
    python -m resolver plan --profile FILE --profile FILE [...]     (a fleet of those nodes)

Without ``--profile`` the machine is probed. ``--json`` prints the Plan (keys ``backend``,
``backend_version``, ``python``, ``torch``, ``kernels``, ``patches``, ``warnings``, ``trace`` …); a
refusal exits 2 with one sentence on stderr (and ``{"error": ..., "because": ...}`` with --json).

``--fleet DIR`` plans for every node of a fleet (one ``probe --json`` file per node in DIR, and each
``--profile``): the classes of nodes that share one environment, each with its plan and why, which node
is in which class, and the nodes no class can serve with the blocking fact (docs/fleet.md).
"""

from __future__ import annotations

LIST_MAX = 40  # a fleet of more nodes is shown by counts and first names, not node by node

HELP = "choose the PyTorch build and Mamba kernels for this machine (or a --profile), with the reasons"


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_python_argument, add_target_argument

    add_target_argument(parser)
    parser.add_argument("--profile", metavar="FILE", action="append", default=[],
                        help="plan for the machine described by this `probe --json` file instead of probing here "
                             "(repeatable: each is a node of a fleet, with or without --fleet)")
    parser.add_argument("--fleet", metavar="DIR", default=None,
                        help="plan for a fleet: a folder of `probe --json` files, one per node or node type")
    add_python_argument(parser, "the Python version of the environment (default: the Python running here, if supported)")
    parser.add_argument("--sysroot", metavar="DIR",
                        help="plan for a captured machine (`probe --capture`, docs/sysroot.md) instead of this one; "
                             "the same as `probe --sysroot DIR --json > F; plan --profile F`")
    parser.add_argument("--trace", action="store_true",
                        help="also print every rule that fired and every candidate eliminated (JSON: always in "
                             "`trace`)")
    from resolver.plan.probe.overrides import add_gpu_arguments

    add_gpu_arguments(parser)


def run(args, out) -> int:
    from resolver.plan import planning

    if args.sysroot and (args.profile or args.fleet is not None):
        from resolver.core.errors import UsageError

        raise UsageError(f"--sysroot and {'--profile' if args.profile else '--fleet'} cannot be combined: each names "
                         "the machine to plan for", fix="use one of them")
    if args.fleet is not None or len(args.profile) > 1:  # several profiles are a fleet too
        return _fleet(args, planning.request_of(args.target, _text(args.python)), out)
    profile = None
    if args.sysroot:
        from resolver.plan.probe import probe_machine

        profile = probe_machine(args.sysroot)
    elif args.profile:
        from resolver.plan.probe.profile import HardwareProfile

        profile = HardwareProfile.from_file(args.profile[0])
    if getattr(args, "compute_capability", None) or getattr(args, "gfx", None):
        from resolver.plan.probe.overrides import apply_gpu_arguments

        profile = apply_gpu_arguments(profile or planning.probe_here(), args)
    plan = planning.plan_document(profile, args.target, _text(args.python))
    human = _human(plan, verbose=args.trace)
    if not args.trace:
        human += "\n\nevery rule that fired and every candidate eliminated: add --trace"
    out.result(plan, human=human)
    return 0


def _human(plan: dict, verbose: bool) -> str:
    """A plan's JSON form (``Plan.to_json``) as the lines ``plan`` prints."""
    lines = [plan["summary"], ""]
    torch, kernels = plan["torch"], plan["kernels"]
    lines.append(f"  backend   {plan['backend']}{' ' + plan['backend_version'] if plan['backend_version'] else ''}"
                 f"{'' if plan['runnable_here'] else '  (a plan for another machine)'}")
    lines.append(f"  python    {plan['python']} on {plan['platform']}" + (f", glibc {plan['glibc']}" if plan["glibc"] else ""))
    lines.append(f"  torch     {torch['requirement']}  from {torch['source']['url']}")
    if torch["conda"]:
        lines.append(f"  conda     {torch['conda']['spec']}  (channel {torch['conda']['channel']})")
    if kernels["strategy"] == "none":
        lines.append("  kernels   none (reference path)")
    else:
        packages = ", ".join(f"{n} {v}" for n, v in kernels["packages"].items())
        lines.append(f"  kernels   {kernels['strategy']}: {packages} with {kernels['toolkit']} for "
                     f"{', '.join(kernels['arch_list'])}")
    for patch in plan["patches"]:
        lines.append(f"  patch     {patch['id']} ({patch['file']})")
    for step in plan["trace"]:
        if step["rule"] == "variant" and ", not " in step["result"]:
            lines.append(f"  why       {step['result']}: {step['because']}")
    for warning in plan["warnings"]:
        lines.append(f"  warning   {warning}")
    if verbose:
        lines.append("")
        lines.append("trace:")
        for step in plan["trace"]:
            lines.append(f"  {step['rule']:<14} {step['result']:<22} {step['because']}")
    return "\n".join(lines)


def _fleet(args, request, out) -> int:
    from pathlib import Path

    from resolver.core.errors import Refusal
    from resolver.fleet.classes import plan_fleet
    from resolver.fleet.nodes import iter_nodes

    folder = Path(args.fleet) if args.fleet is not None else None
    fleet = plan_fleet(iter_nodes(folder, tuple(Path(p) for p in args.profile)), request)
    if not fleet.classes:
        first = fleet.unserved[0]
        raise Refusal(f"no node of the fleet can be served: {first.node} ({first.file}): {first.reason}",
                      fix=first.fix or "see `python -m resolver plan --profile FILE` for each node")
    out.result(fleet.to_json(), human=fleet_text(fleet, verbose=args.trace))
    return 0


def fleet_text(fleet, verbose: bool = False) -> str:
    """Each class, its plan and why; which node is in which class; the nodes no class serves. Readable at any
    size: past a few dozen nodes, counts and the first names (``--json`` has every node)."""
    from resolver.fleet.classes import brief_list

    lines = [f"{len(fleet.classes)} class(es) for {len(fleet.membership):,} node(s)"
             + (f"; {len(fleet.unserved):,} node(s) no class can serve" if fleet.unserved else "")]
    for c in fleet.classes:
        plan = c.plan
        lines += ["", f"{c.name}: {len(c.nodes):,} node(s): {brief_list(c.nodes)}", f"  why       {c.why}"]
        lines += ["  " + line for line in _human(plan.to_json(), verbose=verbose).splitlines()[2:] if line.strip()]
    if fleet.unserved:
        lines += ["", "no class can serve:"] + ["  " + line for line in unserved_lines(fleet)]
    if len(fleet.membership) <= LIST_MAX:
        lines += ["", "node → class:"] + [f"  {node:<32} {name}" for node, name in fleet.membership]
    else:
        lines += ["", f"node → class: {len(fleet.membership):,} nodes (every one in `--json`, key \"nodes\"; "
                      "`lock --fleet` writes them beside pixi.toml)"]
    return "\n".join(lines)


def unserved_lines(fleet) -> list[str]:
    """The nodes no class serves, one line per reason (the nodes with their files while there are few)."""
    from resolver.fleet.classes import brief_list

    reasons: dict[tuple[str, str | None], list[str]] = {}
    for u in fleet.unserved:
        reasons.setdefault((u.reason, u.fix), []).append(f"{u.node} ({u.file})" if len(fleet.unserved) <= LIST_MAX
                                                          else u.node)
    return [f"{brief_list(nodes)}: {reason}" + (f". Fix: {fix}" if fix else "") for (reason, fix), nodes in reasons.items()]


def _text(python) -> str | None:
    return str(python) if python is not None else None
