"""`python -m resolver rollback [--to ENV] [--json]`: make the environment that was the default before the last
promotion the default again (one write of pixi.toml; nothing is installed or removed). Run again, it says there
is nothing to roll back: it never switches forward. ``--to ENV`` makes the environment named the default."""

from __future__ import annotations

HELP = "make the default environment before the last `upgrade --promote` the default again (--to ENV: that one)"


def add_arguments(parser) -> None:
    from resolver.core.names import env_name_arg

    parser.add_argument("--to", type=env_name_arg, metavar="ENV",
                        help="the environment to make the default (default: the one before the last promotion)")
    parser.add_argument("--no-wait", action="store_true", help="exit (code 6) instead of waiting for another run")


def run(args, out) -> int:
    from resolver.install.environment import Environment
    from resolver.project.paths import ProjectPaths
    from resolver.workflows.upgrade.journey import rollback

    project = ProjectPaths.discover()
    before, after = rollback(project, to=args.to, wait=not args.no_wait, on_wait=out.info)
    changed = after.default != before.default
    installed = after.default is not None and Environment.kind_of(project.env(after.default)) is not None
    if not changed:
        text = (f"nothing to roll back: '{after.default}' is the default environment"
                + ("" if args.to else " and no promotion since is left to undo") if after.default else
                "nothing to roll back: no upgrade was promoted in this project")
        lines = [text]
    else:
        why = "the one you named" if args.to else "the default before the last promotion"
        lines = [f"rolled back: the default environment is '{after.default}' ({why})"
                 + (f"; it was '{before.default}'" if before.default else "")
                 + ". setup, verify, bench, build, doctor and install use it without --env"]
        if before.default:
            lines.append(f"'{before.default}' is kept (pixi.toml, pixi.lock and its folder): "
                         f"`python -m resolver rollback --to {before.default}` makes it the default again")
        if not installed:
            lines.append(f"'{after.default}' is not installed here: `python -m resolver setup` installs it from "
                         "pixi.lock")
    out.result({"rolled_back": changed, "default": after.default, "previous": before.default if changed else None,
                "installed": installed, "record": after.to_json(), "message": lines[0]}, "\n".join(lines))
    return 0
