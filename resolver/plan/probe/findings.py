"""Where each answer came from and what could not be read: the probe's running record.

>>> f = Findings()
>>> f.source("glibc: confstr(CS_GNU_LIBC_VERSION)"); f.note("nvidia-smi: not installed")
>>> f.sources, f.notes
(('glibc: confstr(CS_GNU_LIBC_VERSION)',), ('nvidia-smi: not installed',))
"""

from __future__ import annotations


class Findings:
    """An append-only list of sources and notes, local to one probe run (never global)."""

    def __init__(self) -> None:
        self._sources: list[str] = []
        self._notes: list[str] = []

    def source(self, text: str) -> None:
        if text not in self._sources:
            self._sources.append(text)

    def note(self, text: str) -> None:
        if text not in self._notes:
            self._notes.append(text)

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(self._sources)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self._notes)
