"""The tests' own layout: one way to run the CLI (tests/support/cli.py), and test modules that share
through tests/support/ only, never by importing one another."""

from __future__ import annotations

import ast
from pathlib import Path

from support import TESTS

RUNNER_HOME = Path("support") / "cli.py"
LEFT_OUT = ("data",)  # captured inputs and build fixtures, not the suite's code


def modules(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.relative_to(root).parts[0] not in LEFT_OUT)


def _spawns_the_cli(function: ast.AST) -> bool:
    """Whether a command line ``[..., "-m", "resolver" (or "resolver.cli"), ...]`` is written in ``function``
    (one compared in an assertion, what a generated script is expected to run, starts nothing)."""
    compared = {id(n) for c in ast.walk(function) if isinstance(c, ast.Compare) for n in ast.walk(c)}
    for node in ast.walk(function):
        if isinstance(node, (ast.List, ast.Tuple)) and id(node) not in compared:
            words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            if any(a == "-m" and b in ("resolver", "resolver.cli") for a, b in zip(words, words[1:])):
                return True
    return False


def own_runners(root: Path) -> list[str]:
    """``path:function`` for every helper (any function but a test) outside support/cli.py that starts
    the resolver CLI itself."""
    found = []
    for path in modules(root):
        if path.relative_to(root) == RUNNER_HOME:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("test_") \
                    and _spawns_the_cli(node):
                found.append(f"{path.relative_to(root)}:{node.name}")
    return found


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        return [base] + [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
    return []


def imports_of_test_modules(root: Path) -> list[str]:
    """``path: module`` for every import of a test module (or conftest) by another module of the suite."""
    found = []
    for path in modules(root):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for name in _imported(node):
                if any(part.startswith("test_") or part == "conftest" for part in name.split(".")):
                    found.append(f"{path.relative_to(root)}: {name}")
                    break
    return found


def test_the_cli_is_run_only_through_support_cli():
    assert own_runners(TESTS) == [], "run the CLI with support.cli (run, start, in_process)"


def test_no_test_module_imports_another():
    assert imports_of_test_modules(TESTS) == [], "move what is shared into tests/support/"


def test_the_checks_catch_a_planted_runner_and_a_planted_import(tmp_path):
    (tmp_path / "support").mkdir()
    (tmp_path / "support" / "cli.py").write_text(
        'import sys\n\ndef run(*a):\n    return [sys.executable, "-m", "resolver", *a]\n')
    (tmp_path / "unit").mkdir()
    (tmp_path / "unit" / "test_a.py").write_text(
        "import subprocess, sys\n\n"
        "def _cli(*args):\n    return subprocess.run([sys.executable, '-m', 'resolver', *args])\n\n"
        "class Person:\n    def go(self, *args):\n        cmd = (sys.executable, '-m', 'resolver.cli')\n"
        "        return subprocess.run([*cmd, *args])\n\n"
        "def test_inline():\n    subprocess.run([sys.executable, '-m', 'resolver', 'probe'])\n\n"
        "def fix_message():\n    return 'python -m resolver lock'\n")
    (tmp_path / "unit" / "test_b.py").write_text(
        "from test_a import fix_message\nimport unit.test_a\nfrom conftest import x\nfrom support import cli\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tool.py").write_text(
        'import subprocess\n\ndef go():\n    subprocess.run(["-m", "resolver"])\n\nfrom test_a import fix_message\n')
    assert own_runners(tmp_path) == ["unit/test_a.py:_cli", "unit/test_a.py:go"]
    assert imports_of_test_modules(tmp_path) == ["unit/test_b.py: test_a", "unit/test_b.py: unit.test_a",
                                                 "unit/test_b.py: conftest"]
