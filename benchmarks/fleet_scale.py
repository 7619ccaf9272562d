"""How long planning and locking a fleet of N node profiles take (target: seconds, not minutes).

    python benchmarks/fleet_scale.py [--nodes 1000] [--runs 3] [--json]
    python benchmarks/fleet_scale.py --resolve CHANNEL   # also lock with real solves (see below)

The nodes are generated from tests/machines: each captured machine is probed once (as
`probe --sysroot DIR --json` does), then node k is a copy of machine k mod M with its own GPU UUIDs,
memory and GPU count (1 to 8 of the machine's GPUs), written as `node-0001.json` …, so no two files
are alike and every one is read, checked and planned.

Measured, as processes, the median of --runs:
- `plan --fleet DIR --json`: read and check every file, decide per node, group into classes;
- `lock --fleet DIR --no-conda --no-pypi`: the same, plus pixi.toml (one environment per class, the
  fleet's table) and pixi.lock written. Solving is per class, not per node, and needs the channels and
  indexes (conda-forge, PyPI, PyTorch's), which this machine cannot reach for every class of
  tests/machines; so this figure leaves the solves out, and says how many classes would be solved.
- with `--resolve CHANNEL` (the tests' toolchain channel, e.g. .resolver/test-channels/toolchain-*), a
  fleet of N nodes made from the two machine doubles of tests/doubles (one class, CUDA 13.0) is locked
  with the real solves: conda from CHANNEL, PyPI through this machine's pip configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def machine_profiles(kind: str) -> list[dict]:
    """The `probe --json` of every captured machine (``machines``) or of the machine doubles (``doubles``)."""
    from resolver.probe import probe_machine

    if kind == "machines":
        folders = sorted(p for p in (REPO / "tests" / "machines").iterdir() if p.is_dir())
        return [probe_machine(sysroot=folder).to_json() for folder in folders]
    out = []
    for name in ("h100-1x-driver580", "a100-t4-driver580"):
        probed = subprocess.run([sys.executable, "-m", "resolver", "probe", "--json"], capture_output=True, text=True,
                                check=True, env=dict(os.environ, RESOLVER_SYSROOT=str(REPO / "tests" / "doubles" / name)))
        out.append(json.loads(probed.stdout))
    return out


def generate(folder: Path, bases: list[dict], count: int, seed: int = 17) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(count):
        profile = json.loads(json.dumps(bases[k % len(bases)]))
        nvidia = profile.get("nvidia")
        if nvidia and nvidia.get("gpus"):
            kinds = nvidia["gpus"]
            gpus = [dict(kinds[i % len(kinds)]) for i in range(max(len(kinds), rng.randint(1, 8)))]
            for i, gpu in enumerate(gpus):
                gpu["uuid"] = f"GPU-{k:05d}-{i}"
                gpu["memory_mib"] = rng.choice([16384, 24576, 40960, 81920])
            nvidia["gpus"] = gpus
        profile["cpu_count"] = rng.choice([32, 64, 128, 192])
        (folder / f"node-{k:05d}.json").write_text(json.dumps(profile))


def timed(command: list[str], env: dict, runs: int) -> tuple[float, subprocess.CompletedProcess]:
    times, done = [], None
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command[2:])} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return statistics.median(times), done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--resolve", metavar="CHANNEL", help="also lock a fleet of the doubles with real solves")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    python = [sys.executable, "-m", "resolver"]
    figures: dict[str, object] = {"nodes": args.nodes}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fleet = root / "fleet"
        started = time.perf_counter()
        generate(fleet, machine_profiles("machines"), args.nodes)
        figures["generate_s"] = round(time.perf_counter() - started, 2)
        project = root / "project"
        project.mkdir()
        shutil.copy(REPO / "pixi.toml", project / "pixi.toml")
        env = dict(os.environ, RESOLVER_PROJECT=str(project))
        seconds, done = timed([*python, "plan", "--fleet", str(fleet), "--json"], env, args.runs)
        planned = json.loads(done.stdout)
        figures.update(plan_s=round(seconds, 2), classes=len(planned["classes"]), unserved=len(planned["unserved"]))
        seconds, _ = timed([*python, "lock", "--fleet", str(fleet), "--no-conda", "--no-pypi", "--json"], env, args.runs)
        figures["lock_without_solves_s"] = round(seconds, 2)
        if args.resolve:
            sys.path.insert(0, str(REPO / "tests"))
            from conftest import conda_workspace

            doubles = root / "doubles"
            generate(doubles, machine_profiles("doubles"), args.nodes)
            solved = root / "solved"
            solved.mkdir()
            (solved / "pixi.toml").write_text(conda_workspace((REPO / "pixi.toml").read_text(), Path(args.resolve)))
            env = dict(os.environ, RESOLVER_PROJECT=str(solved), RESOLVER_CONDA_CHANNELS=str(Path(args.resolve)))
            seconds, done = timed([*python, "lock", "--fleet", str(doubles), "--target", "cuda13.0", "--json"], env, 1)
            locked = json.loads(done.stdout)
            figures.update(lock_with_solves_s=round(seconds, 2), lock_with_solves_classes=len(locked["fleet"]["classes"]),
                           lock_with_solves_environments=len(locked["locked"]))
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{figures['nodes']} node profiles from tests/machines (generated in {figures['generate_s']} s)")
    print(f"  plan --fleet:                        {figures['plan_s']:6.2f} s  → {figures['classes']} classes, "
          f"{figures['unserved']} nodes no class serves")
    print(f"  lock --fleet --no-conda --no-pypi:   {figures['lock_without_solves_s']:6.2f} s  (pixi.toml + pixi.lock, "
          f"{figures['classes']} environments; the solves are per class)")
    if "lock_with_solves_s" in figures:
        print(f"  lock --fleet, {figures['nodes']} nodes of the doubles, real solves: {figures['lock_with_solves_s']:6.2f} s "
              f"→ {figures['lock_with_solves_classes']} class(es), {figures['lock_with_solves_environments']} "
              "environment-platform entries solved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
