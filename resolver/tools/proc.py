"""Child processes, in one place: every tool the resolver runs goes through :func:`run` or :func:`spawn`.

The rules they enforce, so no call site can forget one:

* a timeout on every run; a child past it is stopped with everything it started;
* each child leads a process group of its own, and on Linux dies with the resolver
  (``PR_SET_PDEATHSIG``), so a killed or interrupted resolver leaves no pip, compiler or
  byte-compiler writing into a half-made environment; Ctrl-C and SIGTERM stop the whole group.
  What a child starts itself (compileall's worker pool, ninja's compilers) does not inherit the death
  signal, so a small reaper process, started with the first child, holds a pipe from the resolver
  and kills every group still registered when that pipe closes (the resolver died, even by SIGKILL);
* output is captured as text (undecodable bytes replaced) up to a bound (``limit``, 64 MiB by
  default): a child that prints more is stopped and its result says so (``overflowed``), instead of
  the resolver filling memory; a missing program is a result with exit code 127, never an exception
  the caller has to remember.

Code that runs *inside* an environment (``resolver/verify/inenv``) is a separate program with its own
rules and may use :mod:`subprocess` directly.

>>> run(["sh", "-c", "echo hi; exit 3"], timeout=10).returncode, run(["sh", "-c", "echo hi"], timeout=10).stdout
(3, 'hi\\n')
>>> run(["no-such-program-here"], timeout=10).returncode
127
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import IO, Mapping, Sequence

from resolver.core.errors import BuildFailed

_PR_SET_PDEATHSIG = 1
PIPE, STDOUT, DEVNULL = subprocess.PIPE, subprocess.STDOUT, subprocess.DEVNULL


@dataclass(frozen=True)
class Completed:
    """What one child did."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str = ""
    timed_out: bool = False
    seconds: float = 0.0
    overflowed: bool = False  # printed more than the run's limit: stopped, output cut at the limit

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.overflowed

    def tail(self, lines: int = 3, width: int = 400) -> str:
        """The last lines of stderr (else stdout), joined: what a one-sentence error quotes."""
        text = (self.stderr or self.stdout).strip().splitlines()
        return " ".join(text[-lines:])[:width] or f"exit {self.returncode}"


def _prctl():
    """Linux's ``prctl`` (None elsewhere), looked up in the parent: importing in a forked child can deadlock."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _child_setup():
    """What a child runs between fork and exec: lead a new process group and, on Linux, receive SIGKILL
    when the resolver dies. ``prctl`` is looked up here, in the parent: importing in a forked child
    can deadlock."""
    prctl = _prctl()

    def setup() -> None:
        os.setpgid(0, 0)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return setup


# The reaper: reads "+PGID" / "-PGID" lines; at end of input (the resolver is gone) SIGKILLs every group left.
_REAPER = """
import os, signal, sys
groups = set()
for line in sys.stdin:
    line = line.strip()
    if line[:1] == "+": groups.add(int(line[1:]))
    elif line[:1] == "-": groups.discard(int(line[1:]))
for group in groups:
    try: os.killpg(group, signal.SIGKILL)
    except OSError: pass
"""
_reaper: subprocess.Popen | None = None


def _tell_reaper(line: str) -> None:
    """Register (``+pgid``) or release (``-pgid``) a child's group with the reaper, starting it once."""
    global _reaper
    if os.name != "posix" or not sys.platform.startswith("linux"):
        return
    if line.startswith("-") and _reaper is None:
        return  # nothing was registered
    try:
        if _reaper is None or _reaper.poll() is not None:
            _reaper = subprocess.Popen([sys.executable, "-I", "-S", "-c", _REAPER], stdin=subprocess.PIPE,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
                                       start_new_session=True, close_fds=True)
        _reaper.stdin.write(line + "\n")
        _reaper.stdin.flush()
    except OSError:  # no reaper: the death signal still covers the direct child
        _reaper = None


