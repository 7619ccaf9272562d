"""setup's step runner (resolver/workflows/steps.py): what makes a step current, what its report says, in detail."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import records

from resolver.core.errors import BadInput
from resolver.core.fingerprint import fingerprint
from resolver.workflows.steps import (
    Caveat,
    Stamps,
    StepLog,
    StepReport,
    append_to_log,
    jsonable,
    peak_rss_mib,
    step_line,
    symbol,
)


def test_fingerprint_is_order_and_boundary_sensitive(tmp_path):
    assert fingerprint("a", "b") != fingerprint("b", "a")
    assert fingerprint("ab") != fingerprint("a", "b")  # parts are separated
    assert fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})  # keys sorted
    assert fingerprint(b"x") != fingerprint("x") and fingerprint(b"x") == fingerprint(b"x")
    assert fingerprint(Path("/x")) != fingerprint("/x")  # a path counts by its content
    f = tmp_path / "f"
    f.write_bytes(b"<missing>")
    assert fingerprint(f) == fingerprint(tmp_path / "absent")  # the text a missing file stands for
    assert fingerprint(tmp_path) == fingerprint(tmp_path / "absent")  # a folder is not a file
    assert fingerprint(1) != fingerprint("1") and fingerprint(None) == fingerprint(None)
    assert len(fingerprint()) == 64 and fingerprint() != fingerprint("")


def test_a_stamp_records_inputs_result_and_time(tmp_path):
    stamps = Stamps(tmp_path / "steps")
    one, two = fingerprint("in-1"), fingerprint("in-2")  # a stamp's inputs are a fingerprint (another shape is ignored)
    stamps.write("verify", one, {"ok": True})
    record = records.read(tmp_path / "steps" / "verify.json")
    assert record["inputs_digest"] == one and record["value"]["result"] == {"ok": True} and record["value"]["at"] > 0
    assert stamps.read("verify") == record and stamps.read("lock") is None
    assert stamps.result("verify", one) == {"ok": True} and stamps.result("verify", two) is None
    assert stamps.is_current("verify", one) and not stamps.is_current("verify", two)
    assert not stamps.is_current("lock", one)  # another step's stamp does not count
    stamps.write("lock", "in-1")
    assert stamps.read("lock") is None and not stamps.is_current("lock", "in-1")  # not a digest: not a stamp
    stamps.clear("verify")
    stamps.clear("verify")  # clearing what is not there is fine
    assert not (tmp_path / "steps" / "verify.json").exists()


@pytest.mark.parametrize("text", ["", "{not json", "[]", "null", '{"value": 1}', '{"inputs_digest": null}',
                                  '{"inputs_digest": "x", "value": {"result": null, "at": 1}}',  # inputs are a sha256
                                  '{"inputs": "%s", "result": null, "at": 1}' % ("0" * 64)])  # the old shape
def test_a_stamp_that_is_not_one_is_not_current(tmp_path, text):
    (tmp_path / "install.json").write_text(text)
    assert not Stamps(tmp_path).is_current("install", "x")
    assert not Stamps(tmp_path).is_current("install", "")
    assert not Stamps(tmp_path).is_current("install", "0" * 64)


def test_step_reports_as_json(tmp_path):
    report = StepReport("build", "done", "2 compiled", 1.23456, {"p": tmp_path}, 12)
    assert report.to_json() == {"name": "build", "status": "done", "detail": "2 compiled", "seconds": 1.235,
                                "peak_rss_mib": 12, "result": {"p": str(tmp_path)}, "caveats": []}
    warned = StepReport("lock", "done", "", 0, caveats=(Caveat.from_note("a path of this machine. Fix: add a mirror"),))
    assert warned.to_json()["caveats"] == [{"text": "a path of this machine", "fix": "add a mirror"}]


def test_jsonable():
    class Value:
        def to_json(self):
            return {"v": 1}

    assert jsonable(Value()) == {"v": 1}
    assert jsonable({1: (Path("/a"), [Value()])}) == {"1": ["/a", [{"v": 1}]]}
    assert jsonable("x") == "x" and jsonable(None) is None


def test_the_step_list_prints_each_step_as_it_ends(tmp_path, capsys):
    log = StepLog(log_file=tmp_path / "setup.log")
    log.add(StepReport("lock", "skipped", "pixi.lock is current", 0.25))
    log.add(StepReport("patch", "done", "header \x1b[31mred", 0.5))
    log.add(StepReport("build", "failed", "nvcc \x1b[31mred", 12.0))
    out = capsys.readouterr()
    assert out.err == "" and out.out.splitlines() == [
        "  · lock     skipped       0.2s  pixi.lock is current",
        "  ✓ patch    done          0.5s  header \\x1b[31mred",
        "  ✗ build    failed       12.0s  (the error follows)"]  # printed once, below the list, by the command
    logged = (tmp_path / "setup.log").read_text().splitlines()
    assert logged[0] == "  · lock     skipped       0.2s  pixi.lock is current"
    assert "nvcc \\x1b[31mred" in logged[-1] and "\x1b" not in "".join(logged)  # the log keeps the message
    assert [r.name for r in log.reports] == ["lock", "patch", "build"]


def test_the_step_list_goes_to_stderr_beside_json_and_nowhere_when_quiet(capsys):
    StepLog(to_stderr=True).add(StepReport("probe", "done"))
    StepLog(quiet=True).add(StepReport("probe", "done"))
    out = capsys.readouterr()
    assert out.out == "" and out.err.splitlines() == ["  ✓ probe    done          0.0s"]


@pytest.mark.parametrize("status,symbol", [("done", "✓"), ("skipped", "·"), ("failed", "✗"), ("not-needed", "·"),
                                           ("deferred", "→"), ("would-run", "?"), ("other", "?")])
def test_each_status_has_its_symbol(status, symbol, capsys):
    StepLog().add(StepReport("x", status))
    assert capsys.readouterr().out.startswith(f"  {symbol} x ")


def test_a_timed_step_records_what_it_returned_or_the_error():
    log = StepLog(quiet=True)
    report = log.timed("plan", lambda: ("done", "cu126", {"torch": "2.14.1"}))
    assert (report.name, report.status, report.detail, report.result) == ("plan", "done", "cu126", {"torch": "2.14.1"})
    assert report.seconds >= 0 and report.peak_rss_mib == peak_rss_mib()

    def fails():
        raise BadInput("no pixi.toml", fix="create one")

    with pytest.raises(BadInput):
        log.timed("lock", fails)
    failed = log.reports[-1]
    assert (failed.name, failed.status, failed.result) == ("lock", "failed", None)
    assert failed.detail == "no pixi.toml. Fix: create one." and failed.peak_rss_mib is not None

    def crashes():
        raise KeyError("a bug")

    with pytest.raises(KeyError):  # not a ResolverError: not recorded as a failed step
        log.timed("install", crashes)
    assert [r.name for r in log.reports] == ["plan", "lock"]


def test_peak_memory_is_in_mib():
    peak = peak_rss_mib()
    assert peak is not None and 10 < peak < 64 * 1024  # this test process: tens of MiB, not KiB or bytes


def test_fingerprint_format_is_stable():
    """What every skip record compares: the sha256 of each part's JSON (sorted keys; anything else as its text),
    bytes as they are and file contents, the parts separated by a NUL; changing it re-runs every step."""
    import hashlib

    assert fingerprint("x", {"b": 1, "a": Path("/p")}) == hashlib.sha256(b'"x"\0{"a": "/p", "b": 1}').hexdigest()
    assert fingerprint(b"raw") == hashlib.sha256(b"raw").hexdigest()


def test_a_log_file_that_cannot_be_written_does_not_stop_the_step(tmp_path, capsys):
    log = StepLog(log_file=tmp_path / "missing-folder" / "setup.log")
    log.add(StepReport("lock", "done"))
    assert capsys.readouterr().out.startswith("  ✓ lock")


def test_a_timed_step_takes_the_time_it_took():
    import time

    log = StepLog(quiet=True)
    before = time.monotonic()
    done = log.timed("plan", lambda: (time.sleep(0.02), ("done", "", None))[1])

    def fails():
        time.sleep(0.02)
        raise BadInput("x", fix="y")

    with pytest.raises(BadInput):
        log.timed("lock", fails)
    elapsed = time.monotonic() - before
    assert 0.02 <= done.seconds <= elapsed and 0.02 <= log.reports[-1].seconds <= elapsed


def test_peak_memory_is_the_larger_of_this_process_and_its_children_in_whole_mib():
    import resource

    def kib() -> int:
        return max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)

    before = kib()
    peak = peak_rss_mib()
    assert isinstance(peak, int) and before * 1024 // (1 << 20) <= peak <= kib() * 1024 // (1 << 20)


@pytest.mark.parametrize("platform,maxrss,mib", [("linux", 1 << 20, 1024), ("linux", (1 << 20) - 1, 1023),
                                                 ("darwin", 1 << 30, 1024), ("darwin", (1 << 20) + 5, 1)])
def test_peak_memory_units_per_platform(monkeypatch, platform, maxrss, mib):
    """ru_maxrss is in KiB on Linux and in bytes on macOS (getrusage(2) and the macOS man page)."""
    import resource
    import sys
    from types import SimpleNamespace

    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setattr(resource, "getrusage", lambda who: SimpleNamespace(ru_maxrss=maxrss if who == resource.RUSAGE_CHILDREN else 1))
    assert peak_rss_mib() == mib


@pytest.mark.parametrize("note, text, fix", [
    ("the lock records a path. Fix: add a mirror.", "the lock records a path", "add a mirror"),
    ("  a fallback environment  ", "a fallback environment", ""),
    ("a. Fix: b. Fix: c", "a", "b. Fix: c"),  # the first ". Fix: " splits
    ("wrong. Fix: .hidden file, use TeX. ", "wrong", ".hidden file, use TeX"),
])
def test_a_caveat_from_a_note(note, text, fix):
    assert Caveat.from_note(note) == Caveat(text, fix)


def test_a_caveat_line_has_its_fix_when_there_is_one():
    assert Caveat("a path", "add a mirror").line() == "a path. Fix: add a mirror"
    assert Caveat("a path").line() == "a path"


def test_a_step_with_caveats_is_marked_and_counts_them():
    one, two = (Caveat("c1", "f1"),), (Caveat("c1"), Caveat("c2"))
    assert step_line(StepReport("lock", "done", "locked", 1.0, caveats=one)) == \
        "  ! lock     done          1.0s  locked (1 caveat, listed at the end)"
    assert step_line(StepReport("lock", "done", "locked", 1.0, caveats=two)) == \
        "  ! lock     done          1.0s  locked (2 caveats, listed at the end)"
    assert symbol(StepReport("lock", "failed", "x", caveats=one)) == "✗"
    assert symbol(StepReport("lock", "done", "x")) == "✓"


def test_a_timed_step_keeps_the_caveats_its_action_returns(capsys):
    log = StepLog()
    caveat = Caveat("a fallback environment", "add a channel")
    report = log.timed("lock", lambda: ("done", "locked", None, [caveat]))
    assert report.caveats == (caveat,) and log.timed("plan", lambda: ("done", "", None)).caveats == ()
    assert capsys.readouterr().out.splitlines()[0].startswith("  ! lock")


def test_the_log_file_gets_the_text_with_one_line_end(tmp_path):
    log = tmp_path / "setup.log"
    append_to_log(log, "\nfirst  \n\n")
    append_to_log(log, "second")
    append_to_log(None, "nowhere")
    append_to_log(log, "set CUDA_HOME=X\n")
    assert log.read_text() == "\nfirst  \nsecond\nset CUDA_HOME=X\n"
