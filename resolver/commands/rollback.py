"""`python -m resolver rollback [--json]`: make the environment that was the default before the last promotion
the default again (one write of pixi.toml; nothing is installed or removed). Run it again to undo it."""

from __future__ import annotations

HELP = "make the previous default environment the default again (after `upgrade --promote`)"


def add_arguments(parser) -> None:
    parser.add_argument("--no-wait", action="store_true", help="exit (code 6) instead of waiting for another run")


def run(args, out) -> int:
    from resolver.install.environment import Environment
    from resolver.project.paths import ProjectPaths
    from resolver.workflows.upgrade.journey import rollback

    project = ProjectPaths.discover()
    before, after = rollback(project, wait=not args.no_wait, on_wait=out.info)
    installed = Environment.kind_of(project.env(after.default)) is not None
    lines = [f"default environment: '{after.default}' (was '{before.default}'); setup, verify, bench, build, doctor "
             "and install use it without --env",
             f"'{before.default}' is kept (pixi.toml, pixi.lock and its folder): `python -m resolver rollback` again "
             "switches back"]
    if not installed:
        lines.append(f"'{after.default}' is not installed here: `python -m resolver setup` installs it from pixi.lock")
    out.result({"default": after.default, "previous": after.previous, "installed": installed,
                "record": after.to_json()}, "\n".join(lines))
    return 0
