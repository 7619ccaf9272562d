"""resolver/core/names.py, the one rule for each name and path that comes from input: its edges, one by one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resolver.core import names
from resolver.core.errors import BadInput, UsageError


# ------------------------------------------------------------------------------------- environment names
@pytest.mark.parametrize("name", ["a", "cpu", "cuda12", "rocm6-0", "0", "-", "a" * 64])
def test_env_names_pixi_allows(name):
    assert names.is_env_name(name) and names.check_env_name(name) == name and names.env_name_arg(name) == name


@pytest.mark.parametrize("name", ["", "a" * 65, "Cpu", "a_b", "a.b", "a/b", "..", ".", "./../../docs", "a b", "a\n",
                                  "é", None, 5, b"cpu", ["cpu"]])
def test_env_names_pixi_refuses(name):
    assert not names.is_env_name(name)
    with pytest.raises(BadInput) as info:
        names.check_env_name(name)
    assert "is not valid" in info.value.message and "64 characters" in info.value.message
    assert info.value.fix == "rename the environment in pixi.toml (e.g. 'cuda12') and lock again"


def test_an_env_name_error_says_where_and_takes_its_fix():
    with pytest.raises(BadInput) as info:
        names.check_env_name("A", where="pixi.lock", fix="restore it")
    assert info.value.message.startswith("environment name 'A' in pixi.lock is not valid") and info.value.fix == "restore it"
    with pytest.raises(BadInput) as info:
        names.check_env_name(5)
    assert info.value.message.startswith("environment name 5 (int) is not valid")


def test_a_long_env_name_is_shown_cut():
    with pytest.raises(BadInput) as info:
        names.check_env_name("x" * 65)
    assert "'" + "x" * 40 + "…'" in info.value.message and "x" * 41 not in info.value.message
    with pytest.raises(BadInput) as info:
        names.check_env_name("X" * 64)  # as long as allowed (invalid for its letters): shown whole
    assert repr("X" * 64) in info.value.message
    with pytest.raises(BadInput) as info:
        names.check_env_name("\x1b" * 3)
    assert "\\x1b" in info.value.message and "\x1b" not in info.value.message


def test_env_name_arg_is_a_usage_error():
    with pytest.raises(UsageError) as info:
        names.env_name_arg("../x")
    assert "is not valid" in info.value.message and info.value.fix == "pass the name of an environment in pixi.toml, e.g. --env cpu"


# ------------------------------------------------------------------------------------------------- paths
def test_inside_is_a_path_test_not_a_prefix_test(tmp_path):
    envs = tmp_path / "envs"
    (envs / "cpu").mkdir(parents=True)
    (tmp_path / "envs-evil").mkdir()
    assert names.inside(envs, envs / "cpu") and names.inside(envs, envs / "cpu" / "not-yet")
    assert not names.inside(envs, tmp_path / "envs-evil")  # a bare prefix test would say yes
    assert not names.inside(envs, tmp_path / "envs-evil" / "x")
    assert not names.inside(envs, envs / ".." / "envs-evil")
    assert not names.inside(envs, tmp_path)


def test_inside_the_file_system_root():
    assert names.inside("/", "/tmp") and names.inside("/", "/", strict=False) and not names.inside("/", "/", strict=True)


def test_inside_root_itself_counts_unless_strict(tmp_path):
    assert names.inside(tmp_path, tmp_path) and names.inside(tmp_path, tmp_path / ".")
    assert not names.inside(tmp_path, tmp_path, strict=True)
    assert names.inside(tmp_path, tmp_path / "a", strict=True)
    assert names.inside(str(tmp_path) + os.sep, tmp_path / "a", strict=True)  # a root given with its trailing slash


def test_inside_follows_symlinks(tmp_path):
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "out").symlink_to(tmp_path)
    (root / "in").symlink_to(root / "real")
    assert not names.inside(root, root / "out" / "secret")
    assert names.inside(root, root / "in" / "file")
    linked_root = tmp_path / "linked-root"
    linked_root.symlink_to(root)
    assert names.inside(linked_root, root / "real")  # the root is resolved too


def test_check_inside_returns_the_path_or_refuses(tmp_path):
    assert names.check_inside(tmp_path, tmp_path / "a", what="the copy of", fix="relock") == tmp_path / "a"
    with pytest.raises(BadInput) as info:
        names.check_inside(tmp_path, tmp_path / ".." / "x", what="the copy of", fix="relock")
    assert info.value.message == f"the copy of {tmp_path / '..' / 'x'} leads outside {tmp_path}" and info.value.fix == "relock"
    with pytest.raises(BadInput):
        names.check_inside(tmp_path, tmp_path, what="w", fix="f")  # the root itself is not inside it


@pytest.mark.parametrize("rel", ["a", "a/b", "a/b.c", "..a", "a..", "a\\b.txt"[:1]])
def test_plain_relative_paths(rel):
    assert names.check_relative(rel, what="w", fix="f") == rel


@pytest.mark.parametrize("rel", ["", "/a", "\\a", "a/../b", "..", ".", "a/./b", "a//b", "a/", "a\\..\\b", "a\0b", None, 3])
def test_relative_paths_that_are_not_plain(rel):
    with pytest.raises(BadInput) as info:
        names.check_relative(rel, what="the header", fix="f")
    assert info.value.message == f"the header {names.printable(repr(rel))} is not a plain relative path"
    assert info.value.fix == "f"


@pytest.mark.parametrize("name", ["torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl", "a", "..a", "a..", ".hidden",
                                  "x" * 255, "é" * 127])
def test_plain_file_names(name):
    assert names.check_file_name(name, what="w", fix="f") == name


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", "/a", "x" * 256, "é" * 128, "a\x1bb", "a\nb",
                                  "a\u202eb", None, 1])
def test_file_names_that_are_not_plain(name):
    with pytest.raises(BadInput) as info:
        names.check_file_name(name, what="the file name of u", fix="relock")
    assert info.value.message == f"the file name of u {names.printable(repr(name))} is not a plain file name"
    assert info.value.fix == "relock"


# ------------------------------------------------------------------------------------------- PyPI names
@pytest.mark.parametrize("name", ["a", "A", "1", "torch", "typing_extensions", "zope.interface", "a-b", "A9", "a.b_c-d"])
def test_pypi_names(name):
    assert names.is_pypi_name(name) and names.check_pypi_name(name) == name


@pytest.mark.parametrize("name", ["", "-e/some/dir", "--index-url", "a-", "-a", ".a", "a.", "_a", "a_", "a b", "a/b",
                                  "a\n", "é", None, 1])
def test_pypi_names_refused(name):
    assert not names.is_pypi_name(name)
    with pytest.raises(BadInput) as info:
        names.check_pypi_name(name, where="pyproject.toml")
    assert info.value.message == (f"{names.printable(repr(name))} in pyproject.toml is not a PyPI project name (PEP 508: "
                                  "letters, digits, '.', '_' and '-', starting and ending with a letter or digit)")
    assert info.value.fix == "correct the name in pyproject.toml's [pypi-dependencies]"


def test_name_errors_say_pixi_toml_unless_told():
    for check in (lambda: names.check_pypi_name("-e"), lambda: names.check_version_spec("x", name="a"),
                  lambda: names.check_requirement("-e")):
        with pytest.raises(BadInput) as info:
            check()
        assert " in pixi.toml" in info.value.message


@pytest.mark.parametrize("spec", ["", "*", " * ", "==2.13.0+cpu", ">=1.0", ">=1.0, <2", "~=1.4", "!=1.0", "===1.0",
                                  "<3", ">2", "<=2", "==1.*", "==1.0.post1", "==1.0rc1", "==1!2.0", " == 1.0 "])
def test_version_specifiers(spec):
    assert names.check_version_spec(spec, name="x") == spec


@pytest.mark.parametrize("spec", ["1.0", "=1.0", "==", ">=1.0,", ",>=1", ">=1.0;<2", "-e /x", "== -e", "latest",
                                  "==1.0 --hash=x", "==1.0\n", "*\n-e", "x", "X", "XX", None, 1.0])
def test_version_specifiers_refused(spec):
    with pytest.raises(BadInput) as info:
        names.check_version_spec(spec, name="torch", where="pixi.lock")
    assert info.value.message == f"the version of torch in pixi.lock, {names.printable(repr(spec))}, is not a version specifier"
    assert info.value.fix == 'write it as "*", "==1.2.3" or ">=1.2,<2" in pixi.lock'


@pytest.mark.parametrize("text", ["torch==2.13.0+cpu", "rtpy", "a[x]>=1", "a[x,y-z]", "a_b.c-d>=1,<2", "Typing_Extensions>=4",
                                  "A[X]==1"])
def test_requirements(text):
    assert names.check_requirement(text) == text


@pytest.mark.parametrize("text,culprit", [("-e/some/dir", "-e/some/dir"), ("torch==2 --index-url x", "version of torch"),
                                          ("torch\n", "version of torch"), ("torch==2\n--pre", "version of torch"),
                                          ("", "''"), ("a[x", "version of a"), ("a[x]y", "version of a")])
def test_requirements_refused_name_the_culprit(text, culprit):
    with pytest.raises(BadInput) as info:
        names.check_requirement(text, where="uv's input")
    assert culprit in info.value.message and "uv's input" in info.value.message


# -------------------------------------------------------------------------------------------- printable
@pytest.mark.parametrize("text,shown", [
    ("plain text", "plain text"),
    ("tab\there", "tab\there"),
    ("line\nbreak", "line\\x0abreak"),
    ("\x1b[31mred", "\\x1b[31mred"),
    ("bell\x07", "bell\\x07"),
    ("del\x7f", "del\\x7f"),
    ("c1\x9b", "c1\\x9b"),
    ("\u202eevil", "\\u202eevil"),
    ("\u2066iso\u2069", "\\u2066iso\\u2069"),
    ("\u061c", "\\u061c"),
    ("\u200e\u200f", "\\u200e\\u200f"),
    ("nbsp\u00a0here", "nbsp\u00a0here"),
    ("zero\u200bwidth", "zero\u200bwidth"),
    ("soft\u00adhyphen", "soft\u00adhyphen"),
    ("private\ue000use", "private\ue000use"),
    ("ünïcödé ✓", "ünïcödé ✓"),
    (5, "5"),
])
def test_printable_escapes_controls_and_keeps_the_rest(text, shown):
    assert names.printable(text) == shown


def test_printable_keeps_newlines_only_when_asked():
    assert names.printable("a\nb\x1b", keep_newlines=True) == "a\nb\\x1b"
    assert names.printable("a\nb", keep_newlines=True) == "a\nb"
    assert names.printable("a\tb\n", keep_newlines=False) == "a\tb\\x0a"


def test_escapes_name_the_code_point():
    assert names.printable("\x00\x1f\x80\x9f") == "\\x00\\x1f\\x80\\x9f"
    assert names.printable("\u2028") == "\\u2028"  # a line separator is not a harmless space
    assert names.printable("\u2029") == "\\u2029"


# ----------------------------------------------------------------------------- properties (hypothesis)


# what terminals and readers trip on (C0/C1 controls, DEL, bidi controls, line separators) beside what is
# harmless (letters, spaces, formats, private use)
TRICKY = "aZ9 é✓\t\n\r\x00\x07\x1b\x7f\x85\x9b\xa0\xad\u061c\u200b\u200e\u2028\u202e\u2066\u2069\ue000"


@given(st.text(alphabet=TRICKY, max_size=40))
def test_printable_leaves_no_control_or_bidi_character(text):
    import unicodedata

    shown = names.printable(text)
    assert not [c for c in shown if (unicodedata.category(c) == "Cc" and c != "\t") or ord(c) in names._BIDI]
    assert names.printable(text, keep_newlines=True).count("\n") == text.count("\n")
    if text.isprintable():
        assert shown == text


@given(st.text(alphabet="abcz09-_.A/ \n", min_size=0, max_size=70))
def test_an_env_name_is_accepted_exactly_when_pixi_would(name):
    import re

    pixi = re.fullmatch(r"[a-z0-9-]{1,64}", name) is not None
    assert names.is_env_name(name) == pixi
    if pixi:
        assert names.check_env_name(name) == name
    else:
        with pytest.raises(BadInput):
            names.check_env_name(name)


@given(st.lists(st.text(alphabet="abc.-", min_size=1, max_size=4), min_size=1, max_size=4))
def test_a_plain_relative_path_stays_inside_and_its_prefix_twin_does_not(parts):
    root = "/srv/envs"
    rel = "/".join(parts)
    inside = names.inside(root, f"{root}/{rel}")
    assert inside == (os.path.normpath(f"{root}/{rel}") + "/").startswith(root + "/")
    assert not names.inside(root, f"{root}-{rel}")  # envs-evil is not inside envs


@pytest.mark.parametrize("url, path", [
    ("file:///srv/a%20b/torch-2.1%2Bcpu.whl", "/srv/a b/torch-2.1+cpu.whl"),
    ("file://localhost/srv/x.whl", "/srv/x.whl"),
    ("/srv/x%20y.whl", "/srv/x%20y.whl"),  # a path is taken as written, never unquoted
])
def test_local_path_of_a_file_url_or_a_path(url, path):
    assert names.local_path(url) == Path(path)


@pytest.mark.parametrize("url", ["https://pypi.org/simple/torch/", "srv/x.whl", "./x.whl", "", "file:/x", "~/x"])
def test_local_path_of_anything_else_is_none(url):
    assert names.local_path(url) is None


def test_a_download_name_is_the_last_segment_decoded_without_query():
    assert names.download_name("https://h/whl/torch-2.13.0%2Bcpu-cp311.whl?x=1#sha256=0") == "torch-2.13.0+cpu-cp311.whl"
    assert names.download_name("file:///srv/a%20b.conda") == "a b.conda"


@pytest.mark.parametrize("url", ["https://h/whl/..%2F..%2Fetc%2Fpasswd", "https://h/whl/", "https://h/whl/..",
                                 "https://h/whl/a%5Cb.whl", "https://h/whl/a%1Bb.whl", "https://h"])
def test_a_download_name_that_is_not_one_plain_name_is_refused(url):
    with pytest.raises(BadInput) as caught:
        names.download_name(url)
    assert caught.value.message.startswith(f"the file name of {url} ") and "is not a plain file name" in caught.value.message
    assert caught.value.fix == ("restore pixi.lock from version control or lock again: a locked URL must end in the "
                                "artefact's own file name")


def test_a_refused_download_name_does_not_show_the_password():
    with pytest.raises(BadInput) as caught:
        names.download_name("https://user:s3cret@h/whl/..%2Fx")
    assert "s3cret" not in str(caught.value) and "https://user:****@h/whl/..%2Fx" in caught.value.message


@pytest.mark.parametrize("url, shown, bare", [
    ("https://user:s3cret@pypi.example.org/simple/", "https://user:****@pypi.example.org/simple/",
     "https://pypi.example.org/simple/"),
    ("https://token@h/x/y.whl", "https://****@h/x/y.whl", "https://h/x/y.whl"),
    ("https://user:@h/", "https://user:****@h/", "https://h/"),
    ("https://u:p@ss:w@h:8080/a@b", "https://u:****@h:8080/a@b", "https://h:8080/a@b"),  # the last @ ends the userinfo
    ("https://u:p@h", "https://u:****@h", "https://h"),
    ("https://u:p@h/a@b/c", "https://u:****@h/a@b/c", "https://h/a@b/c"),
    ("https://u:p@h/r?to=https://x", "https://u:****@h/r?to=https://x", "https://h/r?to=https://x"),
    ("https://h/a@b/c", "https://h/a@b/c", "https://h/a@b/c"),  # an @ in the path is no credential
    ("https://h", "https://h", "https://h"),
    ("https://", "https://", "https://"),
    ("/srv/u:p@h/x", "/srv/u:p@h/x", "/srv/u:p@h/x"),
    ("user:pw@host/x", "user:pw@host/x", "user:pw@host/x"),  # no scheme: not a URL
])
def test_credentials_in_a_url_are_hidden_or_removed(url, shown, bare):
    assert names.redact_url(url) == shown
    assert names.without_credentials(url) == bare


@pytest.mark.parametrize("url, name", [
    ("https://h/simple/torch/", "torch"), ("https://h/a/b/x%2By.whl?q=1", "x+y.whl"), ("x.whl", "x.whl"),
    ("file:///srv/w/a%20b.whl", "a b.whl"), ("https://h", ""), ("https://h/TeX", "TeX"),
])
def test_the_file_name_of_a_url_is_its_last_segment_decoded(url, name):
    assert names.file_name_of(url) == name
