"""Generated files are code: `build --matrix --format github|gitlab|slurm` writes pixi.toml's fleet into CI YAML
and a shell script, and a value there must never become a job, a step or a command.

Two guards, each tested on its own:

* read time: every value of ``[tool.resolver.fleet]`` a matrix format reads (the kernel channel, each class's
  name, architectures, platform, backend, toolkit and its source, strategy) is checked where pixi.toml is read:
  a value outside its form is one sentence naming the field and the fix, exit 3, before any file is written;
* the writers: YAML comes from a YAML library and reads back as the very values; the Slurm script takes each
  value as a quoted array element or an assignment, so even a value the reader never let through stays data.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from support import cli, engine_files, projects

from resolver.core.errors import BadInput, ExitCode
from resolver.fleet import engines

WORKSPACE = """\
[workspace]
name = "fleet"
channels = ["conda-forge"]
platforms = ["linux-64", "linux-aarch64"]
"""

CLASSES = {
    "cuda12-sm80-sm90": {"key": "0123456789abcdef", "archs": ["8.0", "9.0"], "node-count": 2,
                         "nodes": ["a100-01", "h100-01"], "torch": "torch==2.9.1+cu126", "python": "3.12",
                         "platform": "linux-64", "backend": "cuda", "backend-version": "12.6", "toolkit": "nvcc 12.6",
                         "toolkit-source": "environment", "strategy": "build"},
    "rocm6-gfx90a": {"key": "fedcba9876543210", "archs": ["gfx90a"], "node-count": 1, "nodes": ["mi210-01"],
                     "torch": "torch==2.9.1+rocm6.2", "python": "3.12", "platform": "linux-64", "backend": "rocm",
                     "backend-version": "6.2", "toolkit": "hipcc 6.2", "toolkit-source": "system",
                     "strategy": "build"},
    "cuda12-sm90-arm": {"key": "00112233445566ff", "archs": ["9.0"], "node-count": 1, "nodes": ["gh200-01"],
                        "torch": "torch==2.9.1+cu126", "python": "3.12", "platform": "linux-aarch64",
                        "backend": "cuda", "backend-version": "12.6", "toolkit": "nvcc 12.6",
                        "toolkit-source": "environment", "strategy": "build"},
}
CHANNEL = "https://kernels.example.org/mamba/"
PACKAGES = ["causal-conv1d", "mamba-ssm"]


def manifest_text(channel: str | None = CHANNEL, classes: dict | None = None) -> str:
    """A fleet's pixi.toml (what `lock --fleet` writes of it), every string written by a TOML library."""
    import tomlkit

    fleet: dict = {"target": "auto"}
    if channel is not None:
        fleet["kernel-channel"] = channel
    fleet["classes"] = CLASSES if classes is None else classes
    return WORKSPACE + "\n" + tomlkit.dumps({"tool": {"resolver": {"fleet": fleet}}})


def with_value(field: str, value) -> str:
    """The fleet's pixi.toml with one field changed: ``kernel-channel``, ``name`` (a class's) or a class's key."""
    classes = json.loads(json.dumps(CLASSES))
    if field == "kernel-channel":
        return manifest_text(value)
    if field == "name":
        classes[value] = classes.pop("cuda12-sm80-sm90")
    else:
        classes["cuda12-sm80-sm90"][field] = value
    return manifest_text(CHANNEL, classes)


# ------------------------------------------------------------------------------------------ read time
# each field a matrix format reads, with values that are code in YAML or shell, and values out of their form
REFUSED = [
    ("kernel-channel", "/shared/$(touch MARKER)"),
    ("kernel-channel", "/shared/`id`"),
    ("kernel-channel", "https://k.example.org/x\njobs: {}"),
    ("kernel-channel", "https://k.example.org/x\u2028evil: 1"),
    ("kernel-channel", "/shared/k' ; touch MARKER ; '"),
    ("kernel-channel", "--output=/etc/passwd"),
    ("kernel-channel", "ftp://k.example.org/c"),
    ("name", "cuda12\nevil"),
    ("name", "Cuda12"),
    ("archs", ["9.0\n"]),
    ("archs", ["9.0", "$(touch MARKER)"]),
    ("archs", ["sm_90 a"]),
    ("archs", "9.0"),
    ("platform", "linux-64\nevil-job:\n  script: [id]"),
    ("platform", "linux-65"),
    ("backend", "cuda; id"),
    ("toolkit", "nvcc 12.6\n  - run: id"),
    ("toolkit", "nvcc $(id)"),
    ("toolkit-source", "system\r"),
    ("strategy", "build\x1b[2J"),
    ("nodes", ["h100-01", "a\u202eb"]),
    ("torch", "torch==2.9.1\x00"),
]


