"""The GPU journey end to end on machine doubles: `setup --target cuda13.0 --sysroot DOUBLE`.

A double (tests/data/doubles/, docs/sysroot.md) replaces the hardware only: its GPUs and driver come from
the capture, everything else runs here for real: the plan, the lock (conda: python and the CUDA 13.0
toolkit from the toolchain channel standing in for conda-forge; PyPI through this machine's pip
configuration: torch 2.14.1, PyPI's CUDA 13.0 build), the install (a conda prefix), the kernel build
(the environment's own nvcc, with no CUDA on PATH or CUDA_HOME, only the double's architectures) and
verify (the extension loads, its fat binary carries exactly the plan's architectures, the model runs
on the reference path, GPU-only checks skipped).
The kernel package list is substituted with the tests' tiny CUDA extension
(RESOLVER_KERNEL_RECIPES); the real packages take the same path behind `-m kernels`
(tests/unit/kernels/test_build_kernels.py). Every stage is driven through the CLI, so a stage whose interface
no longer fits the next one fails here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from support import REPO, cli, projects, shipped_manifest
from support.gpu_double import DOUBLES, TINY_RECIPE, without_system_cuda
from support.projects import conda_workspace

from resolver.verify.inenv.fatbin import archs_of_library

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the GPU journey compiles C++/CUDA code: needs g++")


def setup(project: Path, double: Path | str, *args: str, channel: Path | None = None, timeout: float = 900,
          extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = without_system_cuda(dict(os.environ, RESOLVER_PROJECT=str(project), RESOLVER_KERNEL_RECIPES=str(TINY_RECIPE)))
    if channel is not None:
        env["RESOLVER_CONDA_CHANNELS"] = str(channel)  # the toolchain channel stands in for conda-forge
    env.update(extra or {})
    return cli.run("setup", "--target", "cuda13.0", "--sysroot", str(double), "--json", *args, environment=env,
                   timeout=timeout)


def steps(result: dict) -> dict[str, dict]:
    return {step["name"]: step for step in result["steps"]}


def checks(result: dict) -> dict[str, dict]:
    return {check["name"]: check for check in result["verify"]["checks"]}


def installed_extension(project: Path) -> Path:
    (found,) = (project / ".resolver" / "envs" / "cuda13").glob("lib/python3*/site-packages/tiny_ext_cuda*.so")
    return found


@pytest.fixture(scope="module")
def project(tmp_path_factory, conda_channel) -> Path:
    return projects.project(tmp_path_factory.mktemp("gpu-journey"), toolchain=conda_channel)


@pytest.fixture(scope="module")
def h100_run(project, conda_channel) -> tuple[subprocess.CompletedProcess, float, list[str] | None]:
    """The first setup, its time, and the architectures of the extension it installed (read at once:
    the mixed node's setup installs other kernels later)."""
    started = time.monotonic()
    done = setup(project, DOUBLES / "h100-1x-driver580", channel=conda_channel)
    seconds = time.monotonic() - started
    return done, seconds, archs_of_library(str(installed_extension(project))) if done.returncode == 0 else None


@pytest.fixture(scope="module")
def h100_rerun(project, h100_run, conda_channel) -> subprocess.CompletedProcess:
    """The same setup again, right after the first (before the mixed node changes the environment's
    kernels and the progress test builds another variant into the channel: both ask for this fixture),
    whatever order the tests run in."""
    assert h100_run[0].returncode == 0, h100_run[0].stderr[-3000:]
    return setup(project, DOUBLES / "h100-1x-driver580", channel=conda_channel)


def test_h100_double_goes_from_probe_to_verified_kernels(project, h100_run):
    done, seconds, installed_archs = h100_run
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Traceback" not in done.stderr
    result = json.loads(done.stdout)
    assert result["complete"] is True
    by_name = steps(result)
    assert [s["name"] for s in result["steps"]] == ["probe", "plan", "lock", "install", "patch", "build", "verify"]
    assert {name: by_name[name]["status"] for name in by_name} == {
        "probe": "done", "plan": "done", "lock": "done", "install": "done", "patch": "not-needed",
        "build": "done", "verify": "done"}
    # probe: the double's GPU and driver, this machine's host
    assert "NVIDIA H100 80GB HBM3 (sm_90)" in by_name["probe"]["detail"]
    assert "580.65.06" in by_name["probe"]["detail"]
    # plan: torch from PyPI (its default build is cu130), kernels for sm_90 only, compiled by the
    # environment's own CUDA 13.0 toolkit (pinned through cuda-version)
    plan = result["plan"]
    assert plan["backend"] == "cuda" and plan["torch"]["variant"] == "cu130"
    assert plan["torch"]["source"]["kind"] == "pypi" and plan["torch"]["requirement"] == "torch==2.14.1"
    assert plan["kernels"]["arch_list"] == ["9.0"]
    assert plan["kernels"]["toolkit_source"] == "environment" and plan["kernels"]["toolkit"] == "nvcc 13.0"
    assert plan["conda_packages"]["cuda-version"] == "13.0.*" and "cuda-nvcc" in plan["conda_packages"]
    assert any(t["rule"] == "torch-source" for t in plan["trace"])
    # lock + install: a conda prefix with its own python and nvcc, and the CUDA torch
    lock_text = (project / "pixi.lock").read_text()
    assert "torch-2.14.1-" in lock_text and "/cuda-nvcc-13.0" in lock_text and "__cuda=13" in lock_text
    env = project / ".resolver" / "envs" / "cuda13"
    assert (env / "resolver-ready.json").is_file() and (env / "conda-meta").is_dir() and (env / "bin" / "nvcc").is_file()
    # build: the stand-in kernels, compiled for the double's architecture only
    build = by_name["build"]["result"]
    assert build["toolkit"]["home"] == str(env) and build["toolkit"]["version"].startswith("13.0")
    (package,) = build["packages"]
    assert package["name"] == "tiny-ext" and package["status"] == "built" and package["archs"] == ["9.0"]
    assert Path(package["file"]).is_file() and Path(package["file"]).parent == project / ".resolver" / "channel" / "linux-64"
    assert installed_archs == ["sm_90"]
    # verify: loads, carries exactly the plan's archs, reference path runs, GPU-only checks skipped with the reason
    assert result["verify"]["ok"] is True
    found = checks(result)
    assert found["load:tiny_ext_cuda"]["status"] == "pass"
    assert found["archs:tiny_ext_cuda"]["status"] == "pass" and found["archs:tiny_ext_cuda"]["carried"] == ["sm_90"]
    assert found["gpu"]["status"] == "skip" and "no GPU is visible" in found["gpu"]["detail"]
    assert found["logits:float32"]["status"] == "pass"
    assert not [c for c in found.values() if c["status"] == "fail"]
    print(f"\ncold GPU journey on the H100 double: {seconds:.1f} s; "
          + ", ".join(f"{s['name']} {s['seconds']:.1f}s" for s in result["steps"]))


def test_a_second_setup_compiles_nothing(h100_rerun):
    done = h100_rerun
    assert done.returncode == 0, done.stderr[-3000:]
    by_name = steps(json.loads(done.stdout))
    assert by_name["lock"]["status"] == "skipped" and by_name["install"]["status"] == "skipped"
    assert [p["status"] for p in by_name["build"]["result"]["packages"]] == ["cached"]
    assert by_name["build"]["result"]["compiled"] == 0
    assert by_name["verify"]["status"] == "skipped"


def test_mixed_a100_t4_node_builds_both_architectures_into_the_same_environment(project, h100_rerun, conda_channel):
    assert h100_rerun.returncode == 0, h100_rerun.stderr[-3000:]
    done = setup(project, DOUBLES / "a100-t4-driver580", channel=conda_channel)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout)
    by_name = steps(result)
    assert result["plan"]["kernels"]["arch_list"] == ["7.5", "8.0"]
    # same torch build, same lock, same environment: only the kernels differ
    assert by_name["lock"]["status"] == "skipped" and by_name["install"]["status"] == "skipped"
    (package,) = by_name["build"]["result"]["packages"]
    assert package["status"] == "built" and package["archs"] == ["7.5", "8.0"]
    assert archs_of_library(str(installed_extension(project))) == ["sm_75", "sm_80"]
    found = checks(result)
    assert found["archs:tiny_ext_cuda"]["status"] == "pass"
    assert found["archs:tiny_ext_cuda"]["carried"] == ["sm_75", "sm_80"]
    assert result["verify"]["ok"] is True


