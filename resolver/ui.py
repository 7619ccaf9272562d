"""Printing for people and for scripts. Human text goes to stderr when ``--json`` owns stdout."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO


@dataclass
class Output:
    """How a command talks: ``json_mode`` prints one JSON document on stdout; ``quiet`` hides progress."""

    json_mode: bool = False
    quiet: bool = False
    stream: TextIO = field(default_factory=lambda: sys.stdout)

    def result(self, data: Any, human: str | None = None) -> None:
        """The command's answer: JSON on stdout with --json, else the human text."""
        if self.json_mode:
            print(json.dumps(data, indent=2, sort_keys=False), file=self.stream)
        elif human is not None:
            print(human, file=self.stream)

    def info(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr if self.json_mode else self.stream)

    def progress(self, label: str, done: int, total: int | None, started: float) -> None:
        """One overwriting progress line on a terminal; a plain line every 10 % otherwise."""
        if self.quiet or self.json_mode:
            return
        elapsed = time.monotonic() - started
        if total:
            eta = elapsed / done * (total - done) if done else 0.0
            text = f"{label}: {done}/{total} ({100 * done // total}%) {elapsed:.0f}s elapsed, ~{eta:.0f}s left"
        else:
            text = f"{label}: {done} {elapsed:.0f}s elapsed"
        if sys.stderr.isatty():
            print("\r" + text, end="\n" if total and done >= total else "", file=sys.stderr, flush=True)
        elif not total or done == total or done % max(1, total // 10) == 0:
            print(text, file=sys.stderr, flush=True)
