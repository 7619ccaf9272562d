"""A fleet node installs its class's environment from the shared lock and takes its kernels prebuilt from a
channel served over HTTP: no compiler runs on the node.

The fleet: the two machine doubles of tests/data/doubles (one H100; an A100 with a T4), probed as each node
would probe itself (`probe --json` with the double). One checkout plays CI: `lock --fleet` (conda from
the toolchain channel standing in for conda-forge, torch 2.14.1 from PyPI through this machine's pip
configuration), `build --matrix`, `build --variant KEY` for the tests' tiny CUDA extension (real nvcc
from the environment, no GPU), `channel publish --to` a folder that a real HTTP server on 127.0.0.1
serves. A second checkout, given only pixi.toml and pixi.lock, plays the H100 node: `setup` finds its
class, installs it, fetches the variant (sha256 from the channel's index), compiles nothing, verifies.

A Slurm array job does CI's part in its checkout (`build --matrix --format slurm`, run for real on a
one-node cluster of Debian's slurm-wlm started by the test): one task per variant, then `channel publish` as a
job that depends on them all; skipped, saying why, where Slurm is not installed or cannot start.

Disk: a torch 2.14.1 environment is its wheels (kept verified in .resolver/cache) plus uv's extraction
of them, which uv keys by the wheels' paths. So the node is a fresh checkout at the path the CI checkout
had (CI's is moved aside first), starting with a hard-linked copy of CI's download cache (.resolver/cache
less its build folder: no kernel is in it); it then installs its environment from pixi.lock itself and
takes the kernel only from the channel. uv's cache is the module's own (its extraction goes with the
temporary folder). The journey needs ~10 GiB free (9.1 GiB measured) and says so (a skip) where there
is less.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support import cli, shipped_manifest
from support.gpu_double import DOUBLES, TINY_RECIPE, without_system_cuda
from support.projects import conda_workspace

from resolver.verify.inenv.fatbin import archs_of_library

CLASS = "cuda13-sm75-sm80-sm90"
VARIANT = f"tiny-ext@{CLASS}"
NEEDS_GIB = 10  # measured: 9.1 GiB (the wheels verified once, uv's extraction once)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the variant build compiles C++/CUDA: needs g++")


def resolver_env(project: Path, channel: Path | None = None, double: Path | None = None,
                 recipes: str = str(TINY_RECIPE)) -> dict[str, str]:
    env = without_system_cuda(dict(os.environ, RESOLVER_PROJECT=str(project), RESOLVER_KERNEL_RECIPES=recipes))
    env.pop("RESOLVER_KERNEL_CHANNEL", None)
    if channel is not None:
        env["RESOLVER_CONDA_CHANNELS"] = str(channel)  # the toolchain channel stands in for conda-forge
    if double is not None:
        env["RESOLVER_SYSROOT"] = str(double)
    return env


def resolver(project: Path, *args: str, channel: Path | None = None, double: Path | None = None,
             timeout: float = 900, recipes: str = str(TINY_RECIPE)) -> subprocess.CompletedProcess:
    return cli.run(*args, environment=resolver_env(project, channel, double, recipes), timeout=timeout)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A folder served by a real HTTP server on 127.0.0.1; (folder, URL)."""
    folder = tmp_path_factory.mktemp("served") / "kernels"
    folder.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """The fleet folder: each double probed as the node probes itself."""
    folder = tmp_path_factory.mktemp("fleet") / "nodes"
    folder.mkdir()
    for double in ("h100-1x-driver580", "a100-t4-driver580"):
        probed = resolver(folder, "probe", "--json", double=DOUBLES / double, timeout=120)
        assert probed.returncode == 0, probed.stderr[-2000:]
        (folder / f"{double}.json").write_text(probed.stdout)
    return folder


