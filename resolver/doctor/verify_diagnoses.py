"""What doctor knows about a failed ``verify``: its failed checks and errors run through doctor's signatures.

Verify reports; whoever runs it (the ``verify`` command, setup's verify step) asks this module for the known
causes and fixes and hands them to :func:`resolver.verify.report.document`, so verify imports nothing of doctor.
"""

from __future__ import annotations

from collections.abc import Mapping

from resolver.doctor.context import build_context
from resolver.doctor.signatures import load_signatures, match_log
from resolver.verify.inenv.answers import EnvironmentFacts, VerifyReport


def diagnoses(report: VerifyReport | Mapping, env_name: str) -> list[dict]:
    """Failed checks and errors run through doctor's signatures: the known cause and the fix command."""
    report = VerifyReport.of(report)
    facts = report.facts or EnvironmentFacts()
    texts = [c.detail or "" for c in report.with_status("fail")]
    texts += [str(e.get("error", "")) + "\n" + str(e.get("traceback", "")) for e in report.errors]
    texts += [str(report.fatal)] if report.fatal else []
    texts += [e.error for e in facts.extensions.values() if e.error]
    ctx = build_context(env_name, report.facts, None)
    out, seen = [], set()
    signatures = load_signatures()
    for text in texts:
        for m in match_log(text, signatures)[:1]:
            if m.signature.id not in seen:
                seen.add(m.signature.id)
                out.append({"id": m.signature.id, "title": m.signature.title, "cause": ctx.render(m.signature.cause, m.groups),
                            "fix": ctx.render(m.signature.fix, m.groups), "sources": list(m.signature.sources)})
    return out
