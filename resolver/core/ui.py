"""Printing for people and for scripts. Human text goes to stderr when ``--json`` owns stdout."""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

from resolver.core.names import printable

HEARTBEAT_S = 10.0  # not on a terminal: a progress line this often while work runs
_WRITING = threading.Lock()  # environments lock side by side: each line is written whole, never interleaved


def _emit(stream: TextIO, text: str, end: str = "\n") -> None:
    """``text`` and its end in one write, flushed, while no other thread of ours writes."""
    with _WRITING:
        stream.write(text + end)
        stream.flush()


@dataclass
class Output:
    """How a command talks: ``json_mode`` prints one JSON document on stdout; ``quiet`` hides progress.

    Human text may quote input (GPU names, log lines, file names): control characters in it are
    printed escaped (:func:`resolver.core.names.printable`), so no input can drive the terminal.
    ``log_file``, when set, receives every line shown (and the progress lines a log would show), so
    the log of a run holds what its user saw."""

    json_mode: bool = False
    quiet: bool = False
    stream: TextIO = field(default_factory=lambda: sys.stdout)
    log_file: Path | None = None
    _last_print: dict[str, float] = field(default_factory=dict, repr=False)  # label -> when last printed

    def result(self, data: Any, human: str | None = None, *, versioned: bool = True) -> None:
        """The command's answer: JSON on stdout with --json (an object gets its ``schema_version``;
        ``versioned=False`` for a document whose form another program fixes, such as a CI matrix),
        else the human text."""
        if self.json_mode:
            print(json.dumps(with_schema_version(data) if versioned else data, indent=2, sort_keys=False),
                  file=self.stream)
        elif human is not None:
            print(printable(human, keep_newlines=True), file=self.stream)

    def info(self, text: str) -> None:
        self._log(text)
        if not self.quiet:
            _emit(sys.stderr if self.json_mode else self.stream, printable(text, keep_newlines=True))

    def progress(self, label: str, done: int, total: int | None, started: float, *, unit: str = "",
                 expected_s: float | None = None, detail: str = "", pace_started: float | None = None,
                 pace_done: int = 0, expected_from: str = "the last run") -> None:
        """Progress of long work: one overwriting line on a terminal; in a log (not a terminal) a line
        every 10 s while it runs and one when it ends, and nothing for work that took under a second.

        ``unit="bytes"`` shows the counts as sizes; ``expected_s``, how long the same work took last
        time, makes the estimate of what is left (a linear estimate from the first units misleads when
        the slow units come last; ``expected_from`` names that run); ``detail`` is said before the counts ("23/40 files");
        ``pace_started``: when the counted work began, if later than ``started`` (a later phase of it), and
        ``pace_done`` how much of it was done by then."""
        if self.quiet or self.json_mode:
            return
        now = time.monotonic()
        elapsed = now - started
        finished = bool(total) and done >= total
        text = printable(progress_text(label, done, total, elapsed, unit=unit, expected_s=expected_s, detail=detail,
                                       pace_s=now - pace_started if pace_started is not None else None,
                                       pace_done=pace_done,
                                       expected_from=expected_from))
        if sys.stderr.isatty():
            _emit(sys.stderr, "\r\033[K" + text, end="\n" if finished else "")
            if finished and elapsed >= 1.0:
                self._log(text)
            return
        last = self._last_print.get(label)
        if (finished and elapsed >= 1.0) or (not finished and now - (last if last is not None else started) >= HEARTBEAT_S):
            self._last_print[label] = now
            _emit(sys.stderr, text)
            self._log(text)

    def heartbeat(self, label: str, poll: Callable[[], tuple], *, unit: str = "",
                  expected_s: float | None = None, expected_from: str = "the last run",
                  every_s: float = 1.0) -> "Heartbeat":
        """See :class:`Heartbeat`; nothing runs under ``--quiet`` or ``--json``."""
        return Heartbeat(self.progress, label, poll, unit=unit, expected_s=expected_s, expected_from=expected_from,
                         every_s=every_s, enabled=not (self.quiet or self.json_mode))

    def _log(self, text: str) -> None:
        if self.log_file is not None:
            from resolver.core.errors import BadInput
            from resolver.core.fs import append_text

            try:
                with _WRITING:  # never through a link put at the log's name since it was made
                    append_text(self.log_file, printable(text, keep_newlines=True).rstrip("\n") + "\n")
            except (OSError, BadInput):
                pass


