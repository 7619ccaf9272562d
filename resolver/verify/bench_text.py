"""``bench`` in words a person reads: which side is faster and by how much, the spread of the repeats
behind each median, a warning when they vary too much to trust, and what PASSED means (the numerics
checks; the timings are measurements, not checks).

>>> side = {"prefill_latency_ms": 50.0, "prefill_tokens_per_s": 1280.0, "prefill_all_ms": [48.0, 50.0, 61.0],
...         "generate_all_ms": [300.0, 310.0, 320.0], "per_token_latency_ms": 10.0, "decode_tokens_per_s": 100.0}
>>> slow = dict(side, prefill_latency_ms=100.0, prefill_tokens_per_s=640.0, prefill_all_ms=[99.0, 100.0, 102.0])
>>> faster("prompt", "the library", side, "the reference", slow, "prefill_latency_ms", "prefill_all_ms", "per prompt")
'prompt: the library is 2.00x faster than the reference (50.0 ms vs 100.0 ms per prompt; spread 48.0-61.0 ms vs 99.0-102.0 ms)'
>>> varies([("the library's prompt", [10.0, 12.0, 45.0]), ("the reference's prompt", [10.0, 11.0])])
"warning: the repeats vary: the library's prompt 4.5x (10.0-45.0 ms); something else is using the machine, so these medians are rough: run again with a larger --repeat on an idle machine"
"""

from __future__ import annotations

NOISY = 2.0  # repeats whose slowest is this many times their fastest are not to be trusted


def render(doc: dict) -> list[str]:
    inputs = doc.get("inputs") or {}
    lines: list[str] = []
    for run in doc["runs"]:
        lines += _run_lines(run, inputs)
    if "compare" in doc:
        lines += _compare_lines(doc)
    lines.append(verdict(doc))
    return lines


def _run_lines(run: dict, inputs: dict) -> list[str]:
    library = run.get("library") or "the library"
    lines = [f"environment {run['env']}: torch {run.get('torch')}, {library} on {run.get('device')} ({run.get('dtype')}); "
             f"batch {inputs.get('batch', 1)}, a {inputs.get('prompt_len', '?')}-token prompt, "
             f"{inputs.get('new_tokens', '?')} new tokens, the median of {inputs.get('repeat', '?')} repeats"]
    bench = run.get("bench") or {}
    new_tokens = max(int(inputs.get("new_tokens") or 2), 2)
    if bench:
        lines += _sides_lines(bench, library, new_tokens)
    for length, entry in (run.get("by_prompt_len") or {}).items():
        lines.append(f"  a {length}-token prompt:")
        lines += ["  " + line for line in _sides_lines(entry, library, new_tokens)]
    lines += [f"  [FAIL] {c['name']}: {c['detail']}" for c in run.get("checks", ()) if c.get("status") == "fail"]
    return lines


def _sides_lines(bench: dict, library: str, new_tokens: int) -> list[str]:
    lib, ref = bench.get("library") or {}, bench.get("reference") or {}
    lines = []
    for label, side in ((f"library ({library})", lib), ("reference (the resolver's pure PyTorch)", ref)):
        if side:
            decode = (f"decode {side['decode_tokens_per_s']:,.1f} tok/s ({side['per_token_latency_ms']:.2f} ms/token)"
                      if _decode_measured(side, new_tokens) else "decode: too noisy to measure")
            lines.append(f"  {label}: prompt {side['prefill_tokens_per_s']:,.0f} tok/s ({side['prefill_latency_ms']:.1f} ms), "
                         f"{decode}")
    if lib and ref:
        lines.append("  " + faster("prompt", "the library", lib, "the reference", ref, "prefill_latency_ms",
                                   "prefill_all_ms", "per prompt"))
        if _decode_measured(lib, new_tokens) and _decode_measured(ref, new_tokens):
            lines.append("  " + faster("decode", "the library", lib, "the reference", ref, "per_token_latency_ms",
                                       None, "per token"))
        else:
            lines.append("  decode: not compared: the repeats differ by more than the decoding takes, so the per-token "
                         "time is noise here (more --new-tokens, or an idle machine)")
    spreads = [(f"{name} {what}", side.get(key) or []) for name, side in (("the library's", lib), ("the reference's", ref))
               for what, key in (("prompt", "prefill_all_ms"), ("generation", "generate_all_ms"))]
    warning = varies(spreads)
    if warning:
        lines.append("  " + warning)
    return lines


def _decode_measured(side: dict, new_tokens: int) -> bool:
    """A per-token time is a measurement when the decoding it stands for (``new_tokens - 1`` steps: it is
    the difference of two generations) takes longer than the generation repeats differ by; otherwise it
    is the difference of two noises (how bench once printed "decode x0.00").

    >>> _decode_measured({"per_token_latency_ms": 0.05, "generate_all_ms": [88.0, 329.0, 579.0]}, 16)
    False
    >>> _decode_measured({"per_token_latency_ms": 10.0, "generate_all_ms": [300.0, 310.0]}, 16)
    True
    """
    step = side.get("per_token_latency_ms")
    times = side.get("generate_all_ms") or []
    if not step or step <= 0:
        return False
    spread = (max(times) - min(times)) if times else 0.0
    return step * (new_tokens - 1) > spread


