"""The upgrade's two reports: Markdown for people (a pull request's description) and JSON for scripts.

Both say the same: what changes, the risks with their sources, the lock diff in words, the proof
(numerics per dtype against their tolerances, speed, warnings) and the verdict with what to do next.
They are written to ``.resolver/reports/upgrade-<current>-to-<new>.{md,json}`` (or ``--report DIR``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from resolver.core.fs import write_json_atomic, write_text_atomic
from resolver.project.paths import ProjectPaths

if TYPE_CHECKING:
    from resolver.workflows.upgrade.journey import UpgradeOptions, UpgradeResult


def report_folder(project: ProjectPaths, options: UpgradeOptions) -> Path:
    return options.report_dir if options.report_dir is not None else project.reports


def write_reports(project: ProjectPaths, result: UpgradeResult, options: UpgradeOptions) -> dict[str, str]:
    step = result.step
    folder = report_folder(project, options)
    base = folder / f"upgrade-{step.current.environment}-to-{step.new.environment}"
    paths = {"markdown": str(base.with_suffix(".md")), "json": str(base.with_suffix(".json"))}
    result.report_files = paths
    local = _Relative(project, result)
    write_json_atomic(base.with_suffix(".json"), local.data(document(result, options)), label="upgrade-report")
    write_text_atomic(base.with_suffix(".md"), local.text(markdown(result, options)), label="upgrade-report")
    return paths


def document(result: UpgradeResult, options: UpgradeOptions) -> dict[str, Any]:
    """The JSON report: what ``upgrade --json`` prints (its schema, resolver/schemas/upgrade.json), with when and
    by which resolver it was written and the proof's options."""
    from resolver import __version__
    from resolver.core.ui import SCHEMA_VERSION

    return {"schema_version": SCHEMA_VERSION, "generated": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "resolver": __version__, "verdict": verdict(result), "proof_options": options.proof.to_json(),
            **result.to_json()}


class _Relative:
    """A report is committed and read on other machines: every path of this one in it is written relative to the
    project (``.resolver/envs/cpu``), and one outside it relative to the home folder (``~/...``).

    >>> from resolver.project.paths import ProjectPaths
    >>> local = _Relative(ProjectPaths(Path("/w/p")), None, home="/home/me")
    >>> local.text("at /w/p/.resolver/envs/cpu and /home/me/models/m, not /w/pp; `/w/p`")
    'at .resolver/envs/cpu and ~/models/m, not /w/pp; `.`'
    >>> local.data({"a": ["/w/p", "/w/p/x"], "n": 1})
    {'a': ['.', 'x'], 'n': 1}
    """

    def __init__(self, project: ProjectPaths, result: UpgradeResult | None, home: str | None = None) -> None:
        import os
        import re

        root = project.root
        pairs = {str(root): ".", os.path.realpath(root): "."}
        if result is not None and result.step is not None:  # an environment may be a link to a folder elsewhere
            for side in (result.step.current, result.step.new):
                env = project.env(side.environment)
                pairs.setdefault(os.path.realpath(env), os.path.relpath(env, root))
        home = os.path.expanduser("~") if home is None else home
        if home.rstrip("/"):
            pairs.setdefault(home.rstrip("/"), "~")
        self._paths = sorted(pairs.items(), key=lambda kv: -len(kv[0]))
        self._pattern = re.compile("|".join(f"{re.escape(path)}(/|(?![\\w.-]))" for path, _ in self._paths))

    def text(self, text: str) -> str:
        def swap(match) -> str:
            found = match.group(0)
            for path, name in self._paths:
                if found.rstrip("/") == path:
                    return ("" if name == "." else name + "/") if found.endswith("/") else name
            return found

        return self._pattern.sub(swap, text)

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v) for v in value]
        return value


