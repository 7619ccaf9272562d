"""The doctor stage: check an environment and/or diagnose a log, and say what to run, where.

``diagnose`` returns a :class:`Diagnosis` (the JSON document, the lines to print, the exit code);
``commands/doctor.py`` only parses the command line and prints it. The verdict is one of ``ok``,
``problems`` (a check failed or a known error was found: exit 1) and ``unrecognised`` (the log holds no
error doctor knows and no check failed: exit 8, with one sentence and the next step, never a promise
of fixes that are not there).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

_MARK = {"ok": "ok  ", "fail": "FAIL", "warn": "warn", "skip": "skip"}
REPORT_HOW = ("if it keeps failing, attach the log and `python -m resolver probe --capture DIR` (a folder "
              "of what the probe read) to a bug report")


@dataclass(frozen=True)
class DoctorRequest:
    env: str | None = None
    log: str | None = None  # a file, "-" for stdin, or None
    extensions: tuple[str, ...] = ()
    sysroot: str | None = None


@dataclass(frozen=True)
class Diagnosis:
    document: dict
    lines: tuple[str, ...]
    verdict: str  # ok | problems | unrecognised

    @property
    def exit_code(self) -> int:
        from resolver.core.errors import ExitCode

        return int({"ok": ExitCode.OK, "problems": ExitCode.CHECK_FAILED,
                    "unrecognised": ExitCode.UNRECOGNISED}[self.verdict])

    @property
    def human(self) -> str:
        return "\n".join(self.lines)


def diagnose(project, request: DoctorRequest, info=lambda text: None) -> Diagnosis:
    from resolver.core.errors import BadInput, EnvironmentProblem
    from resolver.doctor import checks
    from resolver.doctor.context import FixContext, build_context
    from resolver.install.environment import Environment

    if request.sysroot and not Path(request.sysroot).is_dir():
        raise BadInput(f"--sysroot {request.sysroot} is not a folder",
                       fix="pass a folder made by `python -m resolver probe --capture DIR`")
    log_name, log_text = checks.read_log(request.log) if request.log else (None, None)
    check_env = request.env is not None or request.log is None
    env = facts = None
    try:
        env = Environment.find(project, request.env)
    except EnvironmentProblem:
        if check_env and request.log is None:
            raise
    profile = checks.probe_profile(request.sysroot)
    if env is not None and check_env:
        info(f"checking environment '{env.name}' (its Python reports torch, the GPUs and the extensions) ...")
        facts = checks.env_facts(env, list(request.extensions))
    ctx = build_context(env.name if env else None, facts, profile) if (env or facts or profile) else FixContext()
    findings = checks.environment_findings(project, env, facts, profile, ctx) if env is not None and check_env else []

    doc: dict = {"env": env.name if env else None, "context": ctx.__dict__, "findings": [f.to_json() for f in findings]}
    lines: list[str] = []
    if findings:
        lines.append(f"environment '{env.name}':")
        for f in findings:
            lines.append(f"  [{_MARK[f.status]}] {f.name}: {f.detail}")
            if f.fix and f.status in ("fail", "warn"):
                lines.append(f"         fix: {f.fix}")
    failed = any(f.status == "fail" for f in findings)
    verdict = "problems" if failed else "ok"
    if log_text is not None:
        log_doc, log_lines, known = _log(project, log_name, log_text, ctx, env, profile)
        doc["log"] = log_doc
        lines += log_lines
        if known:
            verdict = "problems"
        elif not failed:
            verdict = "unrecognised"
    doc["ok"] = verdict == "ok"
    doc["verdict"] = verdict
    doc["recognised"] = verdict != "unrecognised"
    if not lines:
        lines.append("nothing to check")
    if verdict == "ok":
        lines.append("no problems found")
    elif verdict == "problems":
        lines.append("problems found: run the fix lines above, in order")
    return Diagnosis(doc, tuple(lines), verdict)


def _log(project, name: str, text: str, ctx, env, profile=None) -> tuple[dict, list[str], bool]:
    from resolver.doctor.context import applies, target_of
    from resolver.doctor.fixes import HOW_TO_GET_ARCH, cuda_of, env_torch, gpu_env, package_in_log, where_log_ran
    from resolver.doctor.signatures import load_signatures, match_log, rocm_in_log

    ctx = replace(ctx, package=package_in_log(text))
    log_rocm = rocm_in_log(text)
    matches = []
    for m in match_log(text, load_signatures()):
        if log_rocm:
            m = replace(m, groups={**m.groups, "log_rocm": log_rocm})
        if applies(m, ctx):
            matches.append(m)
    outside = where_log_ran(text, project.root)
    doc: dict = {"file": name, "lines": text.count("\n") + 1, "python": outside, "recognised": bool(matches)}
    lines: list[str] = []
    if not matches:
        tail = [line for line in text.splitlines() if line.strip()][-3:]
        doc["matches"] = []
        doc["unmatched_tail"] = tail
        doc["next_step"] = (f"python -m resolver setup (makes a known-good environment here); {REPORT_HOW}")
        lines.append(f"log {name}: no error doctor knows is in it, so it names no cause and no fix; next: "
                     f"`python -m resolver setup` makes a known-good environment here, and {REPORT_HOW}. Its last lines:")
        lines += [f"  | {line[:200]}" for line in tail]
        return doc, lines, False
    doc["matches"] = []
    lines.append(f"log {name}: {len(matches)} known error{'s' if len(matches) > 1 else ''}")
    if outside:
        lines.append(f"  the log came from a Python outside this project ({outside}): on that machine, "
                     "`python -m resolver setup` makes an environment with these fixes applied")
    for i, m in enumerate(matches):
        sig = m.signature
        fix_ctx = ctx
        note = ""
        needs_gpu = sig.category in ("runtime", "abi", "rocm") or "build" in sig.fix or "--arch" in sig.fix
        installed = sorted(p.name for p in project.envs.iterdir() if p.is_dir()) if project.envs.is_dir() else []
        if not outside:
            want = "rocm" if profile is not None and profile.amd and profile.amd.gpus else \
                "cuda" if profile is not None and profile.nvidia and profile.nvidia.gpus else None
            chosen, why = gpu_env(project, env.name if env is not None else None, want)
            if needs_gpu and chosen:
                fix_ctx = replace(fix_ctx, env=chosen)
            elif needs_gpu and why:
                note = why
            elif env is None and (chosen or installed):
                fix_ctx = replace(fix_ctx, env=chosen or installed[0])
            if fix_ctx.env in installed and fix_ctx.cuda == "X.Y":  # the log alone: the environment's install says
                torch = env_torch(project.env(fix_ctx.env))
                if torch:
                    fix_ctx = replace(fix_ctx, torch=torch, cuda=cuda_of(torch) or fix_ctx.cuda,
                                      target=target_of({"cuda": cuda_of(torch), "version": torch}))
        if "{arch}" in sig.fix and not fix_ctx.arch_known:
            note = (note + "; " if note else "") + f"the GPU's architecture is not known here: {HOW_TO_GET_ARCH}"
        fix = fix_ctx.render(sig.fix, m.groups)
        if not outside and not installed:
            then = fix.replace(" --env NAME", "")
            note = (note + "; " if note else "") + f"no environment is installed in this project yet; setup makes one, then: {then}"
            fix = "python -m resolver setup"
        if outside:
            fix = "python -m resolver setup"
            note = (f"on the machine the log came from; there, if the environment exists already: "
                    f"{fix_ctx.render(sig.fix, m.groups)}")
        entry = {"id": sig.id, "title": sig.title, "line": m.line, "excerpt": m.excerpt, "details": m.groups,
                 "cause": fix_ctx.render(sig.cause, m.groups), "fix": fix, "fix_note": note,
                 "fix_detail": fix_ctx.render(sig.fix_detail, m.groups), "category": sig.category,
                 "sources": list(sig.sources), "env": fix_ctx.env}
        doc["matches"].append(entry)
        lines += [f"  {'->' if i == 0 else '  '} {entry['title']} (line {entry['line']}: {entry['excerpt'][:160]})",
                  f"     cause: {entry['cause']}", f"     fix:   {entry['fix']}"]
        if note:
            lines.append(f"            ({note})")
        if entry["fix_detail"]:
            lines.append(f"            {entry['fix_detail']}")
        lines.append(f"     seen in: {', '.join(entry['sources'][:3])}")
    return doc, lines, True
