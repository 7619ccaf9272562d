"""What the hostile-input tests share: planted trees and locks, and the one error line a refusal prints."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from resolver.lock.lockfile import LockedEnv, LockedPlatform, PypiArtifact
from support import projects

MANIFEST = '[workspace]\nname = "t"\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n'


def _unshare_ok() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


def one_error(result: subprocess.CompletedProcess, code: int) -> str:
    """The one `error:` line of a run that exited ``code`` without a traceback."""
    assert result.returncode == code, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr + result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def tree(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (links not followed) with its content hash: the state of a tree
    (the project lock a run takes, ``.resolver/state/project.lock`` and its folders, left out)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if rel.endswith((".resolver", ".resolver/state", ".resolver/state/project.lock")):
            continue
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def write_project_lock(project: Path, location: str, sha256: str, env_name: str = "cpu", *,
                       wheel: tuple[str, str] = ("tiny", "1.0")) -> None:
    """pixi.toml + a pixi.lock (written by the resolver's own writer) of one environment holding one
    wheel at ``location`` (its entry named and versioned ``wheel``); the environment is then renamed to
    ``env_name`` in the text, as an attacker would edit a shared lock."""
    art = PypiArtifact(*wheel, location, sha256)
    env = LockedEnv("cpu", LockedPlatform("linux-64", "linux-64", ()), ("https://conda.anaconda.org/conda-forge/",),
                    (), (art,), fallback=True, python=f"{sys.version_info.major}.{sys.version_info.minor}")
    projects.project(project, MANIFEST, lock=[env])
    text = (project / "pixi.lock").read_text()
    if env_name != "cpu":
        assert "\n  cpu:\n" in text
        text = text.replace("\n  cpu:\n", f"\n  {json.dumps(env_name)}:\n")
        (project / "pixi.lock").write_text(text)


needs_mount = pytest.mark.skipif(not _unshare_ok(), reason="needs root and unshare to mount a small tmpfs")
