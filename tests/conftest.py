"""Shared fixtures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))  # `support` and the tests' own modules

# Run inside created environments (they import torch) or are build inputs, not test modules.
collect_ignore = ["support/kernel_cases.py", "support/reference_cases.py", "data"]

# property tests: a fixed number of examples, no example database, no deadline (a loaded machine is slow, not
# wrong), and hypothesis's own cache (its Unicode tables) in the temporary folder, not in the checkout
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "resolver-tests-hypothesis"))
try:
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("suite", max_examples=60, database=None, deadline=None)
    _hypothesis_settings.load_profile("suite")
except ImportError:  # pragma: no cover - the test extras install it
    pass


@pytest.fixture(scope="session", autouse=True)
def hermetic_session(tmp_path_factory):
    """The session's own home and caches (the resolver's verified store and package cache, uv's,
    rattler's, pip's), no network beyond loopback for any process a test starts, and PyPI's simple
    index served by a local double (tests/support/hermetic.py); all removed when the session ends. Tests
    corrupt verified files on purpose, and uv extracts a local wheel once per path, so the user's
    caches grew by gigabytes every session; a test that reached PyPI failed when PyPI did. The xdist
    workers of a run share the caches (removed with the run's temporary folder), as two resolver commands
    run at once share the user's: torch 2.14.1 is copied and unpacked once a run, not once a worker."""
    from support import hermetic

    base = tmp_path_factory.mktemp("session")
    refused = hermetic.refusing_port()
    own = hermetic.own_wheelhouse(REPO)  # fetched by ./run-tests before the session; here only if it did not run
    double = hermetic.IndexDouble(tuple(i for i in (own, *hermetic.local_indexes(os.environ)) if i is not None))
    caches = hermetic.run_folder(tmp_path_factory) / "caches" if os.environ.get("PYTEST_XDIST_WORKER") else base
    values = hermetic.session_environ(base, os.environ, refused_port=refused.getsockname()[1], double_url=double.url,
                                      index=own, caches=caches)
    previous = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    yield double
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    double.close()
    refused.close()
    shutil.rmtree(base, ignore_errors=True)


def _checkout_state() -> list[tuple[str, int]]:
    """What a test must leave as it was in this checkout: pixi.toml, pixi.lock and the project state
    under .resolver/ (the suite's own cached test fixtures excepted)."""
    state = []
    for path in (REPO / "pixi.toml", REPO / "pixi.lock", REPO / "pyproject.toml"):
        state.append((path.name, path.stat().st_mtime_ns if path.exists() else -1))
    resolver = REPO / ".resolver"
    if resolver.is_dir():
        for entry in sorted(resolver.iterdir()):
            if entry.name not in ("test-envs", "test-channels", "test-wheels"):
                state.append((entry.name, entry.stat().st_mtime_ns))
    return state


# ---- disk: a passing module's fixture folders go when the module ends (tests/support/disk.py) ------------
from support.disk import (  # noqa: E402 - after the path they are found on; hooks, registered by their names
    pytest_fixture_post_finalizer,  # noqa: F401
    pytest_fixture_setup,  # noqa: F401
    pytest_runtest_makereport,  # noqa: F401
)


@pytest.fixture(autouse=True)
def leaves_the_checkout_alone():
    """A test that runs the resolver without a project of its own would lock, install or remember
    sources in this checkout, and the next test would read them: fail the test that did it."""
    before = _checkout_state()
    yield
    assert _checkout_state() == before, "this test changed the checkout (pixi.toml, pixi.lock or .resolver/)"


@pytest.fixture
def index_double(hermetic_session):
    """The session's double of PyPI's simple index (tests/support/hermetic.py)."""
    return hermetic_session


@pytest.fixture(scope="session")
def cpu_project(tmp_path_factory, conda_channel) -> Path:
    """A copy of this project where ``lock --target cpu --channel <toolchain channel>`` then
    ``install --env cpu`` ran through the CLI, with this machine's pip configuration as it is (torch
    2.13.0+cpu from the local wheelhouse, mapped to its canonical index by a mirror entry).

    Returns the project root; the environment is ``<root>/.resolver/envs/cpu``: a conda prefix with its
    own python (ready marker written). Takes about a minute, once per test session.
    """
    from support import cli, projects

    root = projects.project(tmp_path_factory.mktemp("cpu-project"), toolchain=conda_channel,
                            torch_mirror=projects.torch_cpu_mirror())
    done = cli.run("lock", "--target", "cpu", "--channel", str(conda_channel), "--json", project=root, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    done = cli.run("install", "--env", "cpu", "--json", project=root, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    installed = json.loads(done.stdout)
    assert installed["path"] == str(root / ".resolver" / "envs" / "cpu") and installed["kind"] == "conda"
    return root


# --- verify/doctor/bench: a second torch, different from cpu_project's 2.13.0+cpu ---
TEST_ENVS = REPO / ".resolver" / "test-envs"
OTHER_TORCH_REQUIREMENTS = "torch==2.14.1\ntransformers\nsafetensors\nnumpy\neinops\n"
KEEP_ENVS = "RESOLVER_TEST_KEEP_ENVS"  # set: the test environments stay in .resolver/test-envs between runs


def envs_folder(tmp_path_factory) -> Path:
    """Where the suite's test environments are built: the run's temporary folder, shared by its xdist
    workers and removed with it (docs/testing.md, "Disk"); with RESOLVER_TEST_KEEP_ENVS set,
    .resolver/test-envs/ of this checkout, kept for the next run."""
    if os.environ.get(KEEP_ENVS):
        return TEST_ENVS
    from support.hermetic import run_folder

    return run_folder(tmp_path_factory) / "test-envs"


def cached_venv(folder: Path, prefix: str, requirements: str) -> Path:
    """A venv with ``requirements`` under ``folder``, named by the hash of the requirements text; built once
    (flock-protected: xdist workers share it), reused while it stays. Installed as the resolver installs:
    pip picks the files from this machine's pip configuration (its indexes, wheelhouses and constraints),
    each is checked into the session's verified store and ``uv pip install --no-deps`` links them from the
    session's uv cache, so torch 2.14.1 is unpacked once a run whether this venv or an upgrade journey
    needs it first (5.4 GB less at the peak than a private copy)."""
    import fcntl
    import hashlib

    from resolver.tools import uv

    env = folder / f"{prefix}-{hashlib.sha256(requirements.encode()).hexdigest()[:12]}"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{env.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (env / ".ready").is_file():
            shutil.rmtree(env, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
            (env / "requirements.txt").write_text(requirements)
            wheels = _stored_wheels(env / "requirements.txt")
            done = uv.install_wheels(env / "bin" / "python", wheels, compile_bytecode=False)
            assert done.returncode == 0, done.stderr[-3000:]
            (env / ".ready").write_text("ok\n")
    return env


def _stored_wheels(requirements: Path) -> list[Path]:
    """The wheels pip would install for ``requirements`` (this Python, wheels only), each copied into the
    session's verified store (the resolver's own, where its installs take them from) and checked there."""
    from urllib.parse import unquote, urlsplit

    from resolver.core.fs import sha256_of
    from resolver.core.seal import user_cache_dir
    from resolver.tools.store import VerifiedStore

    report = requirements.with_name("report.json")
    done = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "--dry-run",
                           "--ignore-installed", "--quiet", "--only-binary", ":all:", "--report", str(report),
                           "-r", str(requirements)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    store, wheels = VerifiedStore(user_cache_dir() / "verified"), []
    for item in json.loads(report.read_text(encoding="utf-8"))["install"]:
        info = item["download_info"]
        url = info["url"]
        assert url.startswith("file://"), f"{url}: not on this machine (the suite reaches no index)"
        source = Path(unquote(urlsplit(url).path))
        sha = (info.get("archive_info", {}).get("hashes") or {}).get("sha256") or sha256_of(source)
        wheels.append(store.find(sha, source.name) or store.copy_in(source, sha, source.name))
    report.unlink()
    return wheels


@pytest.fixture(scope="session")
def other_torch_env(tmp_path_factory) -> Path:
    """torch 2.14.1 (the CUDA 13 build from the local wheelhouse, 5.5 GB; runs on the CPU here) with
    transformers, safetensors, numpy, einops: the 'other' environment for bench --compare and the
    ABI test. Built once a run (75 s on a loaded 2-core machine), or kept (RESOLVER_TEST_KEEP_ENVS)."""
    return cached_venv(envs_folder(tmp_path_factory), "torch", OTHER_TORCH_REQUIREMENTS)


@pytest.fixture(scope="session")
def conda_channel() -> Path:
    """A real local conda channel (tests/support/toolchain_channel.py): this machine's CPython 3.11 as conda
    ``python`` (+ python_abi, pip, setuptools, wheel) and the CUDA 13.0 compiler toolchain under
    conda-forge's names (cuda-version, cuda-nvcc and its split, cuda-cudart*, cuda-cccl), built from
    NVIDIA's PyPI wheels. Built once per clone under .resolver/test-channels/ (a few minutes), then
    reused; returns the channel folder."""
    from support import toolchain_channel

    try:
        toolchain_channel.find_source_python()
    except LookupError as exc:
        pytest.skip(str(exc))
    return toolchain_channel.cached_channel()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A channel folder of real built packages (what `build --variant` jobs leave in .resolver/channel)."""
    from support import channel_factory as cf

    return cf.build_channel(tmp_path_factory.mktemp("built") / "channel")


@pytest.fixture()
def served(tmp_path):
    """An empty folder served over HTTP on 127.0.0.1: (the folder, its server)."""
    from support import channel_factory as cf

    folder = tmp_path / "site"
    folder.mkdir()
    server = cf.ChannelServer(folder)
    yield folder, server
    server.close()
