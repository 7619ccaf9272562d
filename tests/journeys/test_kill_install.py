"""Kill `install` and `setup` at random moments, with SIGKILL and with SIGTERM sent to the resolver
alone (as `kill PID` or an OOM killer would). After each kill:

* no process of the run is alive 5 s later (its pip, compiler or verify child died with it);
* no temporary folder counts as an environment: a folder without its ready marker is refused, and an
  environment that has its marker really works (for setup: `verify` passes only on a complete one);
* the next run succeeds and leaves no temporary folder behind.

install: kills on a real conda prefix (the toolchain channel's python, a channel built here, a
wheelhouse), each killed run building from the lock (no cached build); setup: kills on the CPU project
(real torch, real verify), each run from a cached build. The moments are spread over the run (one drawn
in each equal slice of it). The default run takes 3 moments per signal for install and, for setup, one
in the first half of the run (SIGKILL) and one in the second (SIGTERM);
the full sweep (20 for install, 10 for setup, per signal) is marked ``sweep`` (``./run-tests -m sweep``;
CI runs it). Both signals' setup kills start from one project where a whole setup ran.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support import channel_factory as cf  # noqa: E402
from support import cli, projects
from support import toolchain_channel as tc  # noqa: E402

from resolver import lock  # noqa: E402
from resolver.core.model import KernelChoice, Plan, TorchChoice, TorchSource  # noqa: E402
from resolver.install.environment import READY_MARKER  # noqa: E402
from resolver.project.paths import ProjectPaths  # noqa: E402

INSTALL_KILLS = 20  # per signal, in the sweep
SETUP_KILLS = 10
FEW_KILLS = 3  # per signal, in the default run (install: seconds a run)
FEW_SETUP_KILLS = 1  # per signal, in the default run (setup with verify: tens of seconds a run): SIGKILL in the
# first half of the run, SIGTERM in the second
KILLS = [pytest.param(FEW_KILLS, id="few"), pytest.param(None, id="sweep", marks=pytest.mark.sweep)]
MANIFEST = """\
[workspace]
name = "kill-test"
channels = ["conda-forge", "{channel}"]
platforms = [{platform}]

[feature.cpu]
dependencies = {{ python = "{python}.*", rt-tool = ">=0.3", rt-kernel = "1.2.*" }}
pypi-dependencies = {{ rtpy = "*", torch = "==2.13.0+cpu" }}

[environments]
cpu = {{ features = ["cpu"], solve-group = "cpu", no-default-feature = true }}

[tool.resolver]
find-links = ["./wheels"]
"""


def _isolated_env(project: Path, toolchain: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "RESOLVER_"))}
    env.update(RESOLVER_PROJECT=str(project), PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1",
               RESOLVER_CONDA_CHANNELS=str(toolchain))
    return env


@pytest.fixture(scope="module")
def project(tmp_path_factory, conda_channel) -> ProjectPaths:
    base = tmp_path_factory.mktemp("kill")
    channel = cf.build_channel(base / "chan")
    manifest = MANIFEST.format(channel=channel.as_uri(), platform=tc.platform_entry(conda_channel),
                               python=tc.PYTHON_SERIES)
    root = projects.project(base / "p", manifest, wheelhouse=True)
    plan = Plan(backend="cpu", backend_version=None, python=tc.PYTHON_SERIES, platform="linux-64", target="cpu",
                torch=TorchChoice("2.13.0", "cpu", TorchSource("pypi-index", "https://download.pytorch.org/whl/cpu"),
                                  local_version="cpu"),
                kernels=KernelChoice("none"), glibc="2.36", conda_packages=(("python", f"{tc.PYTHON_SERIES}.*"),))
    isolated = _isolated_env(root, conda_channel)  # built from the session's environment (its own caches)
    with pytest.MonkeyPatch.context() as patch:
        for name in set(os.environ) - set(isolated):
            patch.delenv(name)
        for name, value in isolated.items():
            patch.setenv(name, value)
        lock.lock_plans(ProjectPaths(root), [plan])
    return ProjectPaths(root)


def _start(project: ProjectPaths, env: dict[str, str], *args: str) -> subprocess.Popen:
    return cli.start(*args, "--json", environment=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     start_new_session=True)


def _processes_of(root: Path) -> list[str]:
    """Processes (other than this one) whose command line or working folder is inside ``root``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if str(root) in cmdline or cwd.startswith(str(root)):
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


