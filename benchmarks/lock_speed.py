"""The conda side of ``lock`` against a generated ~20,000-record local channel vs a bare py-rattler
``solve`` of the same specs with the same virtual packages (target ratio ≤ 1.5×), medians.

Channel (a local folder, ``linux-64/`` + ``noarch/``, repodata only: nothing is installed): 2,000
names × 10 versions on linux-64, each depending on up to 3 later names (version ranges); a ``kern``
package in a CPU build and a CUDA build (``__cuda >=12``, higher build number); and what every
environment now asks for besides: a conda ``python`` (3.10/3.11/3.12, with ``python_abi``), and for the
CUDA environment the toolkit conda-forge's way (``cuda-version`` 12.4/12.6/12.8/13.0 constraining
``__cuda``, ``cuda-nvcc`` → ``cuda-nvcc_linux-64`` → ``cuda-nvcc-impl``/``-tools``,
``cuda-cudart-dev`` → ``cuda-cudart``, ``cuda-cccl``, each pinned to its ``cuda-version``).

Two environments are locked through :func:`resolver.lock.lock_plans` with the plans ``lock --target
cpu`` and ``lock --target cuda12.6`` make (python 3.11, and for cuda12 the toolkit specs of the
knowledge base): ``cpu`` on ``linux-64`` (pixi's default virtual packages) and ``cuda12`` on a
platform declaring ``cuda = "12.8"``; each asks for 6 top-level packages + ``kern`` + what the plan
adds. The PyPI part is left out (``no_pypi``) so both sides do the same conda work; the lock side
also reads pixi.toml, writes pixi.toml/pixi.lock and the stored plans. The bare side runs ``solve``
for the two spec lists the written pixi.toml holds, with each platform's solve virtual packages
(:meth:`PixiPlatform.solve_virtual_packages`). One untimed warm-up of each side, then medians of
``--repeat`` rounds, in process.

Install speed is measured by benchmarks/setup_vs_uv.py (a fresh conda prefix vs ``uv venv`` + ``uv
pip sync``, and the up-to-date re-run), no longer here.

    .venv/bin/python benchmarks/lock_speed.py [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
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
PYTHON = "3.11"
PYTHONS = ("3.10.14", "3.11.9", "3.12.7")
# (cuda-version, nvcc/cudart/cccl component version) as conda-forge builds them
TOOLKITS = (("12.4", "12.4.131"), ("12.6", "12.6.85"), ("12.8", "12.8.93"), ("13.0", "13.0.88"))
CUDA_PLATFORM = '{ name = "linux-64-cuda12", platform = "linux-64", cuda = "12.8" }'


def generate_channel(folder: Path) -> int:
    import random

    rng = random.Random(20000)
    linux: dict[str, dict] = {}
    noarch: dict[str, dict] = {}
    for i in range(NAMES):
        name = f"pkg{i:04d}"
        for v in range(VERSIONS):
            later = range(i + 1, NAMES)
            deps = [f"pkg{j:04d} >={rng.randint(0, 4)}.0" for j in sorted(rng.sample(later, min(3, len(later))))] \
                if rng.random() < 0.6 else []
            linux[f"{name}-{v}.0-h0_0.tar.bz2"] = _record(name, f"{v}.0", "h0_0", 0, deps[: rng.randint(0, 3)])
    for build, number, deps in (("cpu_0", 0, []), ("cuda_1", 1, ["__cuda >=12"])):
        for v in ("1.0", "1.1"):
            linux[f"kern-{v}-{build}.tar.bz2"] = _record("kern", v, build, number, deps)
    for version in PYTHONS:
        series = ".".join(version.split(".")[:2])
        tag = "cp" + series.replace(".", "")
        linux[f"python-{version}-h0_0_cpython.tar.bz2"] = _record(
            "python", version, "h0_0_cpython", 0, ["__glibc >=2.17,<3.0.a0"],
            constrains=[f"python_abi {series}.* *_{tag}"])
        noarch[f"python_abi-{series}-8_{tag}.tar.bz2"] = _record(
            "python_abi", series, f"8_{tag}", 8, [], subdir="noarch", constrains=[f"python {series}.* *_cpython"])
    for cuda, component in TOOLKITS:
        major, minor = cuda.split(".")
        pin = f"cuda-version >={cuda},<{major}.{int(minor) + 1}.0a0"
        noarch[f"cuda-version-{cuda}-h0_3.tar.bz2"] = _record(
            "cuda-version", cuda, "h0_3", 3, [], subdir="noarch",
            constrains=[f"__cuda >={major}", f"cudatoolkit {cuda}|{cuda}.*"])
        glibc = "__glibc >=2.17,<3.0.a0"
        for name, deps, arch in (
                ("cuda-nvcc", [f"cuda-nvcc_linux-64 {component}.*"], True),
                ("cuda-nvcc_linux-64", [f"cuda-nvcc-impl {component}.*", f"cuda-nvcc-tools {component}.*",
                                        f"cuda-cudart-dev_linux-64 {cuda}.*", pin], False),
                ("cuda-nvcc-impl", [f"cuda-nvcc-tools =={component}", "cuda-cudart-dev", pin], True),
                ("cuda-nvcc-tools", [pin, glibc], True),
                ("cuda-cudart-dev", [f"cuda-cudart =={component}", f"cuda-cudart-dev_linux-64 =={component}", pin],
                 True),
                ("cuda-cudart-dev_linux-64", [pin, "cuda-cccl_linux-64"], False),
                ("cuda-cudart", [pin, glibc], True),
                ("cuda-cccl", [f"cuda-cccl_linux-64 =={component}", pin], True),
                ("cuda-cccl_linux-64", [pin], False)):
            target = linux if arch else noarch
            target[f"{name}-{component}-h0_0.tar.bz2"] = _record(name, component, "h0_0", 0, deps,
                                                                 subdir="linux-64" if arch else "noarch")
    for subdir, packages in (("linux-64", linux), ("noarch", noarch)):
        (folder / subdir).mkdir(parents=True, exist_ok=True)
        (folder / subdir / "repodata.json").write_text(json.dumps(
            {"info": {"subdir": subdir}, "packages": packages, "packages.conda": {}, "repodata_version": 1}))
    return len(linux) + len(noarch)


def _record(name, version, build, number, depends, *, subdir="linux-64", constrains=()):
    digest = hashlib.sha256(f"{name}-{version}-{build}".encode()).hexdigest()
    record = {"name": name, "version": version, "build": build, "build_number": number, "depends": depends,
              "subdir": subdir, "md5": digest[:32], "sha256": digest, "size": 1000, "license": "MIT"}
    if constrains:
        record["constrains"] = list(constrains)
    if subdir == "noarch":
        record["noarch"] = "generic"
    return record


def plans():
    """The plans ``lock --target cpu`` / ``--target cuda12.6`` make, fixed (not probed) so every machine
    locks the same thing: python 3.11, and for CUDA the toolkit specs of the knowledge base."""
    from resolver.core.model import KernelChoice, Plan, TorchChoice, TorchSource
    from resolver.core.versions import DottedVersion
    from resolver.plan.knowledge import Knowledge

    python = (("python", f"{PYTHON}.*"),)
    toolkit = Knowledge.load().conda_forge.toolkit_specs(DottedVersion.parse("12.6"))
    cpu = Plan(backend="cpu", backend_version=None, python=PYTHON, platform="linux-64", target="cpu",
               torch=TorchChoice("2.13.0", "cpu", TorchSource("pypi-index", "https://download.pytorch.org/whl/cpu"),
                                 local_version="cpu"),
               kernels=KernelChoice("none"), glibc="2.28", conda_packages=python)
    cuda = Plan(backend="cuda", backend_version="12.6", python=PYTHON, platform="linux-64", target="cuda12.6",
                torch=TorchChoice("2.13.0", "cu126", TorchSource("pypi-index", "https://download.pytorch.org/whl/cu126"),
                                  local_version="cu126"),
                kernels=KernelChoice("build", ("8.6",)), glibc="2.35", cuda_driver="12.8",
                conda_packages=python + tuple(toolkit))
    return cpu, cuda


def bench_lock(work: Path, repeat: int) -> dict:
    from resolver import lock
    from resolver.lock.lockfile import read_lock
    from resolver.project.manifest import Manifest
    from resolver.project.paths import ProjectPaths
    from resolver.project.sources import Sources
    from resolver.tools.conda import SOLVE_TIMEOUT, rattler, target_virtual_packages

    r = rattler()
    chan = work / "chan"
    records = generate_channel(chan)
    url = chan.resolve().as_uri() + "/"
    project = ProjectPaths(work / "proj")
    project.root.mkdir()
    deps = "".join(f'{n} = "*"\n' for n in [*TOP, "kern"])
    features = "".join(f'[feature.{name}]\nplatforms = ["{platform}"]\n\n[feature.{name}.dependencies]\n{deps}\n'
                       for name, platform in (("cpu", "linux-64"), ("cuda12", "linux-64-cuda12")))
    envs = "".join(f'{n} = {{ features = ["{n}"], solve-group = "{n}", no-default-feature = true }}\n'
                   for n in ("cpu", "cuda12"))
    project.manifest.write_text(f'[workspace]\nname = "speed"\nchannels = ["{url}"]\n'
                                f'platforms = ["linux-64", {CUDA_PLATFORM}]\n\n{features}[environments]\n{envs}')
    wanted = list(plans())
    sources = Sources.load(project.root, environ={})  # the manifest's channel, whatever this shell sets

    def locked():
        return lock.lock_plans(project, wanted, sources=sources, no_pypi=True)

    summary = locked()  # warm-up; also writes the specs and platforms into pixi.toml
    manifest = Manifest.load(project.manifest)
    jobs = []  # (environment, specs, virtual packages) as the lock solved them
    for name in ("cpu", "cuda12"):
        spec = manifest.environment(name)
        (platform,) = spec.platforms
        jobs.append((name, manifest.environment(name, platform.subdir).conda_specs(), platform.subdir,
                     platform.solve_virtual_packages()))

    def bare():
        return [asyncio.run(r.solve([r.Channel(url)], specs, platforms=[subdir, "noarch"],
                                    virtual_packages=target_virtual_packages(vps), timeout=SOLVE_TIMEOUT))
                for _, specs, subdir, vps in jobs]

    solved = bare()  # warm-up
    lock_times, bare_times = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        summary = locked()
        lock_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        solved = bare()
        bare_times.append(time.perf_counter() - t)
    sizes = {e.name: e.conda_packages for e in summary.locked}
    assert set(sizes) == {"cpu", "cuda12"}, sizes  # the two wanted ones re-solved, nothing else
    bare_sizes = {name: len(s) for (name, *_), s in zip(jobs, solved)}
    assert bare_sizes == sizes, (sizes, bare_sizes)
    picked = {name: sorted(f"{rec.name.normalized}={rec.version}={rec.build}" for rec in s)
              for (name, *_), s in zip(jobs, solved)}
    written = read_lock(project.lockfile, project.root)
    for name in sizes:  # pixi.lock holds exactly what the bare solve picked
        (env,) = written[name]
        assert sorted(f"{rec.name.normalized}={rec.version}={rec.build}" for rec in env.conda) == picked[name], name
    assert any(p.startswith("kern=1.1=cuda_1") for p in picked["cuda12"]), picked["cuda12"]
    assert any(p.startswith("kern=1.1=cpu_0") for p in picked["cpu"]), picked["cpu"]
    assert any(p.startswith("python=3.11.") for p in picked["cpu"]), picked["cpu"]
    lock_med, bare_med = statistics.median(lock_times), statistics.median(bare_times)
    return {"channel_records": records, "solution_sizes": sizes,
            "specs": {name: specs for name, specs, *_ in jobs},
            "virtual_packages": {name: vps for name, _, _, vps in jobs},
            "lock_seconds": round(lock_med, 3), "bare_solve_seconds": round(bare_med, 3),
            "ratio": round(lock_med / bare_med, 3),
            "lock_runs": [round(x, 3) for x in lock_times], "bare_runs": [round(x, 3) for x in bare_times]}


def main() -> None:
    parser = argparse.ArgumentParser(description="the conda side of lock vs a bare py-rattler solve")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="resolver-lock-speed-"))
    try:
        result = {"repeat": args.repeat, "lock": bench_lock(work, args.repeat)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        lk = result["lock"]
        print(f"lock of 2 environments ({', '.join(f'{k} {v} packages' for k, v in lk['solution_sizes'].items())}) "
              f"against {lk['channel_records']} records, median of {args.repeat}: {lk['lock_seconds']} s vs bare solve "
              f"{lk['bare_solve_seconds']} s → ratio {lk['ratio']} (target ≤ 1.5)")
        print(f"  lock runs {lk['lock_runs']}, bare runs {lk['bare_runs']}")
    sys.stdout.flush()
    os._exit(0)  # py-rattler 0.28 can abort at interpreter exit (resolver/tools/conda.py)


if __name__ == "__main__":
    main()
