"""How long a piece of long work took last time, for the estimate its progress line gives ("~14m
left (the last build took 20m05s)").

A kernel build's pace is uneven (the heavy translation units come late), so a linear estimate from
the first units is wrong by minutes; the last build of the same package on this project is better.
The file holds data only, is read bounded and validated, and losing it loses only the estimate.

>>> import tempfile, pathlib
>>> t = Timings(pathlib.Path(tempfile.mkdtemp()) / "timings.json")
>>> t.expected("build mamba-ssm", scale=2) is None
True
>>> t.record("build mamba-ssm", 600.0, scale=2)
>>> t.expected("build mamba-ssm", scale=4)  # twice the architectures: twice the device code
1200.0
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

LIMIT = 256 * 1024  # bytes read from the file at most
KEEP = 64  # entries kept


@dataclass(frozen=True)
class Timings:
    path: Path

    def _read(self) -> dict[str, dict[str, float]]:
        try:
            if self.path.is_symlink():
                return {}
            with open(self.path, "rb") as handle:
                data = json.loads(handle.read(LIMIT).decode("utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): v for k, v in data.items() if isinstance(v, dict) and _number(v.get("seconds"))
                and _number(v.get("scale"))}

    def expected(self, key: str, *, scale: float = 1.0) -> float | None:
        """The seconds ``key`` took last time, scaled by ``scale`` against the last run's (e.g. the count
        of architectures a build compiles for); None when never recorded."""
        entry = self._read().get(key)
        if entry is None:
            return None
        return float(entry["seconds"]) * (scale / float(entry["scale"]) if entry["scale"] else 1.0)

    def record(self, key: str, seconds: float, *, scale: float = 1.0) -> None:
        from resolver.fs import write_json_atomic

        data = self._read()
        data.pop(key, None)
        data[key] = {"seconds": round(seconds, 1), "scale": scale}
        try:
            write_json_atomic(self.path, dict(list(data.items())[-KEEP:]), label="timings")
        except OSError:  # an estimate is a nicety
            pass


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
