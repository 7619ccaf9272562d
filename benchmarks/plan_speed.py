"""How long the everyday commands take as processes, against a bare `python -c pass`.

    python benchmarks/plan_speed.py [--runs N] [--source DIR] [--json]

Measured, each as its own process, medians of ``--runs`` interleaved rounds:

- ``plan`` on this machine, the probe included (the plan itself remembered, as after a first run):
  target <= 2x ``python -c pass``;
- a no-op ``lock`` (pixi.lock already satisfies pixi.toml and the plans): target <= 3x;
- ``probe --json`` and ``plan --profile FILE``, for where the time goes;
- the standard library's floor: ``python -c "import argparse, dataclasses, …"`` with exactly the
  standard-library modules ``plan`` imports that a bare ``python -c pass`` does not (read from
  ``-X importtime``). It runs no line of the resolver: no ``plan`` built on those modules can be faster.

The project the no-op lock runs in is a copy of this checkout's pixi.toml, locked once for real
before the rounds (so it needs the package indexes pip is configured with). ``--source DIR`` runs the
commands of another checkout (its ``resolver`` package first on PYTHONPATH), to compare two versions
in one sitting on the same machine: run it once per checkout, back to back.

The commands run interleaved, round after round, so a busy machine slows them alike (their ratio is
what matters). Bytecode is cached as on a user's machine (PYTHONDONTWRITEBYTECODE is dropped and the
cache goes to a temporary PYTHONPYCACHEPREFIX after one warm-up run); ``--cold`` measures with none.
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

REPO = Path(__file__).resolve().parent.parent
TARGETS = {"plan": 2.0, "noop_lock": 3.0}


def _medians(commands: dict[str, tuple[list[str], Path | None]], runs: int, env: dict) -> dict[str, float]:
    """Median wall time per command (each with its working folder), interleaved round after round."""
    for command, cwd in commands.values():  # warm-up: writes the bytecode cache and the plan memo
        subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (command, cwd) in commands.items():
            start = time.perf_counter()
            result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
            times[name].append(time.perf_counter() - start)
            if result.returncode != 0:
                raise SystemExit(f"{' '.join(command)} failed ({result.returncode}): {result.stderr.strip()[-300:]}")
    return {name: statistics.median(values) for name, values in times.items()}


def _locked_project(folder: Path, python: str, env: dict) -> Path:
    """A copy of this checkout's pixi.toml whose pixi.lock is current (locked once, for real)."""
    folder.mkdir()
    sys.path.insert(0, str(REPO / "tests"))
    from support import shipped_manifest

    (folder / "pixi.toml").write_text(shipped_manifest())
    done = subprocess.run([python, "-m", "resolver", "lock"], capture_output=True, text=True, env=env, cwd=folder)
    if done.returncode != 0:
        raise SystemExit(f"locking the benchmark project failed: {done.stderr.strip()[-500:]}")
    again = subprocess.run([python, "-m", "resolver", "lock", "--json"], capture_output=True, text=True, env=env,
                           cwd=folder)
    if again.returncode != 0 or json.loads(again.stdout).get("status") != "up-to-date":
        raise SystemExit(f"the benchmark project's lock is not current after locking it: {again.stdout[-500:]}")
    return folder


def _imported(python: str, args: list[str], env: dict) -> set[str]:
    """The top-level names of every module a run of ``python args`` imports (``-X importtime``'s list)."""
    done = subprocess.run([python, "-X", "importtime", *args], capture_output=True, text=True, env=env)
    return {line.rsplit("|", 1)[1].strip().split(".")[0] for line in done.stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2}


def _stdlib_floor(python: str, env: dict) -> list[str]:
    """The standard-library modules `plan` imports that a bare `python -c pass` does not."""
    plan = _imported(python, ["-m", "resolver", "plan", "--json"], env)
    return sorted((plan - _imported(python, ["-c", "pass"], env)) & set(sys.stdlib_module_names))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cold", action="store_true", help="no bytecode cache (every run compiles every module)")
    parser.add_argument("--source", metavar="DIR", help="measure the resolver of another checkout")
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        if args.source:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(args.source).resolve()), env.get("PYTHONPATH")) if p)
        if args.cold:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        profile = Path(tmp) / "profile.json"
        profile.write_text(subprocess.run([python, "-m", "resolver", "probe", "--json"], capture_output=True,
                                          text=True, check=True, env=env).stdout)
        project = _locked_project(Path(tmp) / "project", python, env)
        floor = _stdlib_floor(python, env)
        medians = _medians({
            "bare": ([python, "-c", "pass"], None),
            "stdlib_floor": ([python, "-c", "import " + ", ".join(floor)], None),
            "probe": ([python, "-m", "resolver", "probe", "--json"], None),
            "plan_profile": ([python, "-m", "resolver", "plan", "--profile", str(profile), "--json"], None),
            "plan": ([python, "-m", "resolver", "plan", "--json"], None),
            "noop_lock": ([python, "-m", "resolver", "lock", "--json"], project),
        }, args.runs, env)
    bare = medians["bare"]
    ratios = {name: round(medians[name] / bare, 2) for name in TARGETS}
    result = {"runs": args.runs, "bytecode_cache": not args.cold, "source": args.source or str(REPO),
              "seconds": {name: round(value, 4) for name, value in medians.items()},
              "ratio_vs_python_c_pass": ratios, "targets": TARGETS,
              "stdlib_floor_ratio": round(medians["stdlib_floor"] / bare, 2), "stdlib_floor_modules": floor,
              "met": all(ratios[name] <= target for name, target in TARGETS.items())}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        labels = {"bare": "python -c pass", "stdlib_floor": "stdlib floor of plan", "probe": "resolver probe --json", "plan_profile": "resolver plan --profile",
                  "plan": "resolver plan (probes)", "noop_lock": "resolver lock (no-op)"}
        for name, label in labels.items():
            ratio = f"  {medians[name] / bare:5.2f}x" + (f" (target <= {TARGETS[name]:g}x)" if name in TARGETS else "")
            print(f"{label:26} {medians[name] * 1000:7.1f} ms{ratio if name != 'bare' else ''}")
        print(f"(the floor imports {len(floor)} standard-library modules: {', '.join(floor)})")
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