def _no_orphans_within_5s(root: Path) -> None:
    deadline = time.monotonic() + 5
    while (alive := _processes_of(root)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive, f"still running 5 s after the kill: {alive}"


def _moments(rng: random.Random, count: int, start: float, end: float) -> list[float]:
    """``count`` moments between ``start`` and ``end``, one drawn in each equal slice: early, middle and
    late kills whatever the count."""
    width = (end - start) / count
    return [rng.uniform(start + i * width, start + (i + 1) * width) for i in range(count)]


def _kill_at(proc: subprocess.Popen, sig: int, moment: float) -> None:
    deadline = time.monotonic() + moment
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    if proc.poll() is None:
        os.kill(proc.pid, sig)  # the resolver alone, as `kill PID` does: its children must follow it
    proc.communicate(timeout=120)


def _leftovers(project: ProjectPaths) -> list[str]:
    temps = [p.name for p in project.envs.iterdir() if p.name.startswith(".")] if project.envs.is_dir() else []
    temps += [str(p) for p in project.cache.rglob(".*")  # fs.temp_path's, install's and the template's names
              if any(mark in p.name for mark in (".resolver-tmp-", ".tmp-", ".part-"))]
    return temps


def _works(env: Path) -> bool:
    tool = subprocess.run([str(env / "bin" / "rt-tool")], capture_output=True, text=True)
    imports = subprocess.run([str(env / "bin" / "python"), "-c", "import rtpy, torch; print(rtpy.VALUE, torch.__version__)"],
                             capture_output=True, text=True)
    return tool.returncode == 0 and imports.stdout.strip() == "rtpy ok 2.13.0+cpu"


def _refused_unless_ready(project: ProjectPaths, env: dict[str, str]) -> None:
    """A folder without its ready marker is no environment: commands refuse it, quickly."""
    folder = project.env("cpu")
    if (folder / READY_MARKER).is_file():
        assert _works(folder), "an environment marked ready does not work"
        return
    done = cli.run("doctor", "--env", "cpu", "--json", environment=env, timeout=120)
    assert done.returncode != 0 and "not" in done.stderr, done.stderr


@pytest.mark.parametrize("kills", KILLS)
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_kill_install_at_random_moments(project: ProjectPaths, conda_channel, sig, kills) -> None:
    env = _isolated_env(project.root, conda_channel)
    shutil.rmtree(project.env("cpu"), ignore_errors=True)
    started = time.monotonic()
    first = _start(project, env, "install", "--env", "cpu", "--no-cache")
    out, err = first.communicate(timeout=300)
    duration = time.monotonic() - started
    assert first.returncode == 0, err
    assert json.loads(out)["kind"] == "conda" and _works(project.env("cpu"))
    assert Path(os.environ["XDG_CACHE_HOME"]) in project.verified.parents  # the session's store, not the user's
    for i, moment in enumerate(_moments(random.Random(f"install-{sig}"), kills or INSTALL_KILLS, 0.05, duration)):
        shutil.rmtree(project.env("cpu"))
        _kill_at(_start(project, env, "install", "--env", "cpu", "--no-cache"), sig, moment)
        _no_orphans_within_5s(project.root)
        _refused_unless_ready(project, env)
        rerun = _start(project, env, "install", "--env", "cpu")
        out, err = rerun.communicate(timeout=300)
        assert rerun.returncode == 0, f"re-run after kill {i} at {moment:.2f}s failed: {err}"
        assert json.loads(out)["path"] == str(project.env("cpu")) and _works(project.env("cpu"))
        assert not _leftovers(project), f"kill {i} at {moment:.2f}s: left behind {_leftovers(project)}"


@pytest.fixture(scope="module")
def setup_project(cpu_project: Path, tmp_path_factory) -> tuple[ProjectPaths, dict[str, str], float]:
    """A copy of the CPU project where one whole setup ran (install from the cached build, verify): the
    project both signals' kills start from, and how long that setup took (the kills fall inside it)."""
    root = tmp_path_factory.mktemp("kill-setup") / "p"
    shutil.copytree(cpu_project, root, symlinks=True, ignore=shutil.ignore_patterns("envs"))
    project = ProjectPaths(root)
    for stamp in (project.stamps / "steps").glob("verify*"):  # another test may have set up cpu_project already
        stamp.unlink()
    env = dict(os.environ, RESOLVER_PROJECT=str(root))
    started = time.monotonic()
    first = _start(project, env, "setup", "--target", "cpu")
    out, err = first.communicate(timeout=900)
    duration = time.monotonic() - started
    assert first.returncode == 0, err[-3000:]
    steps = {s["name"]: s for s in json.loads(out)["steps"]}
    assert steps["lock"]["status"] == "skipped" and steps["install"]["status"] == "done"
    assert steps["verify"]["status"] == "done"
    return project, env, duration


@pytest.mark.parametrize("kills", [pytest.param(FEW_SETUP_KILLS, id="few"),
                                   pytest.param(None, id="sweep", marks=pytest.mark.sweep)])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_kill_setup_at_random_moments(setup_project, sig, kills) -> None:
    """setup on the real CPU project: install (from the cached build) and verify (torch, a model) are
    killed at random points; verify never passes on a half environment and the next setup completes."""
    project, env, duration = setup_project
    root = project.root

    def fresh():
        shutil.rmtree(project.env("cpu"), ignore_errors=True)
        for stamp in (project.stamps / "steps").glob("verify*"):
            stamp.unlink()

    start, end = 0.2, duration
    if kills == FEW_SETUP_KILLS:  # one moment per signal: the two signals share the run between them
        start, end = (start, duration / 2) if sig == signal.SIGKILL else (duration / 2, duration)
    for i, moment in enumerate(_moments(random.Random(f"setup-{sig}"), kills or SETUP_KILLS, start, end)):
        fresh()
        _kill_at(_start(project, env, "setup", "--target", "cpu"), sig, moment)
        _no_orphans_within_5s(root)
        folder = project.env("cpu")
        verify = cli.run("verify", "--env", "cpu", "--json", environment=env, timeout=600)
        if verify.returncode == 0:  # verify passed: the environment must be the complete one
            assert (folder / READY_MARKER).is_file() and json.loads(verify.stdout)["ok"], f"kill {i} at {moment:.2f}s"
        else:
            assert verify.returncode in (1, 3, 7) and "Traceback" not in verify.stderr
        rerun = _start(project, env, "setup", "--target", "cpu")
        out, err = rerun.communicate(timeout=900)
        assert rerun.returncode == 0, f"setup after kill {i} at {moment:.2f}s failed: {err[-2000:]}"
        assert json.loads(out)["complete"] is True
        assert not _leftovers(project), f"kill {i} at {moment:.2f}s: left behind {_leftovers(project)}"
