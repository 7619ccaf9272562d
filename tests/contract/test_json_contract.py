"""JSON as a contract: a schema per command in resolver/schemas/, a `schema_version` in every document,
and every command's output (each of its forms, and its errors) validated against them. verify, doctor
and bench on a real environment are validated in tests/journeys/test_walkthrough.py, setup's full run there and
in the GPU journey."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from support import DATA, REPO, cli, projects, shipped_manifest
from support.schemas import SCHEMAS, registry, schema, validate, validate_output

from resolver.cli import COMMANDS

DOUBLE = DATA / "doubles" / "h100-1x-driver580"


def checked(command: str, *argv: str) -> dict:
    code, out, err = cli.in_process(command, *argv, "--json")
    assert "Traceback" not in err
    return validate_output(command, out, code)


def test_every_command_has_a_schema_and_every_schema_is_one():
    names = {p.stem for p in SCHEMAS.glob("*.json")}
    assert set(COMMANDS) | {"error"} <= names, f"add resolver/schemas/<command>.json for {set(COMMANDS) - names}"
    for name in names:
        document = schema(name)
        jsonschema.Draft202012Validator.check_schema(document)
        assert document["$id"] == f"urn:mamba-resolver:{name}"
        assert document.get("description"), name  # says what the document is, for the people reading it
    registry()  # every cross-reference names a schema that exists
    for name in names:
        for ref in _refs(schema(name)):
            target = ref.split("#", 1)[0]
            assert not target or target.removeprefix("urn:mamba-resolver:") in names, (name, ref)


def _refs(node):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_the_package_ships_the_schemas():
    text = (REPO / "pyproject.toml").read_text()
    assert '"schemas/*.json"' in text


def test_a_schema_catches_a_missing_or_renamed_key():
    document = checked("plan", "--target", "cpu")
    broken = {k: v for k, v in document.items() if k != "torch"} | {"pytorch": document["torch"]}
    with pytest.raises(jsonschema.ValidationError):
        validate("plan", broken)
    with pytest.raises(jsonschema.ValidationError):
        validate("plan", {k: v for k, v in document.items() if k != "schema_version"})


def test_probe_in_each_form(tmp_path):
    assert checked("probe")["schema_version"] == 1
    assert checked("probe", "--sysroot", str(DOUBLE))["nvidia"]["gpus"]
    assert checked("probe", "--from-report", str(DATA / "logs" / "mamba-267-no-kernel-image.log"))["nvidia"]
    captured = checked("probe", "--capture", str(tmp_path / "capture"))
    assert captured["profile"]["platform"]


def test_plan_for_a_machine_a_fleet_and_a_refusal(tmp_path):
    assert checked("plan", "--target", "rocm6.0")["patches"]
    assert checked("plan", "--sysroot", str(DOUBLE))["kernels"]["arch_list"] == ["9.0"]
    fleet = checked("plan", "--fleet", str(DATA / "profiles"))
    assert fleet["classes"]
    code, out, _ = cli.in_process("plan", "--target", "cuda12.5", "--json")
    assert code == 2 and validate_output("plan", out, code)["id"] == "refused"


def test_setup_dry_run_and_patch(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = cli.run("setup", "--target", "rocm6.0", "--dry-run", "--json", project=project)
    assert done.returncode == 0, done.stderr[-2000:]
    document = validate_output("setup", done.stdout, 0)
    assert document["remaining"] and all("caveats" in s for s in document["steps"])
    assert checked("patch")["status"]


def test_errors_of_every_kind_fit_error_json(tmp_path):
    for argv in (("plan", "--target", "cuda99.0"), ("plan", "--target", "nonsense"), ("probe", "--sysroot", str(tmp_path / "x")),
                 ("bench", "--batch", "0")):
        code, out, err = cli.in_process(*argv, "--json")
        assert code != 0 and err.count("error: ") == 1
        validate("error", json.loads(out))


@pytest.fixture(scope="module")
def fleet_project(tmp_path_factory) -> Path:
    """A project whose lock holds a fleet's classes, locked without solving (--no-conda --no-pypi)."""
    return projects.project(tmp_path_factory.mktemp("fleet-project"),
                            files={"fleet/v100.json": (DATA / "profiles" / "v100.json").read_text()})


