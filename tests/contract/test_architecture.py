"""docs/architecture.md's rules, checked over every module of the package by reading its source.

* **Layers**: every module lives in a layer, and imports only from its own unit or the units below
  it: core < tools < project < plan < lock < install < patch < kernels < verify < doctor < fleet <
  workflows < commands < the entry (``cli``). An import inside a function counts; so does one made
  only for type checking (a type is a dependency too).
* **No cycles**, at any level: between modules, and between sibling packages or modules at every
  depth (imports made only for type checking aside: they never run).
* **The in-environment program** (``verify/inenv``) imports nothing of the resolver but itself and
  the wire it answers on: it runs inside environments, under their Python.
* **One home per fact**: each fact of :data:`FACTS` is written in its home and nowhere else.
* **One door for the filesystem**: nothing but ``core/fs.py`` opens, reads, writes, renames, copies or
  deletes a file or makes or removes a folder (``open(``, ``Path.read_*``/``write_*``/``open``/``unlink``/
  ``rename``/``replace``/``touch``/``mkdir``/``rmdir``, ``os.open``/``remove``/``unlink``/``rename``/``replace``/
  ``mkdir``/``makedirs``/``rmdir``, ``shutil.rmtree``/``copy*``/``move``), except the
  few places of :data:`DOOR_ALLOWED`, each with its reason.

Each rule is a function over a source tree, so the tests below also plant a violation in a scratch
tree and show the rule catches it.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import REPO

PACKAGE = REPO / "resolver"

LAYERS = ("core", "tools", "project", "plan", "lock", "install", "patch", "kernels", "verify", "doctor", "fleet",
          "workflows", "commands", "cli")
ENTRY_MODULES = {"__main__", "cli"}  # the package's own top level: the entry layer
INENV = "resolver.verify.inenv"
INENV_MAY_IMPORT = ("resolver.core.inenv_protocol",)


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module (or package), dotted
    where: str  # file:line
    typing_only: bool  # inside ``if TYPE_CHECKING:``


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package under ``root``, by dotted name (a package by its ``__init__``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _typing_only_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


@functools.lru_cache(maxsize=None)
def imports(root: Path = PACKAGE) -> tuple[Import, ...]:
    """Every import of a module of the package by another, wherever it is written."""
    known = modules(root)
    found = []
    for source, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        typing_only = _typing_only_lines(tree)
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                # ``from pkg import mod`` imports the module; ``from mod import name`` the module itself
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for name in names:
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name and name != source:
                    found.append(Import(source, name, f"{path.relative_to(root.parent)}:{node.lineno}",
                                        node.lineno in typing_only))
    return tuple(dict.fromkeys(found))


def unit(module: str) -> str:
    """The layer unit of a dotted module: ``resolver.lock.pypi`` -> ``lock``; the top level -> ``cli``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "core"  # the package itself: its version, nothing else
    return "cli" if parts[1] in ENTRY_MODULES else parts[1]


def layer_problems(root: Path = PACKAGE) -> list[str]:
    """Modules outside every layer, and imports of a higher unit than the importer's."""
    problems = [f"{m} is in no layer (one of {', '.join(LAYERS)})" for m in modules(root) if unit(m) not in LAYERS]
    for imp in imports(root):
        here, there = unit(imp.source), unit(imp.target)
        if here in LAYERS and there in LAYERS and LAYERS.index(there) > LAYERS.index(here):
            problems.append(f"{imp.where}: {imp.source} ({here}) imports {imp.target} ({there}), a layer above it")
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    item = stack.pop()
                    on_stack.discard(item)
                    component.append(item)
                    if item == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def cycle_problems(root: Path = PACKAGE) -> list[str]:
    """Import cycles between modules, and between siblings (packages or modules of one parent) at every
    depth: ``resolver.lock`` and ``resolver.plan`` are siblings, so are ``resolver.plan.probe.amd`` and
    ``resolver.plan.probe.nvidia``."""
    between_modules: dict[str, set[str]] = {}
    between_siblings: dict[str, set[str]] = {}
    for imp in imports(root):
        if imp.typing_only:
            continue
        between_modules.setdefault(imp.source, set()).add(imp.target)
        a, b = imp.source.split("."), imp.target.split(".")
        common = 0
        while common < min(len(a), len(b)) and a[common] == b[common]:
            common += 1
        if common < len(a) and common < len(b):
            between_siblings.setdefault(".".join(a[:common + 1]), set()).add(".".join(b[:common + 1]))
    return [f"import cycle: {' <-> '.join(c)}" for graph in (between_modules, between_siblings) for c in cycles(graph)]


