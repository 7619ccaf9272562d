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

import pytest
from support import cli, projects

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
