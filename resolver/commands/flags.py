"""The flags several commands share, defined once so that each means the same wherever it appears
(the same metavar, type and words; tests/test_cli_words.py checks every command against this).

Imports only the standard library at import time, like every command module.
"""

from __future__ import annotations

# The sources a lock resolves from and an install takes files from. The lock always records the
# canonical locations (the manifest's channel, PyPI, the PyTorch index); these only say where to look.
CHANNEL_HELP = ("a mirror of the project's conda channel: a folder or URL (repeatable, in the channels' order); "
                "pixi.lock keeps recording the canonical channel")
TORCH_INDEX_HELP = "the PyTorch wheel index to resolve from; {variant} becomes cu126, cpu …"
EXTRA_INDEX_HELP = "another PyPI-style index to resolve from (repeatable)"
FIND_LINKS_HELP = "a local wheelhouse: a folder or URL of wheels (repeatable)"


def add_source_arguments(parser, *, indexes: bool = True) -> None:
    """``--channel``, ``--find-links`` and (for commands that resolve) ``--torch-index``,
    ``--extra-index-url``: the same as ``[tool.resolver]`` in pixi.toml and the RESOLVER_* variables."""
    parser.add_argument("--channel", action="append", default=[], metavar="URL_OR_PATH", help=CHANNEL_HELP)
    if indexes:
        parser.add_argument("--torch-index", metavar="URL", help=TORCH_INDEX_HELP)
        parser.add_argument("--extra-index-url", action="append", default=[], metavar="URL", help=EXTRA_INDEX_HELP)
    parser.add_argument("--find-links", action="append", default=[], metavar="DIR_OR_URL", help=FIND_LINKS_HELP)


def source_flags(args) -> dict:
    """The parsed source flags as ``resolver.project.sources.Sources.load(flags=...)`` takes them."""
    return {"conda-channels": args.channel, "torch-index": getattr(args, "torch_index", None),
            "extra-index-urls": getattr(args, "extra_index_url", []), "find-links": args.find_links}


def add_env_argument(parser, what: str, default: str = "the only one installed") -> None:
    """``--env NAME`` / ``-e NAME`` (as pixi spells it): an environment under .resolver/envs."""
    from resolver.core.names import env_name_arg  # light: the name rule only

    parser.add_argument("--env", "-e", type=env_name_arg, metavar="NAME",
                        help=f"the environment {what} (default: {default})")


TARGET_HELP = "auto (default), cpu, cudaX.Y (e.g. cuda12.6) or rocmX.Y[.Z] (e.g. rocm6.2)"


def add_target_argument(parser, *, repeatable: bool = False, help: str = TARGET_HELP, default: str | None = "auto") -> None:
    if repeatable:
        parser.add_argument("--target", "-t", action="append", default=[], metavar="TARGET", help=help)
    else:
        parser.add_argument("--target", default=default, metavar="TARGET", help=help)


def add_sysroot_argument(parser, help: str) -> None:
    parser.add_argument("--sysroot", metavar="DIR", help=help)


def add_python_argument(parser, help: str) -> None:
    """``--python X.Y``: parsed here, once, into a release (a bad one is the same usage sentence, exit 2,
    for every command)."""
    parser.add_argument("--python", metavar="X.Y", type=_python_release, default=None, help=help)


def _python_release(text: str):
    """:func:`resolver.core.versions.python_release`, imported only when ``--python`` is given (the version
    types are milliseconds of every start that `lock` without it need not pay)."""
    from resolver.core.versions import python_release

    return python_release(text)
