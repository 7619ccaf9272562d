import time

from resolver.ui import Output


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


def test_progress_in_a_log_reports_every_ten_seconds_while_running(capsys):
    out = Output()
    started = time.monotonic() - 25.0
    out.progress("compiling", 3, 14, started)
    out.progress("compiling", 4, 14, started)  # within 10 s of the previous line: silent
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_quiet_and_json_print_no_progress(capsys):
    started = time.monotonic() - 5.0
    Output(quiet=True).progress("x", 1, 1, started)
    Output(json_mode=True).progress("x", 1, 1, started)
    assert capsys.readouterr().err == ""
