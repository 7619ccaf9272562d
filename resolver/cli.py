"""Command line: ``python -m resolver <command>``; the bare form runs ``setup``.

Each command lives in ``resolver/commands/<name>.py`` with ``HELP``, ``add_arguments(parser)`` and
``run(args, out) -> int``. Those modules import only the standard library at import time; the
stage they drive is imported when the command runs, so ``probe`` and ``plan`` stay fast.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import time

from resolver import __version__
from resolver.core.errors import BadInput, ExitCode, InternalError, ResolverError, UsageError
from resolver.core.names import printable
from resolver.core.ui import Output

COMMANDS = ("setup", "probe", "plan", "lock", "install", "patch", "build", "channel", "verify", "doctor", "bench",
            "upgrade", "rollback", "add", "remove", "run", "shell")
# Commands whose finished work a second run keeps (step stamps, verified downloads, built packages): an
# interrupted one resumes. The others have nothing to resume: a second run simply does it all again.
RESUMING = ("setup", "lock", "install", "build", "upgrade", "add", "remove")


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, its width read without importing shutil (argparse makes a formatter for
    every argument it adds, and shutil with its compression modules is milliseconds of every start)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        if width is None:
            try:
                width = int(os.environ.get("COLUMNS", "")) or os.get_terminal_size(sys.__stdout__.fileno()).columns
            except (ValueError, OSError, AttributeError):
                width = 80
            width -= 2
        super().__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one sentence with the fix (exit 2), like every failure."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}", fix=f"see `{self.prog} --help`")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only`` set to a known command, just that command's module is imported
    (the others cost tens of milliseconds of start-up, which ``probe`` and ``plan`` must not pay)."""
    parser = _Parser(prog="resolver", description="Choose, lock, build and verify PyTorch + Mamba environments. "
                     "Without a command, runs `setup`.")
    parser.add_argument("--version", action="version", version=f"mamba-resolver {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in ((only,) if only in COMMANDS else COMMANDS):
        module = importlib.import_module(f"resolver.commands.{name}")
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        command.add_argument("--json", action="store_true", help="print one JSON document on stdout")
        command.add_argument("--quiet", "-q", action="store_true", help="print only the result and errors")
        module.add_arguments(command)
        command.set_defaults(_module=module)
    return parser


def _with_default_command(argv: list[str]) -> list[str]:
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        return ["setup", *argv]
    return argv


class Terminated(BaseException):
    """SIGTERM, raised where the resolver is, so every ``finally`` runs: temporary folders are removed,
    child process groups are stopped (resolver/tools/proc.py), nothing half-made is left looking ready."""


def _terminate(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    argv = _with_default_command(list(sys.argv[1:] if argv is None else argv))
    json_mode = "--json" in argv
    out = Output(json_mode=json_mode)
    import signal

    try:
        signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread (a test, an embedding program): SIGTERM stays as it is
        pass
    try:
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        out = Output(json_mode=args.json, quiet=args.quiet)
        _check_env_flag(args)
        return int(args._module.run(args, out) or 0)
    except ResolverError as exc:
        return _report(exc, out)
    except BrokenPipeError:
        return _closed_pipe()
    except ModuleNotFoundError as exc:
        if _dependency_of(exc) is None:
            return _report(_internal(), out)
        return _report(_lacking(_dependency_of(exc), argv), out)
    except OSError as exc:
        if exc.errno not in _WRITE_ERRNOS:
            return _report(_internal(), out)
        where = exc.filename or "the project folder"
        return _report(BadInput(f"cannot write {where}: {exc.strerror}",
                                     fix="run from a writable project folder (or set RESOLVER_PROJECT to one) "
                                         "and check free disk space"), out)
    except KeyboardInterrupt:
        print(f"interrupted; {_again(argv)}.", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except Terminated:
        print(f"terminated; {_again(argv)}.", file=sys.stderr)
        return int(ExitCode.TERMINATED)
    except SystemExit as exc:  # argparse --help / --version
        return int(exc.code or 0) if isinstance(exc.code, int) else 0
    except Exception:  # noqa: BLE001 - the last line of defence: one sentence, the traceback to a file
        return _report(_internal(), out)


def _check_env_flag(args: argparse.Namespace) -> None:
    """``--env/-e NAME``, wherever a command takes it, names an environment of the project (one sentence,
    exit 2, naming the ones pixi.toml has, before the command starts)."""
    if getattr(args, "env", None) is None:
        return
    from resolver.project.paths import ProjectPaths
    from resolver.project.pixi_toml import check_environment_name

    check_environment_name(ProjectPaths.discover(), args.env)


# The resolver's own dependencies (pyproject.toml's), by the module each is imported as. An environment the
# resolver installs holds the user's packages, not these: its python cannot run the resolver.
DEPENDENCIES = {"rattler": "py-rattler", "rattler_build": "py-rattler-build", "tomlkit": "tomlkit",
                "packaging": "packaging", "tomli": "tomli", "uv": "uv", "yaml": "pyyaml"}
LAUNCHER = "mamba-resolver"  # the console script, and the launcher in every environment's bin/


def _dependency_of(exc: ModuleNotFoundError) -> str | None:
    """The resolver dependency whose absence ``exc`` reports (None: some other module is missing)."""
    top = (exc.name or "").split(".", 1)[0]
    return DEPENDENCIES.get(top) and top


def _lacking(module: str, argv: list[str]) -> BadInput:
    """One sentence for a Python that lacks one of the resolver's dependencies, with the command that works:
    the launcher on PATH (every environment the resolver installs has one), else the project's own
    virtual environment, else installing the resolver."""
    import shlex
    import shutil

    args = shlex.join(argv)
    what = (f"this Python ({sys.executable}) cannot run the resolver: it lacks {DEPENDENCIES[module]} (module "
            f"{module}), one of the resolver's own dependencies (an environment the resolver installs holds your "
            "project's packages, not the resolver's)")
    if shutil.which(LAUNCHER):
        return BadInput(what, fix=f"run `{LAUNCHER} {args}` instead: it runs the resolver with the Python that "
                                  "has them")
    folder = os.path.abspath(os.getcwd())
    while True:  # the resolver's own environment, as the README makes it: .venv at or above here
        venv = os.path.join(folder, ".venv", "bin", "python")
        if os.access(venv, os.X_OK) and os.path.realpath(os.path.join(folder, ".venv")) != os.path.realpath(sys.prefix):
            return BadInput(what, fix=f"run `{venv} -m resolver {args}` instead (the resolver's own environment)")
        if os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
    return BadInput(what, fix=f"install the resolver with its dependencies (`python3 -m venv .venv && .venv/bin/pip "
                              f"install -e .` in its checkout), then run `.venv/bin/{LAUNCHER} {args}`")


def _again(argv: list[str]) -> str:
    """What a second run of an interrupted command does."""
    if argv and argv[0] in RESUMING:
        return "run the same command again to resume"
    return "nothing was left half-done: run the same command again to start it over"


_WRITE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.ENOTDIR, errno.EDQUOT}


def _internal() -> InternalError:
    log = _save_traceback()
    return InternalError(f"internal error in the resolver ({sys.exc_info()[1]!r:.200})",
                         fix=f"please report it with the log {log}")


def _report(exc: ResolverError, out: Output) -> int:
    if out.json_mode:
        out.result(exc.to_json())
    print(f"error: {printable(str(exc))}", file=sys.stderr)  # one line, whatever the input quoted
    return int(exc.code)


def _save_traceback() -> str:
    import tempfile  # the error path only: kept out of every command's start-up
    import traceback

    from resolver.core.errors import BadInput
    from resolver.core.fs import new_log

    text = traceback.format_exc()
    for folder, under in (*_project_logs(), (tempfile.gettempdir(), None)):
        try:  # a new file (never one a link at the name points to), reached from the project without a link
            return str(new_log(os.path.join(folder, f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"), text,
                               under=under))
        except (OSError, BadInput):
            continue
    return "(no writable folder for the log)"


def _project_logs() -> tuple[tuple[str, str], ...]:
    """The project's own log folder (``<project>/.resolver/logs``, the project found as every command finds
    it: RESOLVER_PROJECT, else the nearest pixi.toml at or above the current folder), with its root; none
    outside a project: a crash there is no reason to make a ``.resolver`` in whatever folder it ran in."""
    try:
        from resolver.project.paths import ProjectPaths

        project = ProjectPaths.discover()
        if project.manifest.is_file():
            return ((str(project.logs), str(project.root)),)
    except Exception:  # noqa: BLE001 - the error path of the error path: the temporary folder then
        pass
    return ()


def _closed_pipe() -> int:
    """The reader of our output went away (``resolver probe --json | head``): stop quietly, as cat does."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return int(ExitCode.CLOSED_PIPE)


def entry() -> None:
    """Console-script entry. py-rattler 0.28 can abort at interpreter exit after a solve, index or
    install (a tokio thread touching Python during finalisation, see docs/architecture.md): once
    it has been imported we flush and leave through ``os._exit`` so the exit code is always ours."""
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _closed_pipe()
    if "rattler" in sys.modules or "rattler_build" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
