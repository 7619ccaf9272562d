"""`python -m resolver verify [--env NAME] [--model DIR] [--json]`: does the environment really work?

Loads a Mamba checkpoint through the real library in the environment and through our pure-PyTorch
reference (resolver/verify/inenv/reference.py), compares logits and greedy generations, checks that the kernel
extensions load and, on a GPU, that they were built for it. All torch work runs in ONE process
inside the environment (resolver/verify/inenv/verify.py); this process never imports torch.
"""

from __future__ import annotations

HELP = "load a Mamba model through the environment's libraries and our reference; compare logits and generations"


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_env_argument

    add_env_argument(parser, "to check")
    parser.add_argument("--model", metavar="DIR", help="a Hugging Face style Mamba checkpoint (config.json + "
                        "*.safetensors); default: a tiny deterministic checkpoint the tool writes itself")
    parser.add_argument("--dtypes", metavar="LIST", default="",
                        help="comma list of float32,bfloat16,float16 (default: float32 on CPU; float32,bfloat16 on GPU)")
    parser.add_argument("--cpu", action="store_true", help="stay on the CPU even when a GPU is visible")
    parser.add_argument("--prompt-len", type=int, default=16, help="prompt length in tokens (default 16)")
    parser.add_argument("--new-tokens", type=int, default=8, help="greedy tokens to generate (default 8)")
    parser.add_argument("--extension", metavar="MODULE", action="append", default=[],
                        help="also check that this compiled extension module loads (repeatable)")
    parser.add_argument("--library", choices=("auto", "transformers"), default="auto",
                        help="the library the model is loaded through: auto (mamba_ssm when its kernels can run "
                             "here, else transformers) or transformers (which uses the kernels too when they can run)")


def run(args, out) -> int:
    from resolver.core.errors import BadInput
    from resolver.doctor.verify_diagnoses import diagnoses
    from resolver.install.environment import Environment
    from resolver.project.paths import ProjectPaths
    from resolver.verify import report as rep
    from resolver.verify.in_env import resolve_model, run_in_env

    if args.prompt_len < 1 or args.new_tokens < 1:
        raise BadInput("--prompt-len and --new-tokens must be at least 1", fix="pass positive numbers")
    check_dtypes(args.dtypes, "--dtypes")
    project = ProjectPaths.discover()
    model = resolve_model(project, args.model)  # a bad --model is reported before anything else
    env = Environment.find(project, args.env)
    out.info(f"verifying environment '{env.name}' with {model} (one process inside the environment) ...")
    extra = ["--prompt-len", str(args.prompt_len), "--new-tokens", str(args.new_tokens), "--env-name", env.name,
             "--library", args.library]
    if args.dtypes:
        extra += ["--dtypes", args.dtypes]
    if args.cpu:
        extra.append("--cpu")
    for name in args.extension:
        extra += ["--extension", name]
    result = run_in_env(env, model, extra)
    doc = rep.document(result.report, env_name=env.name, wall_s=result.wall_s, driver=rep.host_driver(),
                       diagnoses=diagnoses(result.report, env.name))
    out.result(doc, rep.human(doc))
    return rep.exit_code(result.report)


DTYPES = ("float32", "bfloat16", "float16")


def check_dtypes(text: str, flag: str, *, one: bool = False) -> None:
    """``--dtypes float32,bfloat16`` (or bench's ``--dtype``) names only dtypes the checks know.

    >>> check_dtypes("float32,bfloat16", "--dtypes")
    >>> check_dtypes("float64", "--dtypes")
    Traceback (most recent call last):
    ...
    resolver.core.errors.UsageError: --dtypes 'float64': unknown dtype float64. Fix: use a comma list of float32, bfloat16, float16.
    """
    from resolver.core.errors import UsageError
    from resolver.core.names import printable

    if not text:
        return
    names = [d.strip() for d in text.split(",")] if not one else [text.strip()]
    unknown = [d for d in names if d not in DTYPES]
    if unknown or not names:
        raise UsageError(f"{flag} {printable(repr(text))}: unknown dtype {printable(', '.join(unknown) or text)}",
                         fix=("use one of " if one else "use a comma list of ") + ", ".join(DTYPES))
