"""`python -m resolver doctor [--env NAME] [--log FILE|-] [--json]`: what is wrong, and the exact fix.

Without --log: checks the environment (torch imports; torch's CUDA/HIP vs the driver; each GPU vs
torch's and the kernels' architectures; the kernel extensions' ABI; the ROCm 6.0 header; build
tools; pixi.lock vs what is installed). With --log: matches the log against known error signatures
from real upstream reports (resolver/doctor/signatures.toml) and prints the cause and the fix
command for this environment; add --env to check the environment as well.

Exit 0 when nothing is wrong; 1 when a check failed, a known error was found in the log, or the
log matched nothing known (then the log's last lines are shown).
"""

from __future__ import annotations

HELP = "diagnose an environment and/or an error log: the cause and the exact fix command"


def add_arguments(parser) -> None:
    from resolver.names import env_name_arg  # light: the name rule only

    parser.add_argument("--env", type=env_name_arg, metavar="NAME",
                        help="the environment to check (default: the only one installed)")
    parser.add_argument("--log", metavar="FILE", help="a log to diagnose; - reads stdin")
    parser.add_argument("--extension", metavar="MODULE", action="append", default=[],
                        help="also check that this compiled extension module loads (repeatable)")
    parser.add_argument("--sysroot", metavar="DIR",
                        help="judge the environment against a captured machine (`probe --capture`) instead of this one")


_MARK = {"ok": "ok  ", "fail": "FAIL", "warn": "warn", "skip": "skip"}


def run(args, out) -> int:
    from pathlib import Path

    from resolver.doctor import checks
    from resolver.doctor.context import FixContext, applies, build_context
    from resolver.doctor.signatures import load_signatures, match_log
    from resolver.errors import EnvironmentProblem, ExitCode
    from resolver.install.environment import Environment
    from resolver.paths import ProjectPaths

    project = ProjectPaths.discover()
    if args.sysroot and not Path(args.sysroot).is_dir():
        from resolver.errors import BadInput

        raise BadInput(f"--sysroot {args.sysroot} is not a folder", fix="pass a folder made by `python -m resolver probe --capture`")
    log_name, log_text = checks.read_log(args.log) if args.log else (None, None)
    check_env = args.env is not None or args.log is None
    env = facts = None
    try:
        env = Environment.find(project, args.env)
    except EnvironmentProblem:
        if check_env and args.log is None:
            raise
    profile = checks.probe_profile(args.sysroot) if check_env or env is not None else None
    findings = []
    if env is not None and check_env:
        out.info(f"checking environment '{env.name}' (its Python reports torch, the GPUs and the extensions) ...")
        facts = checks.env_facts(env, args.extension)
    ctx = build_context(env.name if env else None, facts, profile) if (env or facts or profile) else FixContext()
    if env is not None and check_env:
        findings = checks.environment_findings(project, env, facts, profile, ctx)

    doc: dict = {"env": env.name if env else None, "context": ctx.__dict__, "findings": [f.to_json() for f in findings]}
    lines = []
    if findings:
        lines.append(f"environment '{env.name}':")
        for f in findings:
            lines.append(f"  [{_MARK[f.status]}] {f.name}: {f.detail}")
            if f.fix and f.status in ("fail", "warn"):
                lines.append(f"         fix: {f.fix}")
    problems = any(f.status == "fail" for f in findings)
    if log_text is not None:
        matches = [m for m in match_log(log_text, load_signatures()) if applies(m, ctx)]
        doc["log"] = {"file": log_name, "lines": log_text.count("\n") + 1, "matches": [
            {"id": m.signature.id, "title": m.signature.title, "line": m.line, "excerpt": m.excerpt, "details": m.groups,
             "cause": ctx.render(m.signature.cause, m.groups), "fix": ctx.render(m.signature.fix, m.groups),
             "fix_detail": ctx.render(m.signature.fix_detail, m.groups), "category": m.signature.category,
             "sources": list(m.signature.sources)} for m in matches]}
        if matches:
            problems = True
            lines.append(f"log {log_name}: {len(matches)} known error{'s' if len(matches) > 1 else ''}")
            for i, m in enumerate(doc["log"]["matches"]):
                lines += [f"  {'->' if i == 0 else '  '} {m['title']} (line {m['line']}: {m['excerpt'][:160]})",
                          f"     cause: {m['cause']}", f"     fix:   {m['fix']}"]
                if m["fix_detail"]:
                    lines.append(f"            {m['fix_detail']}")
                lines.append(f"     seen in: {', '.join(m['sources'][:3])}")
        else:
            problems = True
            tail = [l for l in log_text.splitlines() if l.strip()][-3:]
            doc["log"]["unmatched_tail"] = tail
            lines.append(f"log {log_name}: no known error signature matched; its last lines:")
            lines += [f"  | {l[:200]}" for l in tail]
            lines.append(f"  run `python -m resolver doctor --env {ctx.env}` to check the environment itself")
    doc["ok"] = not problems
    if not lines:
        lines.append("nothing to check")
    lines.append("no problems found" if not problems else "problems found (see fix lines above)")
    out.result(doc, "\n".join(lines))
    return int(ExitCode.CHECK_FAILED if problems else ExitCode.OK)
