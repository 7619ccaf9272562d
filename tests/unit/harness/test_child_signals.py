"""A child the suite starts has the signals a test sends it at their defaults, even when the suite runs
as a background job that ignores SIGINT (the killed-probe test's Ctrl-C then went unheard, and the probe
read the end of its paste instead)."""

from __future__ import annotations

import signal
import subprocess

from support import cli
from support.processes import SENT, ignored_signals, wait_until_reading_stdin


def _started_while_ignoring(*sigs: signal.Signals) -> set[int]:
    """What a child started by support.cli ignores while this process ignores ``sigs``."""
    before = {sig: signal.signal(sig, signal.SIG_IGN) for sig in sigs}
    try:
        child = cli.start("probe", "--from-report", "-", stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    try:
        wait_until_reading_stdin(child.pid)  # started, its own handlers installed
        return ignored_signals(child.pid)
    finally:
        child.kill()
        child.wait(timeout=60)


def test_a_started_child_hears_every_signal_a_test_sends_though_the_suite_ignores_them():
    assert not _started_while_ignoring(*SENT) & {int(sig) for sig in SENT}


def test_a_child_run_to_its_end_hears_them_too():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        done = cli.run("probe", "--help", prefix=("sh", "-c", 'grep SigIgn /proc/$$/status; exec "$@"', "sh"))
    finally:
        signal.signal(signal.SIGINT, before)
    mask = int(done.stdout.split("SigIgn:", 1)[1].split()[0], 16)
    assert not mask >> (signal.SIGINT - 1) & 1
