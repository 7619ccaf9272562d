"""`python -m resolver bench [--env NAME] [--model DIR] [--compare OTHER_ENV] [--json]`: how fast, and
(with --compare) do two environments agree? The measuring is :mod:`resolver.verify.bench`'s; this
module reads the flags, and :mod:`resolver.verify.bench_text` puts the document in words.
"""

from __future__ import annotations

HELP = "throughput and latency (prompt, decode); --compare OTHER_ENV checks numerics and the speed ratio"


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_env_argument
    from resolver.core.names import env_name_arg  # light: the name rule only

    add_env_argument(parser, "to measure")
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
    from resolver.core.errors import BadInput

    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise BadInput(f"--prompt-lens {text!r} is not a comma list of positive lengths", fix="use e.g. --prompt-lens 512,2048,8192")
    return values


def run(args, out) -> int:
    from resolver.commands.verify import check_dtypes
    from resolver.core.errors import BadInput, ExitCode
    from resolver.project.paths import ProjectPaths
    from resolver.verify.bench import BenchRequest, bench

    check_dtypes(args.dtype, "--dtype", one=True)
    if args.dtype and args.dtype not in ("float32", "bfloat16", "float16"):
        raise BadInput(f"--dtype {args.dtype} is not one of float32, bfloat16, float16", fix="pick one of them")
    request = BenchRequest(env=args.env, model=args.model, compare=args.compare, batch=args.batch,
                           prompt_len=args.prompt_len, prompt_lens=parse_lengths(args.prompt_lens) if args.prompt_lens else (),
                           new_tokens=args.new_tokens, repeat=args.repeat, dtype=args.dtype, cpu=args.cpu)
    doc = bench(ProjectPaths.discover(), request, out.info)
    from resolver.verify.bench_text import render

    out.result(doc, "\n".join(render(doc)))
    return int(ExitCode.OK if doc["ok"] else ExitCode.CHECK_FAILED)