def verdict(result: UpgradeResult) -> str:
    """One sentence: what happened and what it means."""
    step = result.step
    new, current = step.new.environment, step.current.environment
    if result.stage == "up-to-date":
        return f"nothing to upgrade: '{current}' already is what the tables choose for this request"
    if result.stage == "planned":
        return f"planned only: '{new}' would be built beside '{current}' (nothing was written)"
    if result.stage == "locked":
        return f"locked '{new}' beside '{current}'; the proof runs on the machine the plan is for"
    if result.proof is not None and not result.proof.ok:
        return f"FAILED, not promoted: '{new}' does not match '{current}': {result.proof.why_not()}"
    if result.blocked:
        names = ", ".join(result.blocked)
        flags = " ".join(f"--allow-removal {n}" for n in result.blocked)
        return (f"PASSED but not promoted: '{new}' leaves out your dependenc{'y' if len(result.blocked) == 1 else 'ies'} "
                f"{names} (cannot come along: {'; '.join(result.removed[n] for n in result.blocked)[:400]}); "
                f"promote without {'it' if len(result.blocked) == 1 else 'them'} with "
                f"`python -m resolver upgrade --promote {flags}`")
    removed = f"; without your {', '.join(sorted(result.removed))} (--allow-removal)" if result.removed else ""
    if result.promoted:
        return f"PASSED and promoted: '{new}' is the default environment{removed}; `python -m resolver rollback` " \
               f"returns to '{current}'"
    if result.removed:
        names = ", ".join(sorted(result.removed))
        return (f"PASSED, with a removal: '{new}' matches '{current}' but leaves out your {names} (cannot come along); "
                f"promote it with `python -m resolver upgrade --promote "
                f"{' '.join(f'--allow-removal {n}' for n in sorted(result.removed))}`")
    return f"PASSED: '{new}' matches '{current}'; promote it with `python -m resolver upgrade --promote`"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(result: UpgradeResult, options: UpgradeOptions) -> str:
    step = result.step
    current, new = step.current, step.new
    torch_before = current.plan.torch.requirement.split("==", 1)[1]
    torch_after = new.plan.torch.requirement.split("==", 1)[1]
    lines = [f"# Upgrade `{current.environment}` → `{new.environment}` (torch {torch_before} → {torch_after})", "",
             f"**{verdict(result)}**", ""]
    lines += ["## What changes", "", f"| | before (`{current.environment}`) | after (`{new.environment}`) |",
              "|---|---|---|"]
    for change in step.changes:
        mark = "**" if change.changed else ""
        lines.append(f"| {mark}{_cell(change.what)}{mark} | {_cell(change.before)} | {_cell(change.after)} |")
    lines += ["", "## Risks the knowledge base knows for this step", ""]
    if step.risks:
        for risk in step.risks:
            lines.append(f"- **{risk.level}** ({risk.kind}): {risk.text}. *Source:* {risk.source}")
    else:
        lines.append("- none known")
    for note in step.notes:
        lines.append(f"- note: {note}")
    if result.carried or result.removed:
        lines += ["", "## Your dependencies", ""]
        if result.carried:
            lines.append(f"- carried into `{new.environment}` as `{current.environment}` declares them: "
                         + ", ".join(f"{d.name} {d.spec}" + (f" ({d.selector})" if d.selector else "")
                                     for d in result.carried))
        for name, why in sorted(result.removed.items()):
            lines.append(f"- **cannot come along: {name}** ({_cell(why)}); `--promote` switches only with "
                         f"`--allow-removal {name}`")
    lines += ["", "## pixi.toml and pixi.lock", ""]
    if result.lock:
        lock = result.lock
        lines.append(f"- pixi.toml gains feature and environment `{new.environment}` and names `{current.environment}` "
                     "the default until a promotion ([tool.resolver.upgrade]); the entries of "
                     f"`{current.environment}` are unchanged")
        lines.append(f"- pixi.lock: `{current.environment}`'s entries are unchanged byte for byte"
                     + ("" if lock.get("status") == "locked" else " (the lock already held the new environment)"))
        if lock.get("diff"):
            lines.append(f"- `{new.environment}` against `{current.environment}`: {lock['diff']['words']}")
    else:
        lines.append("- not written (plan only)" if result.stage in ("planned", "up-to-date") else "- not written")
    if result.install:
        lines.append(f"- installed `{new.environment}` at `{result.install['path']}` ({result.install['status']}, "
                     f"{result.install['seconds']:.0f} s)")
    if result.kernels:
        lines.append("- kernels: " + _kernels_line(result.kernels))
    if result.proof is not None:
        lines += _proof_lines(result, options)
    lines += ["", "## Next", ""]
    lines += [f"- {item}" for item in _next(result)]
    lines += ["", f"<sub>mamba-resolver upgrade, {time.strftime('%Y-%m-%d %H:%M')}; "
              f"JSON: `{result.report_files.get('json', '')}`</sub>", ""]
    return "\n".join(lines)


def _kernels_line(kernels: dict[str, Any]) -> str:
    if kernels.get("status") == "not-needed":
        return f"none ({kernels.get('why')})"
    packages = kernels.get("packages", [])
    return "; ".join(f"{p.get('name')} {p.get('status')} for {', '.join(p.get('archs') or []) or '?'}" for p in packages) \
        or "none built"


