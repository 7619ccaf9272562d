"""SIGKILL `install` at 20 moments; each re-run must yield a correct environment, and no killed run
may leave a half environment that looks ready (issue 7's reliability suite).

The project is a real one: a conda channel built here with py-rattler-build, a wheelhouse, a lock
written by `lock`. Kill moments are spread evenly over the measured duration of a full install.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import channel_factory as cf  # noqa: E402

from resolver import lock  # noqa: E402
from resolver.decide.model import KernelChoice, Plan, TorchChoice, TorchSource  # noqa: E402
from resolver.install.environment import READY_MARKER  # noqa: E402
from resolver.paths import ProjectPaths  # noqa: E402

KILLS = 20
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
MANIFEST = """\
[workspace]
name = "kill-test"
channels = ["{channel}"]
platforms = ["linux-64"]

[feature.cpu]
platforms = ["linux-64"]
dependencies = {{ rt-tool = ">=0.3", rt-kernel = "1.2.*" }}
pypi-dependencies = {{ rtpy = "*" }}

[environments]
cpu = {{ features = ["cpu"], solve-group = "cpu" }}

[tool.resolver]
find-links = ["./wheels"]
"""


def _isolated_env(project: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "RESOLVER_"))}
    env.update(RESOLVER_PROJECT=str(project), PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1")
    return env


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> ProjectPaths:
    base = tmp_path_factory.mktemp("kill")
    channel = cf.build_channel(base / "chan")
    root = base / "p"
    root.mkdir()
    (root / "pixi.toml").write_text(MANIFEST.format(channel=channel.as_uri()))
    cf.build_wheelhouse(root / "wheels")
    plan = Plan(backend="cpu", backend_version=None, python=PY, platform="linux-64", target="cpu",
                torch=TorchChoice("2.13.0", "cpu", TorchSource("pypi-index", "https://download.pytorch.org/whl/cpu"),
                                  local_version="cpu"),
                kernels=KernelChoice("none"), glibc="2.28")
    saved = dict(os.environ)
    os.environ.update(_isolated_env(root))
    for key in [k for k in os.environ if k.startswith("PIP_FIND")]:
        del os.environ[key]
    try:
        lock.lock_plans(ProjectPaths(root), [plan])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return ProjectPaths(root)


def _install(project: ProjectPaths) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "resolver", "install", "--env", "cpu", "--json"],
                            env=_isolated_env(project.root), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _complete(env: Path) -> bool:
    """The environment really works: the conda chain runs and the wheels import."""
    tool = subprocess.run([str(env / "bin" / "rt-tool")], capture_output=True, text=True)
    imports = subprocess.run([str(env / "bin" / "python"), "-c", "import rtpy, torch; print(rtpy.VALUE, torch.__version__)"],
                             capture_output=True, text=True)
    return (tool.returncode == 0 and tool.stdout.startswith("rt-tool ok")
            and imports.returncode == 0 and imports.stdout.strip() == "rtpy ok 2.13.0+cpu")


def _ready_envs(project: ProjectPaths) -> list[Path]:
    return [p for p in project.envs.glob("*") if (p / READY_MARKER).is_file()] if project.envs.is_dir() else []


def test_kill_install_at_twenty_moments(project: ProjectPaths) -> None:
    env_path = project.env("cpu")
    started = time.monotonic()
    first = _install(project)
    out, err = first.communicate(timeout=300)
    duration = time.monotonic() - started
    assert first.returncode == 0, err
    assert _complete(env_path)
    survived = 0
    for i in range(KILLS):
        import shutil

        shutil.rmtree(env_path)
        proc = _install(project)
        time.sleep(duration * (i + 0.5) / KILLS)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        # whatever the moment, nothing that claims to be ready may be half made
        for ready in _ready_envs(project):
            assert _complete(ready), f"kill {i} at {duration * (i + 0.5) / KILLS:.2f}s left a half environment marked ready"
        rerun = _install(project)
        out, err = rerun.communicate(timeout=300)
        assert rerun.returncode == 0, f"re-run after kill {i} failed: {err}"
        assert json.loads(out)["path"] == str(env_path)
        assert _complete(env_path), f"re-run after kill {i} did not yield a working environment"
        survived += 1
    assert survived == KILLS
    leftovers = [p.name for p in project.envs.iterdir() if p.name != "cpu"]
    assert not leftovers, f"temporary folders left behind: {leftovers}"