def test_a_kernel_build_shows_its_progress_with_an_estimate_from_the_last_build(project, h100_run, h100_rerun):
    """What a user sees while kernels compile, here not on a terminal (a log, CI): the translation units
    done of the total with the time so far and what is left, estimated from the H100 run's build of the
    same package, a line every 10 s while it runs and one when it ends."""
    assert h100_run[0].returncode == 0, h100_run[0].stderr[-3000:]
    env = without_system_cuda(cli.environ(project, {"RESOLVER_KERNEL_RECIPES": str(TINY_RECIPE)}))
    done = cli.run("build", "--env", "cuda13", "--arch", "8.6", "--no-install", environment=env, cwd=project, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"\n$ python -m resolver build --env cuda13 --arch 8.6 --no-install\n{done.stdout}{done.stderr}")
    progress = [line for line in done.stderr.splitlines() if line.startswith("tiny-ext: translation units: ")]
    assert progress, done.stderr
    assert re.fullmatch(r"tiny-ext: translation units: (\d+)/\1 \(100%\) \S+ elapsed, ~0s left "
                        r"\(\S+ expected from the last build\)", progress[-1]), progress
    assert "tiny-ext: built in" in done.stdout


def _copy_double(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(DOUBLES / "h100-1x-driver580", folder)
    return folder


def _unknown_gpu(tmp_path: Path) -> Path:
    """A container without nvidia-smi: only /proc names the GPU, and no table knows the name."""
    folder = _copy_double(tmp_path, "unknown-gpu")
    (folder / "commands.toml").write_text("")
    info = folder / "proc" / "driver" / "nvidia" / "gpus" / "0000:1a:00.0" / "information"
    info.parent.mkdir(parents=True)
    info.write_text("Model: \t\t NVIDIA Zorblax 9000\nIRQ:   \t\t 180\nBus Type: \t PCIe\n")
    return folder


def _old_driver(tmp_path: Path) -> Path:
    folder = _copy_double(tmp_path, "old-driver")
    for path in [folder / "_commands" / "01-nvidia-smi-query-gpu.txt", folder / "_commands" / "02-nvidia-smi.txt",
                 folder / "proc" / "driver" / "nvidia" / "version"]:
        path.write_text(path.read_text().replace("580.65.06", "470.82.01").replace("CUDA Version: 13.0",
                                                                                   "CUDA Version: 11.4"))
    return folder


def _bad_meta(tmp_path: Path) -> Path:
    folder = _copy_double(tmp_path, "bad-meta")
    (folder / "_meta.toml").write_text('system = "Linux"\nmachine = x86_64\n')
    return folder


@pytest.mark.parametrize("make, code, words", [
    (_unknown_gpu, 2, "compute capability of NVIDIA GPU 'NVIDIA Zorblax 9000' is unknown"),
    (_old_driver, 2, "470.82.01"),
    (_bad_meta, 3, "is not valid TOML"),
])
def test_bad_doubles_are_one_sentence_and_install_nothing(tmp_path, make, code, words):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = setup(project, make(tmp_path), timeout=120)
    assert done.returncode == code, (done.returncode, done.stderr[-2000:])
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and words in errors[0], done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert json.loads(done.stdout)["exit_code"] == code
    assert not (project / "pixi.lock").exists()
    assert not (project / ".resolver" / "envs").exists()


def test_a_fallback_environment_without_a_matching_compiler_is_refused_before_the_install(tmp_path):
    """No conda channel answers (conda-forge is out of reach, no mirror named): the environment falls back
    to a virtual environment of this Python, which brings no CUDA toolkit. torch 2.14.1 is CUDA 13.0 and
    this machine's only nvcc is 12.4 (a script that answers `--version` as nvcc 12.4 does, standing for
    another machine's toolkit): setup says so right after the lock (exit 7), not after a 5 GB install."""
    home = tmp_path / "cuda-12.4"
    (home / "bin").mkdir(parents=True)
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                    "echo 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    nvcc.chmod(0o755)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = setup(project, DOUBLES / "h100-1x-driver580", extra={"CUDA_HOME": str(home)}, timeout=600)
    assert done.returncode == 7, done.stderr[-3000:]
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "environment cuda13 is a fallback without its own CUDA toolkit" in error
    assert "the kernels need nvcc 13.x to match torch 2.14.1+cu130, and this machine has nvcc 12.4" in error
    assert "make a conda channel reachable" in error and error.endswith("with --target cuda12.")
    assert "is a fallback" in (project / "pixi.lock").read_text().splitlines()[0]
    assert not (project / ".resolver" / "envs").exists()
    plan = cli.run("plan", "--target", "cuda13.0", "--json", timeout=60,
                   env={"RESOLVER_SYSROOT": str(DOUBLES / "h100-1x-driver580"), "CUDA_HOME": str(home)})
    assert plan.returncode == 0, plan.stderr
    kernels = json.loads(plan.stdout)["kernels"]
    assert kernels["toolkit_source"] == "environment" and kernels["toolkit"] == "nvcc 13.0"


@pytest.mark.kernels
def test_real_kernels_through_the_gpu_journey_on_the_h100_double(conda_channel):
    """The same journey with the real causal-conv1d and mamba-ssm (tens of minutes on 2 cores).

    The project lives in .resolver/kernel-journey so a second run hits the compiled kernels; each
    step's wall time and the run's peak memory go to report.json there (and are printed)."""
    project = REPO / ".resolver" / "kernel-journey"
    project.mkdir(parents=True, exist_ok=True)
    (project / "pixi.toml").write_text(conda_workspace(shipped_manifest(), conda_channel))
    env = without_system_cuda(dict(os.environ, RESOLVER_PROJECT=str(project), RESOLVER_CONDA_CHANNELS=str(conda_channel)))
    env.pop("RESOLVER_KERNEL_RECIPES", None)
    runs = []
    for _ in range(2):
        started = time.monotonic()
        done = cli.run("setup", "--target", "cuda13.0", "--sysroot", str(DOUBLES / "h100-1x-driver580"), "--json",
                       environment=env, cwd=project, timeout=4 * 3600)
        assert done.returncode == 0, done.stderr[-4000:]
        result = json.loads(done.stdout)
        runs.append({"wall_s": round(time.monotonic() - started, 1),
                     "steps": {s["name"]: {"status": s["status"], "seconds": s["seconds"],
                                           "peak_rss_mib": s["peak_rss_mib"]} for s in result["steps"]},
                     "packages": [{k: p[k] for k in ("name", "version", "status", "seconds", "archs")}
                                  for p in steps(result)["build"]["result"]["packages"]],
                     "verify": [(c["name"], c["status"]) for c in result["verify"]["checks"]]})
        assert result["verify"]["ok"] is True
    (project / "report.json").write_text(json.dumps(runs, indent=2) + "\n")
    print("\n" + json.dumps(runs, indent=2))
    cold, warm = runs
    assert [p["name"] for p in cold["packages"]] == ["causal-conv1d", "mamba-ssm"]
    site = next((project / ".resolver" / "envs" / "cuda13").glob("lib/python3*/site-packages"))
    for module in ("causal_conv1d_cuda", "selective_scan_cuda"):
        (library,) = site.glob(f"{module}*.so")
        assert archs_of_library(str(library)) == ["sm_90"], module
    assert all(p["status"] == "cached" for p in warm["packages"]) and warm["wall_s"] <= 10
