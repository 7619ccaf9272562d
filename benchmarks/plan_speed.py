"""How long `probe` + `plan` take as processes, against a bare `python -c pass`.

    python benchmarks/plan_speed.py [--runs N]

Prints the median wall time of each and the ratio (probe + plan) / (2 x python -c pass); the target
is <= 3x. Import cost is most of it: the plan path imports no torch, rattler or tomlkit.

The commands run interleaved, round after round, so a busy machine slows them alike. Bytecode is
cached as on a user's machine (PYTHONDONTWRITEBYTECODE is dropped and the cache goes to a
temporary PYTHONPYCACHEPREFIX after one warm-up run); ``--cold`` measures with no bytecode cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _medians(commands: dict[str, list[str]], runs: int, env: dict) -> dict[str, float]:
    """Median wall time per command; the commands run interleaved, round after round, so a busy
    machine slows them all alike (their ratio is what matters)."""
    for command in commands.values():  # warm-up: writes the bytecode cache
        subprocess.run(command, capture_output=True, text=True, env=env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            start = time.perf_counter()
            result = subprocess.run(command, capture_output=True, text=True, env=env)
            times[name].append(time.perf_counter() - start)
            if result.returncode != 0:
                raise SystemExit(f"{' '.join(command)} failed ({result.returncode}): {result.stderr.strip()[-300:]}")
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cold", action="store_true", help="no bytecode cache (every run compiles every module)")
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        if args.cold:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        profile = Path(tmp) / "profile.json"
        profile.write_text(subprocess.run([python, "-m", "resolver", "probe", "--json"], capture_output=True,
                                          text=True, check=True).stdout)
        medians = _medians({
            "bare": [python, "-c", "pass"],
            "probe": [python, "-m", "resolver", "probe", "--json"],
            "plan": [python, "-m", "resolver", "plan", "--profile", str(profile), "--json"],
            "plan_live": [python, "-m", "resolver", "plan", "--json"],
        }, args.runs, env)
        bare, probe, plan, plan_live = (medians[k] for k in ("bare", "probe", "plan", "plan_live"))
    ratio = (probe + plan) / (2 * bare)
    result = {"runs": args.runs, "bytecode_cache": not args.cold, "python_c_pass_s": round(bare, 4), "probe_s": round(probe, 4),
              "plan_from_profile_s": round(plan, 4), "plan_with_live_probe_s": round(plan_live, 4),
              "ratio_probe_plus_plan_vs_2x_pass": round(ratio, 2),
              "ratio_plan_live_vs_pass": round(plan_live / bare, 2), "target": 3.0}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"python -c pass            {bare * 1000:7.1f} ms (median of {args.runs})")
        print(f"resolver probe --json     {probe * 1000:7.1f} ms")
        print(f"resolver plan --profile   {plan * 1000:7.1f} ms")
        print(f"resolver plan (probes)    {plan_live * 1000:7.1f} ms")
        print(f"(probe + plan) / (2 x pass) = {ratio:.2f}x  (target <= 3x); plan-with-probe / pass = "
              f"{plan_live / bare:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
