"""The real CPU path on this machine: lock --target cpu, install --env cpu, torch imports inside."""

from __future__ import annotations

import json
import subprocess

from support import REPO, cli, records
from support.projects import torch_cpu_mirror

from resolver import install
from resolver.core.fs import sha256_of
from resolver.core.names import file_name_of
from resolver.lock.lockfile import read_lock
from resolver.project.paths import ProjectPaths


def test_cpu_environment_is_a_conda_prefix_whose_python_imports_torch(cpu_project):
    env = cpu_project / ".resolver" / "envs" / "cpu"
    marker = records.read(env / "resolver-ready.json")
    assert marker["kind"] == "conda" and "torch==2.13.0+cpu" in marker["pypi"]
    assert (env / "conda-meta").is_dir() and any(p.name.startswith("python-3.") for p in (env / "conda-meta").iterdir())
    done = subprocess.run([str(env / "bin" / "python"), "-c",
                           "import sys, torch, transformers, safetensors, einops, packaging, ninja, numpy; "
                           "print(torch.__version__, sys.prefix, float(torch.ones(3).sum()))"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    version, prefix, total = done.stdout.split()
    assert version == "2.13.0+cpu" and prefix == str(env) and float(total) == 3.0
    assert not (env / "pyvenv.cfg").exists()  # its own interpreter, not a venv of this machine's


def test_cpu_lock_records_every_wheel_with_its_hash(cpu_project):
    project = ProjectPaths(cpu_project)
    (cpu,) = read_lock(project.lockfile, project.root)["cpu"]
    names = {a.name for a in cpu.pypi}
    assert {"torch", "numpy", "transformers", "safetensors", "einops", "packaging", "ninja"} <= names
    torch = next(a for a in cpu.pypi if a.name == "torch")
    assert torch.version == "2.13.0+cpu"
    mirror = torch_cpu_mirror()
    if mirror is not None:  # pip took it from a local wheelhouse; the lock names PyTorch's index, the mirror entry maps it
        assert torch.location.startswith("https://download.pytorch.org/whl/cpu/torch-2.13.0")
        assert sha256_of(mirror / file_name_of(torch.location)) == torch.sha256
    assert all(len(a.sha256) == 64 for a in cpu.pypi)
    # conda-forge's python and the pip conda pairs with it (pip brings setuptools and wheel)
    assert {r.name for r in cpu.conda} == {"python", "pip", "setuptools", "wheel"} and not cpu.fallback
    env = project.env("cpu")
    assert (env / "bin" / "pip").is_file() and "(cpu) " in (env / "bin" / "activate").read_text()


def test_cpu_reinstall_from_warm_cache_is_a_no_op(cpu_project):
    project = ProjectPaths(cpu_project)
    summary = install.install_environment(project, "cpu")
    assert summary.status == "up-to-date" and summary.seconds < 5
    assert install.locked_environment_digest(project, "cpu") == summary.digest


def test_install_without_lock_is_one_sentence(tmp_path):
    done = cli.run("install", "--env", "cpu", project=tmp_path)
    assert done.returncode == 3 and done.stderr.count("\n") == 1 and "pixi.lock" in done.stderr


def test_inside_the_entered_environment_the_resolver_works_from_any_folder(cpu_project, tmp_path):
    """`source <env>/bin/activate` as the summary says: its python cannot run the resolver (it holds torch,
    not py-rattler) and says so with the command that works; that command, on PATH there, works from any
    folder for the environment's project."""
    env = cpu_project / ".resolver" / "envs" / "cpu"
    entered = f". {env / 'bin' / 'activate'} && "
    inside = subprocess.run(["sh", "-c", entered + "python -m resolver install --env cpu"], cwd=REPO,
                            env=cli.environ(project=cpu_project), capture_output=True, text=True, timeout=300,
                            stdin=subprocess.DEVNULL)
    assert inside.returncode == 3 and "Traceback" not in inside.stderr, inside.stderr[-2000:]
    (line,) = inside.stderr.splitlines()
    assert line.startswith(f"error: this Python ({env / 'bin' / 'python'}) cannot run the resolver: it lacks ")
    assert line.endswith("Fix: run `mamba-resolver install --env cpu` instead: it runs the resolver with the Python "
                         "that has them.")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    followed = subprocess.run(["sh", "-c", entered + "mamba-resolver install --env cpu --json"], cwd=elsewhere,
                              env=cli.environ(), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert followed.returncode == 0, followed.stderr[-2000:]
    document = json.loads(followed.stdout)
    assert document["status"] == "up-to-date" and document["path"] == str(env)
