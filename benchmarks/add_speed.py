"""Adding one pure-Python wheel to the CPU environment, end to end, against ``uv add`` in the same sitting.

    python benchmarks/add_speed.py [--runs N] [--package NAME] [--channel DIR] [--json]

Both sides start from an installed CPU environment (torch 2.13.0+cpu, numpy, transformers, safetensors,
einops, packaging, ninja and their dependencies) made from the same sources (this machine's pip
configuration; the conda python from the test suite's toolchain channel, or ``--channel``):

* mamba-resolver: ``add --pypi NAME -e cpu`` (pixi.toml written, the cpu environment locked again with the
  others kept, only the new wheel installed), then ``remove --pypi NAME -e cpu``;
* uv: a project with the same requirements, synced once; ``uv add NAME`` (pyproject.toml, uv.lock, the
  venv), then ``uv remove NAME``.

The four commands run interleaved, ``--runs`` times; medians and ratios are printed. Target: the
resolver's add ≤ 5 s.
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
REQUIREMENTS = ("torch==2.13.0+cpu", "numpy", "transformers", "safetensors", "einops", "packaging", "ninja")
TARGET_S = 5.0


def timed(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds


def uv_environ(env: dict[str, str]) -> dict[str, str]:
    """uv's variables for this machine's pip configuration: the same sources the resolver reads."""
    from resolver.lock.pipconfig import read_pip_config

    pip = read_pip_config()
    out = dict(env)
    if pip.index_url:
        out["UV_INDEX_URL"] = pip.index_url
    if pip.extra_index_urls:
        out["UV_EXTRA_INDEX_URL"] = " ".join(pip.extra_index_urls)
    if pip.find_links:
        out["UV_FIND_LINKS"] = " ".join(pip.find_links)
    if pip.constraints:
        out["UV_CONSTRAINT"] = " ".join(pip.constraints)
    out["UV_INDEX_STRATEGY"] = "unsafe-best-match"  # pip's way across indexes, as the resolver's lock takes it
    return out


def uv_project(root: Path, python: str) -> Path:
    root.mkdir(parents=True)
    deps = ",\n".join(f'    "{r}"' for r in REQUIREMENTS)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "uv-cpu"\nversion = "0"\nrequires-python = "=={python}.*"\ndependencies = [\n{deps},\n]\n\n'
        '[tool.uv]\nenvironments = ["sys_platform == \'linux\' and platform_machine == \'x86_64\'"]\n'
        'package = false\n', encoding="utf-8")
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--package", default="tabulate", help="the pure-Python wheel added (default: tabulate)")
    parser.add_argument("--channel", type=Path, help="a conda-forge mirror with a conda python")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    sys.path.insert(0, str(REPO))
    from support import projects, toolchain_channel

    from resolver.tools import uv

    channel = args.channel or toolchain_channel.cached_channel()
    uv_bin = uv.binary()
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    with tempfile.TemporaryDirectory(prefix="add-speed-") as tmp:
        tmp = Path(tmp)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user runs it: bytecode written on first import
        project = projects.project(tmp / "project", toolchain=channel, torch_mirror=projects.torch_cpu_mirror())
        env["RESOLVER_PROJECT"] = str(project)
        resolver = [sys.executable, "-m", "resolver"]
        timed([*resolver, "lock", "--target", "cpu", "--channel", str(channel)], env)
        timed([*resolver, "install", "--env", "cpu"], env)
        uv_env = uv_environ(env)
        uv_env.pop("VIRTUAL_ENV", None)
        uv_root = uv_project(tmp / "uv", python)
        timed([uv_bin, "sync", "--python", sys.executable], uv_env, uv_root)
        rows: dict[str, list[float]] = {"resolver add": [], "uv add": [], "resolver remove": [], "uv remove": []}
        for _ in range(args.runs):
            rows["resolver add"].append(timed([*resolver, "add", "--pypi", args.package, "-e", "cpu"], env))
            rows["uv add"].append(timed([uv_bin, "add", args.package], uv_env, uv_root))
            rows["resolver remove"].append(timed([*resolver, "remove", "--pypi", args.package, "-e", "cpu"], env))
            rows["uv remove"].append(timed([uv_bin, "remove", args.package], uv_env, uv_root))
        medians = {name: statistics.median(values) for name, values in rows.items()}
    result = {"package": args.package, "runs": args.runs, "load_average": os.getloadavg()[0],
              "medians_s": {k: round(v, 3) for k, v in medians.items()},
              "ratio_add": round(medians["resolver add"] / medians["uv add"], 2),
              "ratio_remove": round(medians["resolver remove"] / medians["uv remove"], 2),
              "target_add_s": TARGET_S, "met": medians["resolver add"] <= TARGET_S,
              "samples_s": {k: [round(x, 3) for x in v] for k, v in rows.items()}}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"adding {args.package} to the CPU environment, medians of {args.runs} interleaved runs "
              f"(load average {result['load_average']:.1f}):")
        for verb in ("add", "remove"):
            print(f"  {verb:6}  mamba-resolver {medians['resolver ' + verb]:.2f} s   uv {medians['uv ' + verb]:.2f} s   "
                  f"ratio {result['ratio_' + verb]:.2f}")
        print(f"target: add ≤ {TARGET_S:.0f} s end to end: {'met' if result['met'] else 'NOT met'}")
    return 0 if result["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