def inenv_problems(root: Path = PACKAGE) -> list[str]:
    inenv = f"{root.name}{INENV.removeprefix('resolver')}"
    allowed = tuple(f"{root.name}{m.removeprefix('resolver')}" for m in INENV_MAY_IMPORT)
    return [f"{imp.where}: the in-environment program imports {imp.target}" for imp in imports(root)
            if (imp.source == inenv or imp.source.startswith(inenv + "."))
            and not (imp.target == inenv or imp.target.startswith(inenv + ".") or imp.target in allowed)]


# ---------------------------------------------------------------------------------------------------- facts

@dataclass(frozen=True)
class Fact:
    name: str
    pattern: str  # a regular expression over a module's text (MULTILINE)
    homes: tuple[str, ...]  # paths relative to resolver/ (a trailing / is a whole folder)
    example: str  # a line that writes the fact again: must be caught outside its homes


FACTS = (
    Fact("hashing", r"\bhashlib\b", ("core/fs.py",), "import hashlib"),
    Fact("child processes", r"^\s*(?:import subprocess|from subprocess import)", ("tools/proc.py", "verify/inenv/"),
         "import subprocess"),
    Fact("PEP 503 name normalisation", r"\[-_\.\]\+|\[-_.\]\+|canonicalize_name", ("core/names.py",),
         'key = re.sub(r"[-_.]+", "-", name).lower()'),
    Fact("a version cut to X.Y", r"""split\(\s*["']\.["']\s*\)\s*(?:\+\s*\[[^\]]*\]\s*\)\s*)?\[\s*:\s*2\s*\]""",
         ("core/versions.py",), 'mm = ".".join(version.split(".")[:2])'),
    Fact("--python parsed", r"""["']--python["']\s*,\s*metavar|def _python\(|is not a Python version""",
         ("commands/flags.py", "core/versions.py"), 'parser.add_argument("--python", metavar="X.Y")'),
    Fact("an index page's links", r"href=|vnd\.pypi\.simple",
         ("core/index_page.py",), """for href in re.findall(r'href="([^"]+)"', page):"""),
    Fact("credentials taken out of a URL", r"\(\?<=://\)|netloc\.rpartition\(\s*[\"']@|rest\.split\(\s*[\"']/[\"']\s*,\s*1\s*\)\[0\]",
         ("core/names.py",), 'url = re.sub(r"(?<=://)[^/@]*@", "", url)'),
    Fact("cache and state paths", r"\.cache\s*/\s*[\"f]|\.stamps\s*/|\.state_dir\s*/|user_cache_dir\(\)\s*/"
         r"|base\s*/\s*[\"f](?:plans|knowledge|tool)", ("project/paths.py",), 'where = self.cache / "x.json"'),
    Fact("download names", r"def (?:download_name|local_path|file_name_of)\b", ("core/names.py",),
         "def download_name(url):"),
    Fact("TOML parsed", r"^\s*(?:import tomllib|import tomli\b|from tomllib import)|tomlkit\.(?:parse|loads|load)\(",
         ("core/toml.py",), "import tomllib"),
    Fact("a digest of JSON", r"sha256\w*\(\s*json\.dumps|hashlib\.sha256\(\s*json\.dumps|\b(?:crc32|adler32)\(",
         ("core/fingerprint.py",), "key = sha256_text(json.dumps(inputs, sort_keys=True))"),
    Fact("deciding a plan", r"(?<![\w.])decide\(", ("plan/planning.py", "plan/decide/"),
         "outcome = decide(profile, request, knowledge)"),
    Fact("a JSON file written without the records' seal (a record goes through core/records.py write_record)",
         r"\bwrite_json_atomic\b", ("core/fs.py", "workflows/upgrade/report.py", "workflows/upgrade/fleet.py"),
         "write_json_atomic(project.stamps / 'steps.json', data)"),
    Fact("the bounds of pixi.toml and pixi.lock", r"^\s*(?:MANIFEST_LIMIT|LOCK_LIMIT)\s*=|MANIFEST_LIMIT\s*\*",
         ("project/paths.py",), "LOCK_LIMIT = 64 << 20"),
    Fact("the verified store's layout", r"\[:2\]\s*/", ("tools/store.py",), "path = root / sha[:2] / sha / name"),
)


