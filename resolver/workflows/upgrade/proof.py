"""Prove the new environment against the current one: the same checkpoint, the same inputs, both machines' worth
of evidence from one machine.

1. ``verify`` in the new environment (its kernels load and carry the plan's architectures; the model
   through the library agrees with our reference);
2. the same benchmark run in both environments, each dumping the library's logits and greedy tokens
   per dtype: the new logits must agree with the old within the dtype's tolerance (relative to the
   logit scale, :data:`TOLERANCE`), the generations must be equal;
3. prompt (prefill) and decode speed, new over old;
4. the warnings the model's code raised in each, and which ones only the new torch raises (the
   deprecations are counted, and named when mamba.toml's ``[[api_change]]`` rows know them).

Every check is a :class:`ProofCheck`; the proof passes when none failed. Speed and warnings inform unless
the caller sets a gate (``max_slowdown``).

>>> p = Proof((ProofCheck("verify", "pass", "ok"), ProofCheck("logits:float32", "fail", "x", {"rel_err": 0.2})))
>>> p.ok, [c.name for c in p.failed]
(False, ['logits:float32'])
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from resolver.core.fs import make_folder
from resolver.install.environment import Environment
from resolver.plan.knowledge import Knowledge
from resolver.project.manifest import Dependency
from resolver.project.paths import ProjectPaths
from resolver.verify.compare import compare_dumps
from resolver.verify.inenv.answers import VerifyReport

# Old against new environment, same checkpoint and inputs: the largest |new - old| over the largest |old|
# logit, per dtype. The same bounds the library must keep against our reference (resolver.verify.inenv.models):
# float32 differs only by summation order; the half precisions round every intermediate.
from resolver.verify.inenv.models import TOLERANCE  # plain data, no torch

# Half-precision greedy decoding may legitimately flip a near-tie token; float32 may not.
STRICT_TOKENS = ("float32",)


@dataclass(frozen=True)
class ProofCheck:
    name: str
    status: str  # pass | fail | info | skip
    detail: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, **self.numbers}


@dataclass(frozen=True)
class Proof:
    checks: tuple[ProofCheck, ...]
    numerics: dict[str, Any] = field(default_factory=dict)
    speed: dict[str, Any] = field(default_factory=dict)
    warnings: dict[str, Any] = field(default_factory=dict)
    runs: dict[str, Any] = field(default_factory=dict)  # per environment: torch, device, library, wall time

    @property
    def failed(self) -> tuple[ProofCheck, ...]:
        return tuple(c for c in self.checks if c.status == "fail")

    @property
    def ok(self) -> bool:
        return not self.failed

    def why_not(self) -> str:
        """The failed checks in one sentence (which, and by how much)."""
        return "; ".join(f"{c.name}: {c.detail}" for c in self.failed)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [c.to_json() for c in self.checks], "numerics": self.numerics,
                "speed": self.speed, "warnings": self.warnings, "runs": self.runs}


@dataclass(frozen=True)
class ProofOptions:
    model: Path | None = None  # None: the built-in tiny checkpoint
    dtypes: str = ""  # "" : verify's default for the device (float32 on CPU, float32,bfloat16 on a GPU)
    prompt_len: int = 64
    new_tokens: int = 16
    repeat: int = 5
    tolerance: dict[str, float] = field(default_factory=dict)  # overrides of TOLERANCE
    max_slowdown: float | None = None  # e.g. 0.2: the new one may be at most 20 % slower (None: speed informs)
    cpu: bool = False

    def tolerance_for(self, dtype: str) -> float:
        return self.tolerance.get(dtype, TOLERANCE.get(dtype, 1e-3))

    def to_json(self) -> dict[str, Any]:
        return {"model": str(self.model) if self.model else None, "dtypes": self.dtypes, "prompt_len": self.prompt_len,
                "new_tokens": self.new_tokens, "repeat": self.repeat,
                "tolerance": {d: self.tolerance_for(d) for d in ("float32", "bfloat16", "float16")},
                "max_slowdown": self.max_slowdown, "cpu": self.cpu}


def prove(project: ProjectPaths, old: Environment, new: Environment, expect_archs: tuple[str, ...],
          options: ProofOptions, knowledge: Knowledge, info: Callable[[str], None] = lambda text: None,
          dependencies: tuple[Dependency, ...] = ()) -> Proof:
    """Run the in-environment programs and compare what they hand back. ``dependencies``: the user's own, carried
    into the new environment: each one's top-level modules must import there."""
    from resolver.verify import report as rep
    from resolver.verify.in_env import resolve_model, run_in_env

    model = resolve_model(project, str(options.model) if options.model else None)
    common = ["--prompt-len", str(options.prompt_len), "--new-tokens", str(options.new_tokens)]
    if options.dtypes:
        common += ["--dtypes", options.dtypes]
    if options.cpu:
        common.append("--cpu")
    checks: list[ProofCheck] = []
    info(f"verify in '{new.name}' ...")
    extra = [*common, "--env-name", new.name]
    if expect_archs:
        extra += ["--expect-archs", ",".join(expect_archs)]
    verified = run_in_env(new, model, extra)
    checks.append(_verify_check(verified.report, new.name))
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="resolver-upgrade-") as tmp:
        reports = {}
        for label, env in (("old", old), ("new", new)):
            info(f"the same inputs through '{env.name}' (logits, generations, speed) ...")
            dump = Path(tmp) / label
            make_folder(dump)
            bench = run_in_env(env, model, [*common, "--mode", "bench", "--repeat", str(options.repeat),
                                            "--skip-reference-bench", "--dump-dir", str(dump)])
            reports[label] = bench.report
            doc = rep.document(bench.report, env_name=env.name, wall_s=bench.wall_s, driver={})
            runs[label] = {"environment": env.name, "torch": doc["versions"]["torch"],
                           "device": (doc.get("device") or {}).get("used"),
                           "library": (doc.get("library") or {}).get("name"), "wall_s": round(bench.wall_s, 1),
                           "errors": doc["errors"]}
        numerics = _numerics(Path(tmp), reports, options, checks)
    speed = _speed(reports, options, checks)
    warned = _warnings(reports, knowledge, checks)
    runs["verify"] = {"environment": new.name, "ok": rep.exit_code(verified.report) == 0,
                      "wall_s": round(verified.wall_s, 1)}
    if dependencies:
        info(f"importing the modules of {len(dependencies)} dependenc{'y' if len(dependencies) == 1 else 'ies'} of "
             f"yours in '{old.name}' and '{new.name}' ...")
        runs["imports"] = {label: _imported(env, dependencies) for label, env in (("old", old), ("new", new))}
        checks += import_checks(dependencies, runs["imports"]["old"], runs["imports"]["new"], new.name)
    return Proof(tuple(checks), numerics, speed, warned, runs)


