"""The one way a test runs the resolver CLI: as a child process (``python -m resolver``) or, where the
interpreter's start would dominate, in this process through ``resolver.cli.main``.

A child inherits the session's hermetic environment (its own home and caches, no network beyond loopback,
the PyPI double: tests/support/hermetic.py, set by conftest.py), never a developer's own project or
machine double, and reads no terminal: its stdin is empty unless a test gives one. Its signals are at their
defaults (tests/support/processes.py), as a shell's foreground command has them, even when the suite runs
as a background job that ignores SIGINT.
"""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
from collections.abc import Mapping, Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import IO

from support.processes import default_signals

# Variables of the shell that started the tests which would point a child at another project or machine.
NOT_INHERITED = ("RESOLVER_PROJECT", "RESOLVER_ENV_PROJECT", "RESOLVER_SYSROOT")


def argv(*args: str, python: str | Path | None = None) -> list[str]:
    """The command line of the CLI with ``args``, run by ``python`` (default: the suite's own)."""
    return [str(python or sys.executable), "-m", "resolver", *args]


def environ(project: Path | str | None = None, env: Mapping[str, str | None] | None = None,
            environment: Mapping[str, str] | None = None) -> dict[str, str]:
    """A child's environment: ``environment`` as given (a test that made its own from the session's), else
    this process's; then ``project`` as RESOLVER_PROJECT and ``env`` on top (None removes a variable)."""
    if environment is not None:
        out = dict(environment)
    else:
        out = {name: value for name, value in os.environ.items() if name not in NOT_INHERITED}
    if project is not None:
        out["RESOLVER_PROJECT"] = str(project)
    for name, value in (env or {}).items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def run(*args: str, project: Path | str | None = None, env: Mapping[str, str | None] | None = None,
        environment: Mapping[str, str] | None = None, stdin: str | bytes | int | IO | None = None,
        timeout: float = 600, cwd: Path | str | None = None, text: bool = True, prefix: Sequence[str] = (),
        memory_limit: int | None = None, python: str | Path | None = None) -> subprocess.CompletedProcess:
    """``python -m resolver ARGS`` run to its end, its output captured.

    ``project``: the project it works on (RESOLVER_PROJECT, and the working folder unless ``cwd`` says
    another); ``env``: variables set (None: removed) over the session's, or over ``environment``, a whole
    environment a test made itself; ``stdin``: the text or bytes it reads, or a file (default: nothing);
    ``text``: output as str (undecodable bytes replaced) or as bytes; ``prefix``: a command that runs it
    (unshare ...); ``memory_limit``: its address space in bytes; ``python``: the interpreter that runs it
    (default: the suite's own).
    """
    data = stdin if isinstance(stdin, (str, bytes)) else None
    if isinstance(data, str) and not text:
        data = data.encode()
    elif isinstance(data, bytes) and text:
        data = data.decode()

    def child_setup() -> None:
        default_signals()
        if memory_limit:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    return subprocess.run([*prefix, *argv(*args, python=python)], env=environ(project, env, environment),
                          cwd=cwd if cwd is not None else project, input=data,
                          stdin=None if data is not None else (subprocess.DEVNULL if stdin is None else stdin),
                          capture_output=True, text=text, errors="replace" if text else None, timeout=timeout,
                          preexec_fn=child_setup)


def start(*args: str, project: Path | str | None = None, env: Mapping[str, str | None] | None = None,
          environment: Mapping[str, str] | None = None, cwd: Path | str | None = None,
          **popen: object) -> subprocess.Popen:
    """``python -m resolver ARGS`` started and left running (a test that kills it, or runs two at once),
    with :func:`run`'s ``project``, ``env``, ``environment`` and ``cwd``; ``popen``: Popen's own
    arguments (stdout, stderr, text, start_new_session ...)."""
    popen.setdefault("stdin", subprocess.DEVNULL)
    popen.setdefault("preexec_fn", default_signals)
    return subprocess.Popen(argv(*args), env=environ(project, env, environment),
                            cwd=cwd if cwd is not None else project, **popen)


def in_process(*args: str) -> tuple[int, str, str]:
    """The CLI in this process (no interpreter start: fast); (exit code, stdout, stderr)."""
    from resolver.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()