# ------------------------------------------------------------------------------------------- the door

# (file relative to resolver/, the call it may make, why): the only file operations outside core/fs.py
DOOR_ALLOWED = (
    ("verify/inenv/", "*", "the in-environment program runs inside an environment under its own Python and may "
                           "import nothing of the resolver (it reads the model files and writes the logits it is told)"),
    ("tools/net.py", ".open", "urllib's opener opens a URL (a stream over the network), not a file; file:// URLs "
                              "are answered through the door"),
    ("lock/pypi.py", ".open", "a member of a wheel opened by zipfile, from the wheel the door opened"),
    ("cli.py", "os.open", "/dev/null put in place of stdout when the reader of the output went away"),
    ("install/template.py", "*", "the cached environment is recreated folder by folder and file by file with hard "
                                 "links (a copy where the file system has none) below a folder the door made"),
)
_PATH_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "unlink", "touch", "mkdir", "rmdir"}
_OS_CALLS = {"open", "remove", "unlink", "rename", "replace", "removedirs", "renames", "mkdir", "makedirs", "rmdir"}
_SHUTIL_CALLS = {"rmtree", "copy", "copy2", "copyfile", "copyfileobj", "copytree", "move"}


def _door_call(node: ast.Call) -> str | None:
    """The file operation ``node`` is (``open``, ``.read_text``, ``os.remove``, ``shutil.rmtree``, ...), or None."""
    func = node.func
    if isinstance(func, ast.Name) and func.id == "open":
        return "open"
    if not isinstance(func, ast.Attribute):
        return None
    owner = func.value.id if isinstance(func.value, ast.Name) else None
    if owner == "os" and func.attr in _OS_CALLS:
        return f"os.{func.attr}"
    if owner == "io" and func.attr == "open":
        return "io.open"
    if owner == "shutil" and func.attr in _SHUTIL_CALLS:
        return f"shutil.{func.attr}"
    if func.attr in _PATH_METHODS or func.attr == "open":
        return f".{func.attr}"
    if func.attr in ("rename", "replace") and len(node.args) == 1 and not node.keywords:  # Path's; str.replace takes 2
        return f".{func.attr}"
    return None


def _door_allowed(relative: str, call: str) -> bool:
    return any((relative == where or (where.endswith("/") and relative.startswith(where))) and what in ("*", call)
               for where, what, _why in DOOR_ALLOWED)


def door_problems(root: Path = PACKAGE) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if "__pycache__" in path.parts or relative == "core/fs.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            call = _door_call(node) if isinstance(node, ast.Call) else None
            if call is not None and not _door_allowed(relative, call):
                problems.append(f"resolver/{relative}:{node.lineno}: {call}( outside the door; open, read, write, "
                                "rename and delete files through resolver/core/fs.py")
    return problems


def _is_home(relative: str, fact: Fact) -> bool:
    return any(relative == home or (home.endswith("/") and relative.startswith(home)) for home in fact.homes)


def fact_problems(root: Path = PACKAGE, facts: tuple[Fact, ...] = FACTS) -> list[str]:
    problems = []
    for fact in facts:
        pattern = re.compile(fact.pattern, re.MULTILINE)
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if "__pycache__" in path.parts or _is_home(relative, fact):
                continue
            text = path.read_text()
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"resolver/{relative}:{line}: {fact.name} is written here; its home is "
                                f"{', '.join(fact.homes)}")
    return problems


# ---------------------------------------------------------------------------------------------------- the tree

def test_every_module_is_in_a_layer_and_imports_only_below_it():
    assert layer_problems() == []


def test_no_import_cycle_at_any_level():
    assert cycle_problems() == []


