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
    done = subprocess.run([*cmd, "lock", "--target", "cpu", "--json"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    done = subprocess.run([*cmd, "install", "--env", "cpu", "--json"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["path"] == str(root / ".resolver" / "envs" / "cpu")
    return root


# --- verify/doctor/bench (issue 6): a second torch, different from cpu_project's 2.13.0+cpu ---
TEST_ENVS = REPO / ".resolver" / "test-envs"
OTHER_TORCH_REQUIREMENTS = "torch==2.14.1\ntransformers\nsafetensors\nnumpy\neinops\n"


def cached_venv(prefix: str, requirements: str) -> Path:
    """A venv with ``requirements`` (pip, this machine's pip config), cached under .resolver/test-envs/
    by the hash of the requirements text; built once, reused by every later session."""
    import fcntl
    import hashlib

    folder = TEST_ENVS / f"{prefix}-{hashlib.sha256(requirements.encode()).hexdigest()[:12]}"
    TEST_ENVS.mkdir(parents=True, exist_ok=True)
    with open(TEST_ENVS / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".ready").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
            (folder / "requirements.txt").write_text(requirements)
            done = subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet",
                                   "--disable-pip-version-check", "-r", str(folder / "requirements.txt")],
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr[-3000:]
            (folder / ".ready").write_text("ok\n")
    return folder


@pytest.fixture(scope="session")
def other_torch_env() -> Path:
    """torch 2.14.1 (the CUDA 13 build from the local wheelhouse, 5.5 GB; runs on the CPU here) with
    transformers, safetensors, numpy, einops: the 'other' environment for bench --compare and the
    ABI test. About 2 minutes the first time, then cached."""
    return cached_venv("torch", OTHER_TORCH_REQUIREMENTS)


@pytest.fixture(scope="session")
def conda_channel() -> Path:
    """A real local conda channel (tests/toolchain_channel.py): this machine's CPython 3.11 as conda
    ``python`` (+ python_abi, pip, setuptools, wheel) and the CUDA 13.0 compiler toolchain under
    conda-forge's names (cuda-version, cuda-nvcc and its split, cuda-cudart*, cuda-cccl), built from
    NVIDIA's PyPI wheels. Built once per clone under .resolver/test-channels/ (a few minutes), then
    reused; returns the channel folder."""
    import toolchain_channel

    try:
        toolchain_channel.find_source_python()
    except LookupError as exc:
        pytest.skip(str(exc))
    return toolchain_channel.cached_channel()
