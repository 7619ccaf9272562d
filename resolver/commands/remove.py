"""`python -m resolver remove NAME... [--pypi] [--feature F | -e ENV] [--exact] [--no-install]`: take the
packages out of pixi.toml (pixi's spelling), lock what changed, uninstall what nothing needs any more."""

from __future__ import annotations

HELP = "remove packages from pixi.toml (as `pixi remove`), lock what changed and uninstall the difference"


def add_arguments(parser) -> None:
    from resolver.commands.add import add_arguments as shared

    shared(parser, "remove")


def run(args, out) -> int:
    from resolver.commands.add import run as shared

    return shared(args, out, "remove")
