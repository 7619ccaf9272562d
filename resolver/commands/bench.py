"""`python -m resolver bench [--env NAME] [--model DIR] [--compare OTHER_ENV] [--json]`: how fast, and
(with --compare) do two environments agree? The measuring is :mod:`resolver.verify.bench`'s; this
module reads the flags and renders the document.
"""

from __future__ import annotations

HELP = "throughput and latency (prompt, decode); --compare OTHER_ENV checks numerics and the speed ratio"


def add_arguments(parser) -> None:
    from resolver.names import env_name_arg  # light: the name rule only

    parser.add_argument("--env", type=env_name_arg, metavar="NAME",
                        help="the environment to measure (default: the only one installed)")
    parser.add_argument("--model", metavar="DIR", help="a Hugging Face style Mamba checkpoint (default: the tiny one)")
    parser.add_argument("--compare", metavar="OTHER_ENV", type=env_name_arg,
                        help="run the same inputs in OTHER_ENV and compare")
    parser.add_argument("--batch", type=int, default=1, help="sequences per batch (default 1)")
    parser.add_argument("--prompt-len", type=int, default=64, help="prompt tokens (default 64)")
    parser.add_argument("--prompt-lens", metavar="LIST", default="",
                        help="comma list of prompt lengths to measure in one run, e.g. 512,2048,8192 "
                             "(JSON: runs[].by_prompt_len); --prompt-len still sets the numerics check's prompt")
    parser.add_argument("--new-tokens", type=int, default=16, help="generated tokens (default 16)")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions; the median is reported (default 5)")
    parser.add_argument("--dtype", default="", help="float32, bfloat16 or float16 (default: float32 on CPU, bfloat16 on GPU)")
    parser.add_argument("--cpu", action="store_true", help="stay on the CPU even when a GPU is visible")


def parse_lengths(text: str) -> tuple[int, ...]:
    """``--prompt-lens 512,2048,8192`` as numbers; one BadInput sentence otherwise.

    >>> parse_lengths("512, 2048,8192")
    (512, 2048, 8192)
    """
    from resolver.errors import BadInput

    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise BadInput(f"--prompt-lens {text!r} is not a comma list of positive lengths", fix="use e.g. --prompt-lens 512,2048,8192")
    return values


def _fmt_by_len(by_len: dict) -> list[str]:
    def rate(b: dict, key: str) -> str:
        v = (b or {}).get(key)
        return f"{v:,.0f}" if isinstance(v, (int, float)) else "n/a"

    def ratio(v) -> str:
        return f"x{v:.1f}" if isinstance(v, (int, float)) else "n/a"

    lines = []
    for length, b in by_len.items():
        lib, ref = b.get("library") or {}, b.get("reference") or {}
        lines.append(f"  prompt {length:>6}: library {rate(lib, 'prefill_tokens_per_s')} prompt tok/s, "
                     f"{rate(lib, 'decode_tokens_per_s')} decode tok/s; reference {rate(ref, 'prefill_tokens_per_s')} / "
                     f"{rate(ref, 'decode_tokens_per_s')}; speed-up prompt {ratio(b.get('speedup_prefill'))}, "
                     f"decode {ratio(b.get('speedup_decode'))}")
    return lines


def _fmt(r: dict) -> list[str]:
    lines = [f"{r['env']}: torch {r['torch']}, {r['library']} on {r['device']} ({r['dtype']})"]
    if r.get("by_prompt_len"):
        lines += _fmt_by_len(r["by_prompt_len"])
    for label, b in (r.get("bench") or {}).items():
        if isinstance(b, dict):
            decode = (f"decode {b['decode_tokens_per_s']:9.1f} tok/s ({b['per_token_latency_ms']:.2f} ms/token)"
                      if b.get("decode_tokens_per_s") else "decode: too noisy to measure, run again")
            lines.append(f"  {label:9s} prompt {b['prefill_tokens_per_s']:10.1f} tok/s ({b['prefill_latency_ms']:.2f} ms)   {decode}")
    bench = r.get("bench") or {}
    if bench.get("speedup_prefill"):
        decode = f"x{bench['speedup_decode']:.2f}" if bench.get("speedup_decode") else "n/a"
        lines.append(f"  library vs reference: prompt x{bench['speedup_prefill']:.2f}, decode {decode}")
    return lines


def run(args, out) -> int:
    from resolver.commands.verify import check_dtypes
    from resolver.errors import BadInput, ExitCode
    from resolver.paths import ProjectPaths
    from resolver.verify.bench import BenchRequest, bench

    check_dtypes(args.dtype, "--dtype", one=True)
    if args.dtype and args.dtype not in ("float32", "bfloat16", "float16"):
        raise BadInput(f"--dtype {args.dtype} is not one of float32, bfloat16, float16", fix="pick one of them")
    request = BenchRequest(env=args.env, model=args.model, compare=args.compare, batch=args.batch,
                           prompt_len=args.prompt_len, prompt_lens=parse_lengths(args.prompt_lens) if args.prompt_lens else (),
                           new_tokens=args.new_tokens, repeat=args.repeat, dtype=args.dtype, cpu=args.cpu)
    doc = bench(ProjectPaths.discover(), request, out.info)
    out.result(doc, "\n".join(render(doc)))
    return int(ExitCode.OK if doc["ok"] else ExitCode.CHECK_FAILED)


def render(doc: dict) -> list[str]:
    results = doc["runs"]
    lines = [line for r in results for line in _fmt(r)]
    for r in results:
        lines += [f"  [FAIL] {c['name']}: {c['detail']}" for c in r["checks"] if c["status"] == "fail"]
    if "compare" in doc:
        c = doc["compare"]
        n = c["numerics"]
        lines.append(f"compare {c['other']} vs {c['env']}: " + (
            f"logits max abs err {n['max_abs_err']:.3g} (rel {n['rel_err']:.3g}, tolerance {n['tolerance']}), "
            f"generations {'equal' if n['tokens_equal'] else 'DIFFER'}" if "rel_err" in n else n.get("why", "")))
        if c["speed_ratio_other_over_env"]:
            r = c["speed_ratio_other_over_env"]
            decode = f"x{r['decode']:.2f}" if r["decode"] else "n/a (too noisy)"
            lines.append(f"  speed {c['other']}/{c['env']}: prompt x{r['prefill']:.2f}, decode {decode}")
    lines.append("PASSED" if doc["ok"] else "FAILED")
    return lines