def test_the_in_environment_program_imports_only_itself_and_its_wire():
    assert inenv_problems() == []


def test_each_fact_is_written_only_in_its_home():
    assert fact_problems() == []


def test_files_are_touched_only_through_the_door():
    assert door_problems() == []


def test_the_doors_allowlist_is_short_and_each_entry_is_used_and_says_why():
    assert len(DOOR_ALLOWED) <= 5  # docs/architecture.md states the count
    for where, what, why in DOOR_ALLOWED:
        assert len(why) > 40, where
        files = [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).as_posix().startswith(where)]
        used = [p for p in files for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.Call)
                and _door_call(n) is not None and what in ("*", _door_call(n))]
        assert used, f"{where} {what} is allowed but no longer used: drop it from DOOR_ALLOWED"


def test_the_documented_allowlist_count_is_the_real_one():
    text = (REPO / "docs" / "architecture.md").read_text()
    assert f"{len(DOOR_ALLOWED)} places outside the door" in text


def test_the_layer_list_names_every_folder_of_the_package():
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(LAYERS) - {"cli"}, "a new top-level package needs its place in LAYERS and in docs/architecture.md"


def test_the_import_reader_sees_the_known_edges():
    """The rules are only as good as the graph: a few imports known to exist are found, lazy ones too."""
    edges = {(i.source, i.target) for i in imports()}
    assert ("resolver.lock.pypi", "resolver.tools.uv") in edges
    assert ("resolver.cli", "resolver.core.errors") in edges
    assert any(s == "resolver.project.paths" and t == "resolver.tools.store" for s, t in edges)  # inside a function


# ---------------------------------------------------------------------------------------------------- planted

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "resolver"
    for layer in LAYERS[:-1]:
        (root / layer).mkdir(parents=True, exist_ok=True)
        (root / layer / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "cli.py").write_text("import resolver.commands\n")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_planted_upward_import_is_caught(tmp_path):
    root = _tree(tmp_path, {"core/errors.py": "def f():\n    from resolver.lock import thing\n",
                            "lock/thing.py": "X = 1\n"})
    assert [p for p in layer_problems(root) if "core/errors.py:2" in p and "resolver.lock.thing (lock)" in p]


def test_a_planted_upward_type_only_import_is_caught(tmp_path):
    root = _tree(tmp_path, {"project/paths.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                                "    from resolver.plan.model import Plan\n",
                            "plan/model.py": "X = 1\n"})
    assert len(layer_problems(root)) == 1


def test_a_planted_module_outside_the_layers_is_caught(tmp_path):
    root = _tree(tmp_path, {"helpers.py": "X = 1\n"})
    assert layer_problems(root) == ["resolver.helpers is in no layer (one of " + ", ".join(LAYERS) + ")"]


def test_a_planted_cycle_through_a_top_level_module_is_caught(tmp_path):
    root = _tree(tmp_path, {"core/errors.py": "from resolver.core import fs\n",
                            "core/fs.py": "def f():\n    import resolver.core.errors\n"})
    assert cycle_problems(root) == ["import cycle: resolver.core.errors <-> resolver.core.fs"] * 2


def test_a_planted_cycle_between_packages_is_caught(tmp_path):
    root = _tree(tmp_path, {"plan/probe/__init__.py": "", "plan/probe/a.py": "from resolver.plan.decide import b\n",
                            "plan/decide/__init__.py": "", "plan/decide/b.py": "X = 1\n",
                            "plan/decide/c.py": "def f():\n    from resolver.plan.probe import d\n",
                            "plan/probe/d.py": "X = 1\n"})
    assert cycle_problems(root) == ["import cycle: resolver.plan.decide <-> resolver.plan.probe"]


def test_an_import_made_only_for_type_checking_closes_no_cycle(tmp_path):
    root = _tree(tmp_path, {"lock/a.py": "from resolver.lock import b\n",
                            "lock/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from resolver.lock import a\n"})
    assert cycle_problems(root) == []


def test_a_planted_inenv_import_is_caught(tmp_path):
    root = _tree(tmp_path, {"verify/inenv/__init__.py": "", "verify/inenv/facts.py": "from resolver.core import names\n",
                            "core/names.py": "X = 1\n", "core/inenv_protocol.py": "X = 1\n",
                            "verify/inenv/ok.py": "from resolver.core import inenv_protocol\n"})
    assert inenv_problems(root) == ["resolver/verify/inenv/facts.py:1: the in-environment program imports resolver.core.names"]