def _proof_lines(result: UpgradeResult, options: UpgradeOptions) -> list[str]:
    proof = result.proof
    opts = options.proof
    model = str(opts.model) if opts.model else "the built-in tiny Mamba checkpoint"
    runs = proof.runs
    lines = ["", "## Proof: the same checkpoint and inputs through both environments", "",
             f"Checkpoint: {model}; prompt {opts.prompt_len} tokens, {opts.new_tokens} generated greedily, "
             f"{opts.repeat} timed repetitions" + (" (reused: nothing it was made from changed)" if result.proof_reused
                                                  else "") + "."]
    for label in ("old", "new"):
        run = runs.get(label)
        if run:
            lines.append(f"- `{run['environment']}`: torch {run.get('torch')}, {run.get('library')} on "
                         f"{run.get('device')} ({run.get('wall_s')} s)")
    lines += ["", "| check | result | detail |", "|---|---|---|"]
    for check in proof.checks:
        status = check.status.upper() if check.status == "fail" else check.status
        lines.append(f"| {check.name} | {status} | {_cell(check.detail)} |")
    if proof.numerics:
        lines += ["", "| dtype | max relative error | tolerance | max abs error | generations |", "|---|---|---|---|---|"]
        for dtype, n in proof.numerics.items():
            if "rel_err" in n:
                lines.append(f"| {dtype} | {n['rel_err']:.3g} | {n['tolerance']:g} | {n['max_abs_err']:.3g} | "
                             f"{'equal' if n.get('tokens_equal') else 'differ'} |")
    speed = proof.speed
    if speed.get("old") and speed.get("new"):
        def rate(entry: dict, key: str) -> str:
            value = entry.get(key)
            return f"{value:,.0f}" if isinstance(value, (int, float)) else "n/a"

        lines += ["", f"Speed ({speed.get('dtype')}, tokens/s): prompt {rate(speed['old'], 'prefill_tokens_per_s')} → "
                  f"{rate(speed['new'], 'prefill_tokens_per_s')}, decode {rate(speed['old'], 'decode_tokens_per_s')} → "
                  f"{rate(speed['new'], 'decode_tokens_per_s')}"
                  + ("" if opts.max_slowdown is not None else " (informative: pass --max-slowdown to make it a gate)")]
    warned = proof.warnings
    if warned.get("new_deprecations"):
        lines += ["", "Deprecation warnings only the new torch raises:"]
        for w in warned["new_deprecations"]:
            known = f" (known: {w['api_change']}; {w['source']})" if w.get("api_change") else ""
            lines.append(f"- {w.get('count', 1)}x {w.get('category')} from {w.get('package')} "
                         f"({Path(str(w.get('file', ''))).name}:{w.get('line')}): {_cell(w.get('message', ''))[:300]}{known}")
    return lines


def _next(result: UpgradeResult) -> list[str]:
    step = result.step
    new, current = step.new.environment, step.current.environment
    if result.stage == "up-to-date":
        return ["nothing to do"]
    if result.stage == "planned":
        return ["run the same command without --plan-only to build and prove it"]
    if result.stage == "locked":
        return result.remaining
    if result.proof is not None and not result.proof.ok:
        return [f"the default stays '{current}'; look into the failed checks (`python -m resolver verify --env {new}`, "
                f"`python -m resolver bench --env {current} --compare {new}`), then run the upgrade again"]
    items = []
    allow = "".join(f" --allow-removal {n}" for n in sorted(result.removed))
    for name, why in sorted(result.removed.items()):
        items.append(f"your {name} cannot come along ({why[:300]}): relax or drop its pin in pixi.toml and run the "
                     f"upgrade again, or promote without it (`--allow-removal {name}`)")
    if not result.promoted:
        items.append(f"promote it: `python -m resolver upgrade --promote{allow}` (setup, verify, bench and install then "
                     f"use '{new}')")
    else:
        items.append(f"roll back at any time: `python -m resolver rollback` ('{current}' is kept, installed and locked)")
    items.append("team: commit pixi.toml and pixi.lock as one change; this report is its description")
    return items


def summary_text(result: UpgradeResult) -> str:
    """What the command prints for a person: the changes, the risks, the lock in words, the proof, the verdict."""
    step = result.step
    lines = []
    if step is not None:
        lines.append(f"upgrade '{step.current.environment}' → '{step.new.environment}'")
        lines += [f"  {c.what}: {c.before} → {c.after}" for c in step.changes if c.changed]
        if step.risks:
            lines.append("risks the knowledge base knows for this step:")
            lines += [f"  [{r.level}] {r.text} (source: {r.source})" for r in step.risks]
        lines += [f"note: {n}" for n in step.notes]
    if result.carried:
        lines.append("your dependencies, carried: " + ", ".join(f"{d.name} {d.spec}" for d in result.carried))
    for name, why in sorted(result.removed.items()):
        lines.append(f"cannot come along: {name} ({why})")
    if result.lock and result.lock.get("diff"):
        lines.append(f"lock: {result.lock['diff']['words']}")
    if result.proof is not None:
        lines.append("proof:")
        lines += [f"  [{c.status}] {c.name}: {c.detail}" for c in result.proof.checks]
    lines += [f"  - {item}" for item in result.remaining]
    lines.append(verdict(result))
    for kind, path in result.report_files.items():
        lines.append(f"report ({kind}): {path}")
    return "\n".join(lines)
