"""The team journey: one person locks on their machine (its pip configuration points at local
folders), the lock is shared, a teammate installs it in another checkout whose pip configuration
points at no local folder, given only the mirror entries of pixi.toml. The lock holds no location of
the first machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import cli
from support.projects import torch_cpu_mirror


def test_a_lock_made_here_installs_in_a_second_checkout_with_only_mirror_entries(cpu_project, conda_channel,
                                                                                tmp_path, index_double):
    lock_text = (cpu_project / "pixi.lock").read_text()
    # no path of the first machine: its wheelhouse, its local indexes, its conda channel, its checkout
    for local in ("/opt/", "file://", str(conda_channel), str(cpu_project)):
        assert local not in lock_text, local
    assert not [line for line in lock_text.splitlines() if line.startswith("#")]  # not a fallback
    if torch_cpu_mirror() is None:
        pytest.skip("pip's configuration here has no local torch 2.13.0+cpu wheelhouse to act as the mirror")
    second = tmp_path / "teammate"
    second.mkdir()
    shutil.copy(cpu_project / "pixi.lock", second / "pixi.lock")
    # the teammate reaches PyPI's files through a mirror (in this suite, the loopback double of PyPI)
    manifest = (cpu_project / "pixi.toml").read_text().replace(
        "[tool.resolver.mirrors]\n", f'[tool.resolver.mirrors]\n"https://files.pythonhosted.org/packages" = "{index_double.files_url}"\n', 1)
    assert manifest != (cpu_project / "pixi.toml").read_text()
    (second / "pixi.toml").write_text(manifest)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "RESOLVER_"))}
    env.update(RESOLVER_PROJECT=str(second), PIP_CONFIG_FILE=os.devnull,
               XDG_CACHE_HOME=str(tmp_path / "teammate-cache"))  # another machine: none of our verified files
    done = cli.run("install", "--env", "cpu", "--channel", str(conda_channel), "--json", environment=env,
                   cwd=second, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["kind"] == "conda" and summary["path"] == str(second / ".resolver" / "envs" / "cpu")
    python = Path(summary["path"]) / "bin" / "python"
    ran = subprocess.run([str(python), "-c", "import sys, torch, transformers; print(torch.__version__, sys.prefix)"],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.split() == ["2.13.0+cpu", summary["path"]]
    # the teammate's checkout stays as shared: install wrote neither file
    assert (second / "pixi.lock").read_bytes() == (cpu_project / "pixi.lock").read_bytes()
    assert (second / "pixi.toml").read_text() == manifest
