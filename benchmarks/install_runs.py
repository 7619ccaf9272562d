"""100 consecutive CLI runs (50 × lock + install) that solve and install: count abnormal exits (py-rattler 0.28 can
abort at interpreter exit after a solve/index/install; the CLI must never exit that way).

The project: a workspace whose ``cpu`` environment is a conda prefix (its ``python`` 3.11 from the test suite's
toolchain channel, tests/support/toolchain_channel.py, or ``--channel DIR``, named as the mirror of ``conda-forge``),
``rt-tool`` and ``rt-kernel`` from the project's local channel (``.resolver/channel``, built here by
tests/support/channel_factory.py and named in pixi.toml), and the wheels ``rtpy`` + a ``torch`` stub from a local
wheelhouse (pip's configuration off, no index). It is locked once in process for the plan ``lock --target cpu``
makes; the CLI relocks that stored plan from then on (``--force``: a current lock is otherwise left as it is,
with nothing solved).

Each iteration runs two commands in a fresh interpreter each:
  ``python -m resolver lock --force --channel DIR --json``
                                          solves the conda part with py-rattler (the toolchain channel as
                                          conda-forge's mirror, the local channel) and the PyPI part with uv;
                                          ``lock`` no longer indexes local channels (only ``build`` does);
  ``python -m resolver install --env cpu --force --no-cache --json``
                                          links the conda packages into a fresh conda prefix with py-rattler's
                                          install and installs the locked wheels into it.
Abnormal = any exit code other than 0 (134 SIGABRT / 139 SIGSEGV / negative = killed by a signal; the first
five are reported with their stderr). At the end the environment's ``rt-tool`` and its own python (importing
``rtpy`` and ``torch``) are run, and the last lock and install outputs are summarised (no fallback, a conda prefix).

    .venv/bin/python benchmarks/install_runs.py [--runs 50] [--channel DIR] [--control N] [--json]
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
channels = ["conda-forge", "{channel}"]
platforms = [{platform}]

[feature.cpu]
dependencies = {{ python = "{python}.*", rt-tool = ">=0.3", rt-kernel = "1.2.*" }}
pypi-dependencies = {{ rtpy = "*" }}

[environments]
cpu = {{ features = ["cpu"], solve-group = "cpu", no-default-feature = true }}

[tool.resolver]
find-links = ["./wheels"]
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="iterations (each is 2 CLI runs)")
    parser.add_argument("--channel", type=Path, help="a conda-forge mirror with a conda python (default: the test "
                                                     "suite's toolchain channel, built once)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--control", type=int, default=0, metavar="N",
                        help="also run N bare py-rattler solve scripts without the exit workaround, to show the "
                             "crash this guards against is real on this machine")
    args = parser.parse_args()
    from support import channel_factory as cf
    from support import toolchain_channel as tc

    from resolver import lock
    from resolver.core.model import KernelChoice, Plan, TorchChoice, TorchSource
    from resolver.project.paths import ProjectPaths
    from resolver.project.sources import Sources

    toolchain = (args.channel or tc.cached_channel()).resolve()
    work = Path(tempfile.mkdtemp(prefix="resolver-install-runs-"))
    project = ProjectPaths(work)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "RESOLVER_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", RESOLVER_PROJECT=str(work))
    for key in [k for k in os.environ if k.startswith(("PIP_", "RESOLVER_"))]:
        del os.environ[key]
    os.environ.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1")
    channel = cf.build_channel(project.channel)
    (work / "pixi.toml").write_text(MANIFEST.format(channel=channel.as_uri(), platform=tc.platform_entry(toolchain),
                                                    python=tc.PYTHON_SERIES))
    cf.build_wheelhouse(work / "wheels")
    plan = Plan(backend="cpu", backend_version=None, python=tc.PYTHON_SERIES, platform="linux-64", target="cpu",
                kernels=KernelChoice("none"), glibc=tc.channel_info(toolchain)["python_glibc_floor"],
                torch=TorchChoice("2.13.0", "cpu", TorchSource("pypi-index", "https://download.pytorch.org/whl/cpu"),
                                  local_version="cpu"),
                conda_packages=(("python", f"{tc.PYTHON_SERIES}.*"),))
    # stores the plan (the CLI relocks it from then on) and remembers the mirror for install
    lock.lock_plans(project, [plan], sources=Sources.load(work, flags={"conda-channels": [str(toolchain)]}))
    codes: dict[str, list[int]] = {"lock": [], "install": []}
    seconds: dict[str, float] = {"lock": 0.0, "install": 0.0}
    last: dict[str, str] = {}
    failures: list[dict] = []  # the first few abnormal exits, with what they printed
    started = time.monotonic()
    for i in range(args.runs):
        for name, cmd in (("lock", ["lock", "--force", "--channel", str(toolchain), "--json"]),
                          ("install", ["install", "--env", "cpu", "--force", "--no-cache", "--json"])):
            t = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "resolver", *cmd], env=env, capture_output=True, text=True)
            seconds[name] += time.monotonic() - t
            codes[name].append(done.returncode)
            last[name] = done.stdout
            if done.returncode != 0:
                print(f"run {i} {name}: exit {done.returncode}: {done.stderr.strip()[-300:]}", file=sys.stderr)
                if len(failures) < 5:
                    failures.append({"iteration": i, "command": name, "exit": done.returncode,
                                     "stderr": done.stderr.strip()[-1500:]})
        if (i + 1) % 10 == 0:
            print(f"{i + 1}/{args.runs} iterations, abnormal so far: "
                  f"{sum(c != 0 for v in codes.values() for c in v)}", file=sys.stderr, flush=True)
    control = []
    bare = ("import asyncio, rattler; asyncio.run(rattler.solve([rattler.Channel(%r)], ['rt-tool'], "
            "platforms=['linux-64', 'noarch'])); print('solved')" % channel.as_uri())
    for _ in range(args.control):
        control.append(subprocess.run([sys.executable, "-c", bare], env=env, capture_output=True, text=True).returncode)
    prefix = project.env("cpu")
    tool = prefix / "bin" / "rt-tool"
    check = subprocess.run([str(tool)], capture_output=True, text=True) if tool.exists() else None
    python = subprocess.run([str(prefix / "bin" / "python"), "-c", "import sys, rtpy, torch; "
                             "print(sys.version.split()[0], sys.prefix == %r, rtpy.VALUE, torch.__version__)"
                             % str(prefix)], capture_output=True, text=True) if tool.exists() else None
    result = {"iterations": args.runs, "cli_runs": sum(len(v) for v in codes.values()),
              "abnormal_exits": sum(c != 0 for v in codes.values() for c in v),
              "exit_codes": {k: sorted(set(v)) for k, v in codes.items()},
              "mean_seconds": {k: round(seconds[k] / max(1, args.runs), 3) for k in seconds},
              "total_seconds": round(time.monotonic() - started, 1),
              "final_env_runs": check.stdout.strip() if check else None,
              "final_env_python": (python.stdout or python.stderr).strip()[-300:] if python else None,
              "conda_prefix": (prefix / "conda-meta").is_dir() and not (prefix / "pyvenv.cfg").exists(),
              "last_lock": _last(last.get("lock"), lambda d: [{k: e[k] for k in ("environment", "conda_packages",
                                                                                 "pypi_packages", "fallback")}
                                                              for e in d["locked"]]),
              "last_install": _last(last.get("install"), lambda d: {k: d.get(k) for k in (
                  "kind", "conda_packages", "pypi_packages", "built_from")})}
    if failures:
        result["failures"] = failures
    if control:
        result["control_bare_solve_scripts"] = {"runs": len(control), "abnormal_exits": sum(c != 0 for c in control),
                                                "exit_codes": sorted(set(control))}
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2) if args.json else
          f"{result['cli_runs']} CLI runs ({args.runs} × lock + install): {result['abnormal_exits']} abnormal exits; "
          f"mean lock {result['mean_seconds']['lock']} s, install {result['mean_seconds']['install']} s\n"
          f"  final environment (conda prefix: {result['conda_prefix']}): {result['final_env_runs']}; python: "
          f"{result['final_env_python']}"
          + (f"\n  control: {result['control_bare_solve_scripts']}" if control else ""))
    sys.stdout.flush()
    os._exit(0 if result["abnormal_exits"] == 0 else 1)


def _last(stdout: str | None, pick):
    """What a command's ``--json`` output says, in short (None when it printed none)."""
    try:
        return pick(json.loads(stdout or ""))
    except (ValueError, KeyError, TypeError):
        return None


if __name__ == "__main__":
    main()