_PHASES = {"prompt": ("prefill_tokens_per_s", "prefill_all_ms"), "decode": ("decode_tokens_per_s", "generate_all_ms")}


def speed_ratio(phase: str, before: dict, after: dict, new_tokens: int) -> float | None:
    """``after`` over ``before`` in tokens/s for ``phase`` (prompt or decode) of two bench sides, or None when the
    ratio means nothing: a side did not measure it, a side's repeats vary by ``NOISY`` times or more, or (decode)
    the repeats differ by more than the decoding takes. The one noise guard of ``bench --compare`` and of the
    upgrade's proof: both say "too noisy" for None, never a ratio.

    >>> quiet = {"prefill_tokens_per_s": 1000.0, "prefill_all_ms": [50.0, 52.0], "per_token_latency_ms": 10.0,
    ...          "decode_tokens_per_s": 100.0, "generate_all_ms": [300.0, 310.0]}
    >>> speed_ratio("prompt", quiet, dict(quiet, prefill_tokens_per_s=500.0), 16)
    0.5
    >>> speed_ratio("decode", quiet, dict(quiet, decode_tokens_per_s=22.0, generate_all_ms=[88.0, 579.0]), 16) is None
    True
    >>> speed_ratio("prompt", quiet, dict(quiet, prefill_all_ms=[50.0, 160.0]), 16) is None
    True
    """
    key, all_key = _PHASES[phase]
    a, b = before.get(key), after.get(key)
    if not a or not b or a <= 0 or b <= 0:
        return None
    for side in (before, after):
        times = [t for t in side.get(all_key) or [] if isinstance(t, (int, float))]
        if len(times) > 1 and (min(times) <= 0 or max(times) / min(times) >= NOISY):
            return None
        if phase == "decode" and not _decode_measured(side, max(new_tokens, 2)):
            return None
    return b / a


def faster(what: str, a_name: str, a: dict, b_name: str, b: dict, key: str, all_key: str | None, per: str) -> str:
    """Which of two sides is faster at ``what``, by how much, with the spread of the repeats."""
    a_ms, b_ms = float(a[key]), float(b[key])
    first, second, fast, slow = (a_name, b_name, a_ms, b_ms) if a_ms <= b_ms else (b_name, a_name, b_ms, a_ms)
    text = f"{what}: {first} is {slow / fast:.2f}x faster than {second} ({fast:.1f} ms vs {slow:.1f} ms {per}"
    if all_key and a.get(all_key) and b.get(all_key):
        fast_all, slow_all = (a[all_key], b[all_key]) if a_ms <= b_ms else (b[all_key], a[all_key])
        text += f"; spread {_range(fast_all)} vs {_range(slow_all)}"
    return text + ")"


def varies(spreads: list[tuple[str, list[float]]]) -> str | None:
    """One warning naming every measurement whose repeats vary by ``NOISY`` times or more."""
    noisy = [f"{what} {max(times) / min(times):.1f}x ({_range(times)})" for what, times in spreads
             if len(times) > 1 and min(times) > 0 and max(times) / min(times) >= NOISY]
    if not noisy:
        return None
    return (f"warning: the repeats vary: {', '.join(noisy)}; something else is using the machine, so these medians "
            "are rough: run again with a larger --repeat on an idle machine")


def _range(times: list[float]) -> str:
    return f"{min(times):.1f}-{max(times):.1f} ms"


def _compare_lines(doc: dict) -> list[str]:
    c = doc["compare"]
    n = c["numerics"]
    lines = [f"{c['other']} against {c['env']}, same checkpoint and prompt: " + (
        f"logits max abs err {n['max_abs_err']:.3g} (rel {n['rel_err']:.3g}, tolerance {n['tolerance']}), "
        f"generations {'equal' if n['tokens_equal'] else 'DIFFER'}" if "rel_err" in n else n.get("why", ""))]
    ratio = c.get("speed_ratio_other_over_env")
    if ratio:
        for what, value in (("prompt", ratio.get("prefill")), ("decode", ratio.get("decode"))):
            if not value:
                lines.append(f"  {what}: not compared (too noisy)")
            elif value >= 1:
                lines.append(f"  {what}: {c['other']} is {value:.2f}x faster than {c['env']}")
            else:
                lines.append(f"  {what}: {c['env']} is {1 / value:.2f}x faster than {c['other']}")
    return lines


def verdict(doc: dict) -> str:
    """PASSED or FAILED, and what was checked."""
    checks = [c for run in doc["runs"] for c in run.get("checks", ())]
    passed = [c["name"] for c in checks if c.get("status") == "pass"]
    failed = [c["name"] for c in checks if c.get("status") == "fail"]
    compared = "compare" in doc
    what = ("the library's logits and generations match the reference's"
            + ("; the two environments agree" if compared else ""))
    if doc.get("ok"):
        return f"PASSED: {what} ({len(passed)} checks passed); the timings are measurements, not checks"
    reasons = failed + (["the two environments disagree"] if compared and not doc["compare"]["numerics"].get("ok") else [])
    return f"FAILED: {', '.join(reasons) or 'see the errors above'}; the timings are measurements, not checks"
