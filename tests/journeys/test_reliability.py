"""Bad inputs: each is answered with one `error:` line and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from support import cli

H100 = {"platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "amd": None, "cuda_toolkit": None,
        "nvidia": {"driver_version": "550.54.15", "gpus": [{"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]}}


@dataclass(frozen=True)
class BadInput:
    name: str
    args: tuple[str, ...]
    prepare: Callable[[Path], None] = lambda project: None
    expect_in_error: str = ""
    env: tuple[tuple[str, str], ...] = ()


def _write(rel: str, content: str | bytes) -> Callable[[Path], None]:
    def prepare(project: Path) -> None:
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return prepare


def _profile(**changes) -> Callable[[Path], None]:
    data = json.loads(json.dumps(H100))
    for key, value in changes.items():
        data[key] = value
    return _write("p.json", json.dumps(data))


def _both(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def prepare(project: Path) -> None:
        for step in steps:
            step(project)
    return prepare


GOOD_MANIFEST = '[workspace]\nname = "t"\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n'
CPU_MANIFEST = GOOD_MANIFEST + '[feature.cpu.dependencies]\npython = "3.12.*"\n[environments]\ncpu = ["cpu"]\n'
CASES = [
    BadInput("profile file missing", ("plan", "--profile", "missing.json"), expect_in_error="does not exist"),
    BadInput("profile truncated JSON", ("plan", "--profile", "p.json"), _write("p.json", json.dumps(H100)[:40]),
             "not valid JSON"),
    BadInput("profile empty file", ("plan", "--profile", "p.json"), _write("p.json", ""), "not valid JSON"),
    BadInput("profile is a list", ("plan", "--profile", "p.json"), _write("p.json", "[1, 2]"), "not a JSON object"),
    BadInput("profile is a folder", ("plan", "--profile", "."), expect_in_error="profile"),
    BadInput("profile not UTF-8", ("plan", "--profile", "p.json"), _write("p.json", b"\xff\xfe{\x00}"), "profile"),
    BadInput("profile unknown platform", ("plan", "--profile", "p.json"), _profile(platform="linux-65"), "unknown platform"),
    BadInput("profile without python", ("plan", "--profile", "p.json"), _profile(python=None), "'python'"),
    BadInput("profile python not a version", ("plan", "--profile", "p.json"), _profile(python="three"), "python"),
    BadInput("profile gpus not a list", ("plan", "--profile", "p.json"),
             _profile(nvidia={"driver_version": "550.54.15", "gpus": "H100"}), "gpus"),
    BadInput("profile bad compute capability", ("plan", "--profile", "p.json"),
             _profile(nvidia={"driver_version": "550.54.15", "gpus": [{"name": "X", "compute_capability": "abc"}]}),
             "compute_capability"),
    BadInput("profile bad gfx arch", ("plan", "--profile", "p.json"),
             _profile(nvidia=None, amd={"rocm_version": "6.0.2", "gpus": [{"name": "MI250X", "gfx_arch": "gfx"}]}),
             "gfx_arch"),
    BadInput("profile nvidia is a string", ("plan", "--profile", "p.json"), _profile(nvidia="yes"), "nvidia"),
    BadInput("target misspelt", ("plan", "--target", "cuda", "--profile", "p.json"), _profile(), "did you mean"),
    BadInput("target unknown backend", ("plan", "--target", "metal", "--profile", "p.json"), _profile(), "unknown target"),
    BadInput("target rocm without version", ("plan", "--target", "rocm", "--profile", "p.json"), _profile(),
             "unknown target"),
    BadInput("python version garbage", ("plan", "--python", "abc", "--profile", "p.json"), _profile(), "python"),
    BadInput("python 2.7", ("plan", "--python", "2.7", "--profile", "p.json"), _profile(), "2.7"),
    BadInput("unknown command option", ("probe", "--frobnicate"), expect_in_error="unrecognized arguments"),
    BadInput("unknown command", ("frobnicate",), expect_in_error="invalid choice"),
    BadInput("sysroot missing", ("probe", "--sysroot", "no-such-dir"), expect_in_error="no-such-dir"),
    BadInput("sysroot is a file", ("probe", "--sysroot", "p.json"), _profile(), "p.json"),
    BadInput("manifest corrupted", ("lock", "--target", "cpu"), _write("pixi.toml", "[workspace\nname = "), "pixi.toml"),
    BadInput("manifest binary", ("lock", "--target", "cpu"), _write("pixi.toml", b"\x00\x01\x02\xff"), "pixi.toml"),
    BadInput("lock file corrupted", ("install", "--env", "cpu"),
             _both(_write("pixi.toml", GOOD_MANIFEST), _write("pixi.lock", "version: 7\nenvironments: [:::")), "pixi.lock"),
    BadInput("lock file missing", ("install", "--env", "cpu"), _write("pixi.toml", CPU_MANIFEST), "pixi.lock"),
    BadInput("lock file truncated", ("install", "--env", "cpu"),
             _both(_write("pixi.toml", GOOD_MANIFEST), _write("pixi.lock", "vers")), "pixi.lock"),
    BadInput("environment not in lock", ("install", "--env", "nosuchenv"),
             _both(_write("pixi.toml", GOOD_MANIFEST),
                   _write("pixi.lock", "version: 7\nplatforms:\n- name: linux-64\nenvironments: {}\npackages: []\n")),
             "nosuchenv"),
    BadInput("verify without environment", ("verify", "--env", "nosuchenv"), expect_in_error="nosuchenv"),
    BadInput("verify model folder missing", ("verify", "--model", "no-model-here"), expect_in_error="no-model-here"),
    BadInput("doctor log missing", ("doctor", "--log", "no-such.log"), expect_in_error="no-such.log"),
    BadInput("build unknown package", ("build", "--package", "flash-attn"), expect_in_error="flash-attn"),
    BadInput("build arch garbage", ("build", "--arch", "sm_banana"), expect_in_error="banana"),
    BadInput("bench compare missing env", ("bench", "--env", "nosuchenv", "--compare", "other"),
             expect_in_error="nosuchenv"),
    BadInput("setup unknown target", ("setup", "--target", "cuda99"), expect_in_error="cuda99"),
    BadInput("setup bad profile", ("setup", "--profile", "p.json"), _write("p.json", "{"), "not valid JSON"),
    BadInput("environment neither declared nor locked", ("install", "--env", "cpu"), _write("pixi.toml", GOOD_MANIFEST),
             "no environment 'cpu'"),
]


# the exit code of each case's category (docs/errors.md); every other case is bad input (3)
USAGE, ENVIRONMENT = 2, 7
EXIT = {"target misspelt": USAGE, "target unknown backend": USAGE, "target rocm without version": USAGE,
        "unknown command option": USAGE, "unknown command": USAGE, "build unknown package": USAGE,
        "setup unknown target": USAGE, "environment not in lock": ENVIRONMENT,
        "environment neither declared nor locked": USAGE,
        "verify without environment": ENVIRONMENT, "bench compare missing env": ENVIRONMENT,
        "python version garbage": USAGE, "python 2.7": USAGE}  # --python is one flag type: a usage error
IDS = {2: ("usage", "refused"), 3: ("bad-input",), 7: ("environment",)}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_line(case: BadInput, tmp_path: Path) -> None:
    case.prepare(tmp_path)
    result = cli.run(*case.args, project=tmp_path, env=dict(case.env), text=False)
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == EXIT.get(case.name, 3), (result.returncode, stderr)
    assert "Traceback" not in stderr + result.stdout.decode("utf-8", "replace")
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    assert case.expect_in_error.lower() in errors[0].lower(), errors[0]


@pytest.mark.parametrize("case", CASES[:6] + CASES[13:16], ids=[c.name for c in CASES[:6] + CASES[13:16]])
def test_bad_input_json_error_object(case: BadInput, tmp_path: Path) -> None:
    case.prepare(tmp_path)
    result = cli.run(*case.args, "--json", project=tmp_path, env=dict(case.env), text=False)
    data = json.loads(result.stdout)
    assert result.returncode == data["exit_code"] == EXIT.get(case.name, 3), (result.returncode, data)
    assert data["id"] in IDS[result.returncode] and data["error"] and data["because"] and data["fix"]
    assert case.expect_in_error.lower() in data["error"].lower()


def test_read_only_project_folder(tmp_path: Path) -> None:
    """A project on a read-only file system (a real read-only bind mount when root, else chmod 555)."""
    project = tmp_path / "ro"
    project.mkdir()
    (project / "pixi.toml").write_text(GOOD_MANIFEST)
    command = cli.argv("lock", "--target", "cpu")
    if os.geteuid() == 0:
        if shutil.which("unshare") is None:
            pytest.skip("needs unshare to make a read-only mount as root")
        script = (f"mount --bind {project} {project} && mount -o remount,ro,bind {project} && "
                  f"exec {' '.join(shlex.quote(c) for c in command)}")
        command = ["unshare", "-m", "sh", "-c", script]
    else:  # pragma: no cover - CI runs as root
        project.chmod(0o555)
    env = dict(os.environ, RESOLVER_PROJECT=str(project))
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert result.returncode == 3, result.stderr  # bad input (a folder that cannot be written), never 70
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "read-only" in errors[0].lower() or "writ" in errors[0].lower(), errors[0]
