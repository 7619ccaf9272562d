"""100 consecutive CLI runs (50 × lock + install) that index, solve and install: count abnormal exits (py-rattler 0.28 can
abort at interpreter exit after a solve/index/install; the CLI must never exit that way).

Each iteration runs two commands in a fresh interpreter each:
  ``python -m resolver lock --json``     re-indexes the project's local channel (.resolver/channel,
                                          a package is touched every time) and solves with py-rattler;
  ``python -m resolver install --env cpu --force --no-cache --json``
                                          links the conda packages with py-rattler's install and pip-installs
                                          the wheels into a fresh virtual environment.
Abnormal = any exit code other than 0 (134 SIGABRT / 139 SIGSEGV / negative = killed by a signal).

    .venv/bin/python benchmarks/install_runs.py [--runs 50] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

MANIFEST = """\
[workspace]
name = "install-runs"
channels = []
platforms = ["linux-64"]

[feature.cpu]
platforms = ["linux-64"]
dependencies = { rt-tool = ">=0.3", rt-kernel = "1.2.*" }
pypi-dependencies = { rtpy = "*" }

[environments]
cpu = { features = ["cpu"], solve-group = "cpu" }

[tool.resolver]
find-links = ["./wheels"]
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="iterations (each is 2 CLI runs)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--control", type=int, default=0, metavar="N",
                        help="also run N bare py-rattler solve scripts without the exit workaround, to show the "
                             "crash this guards against is real on this machine")
    args = parser.parse_args()
    import channel_factory as cf

    from resolver import lock
    from resolver.decide.model import KernelChoice, Plan, TorchChoice, TorchSource
    from resolver.paths import ProjectPaths

    work = Path(tempfile.mkdtemp(prefix="resolver-install-runs-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "RESOLVER_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", RESOLVER_PROJECT=str(work))
    os.environ.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1")
    os.environ.pop("PIP_FIND_LINKS", None)
    (work / "pixi.toml").write_text(MANIFEST)
    cf.build_wheelhouse(work / "wheels")
    cf.build_channel(work / ".resolver" / "channel")
    plan = Plan(backend="cpu", backend_version=None, python=f"{sys.version_info.major}.{sys.version_info.minor}",
                platform="linux-64", target="cpu", kernels=KernelChoice("none"), glibc="2.28",
                torch=TorchChoice("2.13.0", "cpu", TorchSource("pypi-index", "https://download.pytorch.org/whl/cpu"),
                                  local_version="cpu"))
    lock.lock_plans(ProjectPaths(work), [plan])  # stores the plan; the CLI relocks it from then on
    touched = cf.package_file(work / ".resolver" / "channel", "rt-tool")
    codes: dict[str, list[int]] = {"lock": [], "install": []}
    seconds: dict[str, float] = {"lock": 0.0, "install": 0.0}
    started = time.monotonic()
    for i in range(args.runs):
        os.utime(touched)  # newer than repodata.json: lock re-indexes the local channel
        for name, cmd in (("lock", ["lock", "--json"]),
                          ("install", ["install", "--env", "cpu", "--force", "--no-cache", "--json"])):
            t = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "resolver", *cmd], env=env, capture_output=True, text=True)
            seconds[name] += time.monotonic() - t
            codes[name].append(done.returncode)
            if done.returncode != 0:
                print(f"run {i} {name}: exit {done.returncode}: {done.stderr.strip()[-300:]}", file=sys.stderr)
        if (i + 1) % 10 == 0:
            print(f"{i + 1}/{args.runs} iterations, abnormal so far: "
                  f"{sum(c != 0 for v in codes.values() for c in v)}", file=sys.stderr, flush=True)
    control = []
    bare = ("import asyncio, rattler; asyncio.run(rattler.solve([rattler.Channel(%r)], ['rt-tool'], "
            "platforms=['linux-64', 'noarch'])); print('solved')" % (work / ".resolver" / "channel").as_uri())
    for _ in range(args.control):
        control.append(subprocess.run([sys.executable, "-c", bare], env=env, capture_output=True, text=True).returncode)
    tool = work / ".resolver/envs/cpu/bin/rt-tool"
    check = subprocess.run([str(tool)], capture_output=True, text=True) if tool.exists() else None
    result = {"iterations": args.runs, "cli_runs": sum(len(v) for v in codes.values()),
              "abnormal_exits": sum(c != 0 for v in codes.values() for c in v),
              "exit_codes": {k: sorted(set(v)) for k, v in codes.items()},
              "mean_seconds": {k: round(seconds[k] / max(1, args.runs), 3) for k in seconds},
              "total_seconds": round(time.monotonic() - started, 1),
              "final_env_runs": check.stdout.strip() if check else None}
    if control:
        result["control_bare_solve_scripts"] = {"runs": len(control), "abnormal_exits": sum(c != 0 for c in control),
                                                "exit_codes": sorted(set(control))}
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2) if args.json else
          f"{result['cli_runs']} CLI runs ({args.runs} × lock + install): {result['abnormal_exits']} abnormal exits; "
          f"mean lock {result['mean_seconds']['lock']} s, install {result['mean_seconds']['install']} s")
    sys.stdout.flush()
    os._exit(0 if result["abnormal_exits"] == 0 else 1)


if __name__ == "__main__":
    main()