@pytest.mark.parametrize("field,value", REFUSED, ids=[f"{f}-{i}" for i, (f, _) in enumerate(REFUSED)])
def test_a_value_the_matrix_reads_outside_its_form_is_refused_at_read_time(tmp_path, field, value):
    project = projects.project(tmp_path / "project", with_value(field, value))
    for engine in (engines.FORMATS[REFUSED.index((field, value)) % len(engines.FORMATS)], "json"):
        how = ("--json",) if engine == "json" else ("--format", engine)
        done = cli.run("build", "--matrix", *how, project=project)
        assert done.returncode == ExitCode.BAD_INPUT, (engine, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and "\njobs:" not in done.stdout and "#SBATCH" not in done.stdout
        if engine == "json":
            assert json.loads(done.stdout)["exit_code"] == ExitCode.BAD_INPUT
            continue
        assert done.stdout == ""
        (line,) = done.stderr.strip().splitlines()
        shown = "[tool.resolver.fleet.classes]" if field == "name" else f"tool.resolver.fleet.{field}" \
            if field == "kernel-channel" else f"tool.resolver.fleet.classes.cuda12-sm80-sm90.{field}"
        assert shown in line and ". Fix: " in line, line
    assert not list(project.rglob("MARKER"))


def test_the_values_lock_fleet_writes_pass_and_the_matrix_carries_them(tmp_path):
    project = projects.project(tmp_path / "project", manifest_text())
    done = cli.run("build", "--matrix", "--json", project=project, env={"RESOLVER_KERNEL_RECIPES": None})
    assert done.returncode == 0, done.stderr
    include = json.loads(done.stdout)["include"]
    assert {(e["environment"], e["archs"], e["platform"]) for e in include} == {
        ("cuda12-sm80-sm90", "8.0,9.0", "linux-64"), ("rocm6-gfx90a", "gfx90a", "linux-64"),
        ("cuda12-sm90-arm", "9.0", "linux-aarch64")}


def test_every_reader_of_the_fleet_table_checks_it(tmp_path):
    """Not only `build --matrix`: whatever reads [tool.resolver.fleet] (a node's setup, `lock --fleet` again) reads
    it checked, also through a view of pixi.toml that skipped the whole-manifest check."""
    from resolver.project.pixi_toml import read_pixi_toml

    path = projects.project(tmp_path / "project", with_value("kernel-channel", "/k/$(id)")) / "pixi.toml"
    with pytest.raises(BadInput) as caught:
        _ = read_pixi_toml(path, whole=False).tool.fleet
    assert caught.value.code == ExitCode.BAD_INPUT and "kernel-channel" in caught.value.message


def test_lock_fleet_refuses_a_kernel_channel_it_would_record(tmp_path):
    project = projects.project(tmp_path / "project", WORKSPACE)
    done = cli.run("lock", "--fleet", str(tmp_path / "nodes"), "--kernel-channel", "/shared/$(touch MARKER)",
                   "--no-conda", "--no-pypi", project=project)
    assert done.returncode == ExitCode.REFUSED and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: --kernel-channel '/shared/$(touch MARKER)' holds '$', '(', ')'") and "Fix:" in line
    assert (project / "pixi.toml").read_text() == WORKSPACE


# ------------------------------------------------------------------------------------------ the writers
# Each test below gives the writers values the reader above never lets through: the writers alone must keep
# them data (the second guard of the class).
BASE_ENTRY = {"package": "mamba-ssm", "variant": "mamba-ssm@cuda12-sm90", "environment": "cuda12-sm90", "archs": "9.0",
              "platform": "linux-64", "runs-on": "ubuntu-latest", "toolkit": "nvcc 12.6",
              "requires": "linux-64, nvcc 12.6; no GPU", "command": "python -m resolver build --variant mamba-ssm@cuda12-sm90"}
ENTRY_FIELDS = tuple(BASE_ENTRY)
INJECTED = ("$(touch MARKER)", "`touch MARKER`", "'$(touch MARKER)'", "\"$(touch MARKER)\"", "\\$(touch MARKER)",
            "\ntouch MARKER\n", "';touch MARKER;'", "\";touch MARKER;\"", "${IFS}touch${IFS}MARKER",
            "\nevil:\n  stage: build\n  script: [touch MARKER]\n", "\n      - run: touch MARKER\n",
            "\ndefaults:\n  run:\n    shell: sh -c 'touch MARKER; {0}'\n", "\u2028evil: 1", "\x85evil: 1",
            "${{ github.token }}", "#", " # ", ": x", "- x", "{a: b}", "[a]", "&a", "*a", "!!python/object:os.system",
            "%TAG", "|", ">", "\r", "\t", "\x1b]0;x\x07", "\u202e", "é", "\U0001f980", "--wrap=touch MARKER", "on",
            "null", "0x1f", "9.0", "")


def entry(**values) -> dict:
    out = dict(BASE_ENTRY)
    out.update(values)
    return out


def github_steps(workflow: dict) -> dict[str, list]:
    return {name: job["steps"] for name, job in workflow["jobs"].items()}


@pytest.fixture(scope="module")
def clean() -> dict:
    """The files for a value-free matrix: what a hostile value must leave unchanged around it."""
    return {engine: engines.render(engine, [entry()], "/shared/kernels") for engine in engines.FORMATS}


def check_github(text: str, entries: list[dict], clean: dict) -> None:
    workflow = yaml.safe_load(text)
    assert len(engine_files.comment_lines(text)) == len(engine_files.comment_lines(clean["github"]))
    assert set(workflow) == {"name", "on", "jobs"}
    expected = yaml.safe_load(clean["github"])
    builds = [name for name in workflow["jobs"] if name.startswith("build")]
    assert set(workflow["jobs"]) == {"current", "publish", *builds}
    include = [e for name in builds for e in workflow["jobs"][name]["strategy"]["matrix"]["include"]]
    assert include == entries  # the values, read back as they were
    steps = github_steps(expected)
    for name, job in workflow["jobs"].items():  # no step added, none changed
        assert job["steps"] == steps["build" if name in builds else name]
        assert set(job) == set(expected["jobs"]["build" if name in builds else name])
    assert workflow["on"] == expected["on"] and "defaults" not in workflow
    assert engine_files.problems("github-workflow", workflow) == []


def check_gitlab(text: str, entries: list[dict], clean: dict) -> None:
    pipeline = yaml.safe_load(text)
    expected = yaml.safe_load(clean["gitlab"])
    assert len(engine_files.comment_lines(text)) == len(engine_files.comment_lines(clean["gitlab"]))
    builds = pipeline["publish"]["needs"]
    assert set(pipeline) == {"stages", "default", "publish", *builds}  # no job added
    assert pipeline["publish"] == {**expected["publish"], "needs": builds}
    assert pipeline["stages"] == expected["stages"] and pipeline["default"] == expected["default"]
    listed = []
    for name in builds:
        job = pipeline[name]
        assert name.startswith("build-") and job["script"] == expected["build-linux-64"]["script"]
        assert set(job) == set(expected["build-linux-64"])
        variants = [v for row in job["parallel"]["matrix"] for v in row["VARIANT"]]
        assert {engines.gitlab_tag(e) for e in entries if e["variant"] in variants} == set(job["tags"])
        listed += variants
    assert sorted(listed) == sorted(e["variant"] for e in entries)
    assert engine_files.problems("gitlab-ci", pipeline) == []


def check_slurm(text: str, entries: list[dict], channel: str | None, clean: dict, scratch: Path) -> None:
    """Bash reads the script's values back as they were; the script, run as `bash kernels.sbatch` and as each
    array task (every program it starts a recorder), passes each value as one argument and runs nothing else."""
    from resolver.fleet.channel import local_folder

    scratch.mkdir(parents=True, exist_ok=True)
    script = scratch / "kernels.sbatch"
    script.write_text(text)
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    assert len(engine_files.comment_lines(text)) == len(engine_files.comment_lines(clean["slurm"]))
    assert engine_files.sbatch_directives(text) == [  # no option added to what sbatch reads
        line.replace("--array=0-0", f"--array=0-{len(entries) - 1}") for line in engine_files.sbatch_directives(clean["slurm"])]
    folder = local_folder(channel) if channel else None
    assert engine_files.slurm_values(text) == {
        "variants": [e["variant"] for e in entries], "archs": [e["archs"] for e in entries],
        "platforms": [e["platform"] for e in entries], "known_platforms": sorted({e["platform"] for e in entries}),
        "default_channel": [str(folder) if folder else ""]}
    # submitted with bash: the array of this platform's tasks, then the publish step
    done, calls = engine_files.run_slurm(script, scratch, env={"KERNEL_PLATFORM": entries[0]["platform"]})
    platform = entries[0]["platform"] or "linux-64"  # KERNEL_PLATFORM empty: this machine's (the stub's x86_64)
    tasks = ",".join(str(i) for i, e in enumerate(entries) if e["platform"] == platform)
    sbatch = [c for c in calls if c[0] == "sbatch"]
    if folder is None or not tasks:  # nothing to publish to, or nothing of this platform: one sentence, no job
        assert done.returncode == 2 and sbatch == [] and done.stderr.startswith(b"error: ")
    else:
        assert done.returncode == 0, done.stderr
        assert sbatch[0] == ["sbatch", "--parsable", f"--chdir={scratch}", f"--array={tasks}", str(script)]
        wrap = next(a for a in sbatch[1] if a.startswith("--wrap="))[len("--wrap="):]
        assert engine_files.run_wrap(wrap, scratch) == [
            ["python", "-m", "resolver", "channel", "publish", "--to", str(folder)]]
        assert [c[0] for c in calls] == ["uname", "sbatch", "sbatch"]
    # each task: the resolver's Python, given its variant as one argument, or a refusal for another platform
    for task, e in list(enumerate(entries))[:3]:
        done, calls = engine_files.run_slurm(script, scratch, task=task, env={"SLURM_CPUS_PER_TASK": "2"})
        if e["platform"] == "linux-64":
            assert done.returncode == 0, done.stderr
            assert calls[-1] == ["python", "-m", "resolver", "build", "--variant", e["variant"], "--jobs", "2"]
        else:
            assert done.returncode == 2 and [c[0] for c in calls] == ["uname"] * len(calls)
    assert not [p for p in scratch.rglob("*MARKER*")], "a value ran as a command"


def check_expanding_writer(engine: str, entries: list[dict], channel: str | None, clean: dict) -> None:
    """GitHub expands ``${{ … }}`` in any string of a workflow, GitLab ``$VARIABLE`` in a job's tags (and the
    variant is a variable's value): a value holding one is refused by the writer (YAML cannot quote it away);
    any other reads back."""
    marker = "${{" if engine == "github" else "$"
    held = [e[k] for e in entries for k in (ENTRY_FIELDS if engine == "github" else ("variant",))]
    held += [engines.gitlab_tag(e) for e in entries] if engine == "gitlab" else []
    if any(marker in value for value in held):
        with pytest.raises(ValueError):
            engines.render(engine, entries, channel)
        return
    (check_github if engine == "github" else check_gitlab)(engines.render(engine, entries, channel), entries, clean)


def test_an_engine_s_own_expansion_in_a_value_is_refused_by_its_writer():
    with pytest.raises(ValueError):
        engines.render("github", [entry(variant="x${{ github.token }}")], None)
    with pytest.raises(ValueError):
        engines.render("gitlab", [entry(**{"runs-on": "self-hosted-$CI_JOB_TOKEN"})], None)


def test_a_command_substitution_in_the_kernel_channel_never_runs_when_bash_kernels_sbatch_runs(tmp_path, clean):
    """The example of the class: `$(…)` in pixi.toml's kernel channel ran when the documented `bash kernels.sbatch`
    ran. Each quoting of it stays one folder name, handed to `channel publish` as one argument."""
    for k, injected in enumerate(("$(touch MARKER)", "`touch MARKER`", "';touch MARKER;'", "\"$(touch MARKER)\"")):
        channel = f"/shared/kernels{injected}"
        entries = [entry(), entry(variant="causal-conv1d@cuda12-sm90", package="causal-conv1d")]
        check_slurm(engines.render("slurm", entries, channel), entries, channel, clean, tmp_path / str(k))


def test_a_line_break_in_a_value_adds_no_job_to_the_gitlab_pipeline_and_no_step_to_the_github_workflow(clean):
    """The other examples: a newline in a class's platform added a job to the GitLab pipeline, and one in the
    kernel channel (in the workflow's comment) a `defaults` shell around every GitHub step."""
    job = "\nevil:\n  stage: build\n  script: [touch MARKER]\n"
    wrapper = "\ndefaults:\n  run:\n    shell: sh -c 'touch MARKER; {0}'\n"
    for field in ENTRY_FIELDS:
        for value in (job, wrapper, "x\u2028defaults: {run: {shell: x}}"):
            entries = [entry(**{field: BASE_ENTRY[field] + value})]
            check_gitlab(engines.render("gitlab", entries, "/k" + value), entries, clean)
            check_github(engines.render("github", entries, "/k" + value), entries, clean)


def test_the_job_current_fails_on_an_edited_workflow_and_on_a_refused_pixi_toml(tmp_path):
    """`current` compares the committed workflow with the generated one byte for byte, under its own shell: an
    added job, step or `defaults` fails it, and so does a pixi.toml the resolver refuses (it stays red, never
    green on a file nobody generated)."""
    import sys

    project = projects.project(tmp_path / "project", manifest_text())
    done = cli.run("build", "--matrix", "--format", "github", project=project)
    assert done.returncode == 0, done.stderr
    path = project / engines.FILES["github"]
    path.parent.mkdir(parents=True)
    path.write_text(done.stdout)
    current = yaml.safe_load(done.stdout)["jobs"]["current"]["steps"][-1]
    assert current["shell"] == "bash"  # a `defaults: run: shell:` in the file does not apply to it
    python = Path(sys.executable).parent
    env = {**cli.environ(project), "GITHUB_WORKFLOW_REF": f"org/repo/{engines.FILES['github']}@refs/heads/main",
           "PATH": f"{python}{os.pathsep}{os.environ['PATH']}"}

    def run_current() -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "--noprofile", "--norc", "-c", current["run"]], cwd=project, env=env,
                              capture_output=True, text=True, timeout=120)

    assert run_current().returncode == 0
    generated = path.read_text()
    for edit in (generated + "  evil:\n    runs-on: ubuntu-latest\n    steps:\n      - run: touch MARKER\n",
                 generated + "defaults:\n  run:\n    shell: sh -c 'touch MARKER; {0}'\n",
                 generated.replace("    steps:\n", "    steps:\n      - run: touch MARKER\n", 1)):
        assert edit != generated
        path.write_text(edit)
        done = run_current()
        assert done.returncode == 1 and "this workflow is older than pixi.lock" in done.stdout
    path.write_text(generated)
    (project / "pixi.toml").write_text(with_value("platform", "linux-64\nevil"))
    done = run_current()
    assert done.returncode != 0 and "tool.resolver.fleet.classes.cuda12-sm80-sm90.platform" in done.stderr
    assert not list(project.rglob("MARKER"))


