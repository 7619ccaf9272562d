"""What each skip-if-unchanged record saves: the same work in a fresh process with its record and without.

    python benchmarks/memo_savings.py [--runs N] [--json]

Each case runs as its own process per run (the bytecode cached, both sides importing the same modules
before the clock starts; what the work imports lazily, such as decide or tomlkit, is part of it, as it is
of a user's command), the two sides interleaved round after round; the fastest run of each side is the
least disturbed by other load. The rule: a record that saves under 50 ms goes (its code and its
crafted-file tests cost more than it gives) unless a benchmark shows it is needed.

Figures on the shared 2-core development container (Python 3.11, load average 10-13, fastest of 9):

    case               without    with    saves
    knowledge-cache     26.2 ms   8.4 ms  17.8 ms  removed: it saved the TOML parse only when the plan memo
                                                   missed (measured before its removal, with the case
                                                   ``load.load_tables(cache=False)`` against ``load_tables()``)
    plan-memo           43.8 ms   3.4 ms  40.4 ms  kept: under 50 ms, but it is the whole of `plan`'s budget
                                                   (benchmarks/plan_speed.py: plan <= 2x `python -c pass`, ~20 ms
                                                   each); a remembered plan imports neither decide nor the tables
    lock-check         189.2 ms  17.0 ms 172.2 ms  kept: tomlkit and py-rattler are not imported
    tool-answers        31.4 ms  24.0 ms   7.3 ms  kept, measured with a stand-in: a shell script named nvcc
                                                   (no CUDA here); a real nvcc answers in 30-50 ms a call and the
                                                   probe asks it twice. Run this where nvcc is on PATH: the case
                                                   takes the real one.
    env-facts, kernel-import, step-stamp: not measurable here (they save an environment's Python importing
    torch, 1-3 s; the built kernels' import check; a whole setup step): kept.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / "tests" / "profiles" / "v100.json"

# Each case: (setup run once, what only the side without the record runs first, the work timed). Both sides
# import the same modules before the clock starts; what the work imports lazily (decide, tomlkit, rattler)
# is part of it, as it is of a user's command.
CASES = {
    "plan-memo": (
        "",
        "planning.PlanMemo.recall = lambda self: None\nplanning.PlanMemo.keep = lambda self, plan: None",
        f"from resolver.plan import planning\nfrom resolver.plan.probe.profile import HardwareProfile\n"
        f"profile = HardwareProfile.from_file({str(PROFILE)!r})",
        "planning.plan_document(profile, 'auto', None)",
    ),
    "lock-check": (
        "from resolver.lock.current import lock_status\nfrom resolver.project.paths import ProjectPaths\n"
        "from pathlib import Path\nlock_status(ProjectPaths(Path({project!r})), remember=True)",
        "current._inputs_digest = lambda *args, **kwargs: None",
        "from resolver.lock import current\nfrom resolver.project.paths import ProjectPaths\nfrom pathlib import Path\n"
        "project = ProjectPaths(Path({project!r}))",
        "current.lock_status(project)",
    ),
    "tool-answers": (
        "",
        "system._remember = lambda key, answer: None\nsystem._answers = lambda: None",
        "from resolver.plan.probe import system\nfrom resolver.plan.probe.toolkits import find_cuda\n"
        "machine = system.LiveSystem({{'PATH': {bin!r}}})",
        "find_cuda(machine)",
    ),
}


def _project(folder: Path) -> Path:
    """A project whose pixi.lock is current: one environment of no packages."""
    sys.path.insert(0, str(ROOT))
    from resolver.lock.lockfile import LockedEnv, LockedPlatform, render_lock

    root = folder / "project"
    root.mkdir()
    (root / "pixi.toml").write_text('[workspace]\nname = "t"\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n')
    platform = LockedPlatform("linux-64", "linux-64", ())
    (root / "pixi.lock").write_text(render_lock([LockedEnv("default", platform, ("https://conda.anaconda.org/"
                                                                                 "conda-forge/",))], root))
    return root


def _nvcc(folder: Path) -> Path:
    """The first nvcc on PATH, else a stand-in script that answers like one."""
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry and os.access(os.path.join(entry, "nvcc"), os.X_OK):
            return Path(entry)
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvcc").write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.6, V12.6.85'\n")
    (bin_dir / "nvcc").chmod(0o755)
    return bin_dir


def _run(snippet: str, env: dict) -> float:
    """Run ``snippet`` in a fresh process; the seconds its timed part took (what it printed last)."""
    done = subprocess.run([sys.executable, "-c", snippet], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{snippet!r} failed: {done.stderr.strip()[-500:]}")
    lines = done.stdout.split()
    return float(lines[-1]) if lines else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = dict(os.environ, XDG_CACHE_HOME=str(folder / "cache"), PYTHONPYCACHEPREFIX=str(folder / "pycache"),
                   PYTHONPATH=str(ROOT))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        names = {"project": str(_project(folder)), "bin": str(_nvcc(folder))}
        results = {}
        for case, (setup, without, prelude, work) in CASES.items():
            clock = f"import time\nstart = time.perf_counter()\n{work}\nprint(time.perf_counter() - start)"
            sides = {"with": f"{prelude.format(**names)}\n{clock}",
                     "without": f"{prelude.format(**names)}\n{without}\n{clock}"}
            if setup:
                _run(setup.format(**names), env)
            for snippet in sides.values():  # the record written, the bytecode cached
                _run(snippet, env)
            times: dict[str, list[float]] = {"with": [], "without": []}
            for _ in range(args.runs):
                for side, snippet in sides.items():
                    times[side].append(_run(snippet, env))
            fastest = {side: min(values) * 1000 for side, values in times.items()}
            results[case] = {**{k: round(v, 1) for k, v in fastest.items()},
                             "saves_ms": round(fastest["without"] - fastest["with"], 1)}
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for case, row in results.items():
            print(f"{case:16} without {row['without']:7.1f} ms   with {row['with']:7.1f} ms   saves {row['saves_ms']:7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
