"""The child-process gateway: what a child starts itself dies with the resolver too, even by SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import REPO
from support.processes import default_signals

PARENT = """
import sys
sys.path.insert(0, {repo!r})
from resolver.tools import proc
pool = "import multiprocessing as m, time\\ndef f(x): time.sleep(60)\\nif __name__ == '__main__':\\n    m.Pool(2).map(f, [1, 2])"
proc.run([sys.executable, "-c", pool, {tag!r}], timeout=600)
"""


def _alive(tag: str, *, last_argument: bool = False) -> list[str]:
    """The processes whose command line holds ``tag``; with ``last_argument``, only those whose last argument
    ends with ``tag``. A process forked to start another shows its parent's command line until it execs, so
    counting the pool by ``tag`` anywhere can count those passing forks instead of its workers."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if last_argument:
                holds = cmdline.rstrip(b"\0").split(b"\0")[-1].endswith(tag.encode())
            else:
                holds = tag.encode() in cmdline
            if holds:
                found.append(entry.name)
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the death signal and the reaper are Linux's")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_grandchildren_die_with_the_resolver(sig):
    tag = f"resolver-proc-test-{os.getpid()}-{int(sig)}"
    parent = subprocess.Popen([sys.executable, "-c", PARENT.format(repo=str(REPO), tag=tag)], start_new_session=True,
                              preexec_fn=default_signals)
    # a bound for a machine under load, not a wait: the loop ends when they are up (once, with the suite's other
    # worker installing and byte-compiling torch, the pool was not up after two minutes)
    deadline = time.monotonic() + 300
    while len(_alive(tag, last_argument=True)) < 3 and time.monotonic() < deadline:  # the pool and its two workers
        time.sleep(0.05)
    assert len(_alive(tag, last_argument=True)) >= 3, "the pool did not start"
    os.kill(parent.pid, sig)
    parent.wait(timeout=30)
    deadline = time.monotonic() + 5
    while _alive(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive(tag) == [], "a grandchild outlived the resolver"


def test_a_started_child_runs_beside_the_caller_and_is_stopped_with_what_it_started(tmp_path):
    """proc.start: the caller goes on while the child runs; result() is what run() gives; cancel()
    takes the child's whole group down (a lock's guessed uv run that missed)."""
    from resolver.tools import proc

    gate = tmp_path / "go"
    # the child finishes only once the caller has gone on and opened the gate: a start() that waited for
    # it would see it give up (exit 9) instead
    quick = proc.start(["sh", "-c", f'i=0; while [ ! -e "{gate}" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; '
                                    f'[ -e "{gate}" ] || exit 9; echo done; exit 4'])
    gate.touch()
    result = quick.result(120)
    assert (result.returncode, result.stdout, result.ok) == (4, "done\n", False)
    assert quick.result(30) is result
    tag = f"resolver-proc-cancel-{os.getpid()}"
    slow = proc.start(["sh", "-c", f"sh -c 'sleep 60; : {tag}-inner' & sleep 60; : {tag}"])
    deadline = time.monotonic() + 30
    while not _alive(f"{tag}-inner", last_argument=True) and time.monotonic() < deadline:
        time.sleep(0.05)
    # the child and what it started, each found by its own script's end: a shell's passing forks hold its command line
    assert _alive(f": {tag}", last_argument=True) and _alive(f"{tag}-inner", last_argument=True)
    slow.cancel()
    assert not _alive(tag)  # gone when cancel() returns, the grandchild too
    assert slow.result(30).returncode != 0  # stopped, not waited for (sleep 60 would end with 0)
    assert proc.start(["no-such-program-here"]).result(5).returncode == 127
