"""The days after the first: add a package and import it, pip-install one by hand, remove one, run a command
and a shell in the environment; each change installs only what changed (torch is never touched by a small
package), what was installed by hand is kept and named (or, with --exact, removed and named), and a typo in
-e says which environments there are.

Runs for real on this machine: a project holding cpu_project's pixi.toml and pixi.lock and its own
installed `cpu` environment (torch 2.13.0+cpu), changed by the CLI as a user would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import cli

from resolver.lock.lockfile import read_lock


def own_project(cpu_project: Path, root: Path, channel: Path) -> Path:
    """cpu_project's pixi.toml, pixi.lock, stored plan and sources in ``root``, and its own `cpu` environment
    installed there (never the shared one: these tests change it). pixi.toml names the local conda channel as
    the mirror of its channel (what `--channel` told cpu_project's lock), so a relock here finds it too."""
    state = root / ".resolver" / "state"
    (state / "plans").mkdir(parents=True)
    shutil.copy(cpu_project / "pixi.lock", root / "pixi.lock")
    text = (cpu_project / "pixi.toml").read_text()
    assert "[tool.resolver]\n" in text
    (root / "pixi.toml").write_text(text.replace("[tool.resolver]\n", f'[tool.resolver]\nconda-channels = ["{channel}"]\n', 1))
    shutil.copy(cpu_project / ".resolver" / "state" / "plans" / "cpu.json", state / "plans" / "cpu.json")
    if (cpu_project / ".resolver" / "state" / "sources.json").is_file():
        shutil.copy(cpu_project / ".resolver" / "state" / "sources.json", state / "sources.json")
    done = cli.run("install", "-e", "cpu", "--json", project=root, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return root


@pytest.fixture(scope="module")
def day(tmp_path_factory, cpu_project, conda_channel):
    return own_project(cpu_project, tmp_path_factory.mktemp("day-after"), conda_channel)


def site_packages(project: Path) -> Path:
    return next((project / ".resolver" / "envs" / "cpu").glob("lib/python3*/site-packages"))


def torch_files(project: Path) -> dict[str, tuple[int, int]]:
    """(inode, mtime) of torch's own files that an install would rewrite: touching torch changes them."""
    torch = site_packages(project) / "torch"
    return {str(p.relative_to(torch)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in [torch / "__init__.py", torch / "version.py", *torch.glob("lib/*.so")]}


def lock_blocks(project: Path) -> dict[str, str]:
    """pixi.lock's text of each environment's block, by name (what must stay byte for byte)."""
    text = (project / "pixi.lock").read_text()
    envs = text.split("\npackages:\n", 1)[0]
    blocks, name = {}, None
    for line in envs.splitlines(keepends=True):
        if line.startswith("  ") and not line.startswith("    ") and line.rstrip().endswith(":"):
            name = line.strip()[:-1]
            blocks[name] = ""
        elif name is not None:
            blocks[name] += line
    return blocks


def pypi_versions(project: Path, env: str = "cpu") -> dict[str, str]:
    [locked] = read_lock(project / "pixi.lock", project)[env]
    return {a.name: a.version for a in locked.pypi}


def imports(project: Path, module: str) -> bool:
    done = cli.run("run", "-e", "cpu", "python", "-c", f"import {module}", project=project)
    return done.returncode == 0


def test_add_then_import_touches_nothing_else(day):
    before_torch, before_blocks, before_versions = torch_files(day), lock_blocks(day), pypi_versions(day)
    done = cli.run("add", "--pypi", "tabulate", "-e", "cpu", "--json", project=day, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["table"] == "[feature.cpu.pypi-dependencies]"
    [install] = report["installs"]
    assert install["built_from"] == "difference" and [a.split("==")[0] for a in install["added"]] == ["tabulate"]
    assert install["removed"] == install["changed"] == []
    version = pypi_versions(day)["tabulate"]
    major, minor = (int(part) for part in version.split(".")[:2])
    upper = f"0.{minor + 1}" if major == 0 else str(major + 1)
    assert f'tabulate = ">={version},<{upper}"' in (day / "pixi.toml").read_text()  # as pixi add writes it
    assert report["packages"] == [{"name": "tabulate", "spec": f">={version},<{upper}"}]
    assert cli.run("lock", "--check", project=day).returncode == 0  # pixi.lock satisfies what was written
    assert imports(day, "tabulate")
    assert torch_files(day) == before_torch  # torch is not reinstalled for a small package
    after = pypi_versions(day)
    assert {k: v for k, v in after.items() if k != "tabulate"} == before_versions  # nothing else moved
    blocks = lock_blocks(day)
    assert {k: v for k, v in blocks.items() if k != "cpu"} == {k: v for k, v in before_blocks.items() if k != "cpu"}


def _install_by_hand(day: Path, name: str) -> None:
    """What a user does between two commands: pip-installs a package into the environment themselves."""
    pip = cli.run("run", "-e", "cpu", "python", "-m", "pip", "install", "--quiet", "--no-deps", name,
                  project=day, timeout=600)
    assert pip.returncode == 0, pip.stderr[-2000:]


def test_a_package_installed_by_hand_is_kept_and_named_then_exact_removes_and_names_it(day):
    _install_by_hand(day, "termcolor")
    done = cli.run("add", "--pypi", "colorama", "-e", "cpu", project=day, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "installed by hand (not in pixi.lock): termcolor==" in done.stdout
    assert imports(day, "termcolor") and imports(day, "colorama")
    done = cli.run("install", "-e", "cpu", "--exact", project=day, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert any(line.startswith("- termcolor==") and line.endswith("(installed by hand)")
               for line in done.stdout.splitlines()), done.stdout
    assert not imports(day, "termcolor") and imports(day, "colorama")


def test_remove_uninstalls_it_and_a_name_not_there_is_one_sentence(day):
    if "colorama" not in pypi_versions(day):
        assert cli.run("add", "--pypi", "colorama", "-e", "cpu", project=day, timeout=900).returncode == 0
    before = torch_files(day)
    done = cli.run("remove", "--pypi", "colorama", "-e", "cpu", "--json", project=day, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    [install] = json.loads(done.stdout)["installs"]
    assert [r.split("==")[0] for r in install["removed"]] == ["colorama"]
    assert "colorama" not in (day / "pixi.toml").read_text() and "colorama" not in pypi_versions(day)
    assert not imports(day, "colorama") and torch_files(day) == before
    again = cli.run("remove", "--pypi", "colorama", "-e", "cpu", project=day)
    assert again.returncode == 3 and again.stderr.count("\n") == 1
    assert "colorama is not in [feature.cpu.pypi-dependencies]" in again.stderr
    assert cli.run("add", "--pypi", "torch", "-e", "cpu", project=day).returncode == 2  # the plan's, not add's


def test_the_same_sha256_at_another_url_installs_nothing(day):
    lock = day / "pixi.lock"
    text = lock.read_text()
    moved = text.replace("https://files.pythonhosted.org/", "https://mirror.example.org/pypi/").replace(
        "https://download.pytorch.org/", "https://mirror.example.org/torch/")
    assert moved != text
    before = torch_files(day)
    lock.write_text(moved)
    try:
        done = cli.run("install", "-e", "cpu", "--json", project=day, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout)
        assert report["status"] == "up-to-date" and report["added"] == report["changed"] == report["removed"] == []
        assert torch_files(day) == before
    finally:
        lock.write_text(text)


def test_run_and_a_non_interactive_shell_run_inside_the_environment(day):
    env = day / ".resolver" / "envs" / "cpu"
    done = cli.run("run", "-e", "cpu", "python", "-c", "import sys; print(sys.prefix); sys.exit(7)", project=day)
    assert done.returncode == 7 and Path(done.stdout.strip()).resolve() == env.resolve()
    done = cli.run("shell", "-e", "cpu", project=day, stdin='echo "$CONDA_PREFIX"; command -v python; exit 4\n')
    assert done.returncode == 4, done.stderr
    assert done.stdout.split() == [str(env), str(env / "bin" / "python")]
    hook = cli.run("shell", "-e", "cpu", "--hook", project=day)
    assert hook.returncode == 0 and f"export CONDA_PREFIX={env}" in hook.stdout
    missing = cli.run("run", "-e", "cpu", "no-such-command-here", project=day)
    assert missing.returncode == 3 and "no command 'no-such-command-here'" in missing.stderr


@pytest.mark.parametrize("command", [("install",), ("verify",), ("doctor",), ("run", "python"), ("shell",),
                                     ("add", "--pypi", "x"), ("remove", "x")])
def test_a_typo_in_env_names_the_environments_pixi_toml_has(day, command):
    done = cli.run(command[0], "-e", "nosuch", *command[1:], project=day)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "no environment 'nosuch'; pixi.toml has: cpu" in done.stderr and done.stderr.count("\n") == 1


def test_a_rebuild_names_each_package_installed_by_hand_it_cannot_keep(day):
    _install_by_hand(day, "termcolor")
    done = cli.run("install", "-e", "cpu", "--force", "--json", project=day, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["built_from"] in ("lock", "cache")
    assert [r.split("==")[0] for r in report["removed_by_hand"]] == ["termcolor"]
    assert "installed by hand, not kept: termcolor==" in done.stderr
    assert not imports(day, "termcolor")


def test_on_a_terminal_shell_starts_the_users_shell_inside_the_environment(day):
    import os
    import pty

    env = day / ".resolver" / "envs" / "cpu"
    master, terminal = pty.openpty()
    try:
        os.write(master, b'echo "inside:$CONDA_PREFIX:$PS1"; exit 3\n')
        done = cli.run("shell", "-e", "cpu", project=day, stdin=terminal, timeout=120, env={"SHELL": "/bin/bash"})
    finally:
        os.close(terminal)
        os.close(master)
    assert done.returncode == 3, done.stderr
    assert f"inside:{env}:(cpu) " in done.stdout
    assert "entering environment 'cpu'" in done.stdout


def test_add_then_remove_gives_back_pixi_toml_and_pixi_lock_byte_for_byte(day):
    manifest, lock = (day / "pixi.toml").read_bytes(), (day / "pixi.lock").read_bytes()
    assert cli.run("add", "--pypi", "toolz", "-e", "cpu", "--no-install", project=day, timeout=900).returncode == 0
    assert b"toolz" in (day / "pixi.lock").read_bytes()
    assert cli.run("remove", "--pypi", "toolz", "-e", "cpu", "--no-install", project=day, timeout=900).returncode == 0
    assert (day / "pixi.toml").read_bytes() == manifest and (day / "pixi.lock").read_bytes() == lock
