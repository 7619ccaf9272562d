"""Following a fix the resolver prints, as a user would: a fix must work when followed.

:func:`printed_fixes` finds every ``Fix: ...`` in a command's output. :func:`apply` does what a fix asks of
the project's files (a TOML entry it names, ``add "KEY" = "VALUE" under [TABLE] in pixi.toml``, is written
into pixi.toml with tomlkit, the way a person's editor keeps the rest of the file) and returns the resolver
commands it says to run next; :func:`follow` applies a fix and runs those commands, in order, through the one
CLI runner (tests/support/cli.py). A fix the helper cannot read is a failure: a printed fix is for following.

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
_FIX = re.compile(r"Fix: (.+?)(?:\.\s*$|\.(?=\s)|$)", re.MULTILINE)
_TOML = re.compile(r'add "(?P<key>[^"]+)" = "(?P<value>[^"]+)" under \[(?P<table>[A-Za-z0-9_.-]+)\] in pixi\.toml')


def printed_fixes(output: str) -> list[str]:
    """Every fix the output prints (``... Fix: <fix>``), in order."""
    return [m.group(1).strip() for m in _FIX.finditer(output)]


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


def apply(fix: str, root: Path) -> list[list[str]]:
    """Do to the project at ``root`` what ``fix`` asks of its files; the resolver commands it says to run next
    (argv after ``python -m resolver``)."""
    import tomlkit

    from resolver.core.toml import parse_toml_document

    applied = False
    for match in _TOML.finditer(fix):
        manifest = root / "pixi.toml"
        doc = parse_toml_document(manifest.read_text(), what="pixi.toml", fix="correct it")
        table = doc
        for part in match.group("table").split("."):
            if part not in table:
                table[part] = tomlkit.table()
            table = table[part]
        table[match.group("key")] = match.group("value")
        manifest.write_text(tomlkit.dumps(doc))
        applied = True
    commands = commands_of(fix)
    if not commands and re.search(r"\block again\b", fix):
        commands = [["lock"]]
    assert applied or commands, f"a printed fix this helper cannot follow: {fix!r}"
    return commands


def follow(fix: str, project: Path, *, env: Mapping[str, str | None] | None = None,
           timeout: float = 1800) -> list[subprocess.CompletedProcess]:
    """Apply ``fix`` to ``project`` and run every resolver command it names there; each must succeed."""
    commands = apply(fix, project)
    assert commands, f"the fix names no `python -m resolver` command a user could run: {fix!r}"
    done = []
    for args in commands:
        ran = cli.run(*args, project=project, env=env, timeout=timeout)
        assert ran.returncode == 0, f"following the fix {fix!r}: {' '.join(args)} exited {ran.returncode}: " \
                                    f"{ran.stderr[-2000:]}"
        done.append(ran)
    return done
