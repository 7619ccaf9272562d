"""`python -m resolver bench`: not built yet."""

from __future__ import annotations

from resolver.errors import ExitCode, ResolverError

HELP = "bench (not built yet)"


def add_arguments(parser) -> None:
    pass


def run(args, out) -> int:
    raise ResolverError("the 'bench' stage is not built yet", code=ExitCode.INTERNAL)
