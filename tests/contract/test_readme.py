"""Every command README.md shows is run here, and the two set-up commands agree with CI."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from support import REPO, cli, shipped_manifest
from support.readme import EXPECTED_EXIT

README = (REPO / "README.md").read_text(encoding="utf-8")


def tour_commands() -> list[str]:
    blocks = re.findall(r"```console\n(.*?)```", README, flags=re.S)
    return [line[2:].strip() for block in blocks for line in block.splitlines() if line.startswith("$ ")]


def setup_commands() -> list[str]:
    block = re.search(r"## Two commands\s+```bash\n(.*?)```", README, flags=re.S).group(1)
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_readme_gives_exactly_two_setup_commands_and_ci_runs_the_second():
    first, second = setup_commands()
    assert first.endswith("python -m resolver setup") and "pip install -e ." in first
    assert second == "./run-tests"
    ci = (REPO / ".ci" / "run").read_text()
    assert "./run-tests" in ci.split("exec", 1)[1]


def test_every_tour_command_has_an_expectation():
    assert tour_commands() and set(tour_commands()) == set(EXPECTED_EXIT)


@pytest.mark.parametrize("command", sorted(EXPECTED_EXIT))
def test_tour_command_runs(command, cpu_project):
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "resolver"]
    done = cli.run(*argv[3:], project=cpu_project, cwd=REPO, timeout=300)
    assert done.returncode == EXPECTED_EXIT[command], done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    if "rocm6.0" in command:
        assert "rocm6.0-bf16-inline" in done.stdout
    if "v100" in command:
        assert "CUDA 13 dropped sm_70" in done.stderr and "--target cuda12" in done.stderr


def test_first_command_runs_the_main_job_end_to_end(cpu_project):
    """`resolver setup` on this machine's embedded default: CPU plan, CPU environment, verify on the
    reference path; a second run skips every step."""
    first = cli.run("setup", "--json", project=cpu_project, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    report = json.loads(first.stdout)
    assert report["complete"] and report["plan"]["backend"] == "cpu"
    assert report["plan"]["torch"]["version"] == "2.13.0"
    assert report["verify"]["ok"] and report["environment"].endswith(".resolver/envs/cpu")
    second = cli.run("setup", "--json", project=cpu_project, timeout=300)
    assert second.returncode == 0, second.stderr[-3000:]
    statuses = {s["name"]: s["status"] for s in json.loads(second.stdout)["steps"]}
    assert statuses == {"probe": "done", "plan": "done", "lock": "skipped", "install": "skipped",
                        "patch": "not-needed", "build": "not-needed", "verify": "skipped"}


def test_setup_for_another_machine_stops_after_the_lock(tmp_path):
    """`setup --target rocm6.0` on a machine without AMD GPUs: plan + lock, then what remains."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = cli.run("setup", "--target", "rocm6.0", "--dry-run", "--json", project=project, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [p["id"] for p in report["plan"]["patches"]] == ["rocm6.0-bf16-inline"]
    statuses = {s["name"]: s["status"] for s in report["steps"]}
    assert statuses["lock"] == "would-run"
    assert all(statuses[s] == "deferred" for s in ("install", "patch", "build", "verify"))
    assert any("rocm6.0-bf16-inline" in line for line in report["remaining"])
