"""CPU and wall time of `python -m resolver doctor --log` on large logs of several shapes (64 MiB by
default: the largest log doctor accepts), one JSON document.

    python benchmarks/doctor_log_size.py [--mib 64]

The shapes are the ones a line-by-line or pattern-by-pattern reader pays most for: millions of blank
lines, lines of blanks, every line a near miss of a signature, one line without an end. CPU time is the
child's own (a busy machine shows in the wall time, not in it).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from support.hostile_pastes import LOG_SHAPES as SHAPES  # noqa: E402 - after the path it is found on


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=64)
    args = parser.parse_args()
    size = args.mib << 20
    results = {}
    with tempfile.TemporaryDirectory(prefix="resolver-doctor-bench-") as scratch:
        folder = Path(scratch)
        for shape, unit in SHAPES.items():
            log = folder / "big.log"
            log.write_text(unit * (size // len(unit.encode())), encoding="utf-8")
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "resolver", "doctor", "--log", str(log)], cwd=folder,
                                  capture_output=True, text=True, check=False)
            wall = time.monotonic() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            results[shape] = {"exit": done.returncode, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}
    print(json.dumps({"mib": args.mib, "shapes": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
