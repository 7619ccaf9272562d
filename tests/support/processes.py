"""Waiting for the moment a test means to act on a child process, never for time to pass."""

from __future__ import annotations

import platform
import time
from pathlib import Path

import pytest

_READ = {"x86_64": "0", "aarch64": "63"}  # the read system call's number (Linux)


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