class Heartbeat:
    """A context manager that reports ``poll()`` (done, total[, detail[, unit[, phase]]]) through ``progress`` (an
    :meth:`Output.progress`) every ``every_s`` while its block runs, for work whose own output says
    nothing (uv installing wheels), and once more when the block ends. Not on a terminal,
    :meth:`Output.progress` turns that into a line every 10 s: the heartbeat of a log. When the poll
    names a new ``phase`` (unpacking, then installing, then byte-compiling), the estimate is made from
    the pace since that phase began. The polling thread only reads (counts files); a poll that fails is
    skipped."""

    def __init__(self, progress: Callable[..., None], label: str, poll: Callable[[], tuple], *,
                 unit: str = "", expected_s: float | None = None, expected_from: str = "the last run",
                 every_s: float = 1.0, enabled: bool = True) -> None:
        self.progress, self.label, self.poll, self.expected_from = progress, label, poll, expected_from
        self.unit, self.expected_s, self.every_s, self.enabled = unit, expected_s, every_s, enabled
        self.started = time.monotonic()
        self._phase: tuple[object, float, int] | None = None  # (the poll's phase, when first seen, done by then)
        self._stop = None
        self._thread = None

    def __enter__(self) -> "Heartbeat":
        if not self.enabled:
            return self
        import threading

        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"progress: {self.label}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        every = self.every_s if sys.stderr.isatty() else HEARTBEAT_S  # a log gets a line every 10 s: poll no more
        while not self._stop.wait(every):
            self._report(final=False)

    def _report(self, final: bool) -> bool:
        """Report once; whether the line said was a finished one (a terminal line needs no ending then)."""
        try:
            done, total, *rest = self.poll()
        except (OSError, ValueError):
            return False
        detail = rest[0] if rest else ""
        unit = rest[1] if len(rest) > 1 else self.unit
        phase = rest[2] if len(rest) > 2 else None
        if self._phase is None or self._phase[0] != phase:  # a later phase is timed from what it had done when seen
            self._phase = (phase, time.monotonic(), max(done, 0)) if self._phase is not None else (phase, self.started, 0)
        if final and total:
            done = total
        elif total and done >= total:
            done = total - 1  # "all done" is said once, when the work has really ended
        self.progress(self.label, max(done, 0), total, self.started, unit=unit, expected_s=self.expected_s,
                      detail=detail, pace_started=self._phase[1], pace_done=self._phase[2],
                      expected_from=self.expected_from)
        return bool(final and total)

    def __exit__(self, kind, value, traceback) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        finished = self._report(final=True) if kind is None else False
        if not finished and sys.stderr.isatty():
            print(file=sys.stderr, flush=True)  # keep the overwritten line; what follows starts on its own


MIN_SHARE = 0.02  # a linear estimate from less of the work than this is noise ("~8h left" after 0.3%)