def light_lock(project: Path, fleet: Path) -> Path:
    """The fleet locked without resolving packages (for the checks that stop before any install)."""
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = resolver(project, "lock", "--fleet", str(fleet), "--target", "cuda13.0", "--no-conda", "--no-pypi")
    assert done.returncode == 0, done.stderr[-2000:]
    return project


@pytest.fixture(scope="module")
def ci(tmp_path_factory, conda_channel, served, fleet) -> Path:
    """The CI checkout: the fleet locked, the variant built and published."""
    folder, url = served
    root = tmp_path_factory.mktemp("ci")
    (root / "pixi.toml").write_text(conda_workspace(shipped_manifest(), conda_channel))
    done = resolver(root, "lock", "--fleet", str(fleet), "--target", "cuda13.0", "--kernel-channel", url,
                    "--json", channel=conda_channel)
    assert done.returncode == 0, done.stderr[-3000:]
    locked = json.loads(done.stdout)
    assert [c["environment"] for c in locked["fleet"]["classes"]] == [CLASS]
    matrix = resolver(root, "build", "--matrix", "--json")
    assert matrix.returncode == 0, matrix.stderr[-2000:]
    (entry,) = json.loads(matrix.stdout)["include"]
    assert entry["variant"] == VARIANT and entry["archs"] == "7.5,8.0,9.0"
    assert entry["command"] == f"python -m resolver build --variant {VARIANT}"
    built = resolver(root, "build", "--variant", VARIANT, "--json", channel=conda_channel)
    assert built.returncode == 0, built.stderr[-3000:]
    (package,) = json.loads(built.stdout)["packages"]
    assert package["status"] == "built" and package["archs"] == ["7.5", "8.0", "9.0"]
    published = resolver(root, "channel", "publish", "--to", str(folder), "--json")
    assert published.returncode == 0, published.stderr[-2000:]
    assert json.loads(published.stdout)["added"] == [f"linux-64/{Path(package['file']).name}"]
    return root


def _node_in_place_of(ci: Path) -> tuple[Path, Path]:
    """(the node checkout, where CI's went): a fresh checkout at CI's path with only pixi.toml, pixi.lock and a
    hard-linked copy of CI's download cache (no kernel: not its build folder, not its channel)."""
    moved = ci.with_name(ci.name + "-ci")
    ci.rename(moved)
    node = ci
    (node / ".resolver" / "cache").mkdir(parents=True)
    for name in ("pixi.toml", "pixi.lock"):
        shutil.copy(moved / name, node / name)
    for part in (moved / ".resolver" / "cache").iterdir():
        if part.name != "build":
            subprocess.run(["cp", "-al", str(part), str(node / ".resolver" / "cache" / part.name)], check=True)
    return node, moved


def _free_gib(path: Path) -> float:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize / 2**30


def test_a_node_installs_its_class_with_prebuilt_kernels_from_the_http_channel(tmp_path_factory, request, served):
    if _free_gib(tmp_path_factory.getbasetemp()) < NEEDS_GIB:
        pytest.skip(f"the node journey installs torch 2.14.1 (CUDA 13.0): it needs ~{NEEDS_GIB} GiB free, "
                    f"{_free_gib(tmp_path_factory.getbasetemp()):.1f} GiB are")
    ci = request.getfixturevalue("ci")
    conda_channel = request.getfixturevalue("conda_channel")
    node, ci = _node_in_place_of(ci)
    assert not list(node.glob(".resolver/**/tiny*ext*"))
    done = resolver(node, "setup", "--sysroot", str(DOUBLES / "h100-1x-driver580"), "--json", channel=conda_channel)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Traceback" not in done.stderr
    result = json.loads(done.stdout)
    steps = {s["name"]: s for s in result["steps"]}
    assert f"fleet class {CLASS}" in steps["plan"]["detail"] and "127.0.0.1" in steps["plan"]["detail"]
    assert steps["lock"]["status"] == "skipped" and steps["install"]["status"] == "done"
    build = steps["build"]["result"]
    (package,) = build["packages"]
    assert package["status"] == "fetched" and build["compiled"] == 0
    assert not list((node / ".resolver" / "logs").glob("build-*.log"))  # no compiler ran
    env = node / ".resolver" / "envs" / CLASS
    (library,) = env.glob("lib/python3*/site-packages/tiny_ext_cuda*.so")
    assert archs_of_library(str(library)) == ["sm_75", "sm_80", "sm_90"]
    assert result["verify"]["ok"] is True
    checks = {c["name"]: c for c in result["verify"]["checks"]}
    assert checks["load:tiny_ext_cuda"]["status"] == "pass" and checks["archs:tiny_ext_cuda"]["status"] == "pass"
    for name in ("pixi.toml", "pixi.lock"):  # the node never rewrites the fleet's lock
        assert (node / name).read_bytes() == (ci / name).read_bytes()


