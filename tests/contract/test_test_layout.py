"""The tests' own layout: one way to run the CLI (tests/support/cli.py), test modules that share
through tests/support/ only, never by importing one another, and the checkout's files that setup writes
(pixi.toml, pixi.lock) read as shipped (``support.shipped``), never from the working copy."""

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
    """``path:function`` for every function, helper or test, outside support/cli.py that writes the
    resolver CLI's command line itself (the innermost function that holds it)."""
    found = []
    for path in modules(root):
        if path.relative_to(root) == RUNNER_HOME:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _spawns_the_cli(node) and not any(
                    isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) and _spawns_the_cli(inner)
                    for inner in ast.walk(node) if inner is not node):
                found.append(f"{path.relative_to(root)}:{node.name}")
    return sorted(found)


# The files of this checkout that the README's first command (setup) writes: a test that reads them from
# the working copy asserts about what a user made of them. Only the checkout guard (that no test changes
# them) and the one reader of the shipped text may name them.
WRITTEN_BY_SETUP = ("pixi.toml", "pixi.lock")
NAMES_OF_THE_CHECKOUT = ("REPO", "ROOT", "CHECKOUT")
MAY_NAME_THEM = {"conftest.py:_checkout_state", "support/__init__.py:shipped"}


def _function_at(tree: ast.AST) -> dict[ast.AST, str]:
    owner: dict[ast.AST, str] = {}
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                owner[node] = function.name  # the innermost function wins: ast.walk reaches it later
    return owner


def working_copy_reads(root: Path) -> list[str]:
    """``path:line`` for every ``REPO / "pixi.toml"`` (or pixi.lock; REPO, ROOT or CHECKOUT, joined with
    ``/`` or ``joinpath``) outside :data:`MAY_NAME_THEM`."""
    found = []
    for path in modules(root):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        owner = _function_at(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                base, parts = node.left, [node.right]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "joinpath":
                base, parts = node.func.value, list(node.args)
            else:
                continue
            if not (isinstance(base, ast.Name) and base.id in NAMES_OF_THE_CHECKOUT):
                continue
            if any(isinstance(p, ast.Constant) and p.value in WRITTEN_BY_SETUP for p in parts[:1]) and \
                    f"{path.relative_to(root).as_posix()}:{owner.get(node, '')}" not in MAY_NAME_THEM:
                found.append((path.relative_to(root).as_posix(), node.lineno))
    return [f"{name}:{line}" for name, line in sorted(found)]


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


def test_no_test_reads_the_working_copy_of_what_setup_writes():
    assert working_copy_reads(TESTS) == [], "read the shipped file with support.shipped_manifest() / shipped(NAME)"


def test_the_working_copy_check_catches_a_planted_read(tmp_path):
    (tmp_path / "unit").mkdir()
    (tmp_path / "unit" / "test_c.py").write_text(
        "import shutil\nfrom support import REPO\n\n"
        "def test_a(tmp_path):\n    text = (REPO / 'pixi.toml').read_text()\n\n"
        "def test_b(tmp_path):\n    shutil.copy(REPO / 'pixi.lock', tmp_path)\n\n"
        "def helper():\n    return REPO.joinpath('pixi.toml')\n\n"
        "def test_fine(tmp_path):\n    return (REPO / 'README.md', tmp_path / 'pixi.toml')\n")
    (tmp_path / "conftest.py").write_text("def _checkout_state():\n    return REPO / 'pixi.toml'\n")
    assert working_copy_reads(tmp_path) == ["unit/test_c.py:5", "unit/test_c.py:8", "unit/test_c.py:11"]


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
        "def test_reads(argv):\n    assert argv[:3] == ['python', '-m', 'resolver']\n\n"
        "def fix_message():\n    return 'python -m resolver lock'\n")
    (tmp_path / "unit" / "test_b.py").write_text(
        "from test_a import fix_message\nimport unit.test_a\nfrom conftest import x\nfrom support import cli\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tool.py").write_text(
        'import subprocess\n\ndef go():\n    subprocess.run(["-m", "resolver"])\n\nfrom test_a import fix_message\n')
    assert own_runners(tmp_path) == ["unit/test_a.py:_cli", "unit/test_a.py:go", "unit/test_a.py:test_inline"]
    assert imports_of_test_modules(tmp_path) == ["unit/test_b.py: test_a", "unit/test_b.py: unit.test_a",
                                                 "unit/test_b.py: conftest"]