@pytest.mark.parametrize("fact", FACTS, ids=[f.name for f in FACTS])
def test_a_planted_copy_of_each_fact_is_caught(tmp_path, fact):
    home = fact.homes[0].rstrip("/") + ("/x.py" if fact.homes[0].endswith("/") else "")
    root = _tree(tmp_path, {"lock/copy.py": fact.example + "\n", home: fact.example + "\n"})
    assert fact_problems(root, (fact,)) == [f"resolver/lock/copy.py:1: {fact.name} is written here; its home is "
                                            f"{', '.join(fact.homes)}"]


@pytest.mark.parametrize("line", [
    "data = open(path).read()", "text = path.read_text()", "blob = (folder / 'x').read_bytes()",
    "p.write_text('x')", "p.write_bytes(b'x')", "with path.open('rb') as f: pass", "os.remove(p)", "os.unlink(p)",
    "p.unlink(missing_ok=True)", "os.rename(a, b)", "os.replace(a, b)", "tmp.rename(final)", "tmp.replace(final)",
    "shutil.rmtree(d)", "shutil.copy2(a, b)", "shutil.copyfile(a, b)", "shutil.move(a, b)", "fd = os.open(p, 0)",
    "p.touch()", "io.open(p)", "d.mkdir(parents=True)", "os.makedirs(d)", "os.mkdir(d)", "d.rmdir()", "os.rmdir(d)",
])
def test_a_planted_file_operation_outside_the_door_is_caught(tmp_path, line):
    root = _tree(tmp_path, {"lock/sneaky.py": f"import io, os, shutil\ndef f(path, p, a, b, d, tmp, final, folder):\n"
                                              f"    {line}\n"})
    assert [p for p in door_problems(root) if p.startswith("resolver/lock/sneaky.py:3:")], line


def test_the_door_itself_and_text_replace_are_not_caught(tmp_path):
    root = _tree(tmp_path, {"core/fs.py": "def f(p):\n    return open(p).read()\n",
                            "lock/fine.py": "def f(s, fs):\n    return s.replace('a', 'b'), fs.read_text_bounded(s)\n"})
    assert door_problems(root) == []


def test_an_allowed_operation_is_allowed_only_where_listed(tmp_path):
    root = _tree(tmp_path, {"cli.py": "import os\nfd = os.open('/dev/null', 1)\n",
                            "commands/x.py": "import os\nfd = os.open('/dev/null', 1)\n"})
    assert [p.split(":")[0] for p in door_problems(root)] == ["resolver/commands/x.py"]


def test_the_cycle_finder():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# ---------------------------------------------------------------------------------------------------- other rules

def _modules_using(pattern: str) -> list[str]:
    return sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                  if "__pycache__" not in path.parts and re.search(pattern, path.read_text(), re.MULTILINE))


def test_exit_codes_are_exit_code_members():
    """No exit with a bare number, and no command (or the CLI) returns one: every code has a name in
    ExitCode (0 aside)."""
    exiting = re.compile(r"(?:_exit|sys\.exit|SystemExit)\(\s*[1-9][0-9]*\s*\)")
    returning = re.compile(r"^\s*return\s+[1-9][0-9]*\s*(?:#.*)?$", re.MULTILINE)
    offenders = [m for m in _modules_using(exiting.pattern) if not m.startswith("verify/inenv/")]
    offenders += [str(p.relative_to(PACKAGE)) for p in [PACKAGE / "cli.py", *(PACKAGE / "commands").glob("*.py")]
                  if returning.search(p.read_text())]
    assert offenders == [], offenders


def test_ground_floor_reaches_no_outside_program():
    """core/ talks to no program, network or environment: those have their doors in tools/."""
    outside = re.compile(r"^\s*(?:import|from)\s+(?:subprocess|socket|urllib\.request|http\.client|rattler|uv)\b",
                         re.MULTILINE)
    assert [m for m in _modules_using(outside.pattern) if m.startswith("core/")] == []
