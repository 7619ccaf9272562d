"""Printing for people and for scripts. Human text goes to stderr when ``--json`` owns stdout."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from resolver.names import printable


@dataclass
class Output:
    """How a command talks: ``json_mode`` prints one JSON document on stdout; ``quiet`` hides progress.

    Human text may quote input (GPU names, log lines, file names): control characters in it are
    printed escaped (:func:`resolver.names.printable`), so no input can drive the terminal."""

    json_mode: bool = False
    quiet: bool = False
    stream: TextIO = field(default_factory=lambda: sys.stdout)
    _last_print: dict[str, float] = field(default_factory=dict, repr=False)  # label -> when last printed

    def result(self, data: Any, human: str | None = None) -> None:
        """The command's answer: JSON on stdout with --json, else the human text."""
        if self.json_mode:
            print(json.dumps(data, indent=2, sort_keys=False), file=self.stream)
        elif human is not None:
            print(printable(human, keep_newlines=True), file=self.stream)

    def info(self, text: str) -> None:
        if not self.quiet:
            print(printable(text, keep_newlines=True), file=sys.stderr if self.json_mode else self.stream)

    def progress(self, label: str, done: int, total: int | None, started: float) -> None:
        """Progress of long work: one overwriting line on a terminal; in a log (not a terminal) a line
        every 10 s while it runs and one when it ends, and nothing for work that took under a second."""
        if self.quiet or self.json_mode:
            return
        elapsed = time.monotonic() - started
        finished = bool(total) and done >= total
        if total:
            eta = elapsed / done * (total - done) if done else 0.0
            text = f"{label}: {done}/{total} ({100 * done // total}%) {elapsed:.0f}s elapsed, ~{eta:.0f}s left"
        else:
            text = f"{label}: {done} {elapsed:.0f}s elapsed"
        text = printable(text)
        if sys.stderr.isatty():
            print("\r\033[K" + text, end="\n" if finished else "", file=sys.stderr, flush=True)
            return
        last = self._last_print.get(label)
        now = time.monotonic()
        if (finished and elapsed >= 1.0) or (not finished and now - (last if last is not None else started) >= 10.0):
            self._last_print[label] = now
            print(text, file=sys.stderr, flush=True)
