"""How long a piece of long work took last time, for the estimate its progress line gives ("~14m
left (20m05s expected from the last build)").

A kernel build's pace is uneven (the heavy translation units come late), so a linear estimate from
the first units is wrong by minutes; the last build of the same package on this project is better.
The record (``ProjectPaths.timings``) holds data only and is read as every cache is
(:func:`resolver.core.records.read_record`: this user's regular file, bounded, of its shape); losing it
loses only the estimate.

>>> import tempfile, pathlib
>>> t = Timings(pathlib.Path(tempfile.mkdtemp()) / "timings.json")
>>> t.expected("build mamba-ssm", scale=2) is None
True
>>> t.record("build mamba-ssm", 600.0, scale=2)
>>> t.expected("build mamba-ssm", scale=4)  # twice the architectures: twice the device code
1200.0
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from resolver.core.records import Fields, MapOf, Number, Text, read_record, write_record

KEEP = 64  # entries kept
_TIMINGS = MapOf(Fields({"seconds": Number(), "scale": Number()}), key=Text(max_len=200), max_items=KEEP)


@dataclass(frozen=True)
class Timings:
    path: Path

    def _read(self) -> dict[str, dict[str, float]]:
        data = read_record(self.path, _TIMINGS) or {}
        return {k: v for k, v in data.items() if v["seconds"] >= 0 and v["scale"] > 0}

    def expected(self, key: str, *, scale: float = 1.0) -> float | None:
        """The seconds ``key`` took last time, scaled by ``scale`` against the last run's (e.g. the count
        of architectures a build compiles for); None when never recorded."""
        entry = self._read().get(key)
        if entry is None:
            return None
        return float(entry["seconds"]) * scale / float(entry["scale"])

    def record(self, key: str, seconds: float, *, scale: float = 1.0) -> None:
        data = self._read()
        data.pop(key, None)
        data[key] = {"seconds": round(seconds, 1), "scale": scale}
        write_record(self.path, dict(list(data.items())[-KEEP:]), label="timings", in_order=True)
