"""Waiting for the moment a test means to act on a child process, never for time to pass."""

from __future__ import annotations

import platform
import signal
import time
from pathlib import Path

import pytest

_READ = {"x86_64": "0", "aarch64": "63"}  # the read system call's number (Linux)

# The signals a test sends its children. A child inherits an ignored signal across exec: run from a
# background job of a shell (`./run-tests &`, CI's runners, nohup), the suite ignores SIGINT and so would
# every child it starts, which then sails past the Ctrl-C a test sends it.
SENT = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def default_signals() -> None:
    """A child's dispositions as a shell's foreground command gets them (``preexec_fn``): every signal a
    test may send it at its default, whatever the suite itself was started with."""
    for sig in SENT:
        signal.signal(sig, signal.SIG_DFL)


def ignored_signals(pid: int) -> set[int]:
    """The signals process ``pid`` ignores (``SigIgn`` of ``/proc/PID/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            mask = int(line.split()[1], 16)
            return {number for number in range(1, 65) if mask >> (number - 1) & 1}
    return set()


def wait_until_reading_stdin(pid: int, timeout: float = 120.0) -> None:
    """Return once process ``pid`` is blocked in ``read`` on its standard input (``/proc/PID/syscall``);
    skip where the kernel does not say which call a process is in."""
    number = _READ.get(platform.machine())
    where = Path(f"/proc/{pid}/syscall")
    if number is None or not where.exists():
        pytest.skip("this kernel does not say which system call a process is in (/proc/PID/syscall)")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fields = where.read_text().split()
        except OSError:
            fields = []
        if fields[:2] == [number, "0x0"]:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never waited on its standard input within {timeout:.0f} s")
