"""Following a fix the resolver prints, as a user would: a fix must work when followed.

:func:`printed_fixes` finds every ``Fix: ...`` in a command's output; :func:`follow` applies one to a
project: a TOML entry it names (``add "KEY" = "VALUE" under [TABLE] in pixi.toml``) is written into
pixi.toml (tomlkit, the way a person's editor keeps the rest of the file), and the commands it names in
backticks (``python -m resolver lock``), or ``lock again``, are returned as argv lists for the test to run
through support/cli.py. A fix the helper cannot read is a failure: a printed fix is for following.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

_FIX = re.compile(r"Fix: (.+?)(?:\.\s*$|\.(?=\s)|$)", re.MULTILINE)
_TOML = re.compile(r'add "(?P<key>[^"]+)" = "(?P<value>[^"]+)" under \[(?P<table>[A-Za-z0-9_.-]+)\] in pixi\.toml')
_COMMAND = re.compile(r"`(python -m resolver [^`]+)`")


def printed_fixes(output: str) -> list[str]:
    """Every fix the output prints (``... Fix: <fix>``), in order."""
    return [m.group(1).strip() for m in _FIX.finditer(output)]


def follow(fix: str, root: Path) -> list[list[str]]:
    """Apply ``fix`` to the project at ``root``; the resolver commands it says to run next (argv after
    ``python -m resolver``)."""
    import tomlkit

    applied = False
    for match in _TOML.finditer(fix):
        manifest = root / "pixi.toml"
        doc = tomlkit.parse(manifest.read_text())
        table = doc
        for part in match.group("table").split("."):
            if part not in table:
                table[part] = tomlkit.table()
            table = table[part]
        table[match.group("key")] = match.group("value")
        manifest.write_text(tomlkit.dumps(doc))
        applied = True
    commands = [shlex.split(text)[3:] for text in _COMMAND.findall(fix)]
    if not commands and re.search(r"\block again\b", fix):
        commands = [["lock"]]
    assert applied or commands, f"a printed fix this helper cannot follow: {fix!r}"
    return commands