def test_an_unreachable_channel_is_one_sentence_naming_it_before_anything_is_installed(fleet, tmp_path):
    node = light_lock(tmp_path / "node", fleet)
    before = [(node / n).read_bytes() for n in ("pixi.toml", "pixi.lock")]
    url = "http://127.0.0.1:9/kernels"  # the discard port: nothing listens
    done = resolver(node, "setup", "--sysroot", str(DOUBLES / "h100-1x-driver580"), "--kernel-channel", url,
                    "--json", timeout=120)
    assert done.returncode == 3, done.stderr[-2000:]
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert f"kernel channel {url} cannot be reached" in error and "Traceback" not in done.stderr
    assert [(node / n).read_bytes() for n in ("pixi.toml", "pixi.lock")] == before
    assert not (node / ".resolver" / "envs").exists() and not (node / ".resolver" / "channel").exists()
    built = node / "built" / "linux-64"
    built.mkdir(parents=True)
    (built / "tiny-ext-0.1.0-h0_0.conda").write_bytes(b"stands for a built package: never read, the URL fails first")
    published = resolver(node, "channel", "publish", "--from", str(node / "built"), "--to", url, "--json", timeout=60)
    assert published.returncode == 3, published.stderr[-2000:]
    (error,) = [line for line in published.stderr.splitlines() if line.startswith("error:")]
    assert f"channel {url} cannot be reached" in error