def _imported(env: Environment, dependencies: tuple[Dependency, ...]) -> dict[str, Any]:
    """What ``resolver.verify.inenv.imports`` answers in ``env`` for the dependencies (their distributions)."""
    names = sorted({d.name for d in dependencies})
    answer = env.call("resolver.verify.inenv.imports", names, timeout=600)
    if answer.document is None or not isinstance(answer.document.get("distributions"), dict):
        return {"error": f"the import check did not answer in '{env.name}' ({answer.failure})"}
    return answer.document["distributions"]


def import_checks(dependencies: tuple[Dependency, ...], old: dict[str, Any], new: dict[str, Any],
                  new_name: str) -> list[ProofCheck]:
    """One check per dependency: every top-level module it installs imports in the new environment (a failure
    there fails the proof); said beside how it did in the current one.

    >>> from resolver.project.manifest import Dependency
    >>> ok = {"tomli-w": {"installed": True, "version": "1.2.0", "modules": {"tomli_w": None}}}
    >>> bad = {"tomli-w": {"installed": True, "version": "1.2.0", "modules": {"tomli_w": "ImportError: x"}}}
    >>> [(c.name, c.status) for c in import_checks((Dependency("pypi", "tomli-w", "*"),), ok, bad, "new")]
    [('import:tomli-w', 'fail')]
    >>> import_checks((Dependency("pypi", "tomli-w", "*"),), ok, ok, "new")[0].detail
    "tomli_w imports in 'new' (tomli-w 1.2.0), as before"
    """
    checks = []
    for dependency in sorted({d.name: d for d in dependencies}.values(), key=lambda d: d.name.lower()):
        name = dependency.name
        if "error" in new:
            checks.append(ProofCheck(f"import:{name}", "fail", str(new["error"])))
            continue
        now, before = _entry(new, name), _entry(old, name)
        if not now.get("installed"):
            if dependency.kind == "conda" and not before.get("installed"):
                checks.append(ProofCheck(f"import:{name}", "skip", f"{name} is a conda package without Python "
                                         "modules: nothing to import"))
            else:
                checks.append(ProofCheck(f"import:{name}", "fail", f"{name} is not installed in '{new_name}'"))
            continue
        modules = now.get("modules") or {}
        failed = {m: e for m, e in modules.items() if e}
        was = {m: e for m, e in (before.get("modules") or {}).items() if e}
        numbers = {"version": now.get("version"), "modules": sorted(modules),
                   "failed": failed, "failed_before": was}
        if failed:
            detail = "; ".join(f"import {m} fails in '{new_name}': {e}" for m, e in sorted(failed.items()))
            detail += " (it failed in the current environment too)" if set(failed) <= set(was) else \
                " (it imports in the current environment)"
            checks.append(ProofCheck(f"import:{name}", "fail", detail[:800], numbers))
        elif not modules:
            checks.append(ProofCheck(f"import:{name}", "skip", f"{name} {now.get('version')} installs no top-level "
                                     "module to import", numbers))
        else:
            checks.append(ProofCheck(f"import:{name}", "pass", f"{', '.join(sorted(modules))} import"
                                     f"{'s' if len(modules) == 1 else ''} in '{new_name}' ({name} "
                                     f"{now.get('version')})" + (", as before" if before.get("installed") and not was
                                                                  else ""), numbers))
    return checks


