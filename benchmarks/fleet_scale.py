"""How planning and locking a fleet grow with its size: time and peak memory at 1,000, 10,000 and 100,000 nodes.

    python benchmarks/fleet_scale.py [--nodes 1000,10000,100000] [--runs 3] [--json]
    python benchmarks/fleet_scale.py --nodes 1000 --resolve CHANNEL   # also lock with real solves (see below)

The nodes are generated from tests/data/machines: each captured machine is probed once (as
`probe --sysroot DIR --json` does), then node k is a copy of machine k mod M with its own GPU UUIDs,
memory and GPU count (1 to 8 of the machine's GPUs), written as `node-0001.json` …, so no two files
are alike and every one is read, checked and planned.

Measured, as processes, the median of --runs: wall time, CPU time (user + system) and peak memory (the
process's maximum resident set, from wait4), for each fleet size:
- `plan --fleet DIR --json`: read and check every file, decide per node, group into classes, print every
  node's class;
- `lock --fleet DIR --no-conda --no-pypi`: the same, plus pixi.toml (one environment per class, the
  fleet's table) and pixi.lock written. Solving is per class, not per node, and needs the channels and
  indexes (conda-forge, PyPI, PyTorch's), which this machine cannot reach for every class of
  tests/data/machines; so this figure leaves the solves out, and says how many classes would be solved.
- with `--resolve CHANNEL` (the tests' toolchain channel, e.g. .resolver/test-channels/toolchain-*), a
  fleet of N nodes made from the two machine doubles of tests/data/doubles (one class, CUDA 13.0) is locked
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
sys.path.insert(0, str(REPO / "tests"))
from support import shipped_manifest  # noqa: E402 - after the path it is found on


def machine_profiles(kind: str) -> list[dict]:
    """The `probe --json` of every captured machine (``machines``) or of the machine doubles (``doubles``)."""
    from resolver.plan.probe import probe_machine

    if kind == "machines":
        folders = sorted(p for p in (REPO / "tests" / "data" / "machines").iterdir() if p.is_dir())
        return [probe_machine(sysroot=folder).to_json() for folder in folders]
    out = []
    for name in ("h100-1x-driver580", "a100-t4-driver580"):
        probed = subprocess.run([sys.executable, "-m", "resolver", "probe", "--json"], capture_output=True, text=True,
                                check=True, env=dict(os.environ, RESOLVER_SYSROOT=str(REPO / "tests" / "data" / "doubles" / name)))
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


def timed(command: list[str], env: dict, runs: int) -> tuple[dict, str]:
    """The median wall and CPU seconds of ``runs`` runs of ``command`` and its largest peak memory (MiB); its
    last stdout."""
    walls, cpus, peaks, out = [], [], [], ""
    for _ in range(runs):
        with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
            started = time.perf_counter()
            process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env)
            _, status, usage = os.wait4(process.pid, 0)
            walls.append(time.perf_counter() - started)
            process.returncode = os.waitstatus_to_exitcode(status)
            stdout.seek(0)
            stderr.seek(0)
            out = stdout.read().decode()
            if process.returncode != 0:
                raise SystemExit(f"{' '.join(command[2:])} failed ({process.returncode}): "
                                 f"{stderr.read().decode().strip()[-400:]}")
        cpus.append(usage.ru_utime + usage.ru_stime)
        peaks.append(usage.ru_maxrss / 1024)  # KiB on Linux
    return {"wall_s": round(statistics.median(walls), 2), "cpu_s": round(statistics.median(cpus), 2),
            "peak_mib": round(max(peaks))}, out


def scale(root: Path, nodes: int, runs: int, bases: list[dict]) -> dict:
    """plan --fleet and lock --fleet (no solves) of ``nodes`` generated profiles."""
    python = [sys.executable, "-m", "resolver"]
    fleet = root / f"fleet-{nodes}"
    started = time.perf_counter()
    generate(fleet, bases, nodes)
    figures: dict[str, object] = {"nodes": nodes, "generate_s": round(time.perf_counter() - started, 2)}
    project = root / f"project-{nodes}"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    env = dict(os.environ, RESOLVER_PROJECT=str(project))
    figures["plan"], out = timed([*python, "plan", "--fleet", str(fleet), "--json"], env, runs)
    planned = json.loads(out)
    figures.update(classes=len(planned["classes"]), unserved=len(planned["unserved"]))
    figures["lock"], _ = timed([*python, "lock", "--fleet", str(fleet), "--no-conda", "--no-pypi", "--json"], env, runs)
    figures["pixi_toml_bytes"] = (project / "pixi.toml").stat().st_size
    shutil.rmtree(fleet)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,10000,100000", help="fleet sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--resolve", metavar="CHANNEL", help="also lock a fleet of the doubles with real solves")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.split(",")]
    python = [sys.executable, "-m", "resolver"]
    results: list[dict] = []
    solved: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bases = machine_profiles("machines")
        for nodes in sizes:
            results.append(scale(root, nodes, args.runs, bases))
        if args.resolve:
            from support.projects import conda_workspace

            doubles = root / "doubles"
            generate(doubles, machine_profiles("doubles"), sizes[0])
            project = root / "solved"
            project.mkdir()
            (project / "pixi.toml").write_text(conda_workspace(shipped_manifest(), Path(args.resolve)))
            env = dict(os.environ, RESOLVER_PROJECT=str(project), RESOLVER_CONDA_CHANNELS=str(Path(args.resolve)))
            figures, out = timed([*python, "lock", "--fleet", str(doubles), "--target", "cuda13.0", "--json"], env, 1)
            locked = json.loads(out)
            solved = {"nodes": sizes[0], **figures, "classes": len(locked["fleet"]["classes"]),
                      "environments": len(locked["locked"])}
    if args.json:
        print(json.dumps({"sizes": results, "lock_with_solves": solved or None}, indent=2))
        return 0
    print(f"node profiles from tests/data/machines ({results[0]['classes']} classes, the rest no class serves); "
          f"median of {args.runs} runs; CPU = user + system; peak = maximum resident set")
    print(f"{'nodes':>8}  {'command':<34} {'wall s':>7} {'CPU s':>7} {'peak MiB':>9}")
    for figures in results:
        for label, key in (("plan --fleet --json", "plan"), ("lock --fleet --no-conda --no-pypi", "lock")):
            row = figures[key]
            print(f"{figures['nodes']:>8,}  {label:<34} {row['wall_s']:>7.2f} {row['cpu_s']:>7.2f} {row['peak_mib']:>9}")
    print("pixi.toml: " + ", ".join(f"{f['nodes']:,} nodes {f['pixi_toml_bytes']:,} bytes" for f in results))
    if solved:
        print(f"lock --fleet, {solved['nodes']:,} nodes of the doubles, real solves: {solved['wall_s']:.2f} s wall, "
              f"{solved['cpu_s']:.2f} s CPU, peak {solved['peak_mib']} MiB → {solved['classes']} class(es), "
              f"{solved['environments']} environment-platform entries solved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
