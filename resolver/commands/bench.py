"""`python -m resolver bench [--env NAME] [--model DIR] [--compare OTHER_ENV] [--json]`: how fast, and
(with --compare) do two environments agree?

Measures prompt processing (tokens/s of one forward pass over the prompt) and decoding (tokens/s of
greedy one-token steps) through the environment's library and through our reference. With
``--compare OTHER`` the same checkpoint and the same prompt run in both environments: the logits
must agree within the dtype's tolerance, the generations must be equal, and the speed ratio
OTHER/ENV is reported - the seed's migration check before and after a change.
"""

from __future__ import annotations

HELP = "throughput and latency (prompt, decode); --compare OTHER_ENV checks numerics and the speed ratio"


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_env_argument

    add_env_argument(parser, "to measure")
    parser.add_argument("--model", metavar="DIR", help="a Hugging Face style Mamba checkpoint (default: the tiny one)")
    from resolver.names import env_name_arg  # light: the name rule only

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


def _one(env, model, args, dump, out) -> dict:
    from resolver.verify import report as rep
    from resolver.verify.in_env import run_in_env

    extra = ["--mode", "bench", "--batch", str(args.batch), "--prompt-len", str(args.prompt_len),
             "--new-tokens", str(args.new_tokens), "--repeat", str(args.repeat), "--dump-logits", str(dump)]
    if args.dtype:
        extra += ["--dtypes", args.dtype]
    if args.cpu:
        extra.append("--cpu")
    if args.prompt_lens:
        extra += ["--prompt-lens", args.prompt_lens]
    out.info(f"benchmarking environment '{env.name}'" + (f" at prompt lengths {args.prompt_lens}" if args.prompt_lens else "")
             + " ...")
    result = run_in_env(env, model, extra)
    doc = rep.document(result.report, env_name=env.name, wall_s=result.wall_s, driver={})
    dtype = next(iter(doc["results"]), None)
    entry = doc["results"].get(dtype, {}) if dtype else {}
    return {"env": env.name, "ok": doc["ok"], "dtype": dtype, "device": (doc.get("device") or {}).get("used"),
            "torch": doc["versions"]["torch"], "library": (doc.get("library") or {}).get("name"),
            "bench": entry.get("bench"), "by_prompt_len": entry.get("bench_by_prompt_len"), "checks": doc["checks"],
            "errors": doc["errors"], "wall_s": doc["timings"]["wall_s"]}


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


def run(args, out) -> int:
    import tempfile
    from pathlib import Path

    from resolver.errors import BadInput, ExitCode
    from resolver.install.environment import Environment
    from resolver.paths import ProjectPaths
    from resolver.verify.compare import compare_dumps
    from resolver.verify.in_env import resolve_model

    if min(args.batch, args.prompt_len, args.new_tokens, args.repeat) < 1:
        raise BadInput("--batch, --prompt-len, --new-tokens and --repeat must be at least 1", fix="pass positive numbers")
    from resolver.commands.verify import check_dtypes

    check_dtypes(args.dtype, "--dtype", one=True)
    if args.prompt_lens:
        args.prompt_lens = ",".join(str(v) for v in parse_lengths(args.prompt_lens))
    if args.dtype and args.dtype not in ("float32", "bfloat16", "float16"):
        raise BadInput(f"--dtype {args.dtype} is not one of float32, bfloat16, float16", fix="pick one of them")
    project = ProjectPaths.discover()
    model = resolve_model(project, args.model)  # a bad --model is reported before anything else
    env = Environment.find(project, args.env)
    other = Environment.find(project, args.compare) if args.compare else None
    with tempfile.TemporaryDirectory(prefix="resolver-bench-") as tmp:
        results = [_one(env, model, args, Path(tmp) / "a.f32", out)]
        doc: dict = {"model": str(model), "inputs": {"batch": args.batch, "prompt_len": args.prompt_len,
                                                    "prompt_lens": [int(v) for v in args.prompt_lens.split(",") if v],
                                                    "new_tokens": args.new_tokens, "repeat": args.repeat},
                     "runs": results}
        if other is not None:
            results.append(_one(other, model, args, Path(tmp) / "b.f32", out))
            if results[0]["dtype"] != results[1]["dtype"]:
                raise BadInput(f"the two environments ran different dtypes ({results[0]['dtype']} vs {results[1]['dtype']})",
                               fix="pass the same --dtype for both, e.g. --dtype float32")
            from resolver.inenv.models import (
                TOLERANCE,  # plain data; this import pulls no torch
            )

            a, b = Path(tmp) / "a.f32", Path(tmp) / "b.f32"
            if a.is_file() and b.is_file():
                numerics = compare_dumps(a, b, tolerance=TOLERANCE.get(results[0]["dtype"] or "float32", 1e-3))
            else:
                numerics = {"ok": False, "why": "one environment produced no logits (see its errors)"}
            ba, bb = (results[0].get("bench") or {}).get("library"), (results[1].get("bench") or {}).get("library")
            ratio = ({"prefill": bb["prefill_tokens_per_s"] / ba["prefill_tokens_per_s"],
                      "decode": (bb["decode_tokens_per_s"] / ba["decode_tokens_per_s"]
                                 if bb.get("decode_tokens_per_s") and ba.get("decode_tokens_per_s") else None)}
                     if ba and bb else None)
            doc["compare"] = {"env": env.name, "other": other.name, "numerics": numerics, "speed_ratio_other_over_env": ratio}
    ok = all(r["ok"] for r in results) and (doc.get("compare", {}).get("numerics", {}).get("ok", True))
    doc["ok"] = ok
    from resolver.verify.bench_text import render

    lines = render(doc)
    out.result(doc, "\n".join(lines))
    return int(ExitCode.OK if ok else ExitCode.CHECK_FAILED)
