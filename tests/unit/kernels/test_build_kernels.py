"""The real Mamba kernels through `python -m resolver build` (tens of minutes on a small machine).

Marked ``kernels``: the default run and CI skip it (pyproject's addopts). Run it with
``pytest -m kernels tests/unit/kernels/test_build_kernels.py`` on a machine with nvcc and an environment holding a
CUDA build of torch (default ``.resolver/envs/cuda13``; ``RESOLVER_KERNEL_ENV`` to choose another).
It builds into the project's own channel, so a later run (and the second test) hits the cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest
from support import cli

from resolver.project.paths import ProjectPaths

pytestmark = pytest.mark.kernels

ENV = os.environ.get("RESOLVER_KERNEL_ENV", "cuda13")
ARCH = os.environ.get("RESOLVER_KERNEL_ARCH", "9.0")


@pytest.fixture(scope="module")
def project() -> ProjectPaths:
    paths = ProjectPaths.discover()
    if not (paths.env(ENV) / "bin" / "python").exists():
        pytest.skip(f"no environment {paths.env(ENV)} (create it with torch first)")
    if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
        pytest.skip("no nvcc")
    return paths


def _build(project: ProjectPaths) -> tuple[dict, float]:
    started = time.monotonic()
    done = cli.run("build", "--arch", ARCH, "--env", ENV, "--json", cwd=project.root, timeout=4 * 3600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(done.stdout), time.monotonic() - started


def test_kernels_build_install_and_import(project):
    data, _ = _build(project)
    names = [p["name"] for p in data["packages"]]
    assert names == ["causal-conv1d", "mamba-ssm"]
    for package in data["packages"]:
        assert package["status"] in ("built", "cached")
        assert package["build_string"].startswith("cu") and f"sm{ARCH.replace('.', '')}" in package["build_string"]
        assert os.path.isfile(package["file"])
    code = "import torch, causal_conv1d_cuda, selective_scan_cuda, mamba_ssm; print(mamba_ssm.__version__)"
    done = subprocess.run([str(project.env(ENV) / "bin" / "python"), "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("2.3.2.post1")


def test_second_identical_run_compiles_nothing(project):
    data, seconds = _build(project)
    assert data["compiled"] == 0
    assert all(p["status"] == "cached" for p in data["packages"])
    assert seconds < 60
