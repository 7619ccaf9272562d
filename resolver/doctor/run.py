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
    from resolver.doctor.context import applies
    from resolver.doctor.fixes import package_in_log, where_log_ran
    from resolver.doctor.logfacts import log_facts
    from resolver.doctor.normalise import normalise_log
    from resolver.doctor.signatures import closest_families, last_lines, load_signatures, match_log, rocm_in_log

    text = normalise_log(text)
    ctx = replace(ctx, package=package_in_log(text))
    log_rocm = rocm_in_log(text)
    facts = log_facts(text)
    signatures = load_signatures()
    matches = []
    for m in match_log(text, signatures):
        m = replace(m, groups={**{k: v for k, v in facts.items() if k.startswith("driver_")}, **m.groups,
                               **({"log_rocm": log_rocm} if log_rocm else {})})
        if applies(m, ctx):
            matches.append(m)
    outside = where_log_ran(text, project.root)
    doc: dict = {"file": name, "lines": text.count("\n") + 1, "python": outside, "recognised": bool(matches),
                 "facts": facts}
    lines: list[str] = []
    if not matches:
        tail = last_lines(text, 3)
        near = closest_families(text, signatures)
        doc["matches"] = []
        doc["closest"] = [{"id": s.id, "title": s.title} for s in near]
        doc["unmatched_tail"] = tail
        doc["next_step"] = (f"python -m resolver setup (makes a known-good environment here); {REPORT_HOW}")
        lines.append(f"log {name}: no error doctor knows is in it, so it names no cause and no fix; next: "
                     f"`python -m resolver setup` makes a known-good environment here, and {REPORT_HOW}. Its last lines:")
        lines += [f"  | {line[:200]}" for line in tail]
        if near:
            lines.append("  closest known families (none matched): " + "; ".join(s.title for s in near))
        return doc, lines, False
    doc["matches"] = []
    lines.append(f"log {name}: {len(matches)} known error{'s' if len(matches) > 1 else ''}")
    if outside:
        lines.append(f"  the log came from a Python outside this project ({outside}): on that machine, "
                     "`python -m resolver setup` makes an environment with these fixes applied")
    for i, m in enumerate(matches):
        entry = _entry(project, m, ctx, env, profile, outside, facts, text)
        doc["matches"].append(entry)
        lines += [f"  {'->' if i == 0 else '  '} {entry['title']} (line {entry['line']}: {entry['excerpt'][:160]})",
                  f"     cause: {entry['cause']}", f"     fix:   {entry['fix']}"]
        if entry["fix_note"]:
            lines.append(f"            ({entry['fix_note']})")
        if entry["fix_detail"]:
            lines.append(f"            {entry['fix_detail']}")
        lines.append(f"     seen in: {', '.join(entry['sources'][:3])}")
    return doc, lines, True


def _entry(project, m, ctx, env, profile, outside, facts: dict, text: str) -> dict:
    """One match as doctor reports it, its fix shaped for the machine and environment the log came from."""
    from resolver.doctor.context import UNKNOWN, target_of
    from resolver.doctor.fixes import HOW_TO_GET_ARCH, cuda_of, env_in_log, env_torch, gpu_env

    sig = m.signature
    needs_gpu = sig.category in ("runtime", "abi", "rocm", "driver") or "build" in sig.fix or "--arch" in sig.fix
    installed = sorted(p.name for p in project.envs.iterdir() if p.is_dir()) if project.envs.is_dir() else []
    want = "rocm" if profile is not None and profile.amd and profile.amd.gpus else \
        "cuda" if profile is not None and profile.nvidia and profile.nvidia.gpus else None
    note, foreign = "", None
    fix_ctx = replace(ctx, env=UNKNOWN["env"])
    if outside:
        foreign = f"a Python outside this project ({outside})"
    elif installed:
        chosen, why = gpu_env(project, env.name if env is not None else None, want)
        named = env_in_log(text, project.root)
        if named in installed or chosen:
            fix_ctx = replace(fix_ctx, env=named if named in installed else chosen)
        elif want and needs_gpu:  # a GPU here and only CPU environments: the log may be from here, its fix is not
            note = why or (f"this project has no {want.upper()} environment yet: make one first with "
                           "`python -m resolver lock --target auto && python -m resolver install`")
        else:
            # no environment of this project can have written this log (none fits its GPU, none is named)
            foreign = "another machine or environment, as none of this project's environments fits it"
            fix_ctx = replace(fix_ctx, arch=UNKNOWN["arch"], cuda=UNKNOWN["cuda"], torch="the installed torch",
                              target="auto")
    if fix_ctx.env in installed and fix_ctx.cuda == UNKNOWN["cuda"]:  # the log alone: the environment's install says
        torch = env_torch(project.env(fix_ctx.env))
        if torch:
            fix_ctx = replace(fix_ctx, torch=torch, cuda=cuda_of(torch) or fix_ctx.cuda,
                              target=target_of({"cuda": cuda_of(torch), "version": torch}))
    elif fix_ctx.env not in installed and facts.get("torch"):  # the log's own torch speaks for its machine
        fix_ctx = replace(fix_ctx, torch=facts["torch"], cuda=facts.get("cuda", fix_ctx.cuda),
                          target=facts.get("target", fix_ctx.target))
    if "{arch}" in sig.fix and not fix_ctx.arch_known:
        note = (note + "; " if note else "") + f"the GPU's architecture is not known here: {HOW_TO_GET_ARCH}"
    fix = fix_ctx.render(sig.fix, m.groups)
    if not outside and not installed:
        note = (note + "; " if note else "") + f"no environment is installed in this project yet; setup makes one, then: {fix}"
        fix = "python -m resolver setup"
    elif foreign:
        note = f"the log came from {foreign}; there, `python -m resolver setup` makes an environment, then: {fix}" + \
            (f"; {note}" if note else "")
        fix = "python -m resolver setup"
    return {"id": sig.id, "title": sig.title, "line": m.line, "excerpt": m.excerpt, "details": m.groups,
            "cause": fix_ctx.render(sig.cause, m.groups), "fix": fix, "fix_note": note,
            "fix_detail": fix_ctx.render(sig.fix_detail, m.groups), "category": sig.category,
            "sources": list(sig.sources), "env": fix_ctx.env if fix_ctx.env in installed else None}
