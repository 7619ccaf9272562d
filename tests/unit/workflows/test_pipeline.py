import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from resolver.core.errors import Busy
from resolver.core.fingerprint import fingerprint
from resolver.core.fs import tree_digest
from resolver.workflows.steps import Stamps, project_lock


def test_stamps_current_only_after_write(tmp_path):
    stamps = Stamps(tmp_path / "steps")
    abc, abd = fingerprint("abc"), fingerprint("abd")
    assert not stamps.is_current("lock", abc)
    stamps.write("lock", abc, {"n": 1})
    assert stamps.is_current("lock", abc)
    assert not stamps.is_current("lock", abd)
    assert stamps.read("lock")["value"]["result"] == {"n": 1}
    stamps.clear("lock")
    assert not stamps.is_current("lock", abc)


def test_corrupt_stamp_is_not_current(tmp_path):
    stamps = Stamps(tmp_path)
    (tmp_path / "verify.json").write_text("{not json")
    assert not stamps.is_current("verify", "x")


def test_fingerprint_depends_on_file_content(tmp_path):
    f = tmp_path / "a"
    f.write_text("1")
    first = fingerprint(f)
    f.write_text("2")
    assert fingerprint(f) != first
    assert fingerprint(tmp_path / "missing") == fingerprint(tmp_path / "other-missing")


def test_tree_digest_sees_renames(tmp_path):
    (tmp_path / "x").write_text("same")
    before = tree_digest(tmp_path)
    (tmp_path / "x").rename(tmp_path / "y")
    assert tree_digest(tmp_path) != before


def _holder(state: Path, seconds: float) -> subprocess.Popen:
    code = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from resolver.workflows.steps import project_lock
        with project_lock(Path({str(state)!r})):
            print("held", flush=True)
            time.sleep({seconds})
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_run_without_wait_is_busy(tmp_path):
    holder = _holder(tmp_path, 5)
    try:
        with pytest.raises(Busy) as info:
            with project_lock(tmp_path, wait=False):
                pass
        assert "another resolver run holds the project" in str(info.value)
    finally:
        holder.kill()
        holder.wait()


def test_second_run_waits_then_proceeds(tmp_path):
    holder = _holder(tmp_path, 1.0)
    messages = []
    started = time.monotonic()
    with project_lock(tmp_path, on_wait=messages.append):
        waited = time.monotonic() - started
    holder.wait()
    assert messages and "waiting for another resolver run" in messages[0]
    assert waited > 0.3


def test_killed_holder_releases_lock(tmp_path):
    holder = _holder(tmp_path, 60)
    holder.kill()
    holder.wait()
    with project_lock(tmp_path, wait=False):
        pass
