"""One TOML reader (resolver/core/toml.py) and one reader of pixi.toml (resolver/project/pixi_toml.py).

TOML is parsed in one place, which reads TOML 1.1 as pixi does: a parser imported anywhere else
(tomllib, tomli, tomlkit's parse or loads) would read a 1.1 pixi.toml as malformed, or its
``[tool.resolver.upgrade]`` as absent, and is caught here, in the code, the benchmarks, the recipes
and the tests alike."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest
from support import REPO, cli

from resolver.core.errors import BadInput

HOME = "resolver/core/toml.py"
SCANNED = ("resolver", "benchmarks", "recipes", "tests")
PARSERS = {"tomllib", "tomli"}  # modules that parse and nothing else
PARSING_FUNCTIONS = {"parse", "loads", "load"}  # tomlkit's (its table builders and dumps are free to use)


def toml_parsing(source: str, filename: str = "<text>") -> list[int]:
    """The lines of ``source`` that parse TOML themselves: an import of tomllib or tomli, or tomlkit's
    parse/loads/load, called as ``tomlkit.parse`` or imported by name."""
    lines = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            lines += [node.lineno for alias in node.names if alias.name.split(".")[0] in PARSERS]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            root = node.module.split(".")[0]
            if root in PARSERS or (root == "tomlkit" and any(a.name in PARSING_FUNCTIONS for a in node.names)):
                lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in PARSING_FUNCTIONS and \
                isinstance(node.value, ast.Name) and node.value.id == "tomlkit":
            lines.append(node.lineno)
    return sorted(set(lines))


def parsing_outside_home(files: dict[str, str]) -> list[str]:
    """``path:line`` for every line of ``files`` (path relative to the repository -> text) that parses TOML
    outside the one reader."""
    return [f"{path}:{line}" for path, text in sorted(files.items()) if path != HOME
            for line in toml_parsing(text, path)]


def _checked_files() -> dict[str, str]:
    files = {}
    for folder in SCANNED:
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if "__pycache__" not in path.parts and relative != "tests/contract/test_one_toml_reader.py":
                files[relative] = path.read_text(encoding="utf-8")
    return files


def test_toml_is_parsed_only_in_the_one_reader():
    found = parsing_outside_home(_checked_files())
    assert not found, f"TOML parsed outside {HOME} (use resolver.core.toml.parse_toml): {found}"


@pytest.mark.parametrize("planted", [
    "import tomllib\n",
    "def f():\n    import tomli as tomllib\n",
    "from tomllib import loads\n",
    "import tomlkit\n\ndoc = tomlkit.parse(text)\n",
    "import tomlkit\n\ndoc = tomlkit.loads(text)\n",
    "from tomlkit import parse\n",
])
def test_the_check_catches_a_planted_parser(planted):
    files = {**_checked_files(), "resolver/project/planted.py": '"""a copy"""\n' + planted}
    assert [hit.split(":")[0] for hit in parsing_outside_home(files)] == ["resolver/project/planted.py"]


def test_the_check_leaves_tomlkit_writers_and_the_home_alone():
    assert toml_parsing("import tomlkit\n\nt = tomlkit.table()\ns = tomlkit.dumps(t)\n") == []
    assert parsing_outside_home({HOME: "import tomllib\n"}) == []


def test_the_kernel_build_imports_on_a_python_without_tomllib(tmp_path):
    """Python 3.10 (which pyproject.toml allows) has no tomllib: a module importing it unconditionally fails there."""
    shadow = tmp_path / "tomllib.py"
    shadow.write_text("raise ModuleNotFoundError(\"No module named 'tomllib'\", name='tomllib')\n")
    code = "import resolver.kernels.packages, resolver.doctor.signatures, resolver.project.pixi_toml; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# ------------------------------------------------------------------------------------------- behaviour
WORKSPACE = '[workspace]\nname = "x"\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n'
UPGRADE_11 = ('\n[tool.resolver.upgrade]\ndefault = "cpu"\nenvironments = {\n'
              '  cpu = { target = "cpu", torch = "2.13", python = "3.11", },\n}\n')  # TOML 1.1: lines, commas


def test_the_reader_takes_toml_1_1_where_the_standard_parser_refuses_it():
    from resolver.core.toml import parse_toml

    assert parse_toml('a = { x = 1,\n  y = "\\e", }\n', what="t", fix="f") == {"a": {"x": 1, "y": "\x1b"}}
    with pytest.raises(BadInput, match="is not valid TOML"):
        parse_toml("a = {", what="t", fix="f")


def test_a_toml_1_1_upgrade_table_is_read(tmp_path):
    from resolver.project.paths import ProjectPaths
    from resolver.project.pixi_toml import default_choice, default_environment

    (tmp_path / "pixi.toml").write_text(WORKSPACE + UPGRADE_11)
    project = ProjectPaths(tmp_path)
    assert default_environment(project) == "cpu"
    assert default_choice(project).torch == "2.13"


def test_pixi_toml_is_parsed_once_while_it_is_unchanged(tmp_path, monkeypatch):
    import resolver.core.toml as toml
    from resolver.project.pixi_toml import read_pixi_toml, read_tool_tables

    parsed = []
    real = toml.parse_toml
    monkeypatch.setattr(toml, "parse_toml", lambda text, **kw: parsed.append(text) or real(text, **kw))
    path = tmp_path / "pixi.toml"
    path.write_text(WORKSPACE + UPGRADE_11)
    first = read_pixi_toml(path)
    assert read_pixi_toml(path).data is first.data and read_tool_tables(path).upgrade.default == "cpu"
    assert len(parsed) == 1
    path.write_text(WORKSPACE + UPGRADE_11.replace('default = "cpu"', 'default = "cpv"'))  # same size, same tick
    assert read_pixi_toml(path).tool.upgrade.default == "cpv" and len(parsed) == 2


def test_an_oversized_tool_resolver_is_one_sentence_exit_3(tmp_path):
    from resolver.project.pixi_toml import TOOL_VALUES

    nodes = ", ".join(['"n"'] * (TOOL_VALUES + 1))
    (tmp_path / "pixi.toml").write_text(WORKSPACE + f'\n[tool.resolver.fleet.classes.cpu]\nnodes = [{nodes}]\n')
    done = cli.run("verify", cwd=tmp_path, timeout=120, env={"PYTHONPATH": str(REPO)})
    assert done.returncode == 3, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: [tool.resolver] in {tmp_path / 'pixi.toml'} holds more than {TOOL_VALUES} values")
    assert "Fix:" in line and "Traceback" not in done.stderr
