"""docs/architecture.md's rules that the tree can check by itself: no import cycle between stage
packages, one home per fact (hashing in fs.py, child processes in proc.py, exit codes in ExitCode,
cache and state paths in paths.py, download names in names.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "resolver"
STAGES = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())


def _sources() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(), str(path)) for path in sorted(PACKAGE.rglob("*.py"))
            if "__pycache__" not in path.parts}


def _imported(path: Path, tree: ast.Module) -> list[tuple[str, int]]:
    """Every module ``path`` imports, at the top or inside a function (a lazy import still ties two
    stages together), with the line."""
    out = []
    package = ".".join(("resolver", *path.relative_to(PACKAGE).parent.parts))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            out += [(base, node.lineno)] + [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return out


def stage_graph() -> dict[str, dict[str, list[str]]]:
    """stage -> stage it imports -> where (``file:line``)."""
    graph: dict[str, dict[str, list[str]]] = {stage: {} for stage in STAGES}
    for path, tree in _sources().items():
        parts = path.relative_to(PACKAGE).parts
        if len(parts) < 2:
            continue  # a top-level module (fs, paths, errors, ...): shared by every stage, no stage of its own
        for name, line in _imported(path, tree):
            target = name.split(".")
            if target[0] == "resolver" and len(target) > 1 and target[1] in STAGES and target[1] != parts[0]:
                graph[parts[0]].setdefault(target[1], []).append(f"{path.relative_to(PACKAGE.parent)}:{line}")
    return graph


def cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one stage (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_stage_packages():
    graph = stage_graph()
    found = cycles(graph)
    detail = [f"{a} -> {b}: {graph[a][b][:2]}" for component in found for a in component for b in component
              if b in graph[a]]
    assert not found, f"import cycles between stages {found}: {detail}"


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b": []}, "b": {"c": []}, "c": {"a": []}, "d": {"a": []}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b": []}, "b": {}}) == []


def _modules_using(pattern: str) -> list[str]:
    return sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                  if "__pycache__" not in path.parts and re.search(pattern, path.read_text(), re.MULTILINE))


def test_hashing_lives_in_fs():
    assert _modules_using(r"\bhashlib\b") == ["fs.py"]


def test_child_processes_go_through_proc():
    outside = [m for m in _modules_using(r"^\s*import subprocess|^\s*from subprocess") if not m.startswith("inenv/")]
    assert outside == ["proc.py"]


def test_exit_codes_are_exit_code_members():
    """No exit with a bare number, and no command (or the CLI) returns one: every code has a name in
    ExitCode (0 aside)."""
    exiting = re.compile(r"(?:_exit|sys\.exit|SystemExit)\(\s*[1-9][0-9]*\s*\)")
    returning = re.compile(r"^\s*return\s+[1-9][0-9]*\s*(?:#.*)?$", re.MULTILINE)
    offenders = [m for m in _modules_using(exiting.pattern) if not m.startswith("inenv/")]
    offenders += [str(p.relative_to(PACKAGE)) for p in [PACKAGE / "cli.py", *(PACKAGE / "commands").glob("*.py")]
                  if returning.search(p.read_text())]
    assert offenders == [], offenders


def test_cache_and_state_paths_are_built_in_paths():
    """Only paths.py joins names onto the project's cache or state folders or the user's cache."""
    pattern = r"\.cache\s*/\s*[\"f]|\.stamps\s*/|\.state_dir\s*/|user_cache_dir\(\)\s*/|base\s*/\s*[\"f](?:plans|knowledge|tool)"
    assert _modules_using(pattern) == ["paths.py"]


def test_download_names_live_in_names():
    assert _modules_using(r"def (?:download_name|local_path|file_name_of)\b") == ["names.py"]
