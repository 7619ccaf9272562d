"""`python -m resolver install [--env NAME]`: build an environment from pixi.lock alone."""

from __future__ import annotations

HELP = "install an environment from pixi.lock only (sha256-verified; conda prefix or venv)"


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_env_argument, add_source_arguments

    add_env_argument(parser, "to install", default="the only one locked")
    parser.add_argument("--force", action="store_true", help="rebuild even when the installed one matches the lock")
    add_source_arguments(parser, indexes=False)
    parser.add_argument("--bytecode", choices=("auto", "all", "none"), default="auto",
                        help="compile every module now (all), or leave it to the first import (none); auto: now "
                             "only where Python would not keep it (PYTHONDONTWRITEBYTECODE set)")
    parser.add_argument("--exact", action="store_true",
                        help="make the environment exactly pixi.lock: uninstall packages installed by hand (each is "
                             "named) and restore locked ones changed by hand; without it they are kept and named")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not reuse the cached build of the same lock content (uv installs the wheels again)")


def run(args, out) -> int:
    from resolver import install
    from resolver.project.paths import ProjectPaths, project_lock

    project = ProjectPaths.discover()

    if not project.lockfile.is_file():
        from resolver.core.errors import BadInput
        from resolver.core.fs import check_regular_file

        if project.lockfile.exists():  # a folder or FIFO is not "missing"
            check_regular_file(project.lockfile, limit=1, what="the lock file",
                               fix="put the project's pixi.lock there (from version control, or `python -m resolver lock`)")
        raise BadInput(f"{project.lockfile} does not exist", fix="run `python -m resolver lock` first")
    with project_lock(project.stamps, on_wait=out.info):  # two installs never build the same folder
        if args.env is None:
            from resolver.project.pixi_toml import default_environment

            args.env = default_environment(project)  # pixi.toml's default environment, when it names one
        summary = install.install_environment(project, args.env, force=args.force, use_cache=not args.no_cache,
                                               info=out.info, progress=out.progress, bytecode=args.bytecode, exact=args.exact,
                                               source_flags={"conda-channels": args.channel,
                                                             "find-links": args.find_links})
    verb = "already matches pixi.lock" if summary.status == "up-to-date" else \
        f"installed in {summary.seconds:.1f}s" + (" from the cached build" if summary.built_from == "cache" else
                                                  " (only what changed)" if summary.built_from == "difference" else "")
    kind = "conda prefix" if summary.kind == "conda" else f"virtual environment (Python {summary.python})"
    changes = "".join(f"{line}\n" for line in summary.change_lines())
    out.result(summary.to_json(),
               changes + f"{summary.environment}: {kind} at {summary.path}, {verb} "
               f"({summary.conda_packages} conda + {summary.pypi_packages} PyPI packages)\n"
               f"run inside it: {summary.path / 'bin' / 'python'}\n"
               + (f"enter it: {summary.enter['pixi']}  (with pixi)  or, without pixi:\n  {summary.enter['shell']}"
                  if summary.enter["pixi"] else f"enter it: {summary.enter['shell']}"))
    return 0
