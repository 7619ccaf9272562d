"""`python -m resolver add NAME... [--pypi] [--feature F | -e ENV] [--exact] [--no-install]`: write the
packages into pixi.toml (pixi's spelling), lock what changed, install the difference."""

from __future__ import annotations

HELP = "add packages to pixi.toml (as `pixi add`), lock what changed and install the difference"


def add_arguments(parser, action: str = "add") -> None:
    from resolver.commands.flags import add_env_argument, add_source_arguments

    parser.add_argument("names", nargs="+", metavar="NAME",
                        help="a package, optionally with a version: tabulate, 'tabulate>=0.9', 'numpy 1.26.*'"
                        if action == "add" else "a package pixi.toml lists")
    parser.add_argument("--pypi", action="store_true",
                        help=f"{action} a PyPI dependency ([pypi-dependencies]) rather than a conda one")
    parser.add_argument("--feature", "-f", metavar="FEATURE",
                        help="the feature of pixi.toml to change (default: the environment's own)")
    add_env_argument(parser, "whose feature changes", default="the project's default, else the only one")
    parser.add_argument("--exact", action="store_true",
                        help="installing, also uninstall the packages installed by hand (each is named); without "
                             "it they are kept and named")
    parser.add_argument("--no-install", action="store_true",
                        help="write pixi.toml and pixi.lock only; `python -m resolver install` installs later")
    add_source_arguments(parser)


def run(args, out, action: str = "add") -> int:
    from resolver.commands.flags import source_flags
    from resolver.project.paths import ProjectPaths
    from resolver.workflows.dependencies import change

    done = change(ProjectPaths.discover(), action, args.names, pypi=args.pypi, feature=args.feature,
                  environment=args.env, exact=args.exact, install=not args.no_install, info=out.info,
                  progress=out.progress, source_flags=source_flags(args))
    out.result(done.to_json(), text(done))
    return 0


def text(done) -> str:
    """What add/remove say: the line written, what was locked, what each install changed."""
    names = ", ".join(p.name for p in done.packages)
    verb = "added" if done.action == "add" else "removed"
    lines = [f"{verb} {names} {'to' if done.action == 'add' else 'from'} {done.table} of pixi.toml"]
    relocked = sorted({e.name for e in done.lock.locked})
    lines.append(f"locked {', '.join(relocked)} again" if relocked else "pixi.lock already held it")
    if done.lock.carried_over:
        lines.append(f"kept unchanged in pixi.lock: {', '.join(done.lock.carried_over)}")
    for summary in done.installs:
        lines += [f"  {line}" for line in summary.change_lines()]
        lines.append(f"{summary.environment}: " + ("already matched pixi.lock" if summary.status == "up-to-date"
                                                    else f"installed in {summary.seconds:.1f}s"
                                                    + (" (only what changed)" if summary.built_from == "difference"
                                                       else " (built again from pixi.lock)")))
    for name in done.not_installed:
        lines.append(f"{name} is not installed here: `python -m resolver install --env {name}` installs it")
    lines.append(f"done in {done.seconds:.1f}s")
    return "\n".join(lines)
