"""`python -m resolver plan`: choose torch and the Mamba kernels for a machine, and say why.

    python -m resolver plan [--target auto|cpu|cudaX.Y|rocmX.Y[.Z]] [--profile FILE] [--python X.Y] [--json]

Without ``--profile`` the machine is probed. ``--json`` prints the Plan (keys ``backend``,
``backend_version``, ``python``, ``torch``, ``kernels``, ``patches``, ``warnings``, ``trace`` …); a
refusal exits 2 with one sentence on stderr (and ``{"error": ..., "because": ...}`` with --json).
"""

from __future__ import annotations

HELP = "choose the PyTorch build and Mamba kernels for this machine (or a --profile), with the reasons"


def add_arguments(parser) -> None:
    parser.add_argument("--target", default="auto", metavar="TARGET",
                        help="auto (default), cpu, cudaX.Y (e.g. cuda12.6) or rocmX.Y[.Z] (e.g. rocm6.2)")
    parser.add_argument("--profile", metavar="FILE", default=None,
                        help="plan for the machine described by this `probe --json` file instead of probing here")
    parser.add_argument("--python", metavar="X.Y", default=None,
                        help="the Python version of the environment (default: the Python running here)")
    parser.add_argument("--trace", action="store_true", help="print every rule that fired, not only the summary")


def run(args, out) -> int:
    from resolver.planning import PlanMemo

    if args.profile is not None:
        from resolver.probe.profile import HardwareProfile

        profile = HardwareProfile.from_file(args.profile)
    else:
        from resolver.planning import probe_here

        profile = probe_here()
    memo = PlanMemo(profile, args.target, args.python)
    answer = memo.recall()
    if answer is None:
        plan = _decide(profile, args.target, args.python)
        answer = {"plan": plan.to_json(), "human": _human(plan, verbose=True), "brief": _human(plan, verbose=False)}
        memo.keep(answer)
    out.result(answer["plan"], human=answer["human" if args.trace or not args.quiet else "brief"])
    return 0


def _decide(profile, target_text: str, python_text: str | None):
    from resolver.decide import decide
    from resolver.decide.model import Request, Target
    from resolver.errors import BadInput
    from resolver.knowledge import Knowledge
    from resolver.versions import DottedVersion

    target = Target.parse(target_text)
    python = None
    if python_text is not None:
        try:
            python = DottedVersion.parse(python_text)
        except ValueError:
            python = None
        if python is None or len(python.parts) < 2 or python.major != 3:
            raise BadInput(f"--python {python_text!r} is not a Python version", fix="write it as X.Y, e.g. --python 3.11")
    outcome = decide(profile, Request(target=target, python=python), Knowledge.load())
    if outcome.plan is None:
        raise outcome.refusal
    return outcome.plan


def _human(plan, verbose: bool) -> str:
    lines = [plan.summary, ""]
    torch = plan.torch
    lines.append(f"  backend   {plan.backend}{' ' + plan.backend_version if plan.backend_version else ''}"
                 f"{'' if plan.runnable_here else '  (a plan for another machine)'}")
    lines.append(f"  python    {plan.python} on {plan.platform}" + (f", glibc {plan.glibc}" if plan.glibc else ""))
    lines.append(f"  torch     {torch.requirement}  from {torch.source.url}")
    if torch.conda:
        lines.append(f"  conda     {torch.conda.spec}  (channel {torch.conda.channel})")
    kernels = plan.kernels
    if kernels.strategy == "none":
        lines.append("  kernels   none (reference path)")
    else:
        packages = ", ".join(f"{n} {v}" for n, v in kernels.packages)
        lines.append(f"  kernels   {kernels.strategy}: {packages} with {kernels.toolkit} for {', '.join(kernels.arch_list)}")
    for patch in plan.patches:
        lines.append(f"  patch     {patch.id} ({patch.file})")
    for step in plan.trace:
        if step.rule == "variant" and ", not " in step.result:
            lines.append(f"  why       {step.result}: {step.because}")
    for warning in plan.warnings:
        lines.append(f"  warning   {warning}")
    if verbose:
        lines.append("")
        lines.append("trace:")
        for step in plan.trace:
            lines.append(f"  {step.rule:<14} {step.result:<22} {step.because}")
    return "\n".join(lines)