def spawn(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
          stdin: int | IO | None = subprocess.DEVNULL, stdout: int | IO | None = subprocess.PIPE,
          stderr: int | IO | None = subprocess.PIPE, reap: bool = True) -> subprocess.Popen:
    """Start ``argv`` in a process group of its own that dies with the resolver (with everything it
    starts); the caller waits for it (and calls :func:`stop` on the way out when it does not finish
    normally)."""
    child = subprocess.Popen([str(a) for a in argv], env=None if env is None else dict(env), cwd=cwd, stdin=stdin,
                             stdout=stdout, stderr=stderr, text=True, errors="replace",
                             preexec_fn=_child_setup() if os.name == "posix" else None)
    if reap:  # a quick question to a tool (the probe's) starts nothing of its own worth a reaper
        _tell_reaper(f"+{child.pid}")
    return child


def release(child: subprocess.Popen) -> None:
    """The child finished and was waited for: its group needs no reaping any more."""
    _tell_reaper(f"-{child.pid}")


def stop(child: subprocess.Popen, *, grace: float = 5.0) -> None:
    """SIGTERM the child's whole process group, then SIGKILL whatever is left of it (stragglers keep a
    group alive after its leader exits)."""
    if os.name != "posix":  # pragma: no cover - Windows
        child.kill()
        child.wait()
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(child.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            child.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            time.sleep(0.1)  # let the group's other members see the signal before the final sweep
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process in uninterruptible sleep
        return
    release(child)


OUTPUT_LIMIT = 64 << 20  # characters of stdout + stderr one run may print before it is stopped


def run(argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike | None = None, input: str | None = None, limit: int = OUTPUT_LIMIT,
        reap: bool = True) -> Completed:
    """Run ``argv`` to completion (at most ``timeout`` seconds) and capture its output (at most
    ``limit`` characters of stdout and stderr together: past that the child is stopped)."""
    return start(argv, env=env, cwd=cwd, input=input, limit=limit, reap=reap).result(timeout)


def attached(argv: Sequence[str], *, env: Mapping[str, str] | None = None,
             cwd: str | os.PathLike | None = None) -> int:
    """Run ``argv`` on the resolver's own terminal and wait for it: stdin, stdout and stderr inherited, in the
    resolver's process group (so the terminal's Ctrl-C and job control reach it as they reach a shell's
    child), dying with the resolver on Linux. The resolver ignores SIGINT meanwhile (the child decides what
    Ctrl-C means). Its exit code: 128+N when signal N ended it, 127 when it does not exist."""
    prctl = _prctl()

    def setup() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    try:
        child = subprocess.Popen([str(a) for a in argv], env=None if env is None else dict(env), cwd=cwd,
                                 preexec_fn=setup if os.name == "posix" else None)
    except FileNotFoundError:
        return 127
    except OSError:
        return 126
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        previous = None
    try:
        code = child.wait()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return 128 - code if code < 0 else code


def start(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
          input: str | None = None, limit: int = OUTPUT_LIMIT, reap: bool = True) -> Running:
    """:func:`run` without the wait: ``argv`` runs while the caller goes on, its output captured; the
    caller takes its :meth:`Running.result` or stops it with :meth:`Running.cancel`."""
    argv = tuple(str(a) for a in argv)
    started = time.monotonic()
    try:
        child = spawn(argv, env=env, cwd=cwd, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                      reap=reap)
    except OSError as exc:  # not installed, not executable, wrong architecture
        return Running(argv, None, None, started,
                       Completed(argv, 127 if isinstance(exc, FileNotFoundError) else 126, "", str(exc)))
    return Running(argv, child, _Capture(child, input, limit), started)


class Running:
    """A child :func:`start` started: its :class:`Completed` once it ends, or nothing if it is cancelled."""

    def __init__(self, argv: tuple[str, ...], child: subprocess.Popen | None, capture: _Capture | None,
                 started: float, failed: Completed | None = None) -> None:
        self.argv, self._child, self._capture, self._started, self._done = argv, child, capture, started, failed

    def result(self, timeout: float) -> Completed:
        """Its end (at most ``timeout`` seconds after it started; past that it is stopped)."""
        if self._done is not None:
            return self._done
        child, capture, started, argv = self._child, self._capture, self._started, self.argv
        try:
            ended = capture.wait(max(0.0, started + timeout - time.monotonic()))
            if not ended or capture.overflowed:
                stop(child)
                capture.join()
                stdout, stderr = capture.text()
                if capture.overflowed:
                    self._done = Completed(argv, child.returncode if child.returncode is not None else -9, stdout,
                                           stderr, seconds=time.monotonic() - started, overflowed=True)
                else:
                    self._done = Completed(argv, 124, stdout, stderr, timed_out=True,
                                           seconds=time.monotonic() - started)
                return self._done
            try:
                child.wait(timeout=max(0.0, started + timeout - time.monotonic()))
            except subprocess.TimeoutExpired:  # the pipes closed, yet the child lives on
                stop(child)
                stdout, stderr = capture.text()
                self._done = Completed(argv, 124, stdout, stderr, timed_out=True, seconds=time.monotonic() - started)
                return self._done
        except BaseException:  # Ctrl-C, SIGTERM turned into an exception, SystemExit: take the group down too
            stop(child)
            raise
        stdout, stderr = capture.text()
        release(child)
        self._done = Completed(argv, child.returncode, stdout, stderr, seconds=time.monotonic() - started)
        return self._done

    def cancel(self) -> None:
        """Stop it (with everything it started) unless it already ended; its output is dropped."""
        if self._done is not None or self._child is None:
            return
        if self._child.poll() is None:
            stop(self._child, grace=2.0)
        else:
            self._child.wait()
            release(self._child)
        self._capture.join(grace=2.0)
        self._done = Completed(self.argv, -15, "", "cancelled", seconds=time.monotonic() - self._started)


class _Capture:
    """A child's stdout and stderr read by two threads into memory, at most ``limit`` characters in all
    (``communicate`` would read without end); ``input`` is written by a third."""

    def __init__(self, child: subprocess.Popen, input: str | None, limit: int) -> None:
        import threading

        self.limit, self.size, self.overflowed = limit, 0, False
        self.parts: dict[str, list[str]] = {"out": [], "err": []}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._open = 0
        self._threads = []
        for key, stream in (("out", child.stdout), ("err", child.stderr)):
            if stream is not None:
                self._open += 1
                self._threads.append(threading.Thread(target=self._pump, args=(stream, key), daemon=True))
        if child.stdin is not None:
            self._threads.append(threading.Thread(target=self._feed, args=(child.stdin, input or ""), daemon=True))
        if not self._open:
            self._wake.set()
        for thread in self._threads:
            thread.start()

    def _pump(self, stream: IO[str], key: str) -> None:
        try:
            while not self.overflowed:
                block = stream.read(1 << 16)
                if not block:
                    break
                with self._lock:
                    room = self.limit - self.size
                    self.parts[key].append(block[:max(room, 0)])
                    self.size += min(len(block), max(room, 0))
                    if len(block) > room:
                        self.overflowed = True
        except (OSError, ValueError):  # the pipe went away under us
            pass
        finally:
            with self._lock:
                self._open -= 1
                if self._open <= 0 or self.overflowed:
                    self._wake.set()
            with contextlib.suppress(OSError, ValueError):
                stream.close()

    @staticmethod
    def _feed(stdin: IO[str], text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # BrokenPipeError: the child did not read it all
            stdin.write(text)
        with contextlib.suppress(OSError, ValueError):
            stdin.close()

    def wait(self, timeout: float) -> bool:
        """Whether both streams ended (or the limit was passed) within ``timeout`` seconds."""
        return self._wake.wait(timeout)

    def join(self, grace: float = 5.0) -> None:
        for thread in self._threads:
            thread.join(grace)

    def text(self) -> tuple[str, str]:
        with self._lock:
            return "".join(self.parts["out"]), "".join(self.parts["err"])


def run_checked(argv: Sequence[str], *, timeout: float, what: str, fix: str,
                env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None) -> Completed:
    """:func:`run`, and one :class:`BuildFailed` sentence naming ``what`` when it fails or times out."""
    done = run(argv, timeout=timeout, env=env, cwd=cwd)
    if done.timed_out:
        raise BuildFailed(f"{what} did not finish within {timeout:.0f} s", fix=fix)
    if done.overflowed:
        raise BuildFailed(f"{what} printed more than {OUTPUT_LIMIT >> 20} MiB of output and was stopped", fix=fix)
    if done.returncode != 0:
        raise BuildFailed(f"{what} failed ({done.tail()})", fix=fix)
    return done