def test_a_nul_character_never_reaches_a_shell_script():
    """bash cannot hold a NUL: the reader refuses it (a control character), and the writer refuses to write it."""
    with pytest.raises(ValueError):
        engines.render("slurm", [entry(variant="a\0b")], None)
    path_text = with_value("toolkit", "nvcc 12.6\0")
    from resolver.project.manifest import Manifest

    with pytest.raises(BadInput):
        Manifest.parse(path_text)


# ------------------------------------------------------------------------------------------ fuzz property (a)
# hostile strings in every field every matrix format reads: refused when pixi.toml is read (exit 3), or written so
# that each engine reads back exactly the values, the YAML validates against the engine's schema, and the Slurm
# script, run as `bash kernels.sbatch` and as its tasks, starts nothing but sbatch and the resolver with them.
DEFAULT_EXAMPLES = 20
LONG_EXAMPLES = int(os.environ.get("RESOLVER_FUZZ_EXAMPLES", "2000")) // 4  # each example runs bash a few times


def hostile_text():
    from hypothesis import strategies as st

    fragment = st.one_of(st.sampled_from(INJECTED), st.text(max_size=6),
                         st.characters(max_codepoint=0x9f), st.sampled_from("\u2028\u2029\x85\u202e\ufeff"))
    return st.one_of(st.text(max_size=24), st.lists(fragment, min_size=1, max_size=5).map("".join))