def test_a_node_no_class_serves_says_so_and_how_to_add_it(fleet, tmp_path):
    """A fleet locked for the H100 alone: the A100 + T4 node matches no class."""
    only = tmp_path / "h100-only"
    only.mkdir()
    shutil.copy(fleet / "h100-1x-driver580.json", only)
    project = light_lock(tmp_path / "project", only)
    before = (project / "pixi.lock").read_bytes()
    done = resolver(project, "setup", "--sysroot", str(DOUBLES / "a100-t4-driver580"), "--json", timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "class cuda13-sm90 of the fleet has this node's torch build but no kernels for 7.5, 8.0" in error
    assert "lock --fleet" in error and "probe --json" in error
    assert (project / "pixi.lock").read_bytes() == before and not (project / ".resolver" / "envs").exists()


def test_the_fleet_lock_is_what_pixi_reads(fleet, conda_channel, tmp_path):
    """The class environments locked with the real solves (conda from the toolchain channel, torch from
    PyPI), read the way pixi reads them (tests/support/pixi_rules.py): every rule holds."""
    from support import pixi_rules as rules

    project = tmp_path / "project"
    project.mkdir()
    (project / "pixi.toml").write_text(conda_workspace(shipped_manifest(), conda_channel))
    done = resolver(project, "lock", "--fleet", str(fleet), "--target", "cuda13.0", "--json", channel=conda_channel)
    assert done.returncode == 0, done.stderr[-3000:]
    ws = rules.Workspace.read((project / "pixi.toml").read_text(), (project / "pixi.lock").read_text(), project)
    assert {name: problems for name, problems in rules.check(ws).items() if problems} == {}
    assert CLASS in ws.lock["environments"] and "torch-2.14.1-" in (project / "pixi.lock").read_text()


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-node Slurm cluster (tests/support/slurm_cluster.py) for this module's tests; a skip saying why where none starts."""
    from support import slurm_cluster

    try:
        cluster = slurm_cluster.start(tmp_path_factory.mktemp("slurm"), cpus=2, memory_mib=4096)
    except slurm_cluster.Unavailable as exc:
        pytest.skip(str(exc))
    yield cluster
    cluster.stop()


def test_a_slurm_array_builds_each_variant_and_a_dependent_job_publishes_them(tmp_path_factory, request, tmp_path):
    """The CI checkout's variants, built by the array job `build --matrix --format slurm` writes: the tiny
    extension and a twin of it (a second package, so two tasks share the checkout and its environment), one task
    each, at once; the publish job starts when both succeeded and leaves both packages indexed in the channel
    folder."""
    if _free_gib(tmp_path_factory.getbasetemp()) < NEEDS_GIB:
        pytest.skip(f"the CI checkout installs torch 2.14.1 (CUDA 13.0): it needs ~{NEEDS_GIB} GiB free")
    cluster = request.getfixturevalue("slurm")  # skips before anything is installed where Slurm cannot run
    ci = request.getfixturevalue("ci")  # the checkout there is (the node journey may have taken CI's place: alike)
    conda_channel = request.getfixturevalue("conda_channel")
    twin = tmp_path / "tiny-ext-twin"
    twin.mkdir()
    (twin / "recipe.yaml").write_text((TINY_RECIPE / "recipe.yaml").read_text().replace("name: tiny-ext\n",
                                                                                        "name: tiny-ext-twin\n", 1))
    (twin / "resolver.toml").write_text((TINY_RECIPE / "resolver.toml").read_text().replace(
        'source_dir = "../src"', f'source_dir = "{TINY_RECIPE.parent / "src"}"'))
    recipes = f"{TINY_RECIPE},{twin}"
    script = resolver(ci, "build", "--matrix", "--format", "slurm", recipes=recipes)
    assert script.returncode == 0, script.stderr[-2000:]
    (ci / "kernels.sbatch").write_text(script.stdout)
    published = tmp_path / "published"
    published.mkdir()
    env = {**resolver_env(ci, conda_channel, recipes=recipes), **cluster.env, "KERNEL_CHANNEL_DIR": str(published),
           "RESOLVER_PYTHON": sys.executable}
    # the build lines ask for 8 CPUs and 32 GiB; this cluster's one node has 2 and 4 GiB: one CPU and 1 GiB a task
    submitted = subprocess.run(["bash", "kernels.sbatch", "--cpus-per-task=1", "--mem=1G"], cwd=ci, env=env,
                               capture_output=True, text=True, timeout=120)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    builds, publish = re.search(r"array job (\d+) \(linux-64: tasks 0,1\), then job (\d+) publishing to",
                                submitted.stdout).groups()
    cluster.wait_for([builds, publish], timeout=1500)
    logs = {p.name: p.read_text(errors="replace") for p in ci.glob("slurm-kernels-*.out")}
    assert cluster.state(builds) == ["COMPLETED", "COMPLETED"], (logs, cluster.logs())
    assert cluster.state(publish) == ["COMPLETED"], (logs, cluster.logs())
    tasks = {name: text for name, text in logs.items() if name.startswith(f"slurm-kernels-{builds}_")}
    assert sorted(text.splitlines()[0] for text in tasks.values()) == [
        f"task 0: tiny-ext@{CLASS} (7.5,8.0,9.0)", f"task 1: tiny-ext-twin@{CLASS} (7.5,8.0,9.0)"]
    repodata = json.loads((published / "linux-64" / "repodata.json").read_text())
    names = sorted(record["name"] for record in repodata["packages.conda"].values())
    assert names == ["tiny-ext", "tiny-ext-twin"]
    for file in repodata["packages.conda"]:
        assert (published / "linux-64" / file).is_file()
