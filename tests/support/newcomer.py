"""What a newcomer reads, checked: every command the resolver suggests (after "Fix:", "next:", in
backticks) is one its own parser accepts; no word is doubled ("cpu cpu", "rocm rocm6.0"); no
temporary folder's name shows (".cpu.tmp-8756")."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

# a suggested command ends where the prose around it does: a backtick, a quote, a parenthesis, a
# semicolon, a shell redirection or comment, a bracketed usage synopsis
COMMAND = re.compile(r"python -m resolver(?: [^`'\"\n;()#>|\[]*)?")
DOUBLED = re.compile(r"\b([A-Za-z]{2,}) \1(?=[\d.]*\b)", re.IGNORECASE)  # in prose: a table's columns may repeat
TEMPORARY = re.compile(r"\.[\w-]+\.(?:tmp|old)-\d+|\.part-\d+|resolver-uv-\w{6,}")


def suggested_commands(text: str) -> list[str]:
    """Every ``python -m resolver ...`` command in ``text``, one per ``&&`` part (a quoted shell variable,
    ``"$VARIANT"`` in a CI file, stands for its value)."""
    found = []
    for match in COMMAND.finditer(re.sub(r'"\$\{?(\w+)\}?"', r"\1", text)):
        for part in match.group(0).split("&&"):
            part = part.strip().rstrip(".,:")
            found.append(part if part.startswith("python -m resolver") else f"python -m resolver {part}")
    return found


def refusal(command: str) -> str | None:
    """Why the resolver's parser refuses ``command`` (None: it accepts it)."""
    from resolver.cli import _with_default_command, build_parser
    from resolver.core.errors import ResolverError

    argv = shlex.split(command)[3:]
    try:
        build_parser().parse_args(_with_default_command(argv))
    except ResolverError as exc:
        return str(exc)
    except SystemExit:  # --help
        return None
    return None


def refused_suggestions(text: str) -> list[str]:
    return [f"{command}: {why}" for command in suggested_commands(text) if (why := refusal(command))]


def doubled_words(text: str) -> list[str]:
    return [m.group(0) for m in DOUBLED.finditer(text)]


def temporary_names(text: str) -> list[str]:
    return TEMPORARY.findall(text)


def _render(node: ast.expr) -> str:
    """A string expression as the text it prints, every run-time value standing in as ``x``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_render(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _render(node.value)
    if isinstance(node, ast.IfExp):
        return _render(node.body)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _render(node.left) + _render(node.right)
    return RUN_TIME


RUN_TIME = "x"  # what a value known only at run time reads as in :func:`commands_in_source`


def commands_in_source(folder: Path) -> list[tuple[str, int, str]]:
    """(file, line, command) of every command the code under ``folder`` writes into a message, each
    value known only at run time read as ``x`` (a choice among fixed values is then left to the tests
    that print it). Templates (``{env}``, rendered elsewhere) and usage synopses are left to their own
    tests."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parts = {id(child) for node in ast.walk(tree) if isinstance(node, (ast.JoinedStr, ast.BinOp))
                 for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if id(node) in parts or not isinstance(node, (ast.Constant, ast.JoinedStr, ast.BinOp)):
                continue
            text = _render(node) if not isinstance(node, ast.Constant) or isinstance(node.value, str) else ""
            for command in suggested_commands(text):
                if "{" not in command and "<" not in command:
                    found.append((str(path), node.lineno, command))
    return found
