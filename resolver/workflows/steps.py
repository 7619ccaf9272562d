"""A small step runner: content-hash stamps, a project lock, timings, a readable step list.

A step is skipped when the fingerprint of its inputs (:func:`resolver.core.fingerprint.fingerprint`)
equals the one recorded after its last success, so a second ``setup`` is near-instant and an
interrupted one resumes at the first step whose stamp is missing. Stamps are written only after a
step succeeds (temp file + rename), so a killed run never records a step it did not finish.
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from resolver.core.errors import ResolverError
from resolver.core.fingerprint import Memo
from resolver.core.records import Anything, Fields, Number
from resolver.project.paths import project_lock  # noqa: F401  (setup and the commands hold it)


@dataclass(frozen=True)
class Stamps:
    """Per-step memos (:attr:`~resolver.project.paths.ProjectPaths.step_stamps`): the fingerprint of the
    step's inputs and ``{"result": ..., "at": <time>}``, read as untrusted data."""

    folder: Path

    def _memo(self, step: str) -> Memo:
        return Memo(self.folder / f"{step}.json", Fields({"result": Anything(), "at": Number()}), label="stamp")

    def read(self, step: str) -> dict[str, Any] | None:
        """The step's last success: ``inputs_digest`` and ``value`` (its ``result`` and when, ``at``)."""
        return self._memo(step).read()

    def is_current(self, step: str, inputs: str) -> bool:
        return self._memo(step).recall(inputs) is not None

    def result(self, step: str, inputs: str) -> Any:
        """What the step returned when it last ran for these inputs (None: it did not)."""
        value = self._memo(step).recall(inputs)
        return None if value is None else value["result"]

    def write(self, step: str, inputs: str, result: Any = None) -> None:
        self._memo(step).keep(inputs, {"result": result, "at": time.time()})

    def clear(self, step: str) -> None:
        self._memo(step).forget()


@dataclass(frozen=True)
class Caveat:
    """What a step that succeeded still leaves wrong (a lock a teammate cannot install, a fallback
    environment), and the command or edit that fixes it ("" when there is nothing to run)."""

    text: str
    fix: str = ""

    @classmethod
    def from_note(cls, note: str) -> "Caveat":
        """A note of the form "what is wrong. Fix: what to do" split in its two parts.

        >>> Caveat.from_note("the lock records a path of this machine. Fix: add a mirror and lock again")
        Caveat(text='the lock records a path of this machine', fix='add a mirror and lock again')
        """
        text, _, fix = note.partition(". Fix: ")
        return cls(text.strip(), fix.strip().rstrip("."))

    def line(self) -> str:
        return self.text + (f". Fix: {self.fix}" if self.fix else "")

    def to_json(self) -> dict[str, str]:
        return {"text": self.text, "fix": self.fix}


@dataclass
class StepReport:
    name: str
    status: str  # "done" | "skipped" | "failed" | "not-needed" | "deferred" | "would-run"
    detail: str = ""
    seconds: float = 0.0
    result: Any = None
    peak_rss_mib: int | None = None  # the largest process of the run so far (this one or a child), at the step's end
    caveats: tuple[Caveat, ...] = ()  # what the step leaves wrong although it succeeded (marked "!", not "✓")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail,
                "seconds": round(self.seconds, 3), "peak_rss_mib": self.peak_rss_mib, "result": jsonable(self.result),
                "caveats": [c.to_json() for c in self.caveats]}


def jsonable(value: Any) -> Any:
    """Plain JSON data from our value types (anything with ``to_json``), paths and containers."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


_SYMBOL = {"done": "✓", "skipped": "·", "failed": "✗", "not-needed": "·", "deferred": "→", "would-run": "?"}
CAVEAT_SYMBOL = "!"  # a step that succeeded with a caveat: never a ✓


def symbol(report: StepReport) -> str:
    return CAVEAT_SYMBOL if report.caveats and report.status != "failed" else _SYMBOL.get(report.status, "?")


def step_line(report: StepReport, *, whole: bool = False) -> str:
    """The step's line in the list. On screen a failed step's message is the error the command prints
    once, below the list; ``whole`` (the log file) keeps it on the step's line."""
    detail = "(the error follows)" if report.status == "failed" and not whole else report.detail
    if report.caveats:
        count = len(report.caveats)
        detail += f" ({count} caveat{'s' if count > 1 else ''}, listed at the end)"
    return f"  {symbol(report)} {report.name:<8} {report.status:<10} {report.seconds:6.1f}s  {detail}".rstrip()


def append_to_log(log_file: Path | None, text: str) -> None:
    """Add ``text`` (one or more lines) to the run's log file, its control characters escaped as on screen
    (someone will ``cat`` it); a log that cannot be written is no error."""
    from resolver.core.names import printable

    if log_file is None:
        return
    from resolver.core.errors import BadInput
    from resolver.core.fs import append_text

    with contextlib.suppress(OSError, BadInput):  # never through a link put at the log's name since
        append_text(log_file, printable(text.rstrip("\n"), keep_newlines=True) + "\n")


@dataclass
class StepLog:
    """Collects step reports and prints each as it ends (to stderr when stdout carries JSON); the log
    file gets every line too, a failed step with its whole message."""

    quiet: bool = False
    to_stderr: bool = False
    reports: list[StepReport] = field(default_factory=list)
    log_file: Path | None = None

    def add(self, report: StepReport) -> StepReport:
        self.reports.append(report)
        line = step_line(report)
        append_to_log(self.log_file, step_line(report, whole=True))
        if not self.quiet:
            from resolver.core.names import printable

            print(printable(line), file=sys.stderr if self.to_stderr else sys.stdout, flush=True)
        return report

    def timed(self, name: str, action: Callable[[], tuple]) -> StepReport:
        """Run ``action`` (returning status, detail, result and optionally its caveats) and record it; a
        ResolverError is recorded then re-raised (the command prints it, once)."""
        started = time.monotonic()
        try:
            status, detail, result, *rest = action()
        except ResolverError as exc:
            self.add(StepReport(name, "failed", str(exc), time.monotonic() - started, peak_rss_mib=peak_rss_mib()))
            raise
        caveats = tuple(rest[0]) if rest else ()
        return self.add(StepReport(name, status, detail, time.monotonic() - started, result, peak_rss_mib(), caveats))


def peak_rss_mib() -> int | None:
    """The peak resident memory of this process or of its largest finished child (compilers included,
    since each level waits for its own children), in MiB; None where the OS does not say."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    unit = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return peak * unit // (1 << 20)