def _phases():
    """Without shrinking unless RESOLVER_FUZZ_SHRINK=1: each example runs bash, and shrinking one takes minutes."""
    from hypothesis import Phase

    return tuple(Phase) if os.environ.get("RESOLVER_FUZZ_SHRINK") else (Phase.explicit, Phase.reuse, Phase.generate)


READ_FIELDS = ("kernel-channel", "name", "archs", "platform", "backend", "toolkit", "toolkit-source", "strategy")


def _read_property(examples: int, *, random: bool):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from resolver.fleet import record
    from resolver.project.manifest import Manifest

    clean_files = {engine: engines.render(engine, [entry()], "/shared/kernels") for engine in engines.FORMATS}

    @settings(max_examples=examples, deadline=None, database=None, derandomize=not random, print_blob=True,
              suppress_health_check=list(HealthCheck), phases=_phases())
    @given(field=st.sampled_from(READ_FIELDS), text=hostile_text(), where=st.integers(0, 1))
    def check(tmp_path_factory_dir, field, text, where):
        value = ([text] if where == 0 else ["9.0", text]) if field == "archs" else text
        try:
            manifest = Manifest.parse(with_value(field, value))
            entries = record.matrix(manifest, PACKAGES)
        except BadInput as refused:
            assert refused.code == ExitCode.BAD_INPUT and "\n" not in refused.message
            return
        channel = record.kernel_channel(manifest)
        check_github(engines.render("github", entries, channel), entries, clean_files)
        check_gitlab(engines.render("gitlab", entries, channel), entries, clean_files)
        scratch = Path(tmp_path_factory_dir) / "slurm"
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
        check_slurm(engines.render("slurm", entries, channel), entries, channel, clean_files, scratch)

    return check


