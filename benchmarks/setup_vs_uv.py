"""mamba-resolver against uv, side by side in one sitting: the same packages, the same sources, the
same cache state, medians of several interleaved runs, ratios printed.

    python benchmarks/setup_vs_uv.py [--runs N] [--channel DIR] [--json]

The CPU environment (torch 2.13.0+cpu, numpy, transformers, safetensors, einops, packaging, ninja and
their dependencies) through this machine's pip configuration:

* cold:    the first lock of a machine: ``resolver lock --target cpu`` in a fresh checkout (pixi.toml
           only: no pixi.lock, no .resolver/) with empty caches (uv's, the resolver's), which solves
           both environments of the workspace (cpu and the default one: their conda python, then
           their PyPI parts) vs ``uv pip compile --generate-hashes`` of the same two sets of
           requirements, same sources, uv's cache empty too;
* lock:    the same fresh checkout on a machine that has locked before (uv's cache and the
           resolver's user caches warm, the project's own caches empty) vs the same two compiles, uv's
           cache warm (``uv-cpu``: uv for the cpu environment alone, a second ratio);
* relock:  ``resolver lock --target cpu --force`` in the locked project (the cpu environment resolved
           again, every cache warm, the default environment carried over) vs ``uv pip compile`` of the
           cpu requirements;
* no-op:   ``resolver lock`` on the unchanged project (nothing to resolve) vs ``python -c pass``;
* check:   ``resolver lock --check`` on the unchanged project vs ``python -c pass``;
* install: ``resolver install --env cpu --no-cache`` into a fresh prefix (conda python linked, the locked
           wheels installed) vs ``uv venv`` + ``uv pip sync`` of the same pinned set, with the same
           byte-compile setting (none; then all, fewer runs);
* recreate: the environment's folder deleted, the lock unchanged: ``resolver install --bytecode all`` (linked
           from its cached build, bytecode included) vs ``uv venv`` + ``uv pip sync --compile-bytecode``;
* again:   ``resolver install`` of the unchanged lock (target ≤ 2 s);
* plan:    ``resolver plan`` vs ``python -c pass`` (bytecode cached, as a user runs it).

``--channel DIR``: the conda-forge mirror holding a conda python (default: the test suite's toolchain
channel, tests/support/toolchain_channel.py, built once). Targets: lock and install ≤ 1.5× uv, plan ≤ 3×,
no-op lock and lock --check ≤ 5× ``python -c pass``.
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
STEPS = ("cold", "lock", "relock", "no-op", "check", "install", "again", "plan")
REQUIREMENTS = ("torch==2.13.0+cpu", "numpy", "transformers", "safetensors", "einops", "packaging", "ninja")


def timed(command: list[str], env: dict[str, str], before=None) -> float:
    if before:
        before()
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=env.get("RESOLVER_PROJECT"))
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {(done.stderr or done.stdout)[-600:]}")
    return seconds


def medians(pairs: dict[str, tuple], runs: int, env: dict[str, str]) -> dict[str, float]:
    """Run each command once to warm up, then ``runs`` rounds, interleaved so a busy machine slows all alike.
    ``pairs``: name -> (command, what to do before each run, and optionally the environment it runs in)."""
    def one(entry) -> float:
        command, before, *own = entry
        return timed(command, own[0] if own else env, before)
    for entry in pairs.values():
        one(entry)
    samples: dict[str, list[float]] = {name: [] for name in pairs}
    for _ in range(runs):
        for name, entry in pairs.items():
            samples[name].append(one(entry))
    return {name: statistics.median(values) for name, values in samples.items()}


def default_requirements() -> tuple[str, ...]:
    """The PyPI requirements of the default environment of the shipped pixi.toml (the resolver's own)."""
    sys.path.insert(0, str(REPO / "tests"))
    from support import shipped_manifest

    from resolver.core.toml import parse_toml

    data = parse_toml(shipped_manifest(), what="pixi.toml", fix="restore it from git")
    return tuple(f"{name}{'' if spec in ('', '*') else spec}" for name, spec in data["pypi-dependencies"].items())


def project_with(channel: Path, root: Path) -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    from support import shipped_manifest, toolchain_channel

    text = shipped_manifest().replace(
        'platforms = ["linux-64"]', f"platforms = [{toolchain_channel.platform_entry(channel)}]", 1)
    root.mkdir(parents=True, exist_ok=True)
    (root / "pixi.toml").write_text(text)
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--channel", type=Path, help="a conda-forge mirror with a conda python")
    parser.add_argument("--only", action="append", choices=STEPS, metavar="STEP",
                        help=f"measure only this step (repeatable; one of {', '.join(STEPS)})")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    wanted = set(args.only or STEPS)
    sys.path.insert(0, str(REPO))
    from resolver.lock.pipconfig import read_pip_config
    from resolver.tools import uv

    channel = args.channel
    if channel is None:
        sys.path.insert(0, str(REPO / "tests"))
        from support import toolchain_channel

        channel = toolchain_channel.cached_channel()
    python = sys.executable
    uv_bin = uv.binary()
    with tempfile.TemporaryDirectory(prefix="setup-vs-uv-") as tmp:
        tmp = Path(tmp)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user runs it: bytecode cached
        env.pop("PYTHONPYCACHEPREFIX", None)  # environments keep their bytecode in place
        project = project_with(channel, tmp / "project")
        workspace = (project / "pixi.toml").read_text()  # what a fresh checkout starts from
        env["RESOLVER_PROJECT"] = str(project)
        resolver = [python, "-m", "resolver"]
        timed([*resolver, "lock", "--target", "cpu", "--channel", str(channel)], env)  # the first lock: cold
        if wanted & {"install", "again"}:
            timed([*resolver, "install", "--env", "cpu", "--bytecode", "none"], env)
        pip = read_pip_config()
        flags = uv.source_flags(index_url=pip.index_url, extra_index_urls=pip.extra_index_urls,
                                find_links=pip.find_links, constraints=pip.constraints, no_index=pip.no_index)
        from resolver.lock.lockfile import read_lock

        (locked, *_) = read_lock(project / "pixi.lock", project)["cpu"]
        python_version = next(r.version for r in locked.conda if r.name == "python")

        def compile_cmd(wanted: tuple[str, ...], name: str) -> list[str]:
            (tmp / f"{name}.in").write_text("".join(f"{r}\n" for r in wanted))
            return [uv_bin, "pip", "compile", "--no-config", "--quiet", "--generate-hashes", "--python-version",
                    python_version, "--python-platform", "x86_64-manylinux_2_35", "--only-binary", ":all:",
                    *flags, str(tmp / f"{name}.in"), "-o", str(tmp / f"{name}.txt")]
        cpu_compile = compile_cmd(REQUIREMENTS, "requirements")
        default_compile = compile_cmd(default_requirements(), "default")
        both = ["sh", "-c", " && ".join(" ".join(f"'{part}'" for part in command)
                                        for command in (cpu_compile, default_compile))]
        cold = tmp / "cold"

        def fresh_checkout():
            shutil.rmtree(cold, ignore_errors=True)
            cold.mkdir()
            (cold / "pixi.toml").write_text(workspace)
        cold_env = dict(env, RESOLVER_PROJECT=str(cold))
        results: dict[str, dict[str, float]] = {}
        if "lock" in wanted:
            results["lock"] = medians({
                "resolver": ([*resolver, "lock", "--target", "cpu", "--channel", str(channel), "--json"],
                             fresh_checkout, cold_env),
                "uv": (both, None), "uv-cpu": (cpu_compile, None)}, args.runs, env)
            shutil.rmtree(cold, ignore_errors=True)
        if "cold" in wanted:  # nothing cached anywhere: a fresh checkout, empty uv and resolver caches
            caches = tmp / "caches"
            cold_caches = dict(cold_env, UV_CACHE_DIR=str(caches / "uv"), XDG_CACHE_HOME=str(caches / "user"))

            def nothing_cached():
                shutil.rmtree(caches, ignore_errors=True)
                fresh_checkout()
            results["cold"] = medians({
                "resolver": ([*resolver, "lock", "--target", "cpu", "--channel", str(channel), "--json"],
                             nothing_cached, cold_caches),
                "uv": (both, nothing_cached, dict(env, UV_CACHE_DIR=str(caches / "uv")))}, args.runs, env)
            shutil.rmtree(caches, ignore_errors=True)
            shutil.rmtree(cold, ignore_errors=True)
        if "relock" in wanted:
            results["relock"] = medians({
                "resolver": ([*resolver, "lock", "--target", "cpu", "--force", "--json"], None),
                "uv-cpu": (cpu_compile, None)}, args.runs, env)
        # the resolver's own bytecode: cached as on a user's machine (its checkout may be read-only here)
        plan_env = dict(env, PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
        if "no-op" in wanted:
            results["no-op lock"] = medians({"resolver": ([*resolver, "lock", "--json"], None),
                                             "python -c pass": ([python, "-c", "pass"], None)}, args.runs * 2, plan_env)
        if "check" in wanted:
            results["lock --check"] = medians({"resolver": ([*resolver, "lock", "--check", "--json"], None),
                                               "python -c pass": ([python, "-c", "pass"], None)}, args.runs * 2,
                                              plan_env)
        if wanted & {"install", "again"}:
            subprocess.run(cpu_compile, check=True, capture_output=True)  # the pinned set uv syncs
        pinned = tmp / "requirements.txt"

        env_dir = project / ".resolver" / "envs" / "cpu"
        venv = tmp / "uv-venv"
        base = Path(os.path.realpath(env_dir / "bin" / "python"))

        def fresh_env():
            shutil.rmtree(env_dir, ignore_errors=True)

        def fresh_venv():
            shutil.rmtree(venv, ignore_errors=True)

        def sync(compile_bytecode: bool) -> list[str]:
            return ["sh", "-c", f"'{uv_bin}' venv -q --no-config --python '{base}' '{venv}' && '{uv_bin}' pip sync -q "
                                f"--no-config --python '{venv}/bin/python' {' '.join(repr(f) for f in flags)} "
                                f"{'--compile-bytecode ' if compile_bytecode else ''}'{pinned}'"]
        if "install" in wanted:
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
        if "again" in wanted:
            results["again"] = medians({"resolver": ([*resolver, "install", "--env", "cpu"], None)}, args.runs, env)
        if "plan" in wanted:
            results["plan"] = medians({"resolver": ([*resolver, "plan", "--target", "cpu"], None),
                                       "python -c pass": ([python, "-c", "pass"], None)}, args.runs * 2, plan_env)
    rows = []
    for step, values in results.items():
        others = {k: v for k, v in values.items() if k != "resolver"}
        rows.append({"step": step, **{k: round(v, 3) for k, v in values.items()},
                     **{f"ratio {k}": round(values["resolver"] / v, 2) for k, v in others.items()}})
    if args.json:
        print(json.dumps({"runs": args.runs, "rows": rows}, indent=2))
    else:
        print(f"medians of {args.runs} interleaved runs (no-op lock, check, plan: {args.runs * 2}), one sitting")
        for row in rows:
            others = [k for k in row if k not in ("step", "resolver") and not k.startswith("ratio ")]
            print(f"  {row['step']:17s} resolver {row['resolver']:6.3f} s" +
                  "".join(f"   {k} {row[k]:6.3f} s ({row[f'ratio {k}']:.2f}x)" for k in others))
    return 0


if __name__ == "__main__":
    sys.exit(main())
