import json

import pytest
from support import cli

from resolver.core.errors import ResolverError
from resolver.core.model import Target


def test_unknown_option_is_one_line_without_traceback():
    r = cli.run("probe", "--no-such-flag")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "--no-such-flag" in lines[0], lines
    assert "Fix:" in lines[0]


def test_unknown_option_with_json_prints_error_object():
    r = cli.run("probe", "--no-such-flag", "--json")
    assert r.returncode == 2
    error = json.loads(r.stdout)
    assert "--no-such-flag" in error["error"] and error["id"] == "usage" and error["exit_code"] == 2 and error["fix"]


def test_an_option_without_its_value_is_named():
    r = cli.run("plan", "--target")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--target" in lines[0], lines


@pytest.mark.parametrize("text,expected", [("cuda12.6", "cuda12.6"), ("cu126", "cuda12.6"), ("ROCm6.0", "rocm6.0"),
                                           ("rocm6.0.2", "rocm6.0.2"), ("cpu", "cpu"), ("auto", "auto")])
def test_target_parse(text, expected):
    assert str(Target.parse(text)) == expected


def test_unknown_target_suggests():
    with pytest.raises(ResolverError) as info:
        Target.parse("cuda")
    assert "did you mean" in str(info.value)


def _crash(*args, **kwargs):  # noqa: ANN002, ANN003
    raise RuntimeError("a bug")


def test_a_crash_log_lands_in_the_projects_logs_not_the_current_folder(tmp_path, monkeypatch):
    """An internal error (exit 70) run from a folder inside the project: its traceback goes to the
    project's .resolver/logs, and the folder it ran in gets nothing; outside any project, to the
    temporary folder (no .resolver made wherever a command ran)."""
    import tempfile

    import resolver.commands.plan as plan_command
    from resolver.cli import main

    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "pixi.toml").write_text('[workspace]\nname = "t"\nchannels = []\nplatforms = ["linux-64"]\n')
    monkeypatch.delenv("RESOLVER_PROJECT", raising=False)
    monkeypatch.setattr(plan_command, "run", _crash)  # a bug, where the last line of defence catches it
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(project / "docs")
    assert main(["plan"]) == 70
    logs = list((project / ".resolver" / "logs").glob("crash-*.log"))
    assert len(logs) == 1 and "RuntimeError: a bug" in logs[0].read_text()
    assert not (project / "docs" / ".resolver").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["plan"]) == 70
    assert not (elsewhere / ".resolver").exists() and list((tmp_path / "tmp").glob("crash-*.log"))