def _write_property(examples: int, *, random: bool):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    clean_files = {engine: engines.render(engine, [entry()], "/shared/kernels") for engine in engines.FORMATS}
    value = hostile_text().map(lambda t: t.replace("\0", ""))  # NUL: refused by both guards (test above)
    hostile_entry = st.fixed_dictionaries({f: st.one_of(st.just(BASE_ENTRY[f]), value) for f in ENTRY_FIELDS})

    @settings(max_examples=examples, deadline=None, database=None, derandomize=not random, print_blob=True,
              suppress_health_check=list(HealthCheck), phases=_phases())
    @given(entries=st.lists(hostile_entry, min_size=1, max_size=3, unique_by=lambda e: e["variant"]),
           channel=st.one_of(st.none(), value.map(lambda t: "/shared/" + t)))
    def check(tmp_dir, entries, channel):
        check_expanding_writer("github", entries, channel, clean_files)
        check_expanding_writer("gitlab", entries, channel, clean_files)
        import shutil

        scratch = Path(tmp_dir) / "slurm"
        shutil.rmtree(scratch, ignore_errors=True)
        check_slurm(engines.render("slurm", entries, channel), entries, channel, clean_files, scratch)

    return check


def test_fuzz_values_in_pixi_toml_are_refused_or_read_back_by_every_engine(tmp_path):
    pytest.importorskip("hypothesis")
    _read_property(DEFAULT_EXAMPLES, random=False)(tmp_path)


