"""`python -m resolver setup`: not built yet."""

from __future__ import annotations

from resolver.errors import ExitCode, ResolverError

HELP = "setup (not built yet)"


def add_arguments(parser) -> None:
    pass


def run(args, out) -> int:
    raise ResolverError("the 'setup' stage is not built yet", code=ExitCode.INTERNAL)
