"""`python -m resolver plan`: not built yet."""

from __future__ import annotations

from resolver.errors import ExitCode, ResolverError

HELP = "plan (not built yet)"


def add_arguments(parser) -> None:
    pass


def run(args, out) -> int:
    raise ResolverError("the 'plan' stage is not built yet", code=ExitCode.INTERNAL)
