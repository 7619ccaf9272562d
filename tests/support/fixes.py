"""Follow a fix the resolver printed, as a user would: run each ``python -m resolver ...`` command it names, in
order, through the one CLI runner (tests/support/cli.py). A fix that names no resolver command cannot be
followed by a test, and says so.

>>> commands_of("python -m resolver install --env cpu --force")
[['install', '--env', 'cpu', '--force']]
>>> commands_of("run `python -m resolver lock --target auto && python -m resolver install`, then retry")
[['lock', '--target', 'auto'], ['install']]
>>> commands_of("edit pixi.toml")
[]
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path

from support import cli

_RESOLVER = ["python", "-m", "resolver"]


def commands_of(fix: str) -> list[list[str]]:
    """The resolver commands (their arguments after ``python -m resolver``) a printed fix says to run, in order:
    the whole fix, or each command in backticks, a ``&&`` chain split into its commands."""
    found = []
    for text in re.findall(r"`([^`]+)`", fix) or [fix]:
        for part in text.split("&&"):
            try:
                words = shlex.split(part.strip())
            except ValueError:
                continue
            if words[:3] == _RESOLVER:
                found.append(words[3:])
    return found


def follow(fix: str, project: Path, *, env: Mapping[str, str | None] | None = None,
           timeout: float = 1800) -> list[subprocess.CompletedProcess]:
    """Run every resolver command ``fix`` names in ``project``; each must succeed."""
    commands = commands_of(fix)
    assert commands, f"the fix names no `python -m resolver` command a user could run: {fix!r}"
    done = []
    for args in commands:
        ran = cli.run(*args, project=project, env=env, timeout=timeout)
        assert ran.returncode == 0, f"following the fix {fix!r}: {' '.join(args)} exited {ran.returncode}: " \
                                    f"{ran.stderr[-2000:]}"
        done.append(ran)
    return done
