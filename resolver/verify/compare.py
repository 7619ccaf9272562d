"""Compare two environments' outputs for the same inputs (a migration checked before and after a
change), without numpy.

Each environment dumps its library's float32 logits (raw little-endian) and tokens (JSON sidecar);
this module reads both and reports the largest difference relative to the logit scale.

>>> import array, tempfile, pathlib, json
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> for n, vals in (("a", [1.0, -2.0]), ("b", [1.0, -2.001])):
...     _ = (d / n).write_bytes(array.array("f", vals).tobytes())
...     _ = (d / f"{n}.json").write_text(json.dumps({"shape": [1, 2], "tokens": [[1]]}))
>>> r = compare_dumps(d / "a", d / "b", tolerance=1e-3)
>>> r["ok"], round(r["rel_err"], 4)
(True, 0.0005)
"""

from __future__ import annotations

import array
import json
import sys
from pathlib import Path


def _read(path: Path) -> tuple[list[int], array.array, list]:
    from resolver.core.fs import read_bytes_bounded

    meta = json.loads(read_bytes_bounded(path.with_suffix(".json"), limit=64 << 20, what="the logits record"))
    data = array.array("f")
    data.frombytes(read_bytes_bounded(path, limit=4 << 30, what="the logits"))
    if sys.byteorder != "little":
        data.byteswap()
    return meta["shape"], data, meta.get("tokens", [])


def compare_dumps(a: Path, b: Path, *, tolerance: float) -> dict:
    shape_a, da, ta = _read(a)
    shape_b, db, tb = _read(b)
    if shape_a != shape_b:
        return {"ok": False, "why": f"logit shapes differ: {shape_a} vs {shape_b}"}
    max_abs = max((abs(x - y) for x, y in zip(da, db)), default=0.0)
    scale = max((abs(x) for x in da), default=0.0) or 1.0
    rel = max_abs / scale
    return {"ok": rel <= tolerance and ta == tb, "max_abs_err": max_abs, "rel_err": rel, "tolerance": tolerance,
            "tokens_equal": ta == tb, "shape": shape_a}