def progress_text(label: str, done: int, total: int | None, elapsed: float, *, unit: str = "",
                  expected_s: float | None = None, detail: str = "", pace_s: float | None = None,
                  pace_done: int = 0, expected_from: str = "the last run") -> str:
    """The words of one progress report.

    >>> progress_text("compiling", 3, 14, 25.0)
    'compiling: 3/14 (21%) 25s elapsed, ~92s left'
    >>> progress_text("fetching", 50 << 20, 200 << 20, 12.0, unit="bytes")
    'fetching: 50.0 MiB/200.0 MiB (25%) 12s elapsed, ~36s left'
    >>> progress_text("mamba-ssm: translation units", 2, 40, 130.0, expected_s=1200.0)
    'mamba-ssm: translation units: 2/40 (5%) 2m10s elapsed, ~17m50s left (20m00s expected from the last run)'
    >>> progress_text("installing wheels", 0, 40, 10.0)
    'installing wheels: 0/40 (0%) 10s elapsed'
    >>> progress_text("installing", 7, None, 3.0)
    'installing: 7 3s elapsed'
    >>> progress_text("installing wheels", 300 << 20, 900 << 20, 10.0, unit="bytes", detail="23/40 files")
    'installing wheels: 23/40 files, 300.0 MiB/900.0 MiB (33%) 10s elapsed, ~20s left'
    >>> progress_text("tiny-ext: translation units", 0, None, 4.0, detail="preparing the build")
    'tiny-ext: translation units: preparing the build, 4s elapsed'
    >>> progress_text("installing", 26, 10160, 75.0, detail="byte-compiling", pace_s=1.0)  # too little done to tell
    'installing: byte-compiling, 26/10160 (0%) 75s elapsed'
    >>> progress_text("installing", 2600, 10160, 95.0, detail="byte-compiling", pace_s=20.0)  # the phase's own pace
    'installing: byte-compiling, 2600/10160 (25%) 95s elapsed, ~58s left'
    >>> progress_text("installing", 522, 9981, 20.0, detail="byte-compiling", pace_s=0.1, pace_done=522)  # just seen
    'installing: byte-compiling, 522/9981 (5%) 20s elapsed'
    >>> progress_text("installing", 2522, 9981, 30.0, detail="byte-compiling", pace_s=10.0, pace_done=522)
    'installing: byte-compiling, 2522/9981 (25%) 30s elapsed, ~37s left'
    """
    if not total and detail:
        return f"{label}: {detail}, {duration_text(elapsed)} elapsed"
    label = f"{label}: {detail}," if detail else f"{label}:"
    def count(value: int) -> str:
        return size_text(value) if unit == "bytes" else str(value)

    if not total:
        return f"{label} {count(done)} {duration_text(elapsed)} elapsed"
    share = done / total
    if expected_s:
        left = max(expected_s - elapsed, 0.0) if done < total else 0.0
        if share > 0.5 and done < total:  # past half-way the work's own pace says more than last time
            left = elapsed / share * (1 - share)
        tail = f", ~{duration_text(left)} left ({duration_text(expected_s)} expected from {expected_from})"
    elif done > pace_done and (done - pace_done) / total >= MIN_SHARE:  # the pace of what was timed
        pace = elapsed if pace_s is None else pace_s
        tail = f", ~{duration_text(pace / (done - pace_done) * (total - done))} left"
    else:
        tail = ""  # too little done yet to tell what is left from its pace
    return f"{label} {count(done)}/{count(total)} ({100 * done // total}%) {duration_text(elapsed)} elapsed{tail}"


def duration_text(seconds: float) -> str:
    """``42s``, ``92s``, ``3m05s``, ``1h02m``: seconds up to two minutes, then minutes and seconds.

    >>> duration_text(42.4), duration_text(92), duration_text(185), duration_text(3725)
    ('42s', '92s', '3m05s', '1h02m')
    """
    seconds = int(round(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def size_text(count: int) -> str:
    """Bytes as a person reads them.

    >>> size_text(512), size_text(3 << 20), size_text(5 * (1 << 30) + (1 << 29))
    ('512 B', '3.0 MiB', '5.5 GiB')
    """
    if count < 1024:
        return f"{count} B"
    for unit in ("KiB", "MiB", "GiB"):
        count /= 1024
        if count < 1024 or unit == "GiB":
            return f"{count:.1f} {unit}"
    return f"{count:.1f} GiB"  # pragma: no cover - the loop returns


SCHEMA_VERSION = 1  # of every command's --json document (resolver/schemas/); raised on an incompatible change


def with_schema_version(data: Any) -> Any:
    """``data`` with ``schema_version`` first, for an object; other JSON values are returned as they are."""
    if isinstance(data, dict) and "schema_version" not in data:
        return {"schema_version": SCHEMA_VERSION, **data}
    return data
