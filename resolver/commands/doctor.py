"""`python -m resolver doctor`: not built yet."""

from __future__ import annotations

from resolver.errors import ExitCode, ResolverError

HELP = "doctor (not built yet)"


def add_arguments(parser) -> None:
    pass


def run(args, out) -> int:
    raise ResolverError("the 'doctor' stage is not built yet", code=ExitCode.INTERNAL)
