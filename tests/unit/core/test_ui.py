import time

from resolver.core.ui import Output


def test_progress_in_a_log_skips_instant_work(capsys):
    out = Output()
    started = time.monotonic()
    for done in range(1, 11):
        out.progress("downloading a.whl", done, 10, started)
    assert capsys.readouterr().err == ""


def test_progress_in_a_log_reports_the_end_of_long_work_once(capsys):
    out = Output()
    started = time.monotonic() - 5.0  # began five seconds ago
    for done in range(1, 11):
        out.progress("installing", done, 10, started)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [lines[0]] and lines[0].startswith("installing: 10/10 (100%)")


def test_progress_in_a_log_reports_every_ten_seconds_while_running(capsys, monkeypatch):
    """In a log, a line when 10 s have passed since the work began, then one each time 10 more have
    passed since the last line (not since the last call), each with the count of that moment."""
    import resolver.core.ui

    clock = [25.0]
    monkeypatch.setattr(resolver.core.ui.time, "monotonic", lambda: clock[0])
    out = Output()
    reports = []

    def at(now: float, done: int) -> list[str]:
        clock[0] = now
        out.progress("compiling", done, 14, 0.0)
        reports.append(capsys.readouterr().err.splitlines())
        return reports[-1]

    assert at(25.0, 3) == ["compiling: 3/14 (21%) 25s elapsed, ~92s left"]
    assert at(34.99, 4) == []  # under 10 s after the first line
    assert at(35.0, 5) == ["compiling: 5/14 (35%) 35s elapsed, ~63s left"]  # the second report, 10 s later
    assert at(40.0, 6) == [] and at(44.9, 7) == []
    assert at(45.0, 8) == ["compiling: 8/14 (57%) 45s elapsed, ~34s left"]
    out.progress("linking", 1, 2, 0.0)  # another label keeps its own rhythm
    assert capsys.readouterr().err.splitlines() == ["linking: 1/2 (50%) 45s elapsed, ~45s left"]


def test_progress_in_a_log_starts_after_ten_seconds_of_work(capsys, monkeypatch):
    import resolver.core.ui

    clock = [9.99]
    monkeypatch.setattr(resolver.core.ui.time, "monotonic", lambda: clock[0])
    out = Output()
    out.progress("compiling", 1, 14, 0.0)
    assert capsys.readouterr().err == ""
    clock[0] = 10.0
    out.progress("compiling", 2, 14, 0.0)
    assert capsys.readouterr().err.startswith("compiling: 2/14 (14%) 10s elapsed")


def test_quiet_and_json_print_no_progress(capsys):
    started = time.monotonic() - 5.0
    Output(quiet=True).progress("x", 1, 1, started)
    Output(json_mode=True).progress("x", 1, 1, started)
    assert capsys.readouterr().err == ""


def test_lines_from_threads_working_side_by_side_are_never_interleaved(tmp_path):
    """Environments lock side by side, each saying what it does: every line reaches the screen and the log
    whole (a stream that yields between writes would split ``text`` from its line end otherwise)."""
    import io
    import threading
    import time

    class Yielding(io.StringIO):
        def write(self, text):
            written = super().write(text)
            time.sleep(0)  # another thread may run between two writes
            return written

    stream = Yielding()
    out = Output(stream=stream, log_file=tmp_path / "run.log")
    threads = [threading.Thread(target=lambda n=n: [out.info(f"env{n}: step {i}") for i in range(300)])
               for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = sorted(f"env{n}: step {i}" for n in range(4) for i in range(300))
    assert sorted(stream.getvalue().splitlines()) == expected
    assert sorted((tmp_path / "run.log").read_text().splitlines()) == expected
