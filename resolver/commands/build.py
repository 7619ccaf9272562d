"""`python -m resolver build`: compile causal-conv1d and mamba-ssm for the GPUs present, into the
project's channel, and install them into the environment (cached per variant).

`build --matrix`: the kernel variants a fleet's lock needs, each once, as a GitHub Actions
``strategy.matrix.include`` list (`--format github|gitlab|slurm`: as the file that engine reads, a
workflow, a child pipeline, an array job script); `build --variant KEY`: build one of them (installs the class's
environment from pixi.lock, compiles into .resolver/channel; no GPU needed). See docs/fleet.md."""

from __future__ import annotations

HELP = "build the Mamba kernels (causal-conv1d, mamba-ssm) for this environment's torch and GPUs"


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_env_argument

    parser.add_argument("--package", default="all", metavar="NAME",
                        help="which kernel package to build: causal-conv1d, mamba-ssm (the knowledge base's list) "
                             "or all (default, in dependency order)")
    parser.add_argument("--arch", default=None,
                        help="architectures, e.g. 9.0 or 8.6,9.0 or gfx90a; 'all' = upstream's list "
                             "(default: the GPUs present, from the plan)")
    add_env_argument(parser, "to build for")
    parser.add_argument("--jobs", type=int, default=None,
                        help="at most this many compilers at once (default: fitted to cores and free memory)")
    parser.add_argument("--no-prebuilt", action="store_true", help="always compile, even when an upstream wheel fits")
    parser.add_argument("--no-install", action="store_true", help="only build into the channel")
    parser.add_argument("--matrix", action="store_true",
                        help="print the fleet's kernel variants (one per package per class) as a CI matrix")
    parser.add_argument("--format", choices=("github", "gitlab", "slurm"), default=None,
                        help="with --matrix: write it as the file that engine reads (a GitHub Actions workflow, a "
                             "GitLab CI child pipeline, a Slurm array job script)")
    parser.add_argument("--variant", metavar="KEY",
                        help="build one variant of the fleet's matrix (PACKAGE@ENVIRONMENT) into .resolver/channel")
    parser.add_argument("--recipe", action="append", default=[], metavar="DIR",
                        help="build this recipe folder (recipe.yaml + resolver.toml) instead of --package; repeatable")


def run(args, out) -> int:
    from pathlib import Path

    from resolver.kernels.driver import BuildOptions
    from resolver.kernels.packages import known_packages
    from resolver.project.paths import ProjectPaths
    from resolver.workflows.chain import build_kernels

    if args.arch is not None:
        from resolver.kernels.archs import check_arch_syntax

        check_arch_syntax(args.arch)
    if args.jobs is not None and args.jobs < 1:
        from resolver.core.errors import BadInput

        raise BadInput(f"--jobs {args.jobs} is not a positive number", fix="use --jobs 1 or more, or leave it out")
    if args.package != "all" and args.package not in known_packages():
        from resolver.core.errors import UsageError

        raise UsageError(f"--package {args.package!r} is not a kernel package",
                         fix=f"use one of {', '.join(known_packages())} or all")
    if args.format is not None and not args.matrix:
        from resolver.core.errors import UsageError

        raise UsageError("--format applies to --matrix", fix="write it as `build --matrix --format github|gitlab|slurm`")
    if args.matrix:
        from resolver.fleet.ci import run_fleet

        return run_fleet(args, out)
    if args.variant:
        from resolver.workflows.fleet_variant import build_variant

        return build_variant(args, out)
    packages = None if args.package == "all" else (args.package,)
    options = BuildOptions(packages=packages, arch=args.arch, env_name=args.env, jobs=args.jobs,
                           prebuilt="never" if args.no_prebuilt else "auto", install=not args.no_install,
                           recipe_dirs=tuple(Path(d).resolve() for d in args.recipe))
    summary = build_kernels(ProjectPaths.discover(), options, out)
    data = summary.to_json()
    lines = [f"{p.name} {p.version} [{p.build_string}]: {p.status} ({p.seconds:.1f}s)"
             + (f", imports ok: {', '.join(p.imports_ok)}" if p.imports_ok else "") for p in summary.packages]
    lines.append(f"channel: {summary.channel}; environment: {summary.environment}; total {summary.seconds:.1f}s")
    out.result(data, "\n".join(lines))
    return 0
