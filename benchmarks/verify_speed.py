"""Wall time of `python -m resolver verify` (the whole command, as a user runs it), median of N runs.

    python benchmarks/verify_speed.py --project DIR [--env NAME] [--runs 5]

Prints one JSON document: every run's wall time, the median, and the in-environment breakdown of
the last run (torch import, reference, library load, total inside the environment). Each run is
paired with a baseline run of the same environment's Python doing nothing but
`import torch, transformers` + loading MambaForCausalLM's module, so a busy machine shows as a
higher baseline rather than as a slower verify.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--project", required=True, help="a project folder with an installed environment")
    parser.add_argument("--env", default=None)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cmd = [sys.executable, "-m", "resolver", "verify", "--json"] + (["--env", args.env] if args.env else [])
    env_python = os.path.join(args.project, ".resolver", "envs", args.env or "cpu", "bin", "python")
    baseline_code = "import torch, transformers; from transformers import MambaForCausalLM"
    walls, bases, last = [], [], None
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run([env_python, "-c", baseline_code], capture_output=True, check=True)
        bases.append(round(time.perf_counter() - start, 3))
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=args.project,
                              env=dict(os.environ, RESOLVER_PROJECT=args.project))
        walls.append(round(time.perf_counter() - start, 3))
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
            return 1
        last = json.loads(done.stdout)
    print(json.dumps({"runs_s": walls, "median_s": statistics.median(walls), "min_s": min(walls),
                      "baseline_import_runs_s": bases, "baseline_import_median_s": statistics.median(bases),
                      "load_average": os.getloadavg(),
                      "in_env_last_run": last["timings"], "torch": last["versions"]["torch"],
                      "library": last["library"]["name"]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