def test_lock_and_build_matrix(fleet_project):
    locked = cli.run("lock", "--fleet", str(fleet_project / "fleet"), "--no-conda", "--no-pypi", "--json",
                     project=fleet_project)
    assert locked.returncode == 0, locked.stderr[-2000:]
    assert validate_output("lock", locked.stdout, 0)["fleet"]["classes"]
    for checked_again in (cli.run("lock", "--check", "--json", project=fleet_project),  # current, or each reason
                          cli.run("lock", "--check", "--target", "cpu", "--no-pypi", "--json", project=fleet_project)):
        assert checked_again.returncode in (0, 1), checked_again.stderr[-2000:]
        document = validate_output("lock", checked_again.stdout, 0)
        assert document["current"] is (checked_again.returncode == 0)
        assert document["current"] or document["reasons"]
    matrix = cli.run("build", "--matrix", "--json", project=fleet_project)
    assert matrix.returncode == 0, matrix.stderr[-2000:]
    assert set(validate_output("build", matrix.stdout, 0)) == {"include"}  # GitHub's form, no more
    for engine in ("github", "gitlab", "slurm"):
        done = cli.run("build", "--matrix", "--format", engine, "--json", project=fleet_project)
        assert done.returncode == 0, done.stderr[-2000:]
        assert validate_output("build", done.stdout, 0)["format"] == engine


def test_install_and_build_in_an_installed_environment(cpu_project):
    installed = cli.run("install", "--env", "cpu", "--json", project=cpu_project)
    assert installed.returncode == 0, installed.stderr[-2000:]
    document = validate_output("install", installed.stdout, 0)
    assert document["status"] == "up-to-date"
    assert document["enter"] == {"pixi": "pixi shell -e cpu", "shell": f"source {cpu_project}/.resolver/envs/cpu/bin/activate"}
    refused = cli.run("build", "--env", "cpu", "--json", project=cpu_project)  # a CPU torch: one sentence, error.json
    assert refused.returncode == 7
    validate_output("build", refused.stdout, refused.returncode)


def test_channel_publish(tmp_path):
    from support import channel_factory as cf

    built = cf.build_channel(tmp_path / "built")
    done = cli.run("channel", "publish", "--from", str(built), "--to", str(tmp_path / "site"), "--json",
                   project=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert validate_output("channel", done.stdout, 0)["added"]


def test_a_probe_document_with_its_schema_version_is_a_profile_plan_and_a_fleet_read(tmp_path):
    code, out, _ = cli.in_process("probe", "--sysroot", str(DOUBLE), "--json")
    assert code == 0 and json.loads(out)["schema_version"] == 1
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    (fleet / "h100.json").write_text(out)
    code, plan, err = cli.in_process("plan", "--profile", str(fleet / "h100.json"), "--json")
    assert code == 0, err
    assert json.loads(plan)["kernels"]["arch_list"] == ["9.0"]
    code, classes, err = cli.in_process("plan", "--fleet", str(fleet), "--json")
    assert code == 0, err
    assert validate_output("plan", classes, code)["nodes"] == {"h100": json.loads(classes)["classes"][0]["environment"]}


def test_upgrade_and_rollback(cpu_project):
    planned = cli.run("upgrade", "--torch", "2.14", "--plan-only", "--json", project=cpu_project)
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert validate_output("upgrade", planned.stdout, 0)["stage"] in ("planned", "up-to-date")
    nothing = cli.run("rollback", "--json", project=cpu_project)  # nothing was promoted: one sentence, exit 0
    assert nothing.returncode == 0, nothing.stderr[-2000:]
    said = validate_output("rollback", nothing.stdout, 0)
    assert said["rolled_back"] is False and said["message"].startswith("nothing to roll back")
    unknown = cli.run("rollback", "--to", "nosuch", "--json", project=cpu_project)
    assert unknown.returncode == 2
    assert "no environment 'nosuch'; pixi.toml has: cpu" in validate_output("rollback", unknown.stdout, 2)["error"]
