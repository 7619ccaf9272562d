"""The one TOML reader bounds what it hands on: tables or arrays nested past its depth, or a text past
its size, are one sentence naming the file (exit 3) in every form (nested inline tables, arrays, dotted
keys, table headers), at every depth between the bound and the interpreter's own limit, where commands
used to meet a RecursionError (exit 70) in whatever read the value next."""

from __future__ import annotations

import pytest
from support import cli

from resolver.core.errors import BadInput
from resolver.core.toml import MAX_CHARS, MAX_DEPTH, parse_toml, parse_toml_document

HEAD = '[workspace]\nname = "t"\nchannels = []\nplatforms = ["linux-64"]\n'


def nested(form: str, depth: int) -> str:
    if form == "inline tables":
        return "x = " + "{a = " * depth + "1" + "}" * depth + "\n"
    if form == "arrays":
        return "x = " + "[" * depth + "]" * depth + "\n"
    if form == "dotted keys":
        return ".".join(["a"] * depth) + " = 1\n"
    return "[" + ".".join(["a"] * depth) + "]\nx = 1\n"


FORMS = ("inline tables", "arrays", "dotted keys", "table headers")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("depth", [MAX_DEPTH + 2, 400])
def test_nesting_past_the_bound_is_one_sentence(form, depth):
    for parse in (parse_toml, parse_toml_document):
        with pytest.raises(BadInput, match="the table (nests tables or arrays more than 64 deep|is nested too "
                                           "deeply to be read|is not valid TOML .*nested more than)") as caught:
            parse(nested(form, depth), what="the table", fix="f")
        assert caught.value.code == 3


@pytest.mark.parametrize("form", FORMS)
def test_nesting_within_the_bound_is_read(form):
    assert parse_toml(nested(form, MAX_DEPTH - 2), what="t", fix="f")


def test_a_text_past_the_size_is_one_sentence():
    with pytest.raises(BadInput, match="is larger than 16 MiB"):
        parse_toml("# " + "x" * MAX_CHARS, what="t", fix="f")


@pytest.mark.parametrize("command", [("setup", "--dry-run"), ("lock", "--check")])
def test_a_deeply_nested_pixi_toml_exits_3(tmp_path, command):
    (tmp_path / "pixi.toml").write_text(HEAD + "[tool.other]\n" + nested("inline tables", MAX_DEPTH + 10))
    done = cli.run(*command, project=tmp_path, timeout=120)
    assert done.returncode == 3, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "nest" in done.stderr and "pixi.toml" in done.stderr
