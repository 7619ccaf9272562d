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
