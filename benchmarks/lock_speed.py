"""Lock speed against a generated 20,000-record local channel vs a bare py-rattler ``solve`` of the
same specs (target ratio ≤ 1.5×), and install time of the CPU environment from a warm cache
(target ≤ 10 s).

Channel: 2,000 names × 10 versions on linux-64, each depending on up to 3 later names (version
ranges), plus a ``kern`` package in a CPU build and a CUDA build (``__cuda >=12``, higher build
number). Two environments are locked, ``cpu`` and ``cuda12`` (virtual packages of the target,
``__cuda=12.8`` for the second), each asking for 6 top-level packages + ``kern``; the PyPI part is
left out here (``no_pypi``) so both sides do the same conda work. The bare side runs ``solve`` for
the same two spec lists with the same virtual packages. Medians of ``--repeat`` runs, in process.

Install: a fresh project from this repository's pixi.toml, locked for ``cpu`` with the machine's pip
configuration (torch 2.13.0+cpu), installed once (fills the caches), then timed: ``install --force``
(warm cache: the hard-linked build of the same lock content) and ``install --force --no-cache``
(warm download cache, pip run again).

    .venv/bin/python benchmarks/lock_speed.py [--repeat 3] [--skip-install] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

NAMES, VERSIONS = 2000, 10
TOP = ["pkg0000", "pkg0003", "pkg0011", "pkg0042", "pkg0077", "pkg0123"]


def generate_channel(folder: Path) -> int:
    import random

    rng = random.Random(20000)
    packages = {}
    for i in range(NAMES):
        name = f"pkg{i:04d}"
        for v in range(VERSIONS):
            later = range(i + 1, NAMES)
            deps = [f"pkg{j:04d} >={rng.randint(0, 4)}.0" for j in sorted(rng.sample(later, min(3, len(later))))] \
                if rng.random() < 0.6 else []
            fname = f"{name}-{v}.0-h0_0.tar.bz2"
            packages[fname] = _record(name, f"{v}.0", "h0_0", 0, deps[: rng.randint(0, 3)])
    for build, number, deps in (("cpu_0", 0, []), ("cuda_1", 1, ["__cuda >=12"])):
        for v in ("1.0", "1.1"):
            packages[f"kern-{v}-{build}.tar.bz2"] = _record("kern", v, build, number, deps)
    (folder / "linux-64").mkdir(parents=True, exist_ok=True)
    (folder / "noarch").mkdir(parents=True, exist_ok=True)
    (folder / "linux-64" / "repodata.json").write_text(json.dumps(
        {"info": {"subdir": "linux-64"}, "packages": packages, "packages.conda": {}, "repodata_version": 1}))
    (folder / "noarch" / "repodata.json").write_text(json.dumps(
        {"info": {"subdir": "noarch"}, "packages": {}, "packages.conda": {}, "repodata_version": 1}))
    return len(packages)


def _record(name, version, build, number, depends):
    digest = hashlib.sha256(f"{name}-{version}-{build}".encode()).hexdigest()
    return {"name": name, "version": version, "build": build, "build_number": number, "depends": depends,
            "subdir": "linux-64", "md5": digest[:32], "sha256": digest, "size": 1000, "license": "MIT"}


def plans(python: str):
    from resolver.decide.model import KernelChoice, Plan, TorchChoice, TorchSource

    cpu = Plan(backend="cpu", backend_version=None, python=python, platform="linux-64", target="cpu",
               torch=TorchChoice("2.13.0", "cpu", TorchSource("pypi-index", "https://download.pytorch.org/whl/cpu"),
                                 local_version="cpu"),
               kernels=KernelChoice("none"), glibc=platform.libc_ver()[1] or "2.28")
    cuda = Plan(backend="cuda", backend_version="12.6", python=python, platform="linux-64", target="cuda12.6",
                torch=TorchChoice("2.13.0", "cu126", TorchSource("pypi-index", "https://download.pytorch.org/whl/cu126"),
                                  local_version="cu126"),
                kernels=KernelChoice("build", ("8.6",)), glibc="2.35", cuda_driver="12.8")
    return cpu, cuda


def bench_lock(work: Path, repeat: int) -> dict:
    from resolver import lock
    from resolver.conda import rattler, target_virtual_packages
    from resolver.paths import ProjectPaths

    r = rattler()
    chan = work / "chan"
    records = generate_channel(chan)
    url = chan.resolve().as_uri() + "/"
    deps = ", ".join(f'{n} = "*"' for n in [*TOP, "kern"])
    project = ProjectPaths(work / "proj")
    project.root.mkdir()
    features = "".join(f'[feature.{n}]\nplatforms = ["linux-64"]\ndependencies = {{ {deps} }}\n\n' for n in ("cpu", "cuda12"))
    project.manifest.write_text(f'[workspace]\nname = "speed"\nchannels = ["{url}"]\nplatforms = ["linux-64"]\n\n'
                                + features + '[environments]\ncpu = ["cpu"]\ncuda12 = ["cuda12"]\n')
    cpu, cuda = plans(f"{sys.version_info.major}.{sys.version_info.minor}")
    specs = [*TOP, "kern"]
    lock_times, bare_times = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        summary = lock.lock_plans(project, [cpu, cuda], no_pypi=True)
        lock_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        solved = []
        for plan in (cpu, cuda):
            vps = list(lock.locked_platform(plan).virtual_packages)
            solved.append(asyncio.run(r.solve([r.Channel(url)], specs, platforms=["linux-64", "noarch"],
                                              virtual_packages=target_virtual_packages(vps),
                                              timeout=datetime.timedelta(seconds=120))))
        bare_times.append(time.perf_counter() - t)
    kern = {e.name: e.conda_packages for e in summary.locked}
    assert [len(s) for s in solved] == [kern["cpu"], kern["cuda12"]], (kern, [len(s) for s in solved])
    lock_med, bare_med = statistics.median(lock_times), statistics.median(bare_times)
    return {"channel_records": records, "solution_sizes": kern, "lock_seconds": round(lock_med, 3),
            "bare_solve_seconds": round(bare_med, 3), "ratio": round(lock_med / bare_med, 3),
            "lock_runs": [round(x, 3) for x in lock_times], "bare_runs": [round(x, 3) for x in bare_times]}


def bench_install(work: Path, repeat: int) -> dict:
    from resolver import install, lock
    from resolver.paths import ProjectPaths

    project = ProjectPaths(work / "cpu-proj")
    project.root.mkdir()
    shutil.copy(REPO / "pixi.toml", project.manifest)
    cpu, _ = plans(f"{sys.version_info.major}.{sys.version_info.minor}")
    t = time.perf_counter()
    lock.lock_plans(project, [cpu])
    lock_s = time.perf_counter() - t
    first = install.install_environment(project, "cpu")
    warm = [install.install_environment(project, "cpu", force=True).seconds for _ in range(repeat)]
    nocache = install.install_environment(project, "cpu", force=True, use_cache=False).seconds
    return {"lock_cpu_with_pypi_seconds": round(lock_s, 1), "first_install_seconds": round(first.seconds, 1),
            "warm_install_seconds": round(statistics.median(warm), 2), "warm_runs": [round(x, 2) for x in warm],
            "warm_install_pip_again_seconds": round(nocache, 1), "pypi_packages": first.pypi_packages}


def main() -> None:
    parser = argparse.ArgumentParser(description="lock speed vs bare solve; warm install time")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-install", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="resolver-lock-speed-"))
    try:
        result = {"lock": bench_lock(work, args.repeat)}
        if not args.skip_install:
            result["install"] = bench_install(work, args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        lk = result["lock"]
        print(f"lock of 2 environments against {lk['channel_records']} records: {lk['lock_seconds']} s vs bare solve "
              f"{lk['bare_solve_seconds']} s → ratio {lk['ratio']} (target ≤ 1.5)")
        if "install" in result:
            ins = result["install"]
            print(f"install cpu from a warm cache: {ins['warm_install_seconds']} s (target ≤ 10); pip again: "
                  f"{ins['warm_install_pip_again_seconds']} s; first install {ins['first_install_seconds']} s")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
