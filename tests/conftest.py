"""Shared fixtures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def cpu_project(tmp_path_factory) -> Path:
    """A copy of this project where ``lock --target cpu`` then ``install --env cpu`` ran through the CLI,
    with this machine's pip configuration as it is (torch 2.13.0+cpu from the local wheelhouse).

    Returns the project root; the environment is ``<root>/.resolver/envs/cpu`` (a venv, ready marker
    written). Takes about a minute, once per test session.
    """
    root = tmp_path_factory.mktemp("cpu-project")
    shutil.copy(REPO / "pixi.toml", root / "pixi.toml")
    env = dict(os.environ, RESOLVER_PROJECT=str(root))
    cmd = [sys.executable, "-m", "resolver"]
    try:
        from resolver.decide import plan_for  # noqa: F401
        have_decide = True
    except ImportError:
        have_decide = False
    if have_decide:
        done = subprocess.run([*cmd, "lock", "--target", "cpu", "--json"], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
    else:  # until the plan stage lands: the plan decide makes for a CPU target on this host
        code = ("import os, sys, platform; from pathlib import Path; from resolver import lock; "
                "from resolver.paths import ProjectPaths; from resolver.plan import *; "
                "p = Plan(backend='cpu', backend_version=None, python='%d.%d' % sys.version_info[:2], "
                "platform='linux-64', target='cpu', glibc=platform.libc_ver()[1], kernels=KernelChoice('none'), "
                "torch=TorchChoice('2.13.0', 'cpu', TorchSource('pypi-index', 'https://download.pytorch.org/whl/cpu'), "
                "local_version='cpu')); lock.lock_plans(ProjectPaths(Path(os.environ['RESOLVER_PROJECT'])), [p]); "
                "sys.stdout.flush(); os._exit(0)")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
    done = subprocess.run([*cmd, "install", "--env", "cpu", "--json"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["path"] == str(root / ".resolver" / "envs" / "cpu")
    return root
