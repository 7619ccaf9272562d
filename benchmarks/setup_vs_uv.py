"""mamba-resolver against uv, side by side in one sitting: the same packages, the same sources, the
same cache state (warm), medians of several interleaved runs, ratios printed.

    python benchmarks/setup_vs_uv.py [--runs N] [--channel DIR] [--json]

The CPU environment (torch 2.13.0+cpu, numpy, transformers, safetensors, einops, packaging, ninja and
their dependencies) through this machine's pip configuration:

* lock:    ``resolver lock --target cpu`` (the cpu environment re-resolved: its conda python and the
           PyPI part) vs ``uv pip compile --generate-hashes`` of the same requirements, same sources;
* install: ``resolver install --env cpu --no-cache`` into a fresh prefix (conda python linked, the locked
           wheels installed) vs ``uv venv`` + ``uv pip sync`` of the same pinned set, with the same
           byte-compile setting (none; then all, fewer runs);
* recreate: the environment's folder deleted, the lock unchanged: ``resolver install --bytecode all`` (linked
           from its cached build, bytecode included) vs ``uv venv`` + ``uv pip sync --compile-bytecode``;
* again:   ``resolver install`` of the unchanged lock (target ≤ 2 s);
* plan:    ``resolver plan`` vs ``python -c pass`` (bytecode cached, as a user runs it).

``--channel DIR``: the conda-forge mirror holding a conda python (default: the test suite's toolchain
channel, tests/toolchain_channel.py, built once). Targets: lock and install ≤ 1.5× uv, plan ≤ 3×.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REQUIREMENTS = ("torch==2.13.0+cpu", "numpy", "transformers", "safetensors", "einops", "packaging", "ninja")


def timed(command: list[str], env: dict[str, str], before=None) -> float:
    if before:
        before()
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {(done.stderr or done.stdout)[-600:]}")
    return seconds


def medians(pairs: dict[str, tuple[list[str], object]], runs: int, env: dict[str, str]) -> dict[str, float]:
    """Run each command once to warm up, then ``runs`` rounds, interleaved so a busy machine slows all alike."""
    for command, before in pairs.values():
        timed(command, env, before)
    samples: dict[str, list[float]] = {name: [] for name in pairs}
    for _ in range(runs):
        for name, (command, before) in pairs.items():
            samples[name].append(timed(command, env, before))
    return {name: statistics.median(values) for name, values in samples.items()}


def project_with(channel: Path, root: Path) -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    import toolchain_channel

    text = (REPO / "pixi.toml").read_text().replace(
        'platforms = ["linux-64"]', f"platforms = [{toolchain_channel.platform_entry(channel)}]", 1)
    root.mkdir(parents=True, exist_ok=True)
    (root / "pixi.toml").write_text(text)
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--channel", type=Path, help="a conda-forge mirror with a conda python")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from resolver import uv
    from resolver.lock.pipconfig import read_pip_config

    channel = args.channel
    if channel is None:
        sys.path.insert(0, str(REPO / "tests"))
        import toolchain_channel

        channel = toolchain_channel.cached_channel()
    python = sys.executable
    uv_bin = uv.binary()
    with tempfile.TemporaryDirectory(prefix="setup-vs-uv-") as tmp:
        tmp = Path(tmp)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user runs it: bytecode cached
        env.pop("PYTHONPYCACHEPREFIX", None)  # environments keep their bytecode in place
        project = project_with(channel, tmp / "project")
        env["RESOLVER_PROJECT"] = str(project)
        resolver = [python, "-m", "resolver"]
        timed([*resolver, "lock", "--target", "cpu", "--channel", str(channel)], env)  # the first lock: cold
        timed([*resolver, "install", "--env", "cpu", "--bytecode", "none"], env)
        pip = read_pip_config()
        flags = uv.source_flags(index_url=pip.index_url, extra_index_urls=pip.extra_index_urls,
                                find_links=pip.find_links, constraints=pip.constraints, no_index=pip.no_index)
        requirements = tmp / "requirements.in"
        requirements.write_text("".join(f"{r}\n" for r in REQUIREMENTS))
        pinned = tmp / "requirements.txt"
        env_python = project / ".resolver" / "envs" / "cpu" / "bin" / "python"
        python_version = subprocess.run([str(env_python), "-c", "import platform; print(platform.python_version())"],
                                        capture_output=True, text=True, check=True).stdout.strip()
        compile_cmd = [uv_bin, "pip", "compile", "--no-config", "--quiet", "--generate-hashes", "--python-version",
                       python_version, "--python-platform", "x86_64-manylinux_2_35", "--only-binary", ":all:",
                       *flags, str(requirements), "-o", str(pinned)]
        results: dict[str, dict[str, float]] = {}
        results["lock"] = medians({
            "resolver": ([*resolver, "lock", "--target", "cpu", "--json"], None),
            "uv": (compile_cmd, None)}, args.runs, env)

        env_dir = project / ".resolver" / "envs" / "cpu"
        venv = tmp / "uv-venv"
        base = Path(os.path.realpath(env_python))

        def fresh_env():
            shutil.rmtree(env_dir, ignore_errors=True)

        def fresh_venv():
            shutil.rmtree(venv, ignore_errors=True)

        def sync(compile_bytecode: bool) -> list[str]:
            return ["sh", "-c", f"'{uv_bin}' venv -q --no-config --python '{base}' '{venv}' && '{uv_bin}' pip sync -q "
                                f"--no-config --python '{venv}/bin/python' {' '.join(repr(f) for f in flags)} "
                                f"{'--compile-bytecode ' if compile_bytecode else ''}'{pinned}'"]
        results["install"] = medians({
            "resolver": ([*resolver, "install", "--env", "cpu", "--no-cache", "--bytecode", "none"], fresh_env),
            "uv": (sync(False), fresh_venv)}, args.runs, env)
        results["install-bytecode"] = medians({
            "resolver": ([*resolver, "install", "--env", "cpu", "--no-cache", "--bytecode", "all"], fresh_env),
            "uv": (sync(True), fresh_venv)}, max(2, args.runs // 3), env)
        # the environment's folder deleted, the lock unchanged: linked from the cached build of the same lock
        # (bytecode included) vs uv making it again with the same bytecode setting (uv keeps no bytecode)
        results["recreate"] = medians({
            "resolver": ([*resolver, "install", "--env", "cpu", "--bytecode", "all"], fresh_env),
            "uv": (sync(True), fresh_venv)}, max(2, args.runs // 3), env)
        results["again"] = medians({"resolver": ([*resolver, "install", "--env", "cpu"], None)}, args.runs, env)
        # the resolver's own bytecode: cached as on a user's machine (its checkout may be read-only here)
        plan_env = dict(env, PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
        results["plan"] = medians({"resolver": ([*resolver, "plan", "--target", "cpu"], None),
                                   "python -c pass": ([python, "-c", "pass"], None)}, args.runs * 2, plan_env)
    rows = []
    for step, values in results.items():
        other = values.get("uv") or values.get("python -c pass")
        ratio = values["resolver"] / other if other else None
        rows.append({"step": step, **{k: round(v, 3) for k, v in values.items()},
                     "ratio": round(ratio, 2) if ratio else None})
    if args.json:
        print(json.dumps({"runs": args.runs, "rows": rows}, indent=2))
    else:
        print(f"medians of {args.runs} interleaved runs (plan: {args.runs * 2}), warm caches, one sitting")
        for row in rows:
            other = next((k for k in row if k not in ("step", "resolver", "ratio")), None)
            print(f"  {row['step']:17s} resolver {row['resolver']:6.2f} s" +
                  (f"   {other} {row[other]:6.2f} s   ratio {row['ratio']:.2f}x" if other else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