def test_fuzz_values_the_writers_are_given_read_back_and_never_run(tmp_path):
    pytest.importorskip("hypothesis")
    _write_property(DEFAULT_EXAMPLES, random=False)(tmp_path)


@pytest.mark.fuzz
def test_fuzz_generated_files_long_run(tmp_path):
    pytest.importorskip("hypothesis")
    _read_property(LONG_EXAMPLES, random=True)(tmp_path)
    _write_property(LONG_EXAMPLES, random=True)(tmp_path)


def test_a_kernel_package_whose_name_is_no_package_name_is_refused(tmp_path):
    """The package names come from recipes (RESOLVER_KERNEL_RECIPES): each becomes part of a variant key in every
    CI file, so a name that is not a package name is one sentence, exit 3, and no file."""
    import shutil

    from support.gpu_double import TINY_RECIPE

    recipe = tmp_path / "recipe"
    shutil.copytree(TINY_RECIPE, recipe)
    text = (recipe / "recipe.yaml").read_text()
    assert "name: tiny-ext\n" in text
    (recipe / "recipe.yaml").write_text(text.replace("name: tiny-ext\n", "name: \"tiny-ext$(touch MARKER)\"\n", 1))
    project = projects.project(tmp_path / "project", manifest_text())
    done = cli.run("build", "--matrix", "--format", "slurm", project=project,
                   env={"RESOLVER_KERNEL_RECIPES": str(recipe)})
    assert done.returncode == ExitCode.BAD_INPUT and done.stdout == "" and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "kernel package name 'tiny-ext$(touch MARKER)' is not a package name" in line and "Fix:" in line
