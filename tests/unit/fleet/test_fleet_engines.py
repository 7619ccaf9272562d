"""`build --matrix --format github|gitlab|slurm`: the fleet's kernel variants as the file each engine reads,
generated from the lock. The GitHub workflow and the GitLab pipeline are checked against the engines'
published schemas (tests/data/schemas, sources named in its README); the Slurm script is run for real by
tests/journeys/test_fleet_node.py, on a one-node Slurm cluster where one can start."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import DATA, REPO, cli, engine_files, projects, shipped_manifest

from resolver.fleet import engines

SCHEMAS = DATA / "schemas"
PACKAGES = ["causal-conv1d", "mamba-ssm"]


def schema(name: str):
    import jsonschema

    validator = jsonschema.Draft7Validator(json.loads((SCHEMAS / f"{name}.json").read_text()))
    validator.check_schema(validator.schema)
    return validator


def problems(validator, document) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in validator.iter_errors(document)]


@pytest.fixture(scope="module")
def fleet_project(tmp_path_factory) -> Path:
    """tests/data/machines locked as one fleet (without the solves): 14 classes that build kernels, of two
    platforms and three kinds of runner."""
    from support.fleet_profiles import machine_profiles

    root = tmp_path_factory.mktemp("engines")
    machine_profiles(root / "nodes")
    project = projects.project(root / "project")
    done = cli.run("lock", "--fleet", str(root / "nodes"), "--no-conda", "--no-pypi", "--kernel-channel",
                   "https://kernels.example.org/mamba/", project=project)
    assert done.returncode == 0, done.stderr[-2000:]
    return project


@pytest.fixture(scope="module")
def matrix(fleet_project) -> list[dict]:
    done = cli.run("build", "--matrix", "--json", project=fleet_project)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)["include"]


def generated(project: Path, engine: str) -> str:
    done = cli.run("build", "--matrix", "--format", engine, project=project)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    as_json = json.loads(cli.run("build", "--matrix", "--format", engine, "--json", project=project).stdout)
    assert as_json["text"] == done.stdout and as_json["file"] == engines.FILES[engine]
    return done.stdout


def test_the_github_workflow_validates_and_builds_each_variant_of_the_lock_once(fleet_project, matrix):
    text = generated(fleet_project, "github")
    workflow = yaml.safe_load(text)
    assert problems(schema("github-workflow"), workflow) == []
    assert set(workflow["jobs"]) == {"current", "build", "publish"}
    build = workflow["jobs"]["build"]
    assert build["strategy"]["matrix"]["include"] == matrix  # the very entries `build --matrix --json` gives
    assert len({e["variant"] for e in matrix}) == len(matrix) and {e["package"] for e in matrix} == set(PACKAGES)
    assert build["needs"] == "current" and workflow["jobs"]["publish"]["needs"] == "build"
    assert build["runs-on"] == "${{ matrix.runs-on }}"
    runs = [s.get("run", "") for s in build["steps"]]
    assert 'python -m resolver build --variant "$VARIANT"' in runs
    assert {e["runs-on"] for e in matrix} >= {"ubuntu-latest", "ubuntu-24.04-arm"}
    used = set(re.findall(r"(?<![.\w])matrix\.([a-z-]+)", text))
    assert used <= set(matrix[0]), used - set(matrix[0])
    publish = [s.get("run", "") for s in workflow["jobs"]["publish"]["steps"]]
    assert "python -m resolver channel publish --from built --to site" in publish
    # the same lock gives the same bytes
    assert generated(fleet_project, "github") == text


def test_the_workflow_says_when_it_is_older_than_the_lock(fleet_project, tmp_path):
    """The job `current`, run as GitHub runs a step (bash, GITHUB_WORKFLOW_REF set): passes on the workflow the
    lock gives, fails with the command to run once the fleet changed."""
    project = tmp_path / "checkout"
    shutil.copytree(fleet_project, project, ignore=shutil.ignore_patterns(".resolver"))
    path = project / engines.FILES["github"]
    path.parent.mkdir(parents=True)
    path.write_text(generated(project, "github"))
    step = yaml.safe_load(path.read_text())["jobs"]["current"]["steps"][-1]["run"]
    env = {**os.environ, "RESOLVER_PROJECT": str(project), "GITHUB_WORKFLOW_REF":
           f"org/repo/{engines.FILES['github']}@refs/heads/main",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}

    def run_step() -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-e", "-c", step], cwd=project, env=env, capture_output=True, text=True,
                              timeout=120)

    assert Path(sys.executable).with_name("python").exists()
    done = run_step()
    assert done.returncode == 0, done.stdout + done.stderr
    # a node type leaves the fleet: the lock changes, the workflow does not
    toml = (project / "pixi.toml").read_text()
    (project / "pixi.toml").write_text(re.sub(r'\n\[tool\.resolver\.fleet\.classes\.cuda12-sm90\]\n(.+\n)+?\n', "\n",
                                              toml, count=1))
    assert (project / "pixi.toml").read_text() != toml
    done = run_step()
    assert done.returncode == 1
    assert (f"::error file={engines.FILES['github']}::this workflow is older than pixi.lock: run "
            f"'python -m resolver build --matrix --format github > {engines.FILES['github']}'") in done.stdout
    assert "-      matrix" not in done.stdout and "-            variant: causal-conv1d@cuda12-sm90" in done.stdout


def test_the_gitlab_child_pipeline_validates_with_one_parallel_matrix_job_per_kind_of_runner(fleet_project, matrix):
    pipeline = yaml.safe_load(generated(fleet_project, "gitlab"))
    assert problems(schema("gitlab-ci"), pipeline) == []
    builds = {name: job for name, job in pipeline.items() if name.startswith("build-")}
    variants = [v for job in builds.values() for row in job["parallel"]["matrix"] for v in row["VARIANT"]]
    assert sorted(variants) == sorted(e["variant"] for e in matrix)  # each variant once
    by_variant = {e["variant"]: e for e in matrix}
    for job in builds.values():
        (tag,) = job["tags"]
        assert {engines.gitlab_tag(by_variant[v]) for row in job["parallel"]["matrix"] for v in row["VARIANT"]} == {tag}
        assert job["stage"] == "build" and 'python -m resolver build --variant "$VARIANT"' in job["script"]
    assert {"build-linux-64", "build-linux-aarch64"} <= set(builds)
    assert builds["build-linux-64"]["tags"] == ["saas-linux-medium-amd64"]
    assert any(tag.startswith("self-hosted-linux-64-hipcc") for job in builds.values() for tag in job["tags"])
    publish = pipeline["publish"]
    assert sorted(publish["needs"]) == sorted(builds) and publish["artifacts"]["paths"] == ["public"]
    assert "python -m resolver channel publish --to public" in publish["script"]


def test_the_slurm_script_is_one_array_task_per_variant_and_a_dependent_publish(fleet_project, matrix, tmp_path):
    text = generated(fleet_project, "slurm")
    script = tmp_path / "kernels.sbatch"
    script.write_text(text)
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    assert f"#SBATCH --array=0-{len(matrix) - 1}\n" in text
    values = engine_files.slurm_values(text)
    assert values["variants"] == [e["variant"] for e in matrix]
    assert values["archs"] == [e["archs"] for e in matrix]
    platforms = values["platforms"]
    assert platforms == [e["platform"] for e in matrix]
    assert "--dependency=afterok:" in text and "resolver channel publish --to" in text
    # without a channel folder to publish to, nothing is submitted: one sentence with the fix
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30,
                          env={k: v for k, v in os.environ.items() if k != "KERNEL_CHANNEL_DIR"})
    assert done.returncode == 2 and done.stderr.startswith("error: no channel folder to publish to. Fix: ")
    # a task whose variant is of another platform than its node says so and how to submit it
    other = next(i for i, p in enumerate(platforms) if p == "linux-aarch64")
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "SLURM_ARRAY_TASK_ID": str(other)})
    if os.uname().machine == "x86_64":
        assert done.returncode == 2 and "builds for linux-aarch64, and this node is linux-64" in done.stderr
        assert "KERNEL_PLATFORM=linux-aarch64 bash" in done.stderr


def test_the_parent_pipeline_in_the_docs_validates_and_triggers_the_generated_child():
    text = (REPO / "docs" / "fleet.md").read_text()
    (block,) = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    parent = yaml.safe_load(block)
    assert problems(schema("gitlab-ci"), parent) == []
    child = engines.FILES["gitlab"]
    assert f"python -m resolver build --matrix --format gitlab > {child}" in parent["kernel-pipeline"]["script"]
    assert parent["kernel-pipeline"]["artifacts"]["paths"] == [child]
    assert parent["kernels"]["trigger"]["include"] == [{"artifact": child, "job": "kernel-pipeline"}]
    assert f"build --matrix --format github > {engines.FILES['github']}" in text
    assert f"build --matrix --format slurm > {engines.FILES['slurm']}" in text


def _entries(count: int) -> list[dict]:
    return [{"package": "mamba-ssm", "variant": f"mamba-ssm@cuda12-sm{k}", "environment": f"cuda12-sm{k}",
             "archs": "9.0", "platform": "linux-64", "runs-on": "ubuntu-latest", "toolkit": "nvcc 12.6",
             "requires": "linux-64, nvcc 12.6; no GPU", "command": f"python -m resolver build --variant mamba-ssm@cuda12-sm{k}"}
            for k in range(count)]


def test_a_matrix_past_an_engines_limit_is_split_into_jobs_that_still_validate():
    entries = _entries(600)
    workflow = yaml.safe_load(engines.render("github", entries))
    assert problems(schema("github-workflow"), workflow) == []
    builds = [name for name in workflow["jobs"] if name.startswith("build")]
    assert builds == ["build-1", "build-2", "build-3"] and workflow["jobs"]["publish"]["needs"] == builds
    assert [len(workflow["jobs"][b]["strategy"]["matrix"]["include"]) for b in builds] == [256, 256, 88]
    pipeline = yaml.safe_load(engines.render("gitlab", entries))
    assert problems(schema("gitlab-ci"), pipeline) == []
    assert [len(pipeline[f"build-linux-64-{k}"]["parallel"]["matrix"][0]["VARIANT"]) for k in (1, 2, 3)] == [200, 200, 200]
    assert pipeline["publish"]["needs"] == ["build-linux-64-1", "build-linux-64-2", "build-linux-64-3"]


def test_the_schemas_reject_what_the_engines_reject():
    """The checks above can fail: a job without runs-on, a parallel:matrix that is no list."""
    workflow = yaml.safe_load(engines.render("github", _entries(2)))
    del workflow["jobs"]["build"]["runs-on"]
    assert problems(schema("github-workflow"), workflow)
    pipeline = yaml.safe_load(engines.render("gitlab", _entries(2)))
    pipeline["build-linux-64"]["parallel"]["matrix"] = {"VARIANT": "x"}
    assert problems(schema("gitlab-ci"), pipeline)


def test_format_without_matrix_and_a_fleet_without_kernels_are_one_sentence(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = cli.run("build", "--format", "slurm", project=project)
    assert done.returncode == 2 and "error: --format applies to --matrix" in done.stderr
    cpu = tmp_path / "cpu"
    cpu.mkdir()
    (cpu / "login-01.json").write_text(json.dumps({"platform": "linux-64", "glibc": "2.35", "python": "3.11.7",
                                                   "nvidia": None, "amd": None, "cuda_toolkit": None}))
    assert cli.run("lock", "--fleet", str(cpu), "--no-conda", "--no-pypi", project=project).returncode == 0
    done = cli.run("build", "--matrix", "--format", "github", project=project)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "error: no class of the fleet in pixi.toml builds kernels: there is no matrix to write" in done.stderr


@pytest.mark.parametrize("text", ["9.0", "8.0,9.0", "on", "No", "null", ".inf", "*.conda", "a: b", "#x", "-x", "@v",
                                  "${{ matrix.variant }}", "x\ny\n", "x\n  y", " lead\nx", "tab\there", "é"])
def test_yaml_scalars_read_back_as_the_text_they_were(text):
    assert yaml.safe_load(engines.to_yaml({"key": text, "list": [text]})) == {"key": text, "list": [text]}