def _entry(found: dict[str, Any], name: str) -> dict[str, Any]:
    from resolver.core.names import canonical_name

    return next((v for k, v in found.items() if canonical_name(k) == canonical_name(name) and isinstance(v, dict)), {})


def _verify_check(report: VerifyReport, name: str) -> ProofCheck:
    from resolver.verify.report import exit_code

    failed = report.with_status("fail")
    passed = len(report.with_status("pass"))
    skipped = len(report.with_status("skip"))
    if exit_code(report) == 0:
        archs = [c for c in report.checks if (c.name or "").startswith("archs:")]
        carried = "; ".join(c.detail or "" for c in archs if c.status == "pass")
        return ProofCheck("verify", "pass", f"{passed} checks passed, {skipped} skipped (cannot run here) in '{name}'"
                          + (f"; {carried}" if carried else ""), {"passed": passed, "skipped": skipped})
    why = "; ".join(f"{c.name}: {c.detail}" for c in failed) or (report.fatal or "the check did not finish")
    return ProofCheck("verify", "fail", f"verify fails in '{name}': {why}"[:800],
                      {"failed": [c.name for c in failed]})


def _numerics(folder: Path, reports: dict[str, VerifyReport], options: ProofOptions,
              checks: list[ProofCheck]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    dtypes = [d for d in ("float32", "bfloat16", "float16")
              if (folder / "old" / f"{d}.f32").is_file() or (folder / "new" / f"{d}.f32").is_file()]
    if not dtypes:
        why = "; ".join(str(e.get("error", ""))[:200] for r in reports.values() for e in r.errors) or \
            "neither environment produced logits"
        checks.append(ProofCheck("logits", "fail", f"no logits to compare: {why}"))
        return out
    for dtype in dtypes:
        a, b = folder / "old" / f"{dtype}.f32", folder / "new" / f"{dtype}.f32"
        tolerance = options.tolerance_for(dtype)
        if not (a.is_file() and b.is_file()):
            which = "the current" if not a.is_file() else "the new"
            checks.append(ProofCheck(f"logits:{dtype}", "fail", f"{which} environment produced no {dtype} logits"))
            continue
        result = compare_dumps(a, b, tolerance=tolerance)
        out[dtype] = {k: v for k, v in result.items() if k != "ok"}
        if "rel_err" not in result:
            checks.append(ProofCheck(f"logits:{dtype}", "fail", result.get("why", "the logits cannot be compared")))
            continue
        rel, absolute = result["rel_err"], result["max_abs_err"]
        within = rel <= tolerance
        checks.append(ProofCheck(
            f"logits:{dtype}", "pass" if within else "fail",
            (f"new vs current: max relative error {rel:.3g} (max abs {absolute:.3g}) "
             + (f"within the tolerance {tolerance:g}" if within else
                f"is above the tolerance {tolerance:g} by a factor of {rel / tolerance if tolerance else float('inf'):.3g}")),
            {"rel_err": rel, "max_abs_err": absolute, "tolerance": tolerance}))
        equal = result["tokens_equal"]
        status = "pass" if equal else ("fail" if dtype in STRICT_TOKENS else "info")
        checks.append(ProofCheck(f"generate:{dtype}", status,
                                 "greedy generations are identical" if equal else
                                 f"greedy generations differ ({_first_difference(a, b)})",
                                 {"tokens_equal": equal}))
    return out


def _first_difference(a: Path, b: Path) -> str:
    import json

    from resolver.core.fs import read_bytes_bounded

    ta = json.loads(read_bytes_bounded(a.with_suffix(".json"), limit=64 << 20, what="the logits record")).get("tokens", [])
    tb = json.loads(read_bytes_bounded(b.with_suffix(".json"), limit=64 << 20, what="the logits record")).get("tokens", [])
    for row, (ra, rb) in enumerate(zip(ta, tb)):
        for step, (x, y) in enumerate(zip(ra, rb)):
            if x != y:
                return f"first at row {row}, step {step}: {x} before, {y} now"
    return "their lengths differ"


def _speed(reports: dict[str, VerifyReport], options: ProofOptions, checks: list[ProofCheck]) -> dict[str, Any]:
    def library(report: VerifyReport) -> tuple[str | None, dict]:
        for dtype, entry in report.results.items():
            bench = (entry or {}).get("bench") or {}
            if bench.get("library"):
                return dtype, bench["library"]
        return None, {}

    from resolver.verify.bench_text import speed_ratio

    dtype, old = library(reports["old"])
    _, new = library(reports["new"])
    out: dict[str, Any] = {"dtype": dtype, "old": _rates(old), "new": _rates(new)}
    for phase, key in (("prompt", "prefill_tokens_per_s"), ("decode", "decode_tokens_per_s")):
        before, after = old.get(key), new.get(key)
        ratio = speed_ratio(phase, old, new, options.new_tokens)  # bench --compare's noise guard
        if ratio is None:
            why = ("a run did not measure it" if not before or not after else
                   "the repeats vary more than the difference between the two: the ratio would be noise")
            checks.append(ProofCheck(f"speed:{phase}", "skip", f"{phase} speed: too noisy to compare ({why}; a larger "
                                     "--repeat on an idle machine)", {"ratio": None, "old_tokens_per_s": before,
                                                                      "new_tokens_per_s": after}))
            out[f"{phase}_ratio"] = None
            continue
        out[f"{phase}_ratio"] = ratio
        slower = options.max_slowdown is not None and ratio < 1 - options.max_slowdown
        detail = (f"{after:,.0f} tokens/s now, {before:,.0f} before: x{ratio:.2f} "
                  + ("(faster)" if ratio >= 1 else f"({(1 - ratio) * 100:.0f} % slower)"))
        if options.max_slowdown is not None:
            detail += f"; at most {options.max_slowdown * 100:.0f} % slower is allowed"
        checks.append(ProofCheck(f"speed:{phase}", "fail" if slower else ("pass" if options.max_slowdown is not None
                                                                          else "info"), detail,
                                 {"ratio": ratio, "old_tokens_per_s": before, "new_tokens_per_s": after}))
    return out


def _rates(entry: dict) -> dict[str, Any]:
    return {k: entry.get(k) for k in ("prefill_tokens_per_s", "decode_tokens_per_s", "prefill_latency_ms",
                                      "per_token_latency_ms")}


def _warnings(reports: dict[str, VerifyReport], knowledge: Knowledge, checks: list[ProofCheck]) -> dict[str, Any]:
    def key(item) -> tuple:
        return (item.get("category"), item.get("message"), item.get("package"))

    old = {key(w): w for w in reports["old"].warnings if isinstance(w, dict)}
    new = [w for w in reports["new"].warnings if isinstance(w, dict)]
    only_new = [w for w in new if key(w) not in old]
    deprecations = [w for w in new if w.get("deprecation")]
    new_deprecations = [w for w in only_new if w.get("deprecation")]
    named = []
    for w in new_deprecations:
        row = next((c for c in knowledge.api_changes if c.warning and c.warning in str(w.get("message", ""))), None)
        named.append({**w, "api_change": row.id if row else None, "source": row.source if row else None})
    by_package: dict[str, int] = {}
    for w in new_deprecations:
        by_package[w.get("package") or "?"] = by_package.get(w.get("package") or "?", 0) + int(w.get("count", 1))
    total = sum(int(w.get("count", 1)) for w in new_deprecations)
    detail = (f"{total} deprecation warning(s) only the new torch raises"
              + (f" ({', '.join(f'{p}: {n}' for p, n in sorted(by_package.items()))})" if by_package else "")
              + f"; {len(deprecations)} distinct deprecation(s) in all, {len(new)} distinct warning(s) in all")
    checks.append(ProofCheck("warnings", "info", detail, {"new_deprecations": total}))
    return {"new_deprecations": named, "deprecations": len(deprecations), "distinct": len(new),
            "only_new": len(only_new), "by_package": by_package}
