"""lock → install against real conda channels: the toolchain channel (a real conda ``python`` and the
CUDA 13.0 compiler, tests/support/toolchain_channel.py) as the mirror of conda-forge, and a small channel of
test packages built here with py-rattler-build, served over HTTP.

The PyPI side uses a wheelhouse inside the project (so its locations are relative in pixi.lock)
with pip's own configuration switched off, so nothing outside the test is consulted.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest
from support import REPO, cli, pixi_rules, projects, records
from support import channel_factory as cf  # noqa: E402
from support import toolchain_channel as tc  # noqa: E402

from resolver import install, lock  # noqa: E402
from resolver.core.errors import IntegrityError, ResolverError  # noqa: E402
from resolver.core.fs import sha256_of  # noqa: E402
from resolver.core.model import KernelChoice, Plan, TorchChoice, TorchSource  # noqa: E402
from resolver.core.versions import DottedVersion  # noqa: E402
from resolver.lock import current  # noqa: E402
from resolver.lock.lockfile import read_lock  # noqa: E402
from resolver.plan import locked as locked_plans  # noqa: E402
from resolver.plan.knowledge import Knowledge  # noqa: E402
from resolver.project.manifest import DEFAULT_PYPI, Manifest  # noqa: E402
from resolver.project.paths import ProjectPaths  # noqa: E402
from resolver.project.sources import Sources  # noqa: E402

SCHEMA = REPO.parent / "shared" / "schemas" / "pixi-manifest.schema.json"
PY = tc.PYTHON_SERIES
CONDA_FORGE = "https://conda.anaconda.org/conda-forge/"

pytestmark = pytest.mark.skipif(f"{sys.version_info.major}.{sys.version_info.minor}" != PY,
                                reason=f"the toolchain channel's python is {PY}; the tests run its pip side with it")


def cpu_plan(python: str = PY) -> Plan:
    return Plan(backend="cpu", backend_version=None, python=python, platform="linux-64", target="cpu",
                torch=TorchChoice("2.13.0", "cpu", TorchSource("pypi-index", "https://download.pytorch.org/whl/cpu"),
                                  local_version="cpu"),
                kernels=KernelChoice("none"), glibc="2.36", conda_packages=(("python", f"{python}.*"),))


def cuda_plan() -> Plan:
    toolkit = Knowledge.load().conda_forge.toolkit_specs(DottedVersion.parse("13.0"))
    return Plan(backend="cuda", backend_version="13.0", python=PY, platform="linux-64", target="cuda13.0",
                torch=TorchChoice("2.13.0", "cu130", TorchSource("pypi-index", "https://download.pytorch.org/whl/cu130"),
                                  local_version="cu130"),
                kernels=KernelChoice("build", ("9.0",)), glibc="2.36", cuda_driver="13.0",
                conda_packages=(("python", f"{PY}.*"), *toolkit))


MANIFEST = """\
# test workspace: comments must survive `lock`
[workspace]
name = "lock-test"
channels = ["conda-forge", "{channel}"]
platforms = [{platform}, {cuda_platform}]

[feature.cpu]
platforms = ["{platform_name}"]
dependencies = {{ rt-tool = ">=0.3", rt-kernel = "1.2.*", pip = "*" }}
pypi-dependencies = {{ rtpy = "*" }}

[feature.cuda13]
platforms = ["{platform_name}-cuda13"]
dependencies = {{ rt-tool = ">=0.3", rt-kernel = "1.2.*", pip = "*" }}
pypi-dependencies = {{ rtpy = "*" }}

[environments]
cpu = {{ features = ["cpu"], solve-group = "cpu", no-default-feature = true }}
cuda13 = {{ features = ["cuda13"], solve-group = "cuda13", no-default-feature = true }}

[tool.resolver]
find-links = ["./wheels"]
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    channel = cf.build_channel(root / "chan")
    server = cf.ChannelServer(channel)
    yield channel, server
    server.close()


def _isolate(mp: pytest.MonkeyPatch, toolchain: Path) -> None:
    """pip sees only the project's wheelhouse; conda-forge is the toolchain channel (a mirror)."""
    for key in [k for k in os.environ if k.startswith(("PIP_", "RESOLVER_"))]:
        mp.delenv(key)
    mp.setenv("PIP_CONFIG_FILE", os.devnull)
    mp.setenv("PIP_NO_INDEX", "1")
    mp.setenv("RESOLVER_CONDA_CHANNELS", str(toolchain))


@pytest.fixture(autouse=True)
def isolated(monkeypatch, conda_channel):
    _isolate(monkeypatch, conda_channel)


def manifest_text(channel_url: str, toolchain: Path) -> str:
    entry, name = tc.platform_entry(toolchain), tc.platform_name(toolchain)
    cuda = entry.replace(f'name = "{name}"', f'name = "{name}-cuda13"').replace(" }", ', cuda = "13" }')
    return MANIFEST.format(channel=channel_url, platform=entry, cuda_platform=cuda, platform_name=name)


def make_project(base: Path, channel_url: str, toolchain: Path) -> ProjectPaths:
    return ProjectPaths(projects.project(base, manifest_text(channel_url, toolchain), wheelhouse=True))


@pytest.fixture(scope="module")
def locked(served, tmp_path_factory, conda_channel):
    """A project locked for cpu and cuda13 and both environments installed (shared by the module)."""
    channel, server = served
    mp = pytest.MonkeyPatch()
    _isolate(mp, conda_channel)
    project = make_project(tmp_path_factory.mktemp("proj") / "p", server.url, conda_channel)
    summary = lock.lock_plans(project, [cpu_plan(), cuda_plan()])
    installed = {name: install.install_environment(project, name) for name in ("cpu", "cuda13")}
    mp.undo()
    return project, summary, installed


def run(path: Path, *args: str) -> str:
    return subprocess.run([str(path), *args], capture_output=True, text=True, check=True).stdout.strip()


def lockfile(project: ProjectPaths):
    from rattler import LockFile

    return LockFile.from_path(str(project.lockfile))


def test_lock_holds_every_environment_with_its_python_and_the_right_builds(locked, conda_channel):
    project, summary, _ = locked
    base = tc.platform_name(conda_channel)
    assert [(e.name, e.platform, e.fallback) for e in summary.locked] == [
        ("cpu", base, False), ("cuda13", f"{base}-cuda13", False),
        ("default", base, False), ("default", f"{base}-cuda13", False)]  # default: every workspace platform
    lf = lockfile(project)
    assert sorted(name for name, _ in lf.environments()) == ["cpu", "cuda13", "default"]
    platforms = {p.name: [str(v) for v in p.virtual_packages] for p in lf.platforms()}
    floor = tc.channel_info(conda_channel)["python_glibc_floor"]
    defaults = ["__unix=0=0", "__linux=4.18", "__archspec=0=x86_64"]  # pixi writes them, after the declared ones
    assert platforms == {"p1": [f"__glibc={floor}", *defaults], "p2": ["__cuda=13", f"__glibc={floor}", *defaults]}
    conda = {}
    for name, env in lf.environments():
        for plat in env.platforms():
            conda[name] = {pkg.name: pkg.location.rsplit("/", 1)[1] for pkg in env.packages(plat)
                           if pkg.location.endswith(".conda")}
    assert conda["cpu"]["rt-kernel"] == "rt-kernel-1.2.0-cpu_0.conda"
    assert conda["cuda13"]["rt-kernel"] == "rt-kernel-1.2.0-cuda_1.conda"
    for name in ("cpu", "cuda13"):
        assert conda[name]["python"].startswith(f"python-{PY}.")
        assert conda[name]["pip"].startswith("pip-26.")  # the real pip: the first channel wins
    assert {"cuda-nvcc", "cuda-version", "cuda-cudart-dev", "cuda-cccl"} <= set(conda["cuda13"])
    assert conda["cuda13"]["cuda-version"].startswith("cuda-version-13.0-")
    assert not any(n.startswith("cuda-") for n in conda["cpu"])
    text = project.lockfile.read_text()
    # conda-forge's packages are recorded at conda-forge, never at the mirror they were solved from
    assert f"- conda: {CONDA_FORGE}linux-64/python-{PY}" in text and str(conda_channel) not in text


def test_pypi_entries_are_relative_hashed_and_indexed(locked):
    project, _, _ = locked
    text = project.lockfile.read_text()
    assert "- pypi: ./wheels/torch-2.13.0+cpu-py3-none-any.whl" in text
    assert str(project.root) not in text and "file://" not in text
    env = lockfile(project).environment("cuda13")
    pypi = {p.name: p for p in env.pypi_packages_for_platform(env.platforms()[0])}
    assert sorted(pypi) == ["rtpy", "torch"]
    assert str(pypi["torch"].version) == "2.13.0+cu130"
    assert pypi["torch"].hashes.sha256.hex() == sha256_of(project.root / "wheels" / "torch-2.13.0+cu130-py3-none-any.whl")
    # torch is pinned to its index, but a wheel found in a folder has no index to record (rattler keeps an
    # `index:` for URL locations only, as pixi does); one from an index has it (test_pixi_rules, index_pins)
    assert "index: https://download.pytorch.org/whl/cu130" not in text
    assert "indexes:\n    - https://pypi.org/simple" in text


def test_installed_environments_are_conda_prefixes_that_run(locked):
    project, _, installed = locked
    for name, variant in (("cpu", "cpu"), ("cuda13", "cuda")):
        summary = installed[name]
        assert summary.kind == "conda" and summary.path == project.env(name) and summary.status == "installed"
        assert (summary.path / "conda-meta").is_dir()
        bin_dir = summary.path / "bin"
        assert run(bin_dir / "python", "-c", "import sys; print(sys.prefix)") == str(summary.path)
        assert run(bin_dir / "rt-tool") == "rt-tool ok lib-2.1.0 base-1.0.0"
        assert run(bin_dir / "rt-kernel") == f"rt-kernel {variant}"
        local = "cpu" if name == "cpu" else "cu130"
        assert run(bin_dir / "python", "-c", "import torch, rtpy; print(torch.__version__, rtpy.VALUE)") == \
            f"2.13.0+{local} rtpy ok"
        marker = records.read(summary.path / "resolver-ready.json")
        assert marker["lock_digest"] == install.locked_environment_digest(project, name)
        assert marker["kind"] == "conda"
    assert "release 13.0" in run(project.env("cuda13") / "bin" / "nvcc", "--version")  # the toolkit came with it
    assert not list(project.envs.glob(".*"))  # no temporary folder left behind


def test_reinstall_is_a_no_op_and_repairs_a_missing_marker(locked):
    project, _, _ = locked
    assert install.install_environment(project, "cpu").status == "up-to-date"
    (project.env("cpu") / "resolver-ready.json").unlink()
    again = install.install_environment(project, "cpu")
    assert again.status == "installed" and (project.env("cpu") / "resolver-ready.json").is_file()
    assert run(project.env("cpu") / "bin" / "rt-kernel") == "rt-kernel cpu"


def test_lock_is_deterministic_and_current(locked, tmp_path, served, conda_channel):
    project, summary, _ = locked
    first = project.lockfile.read_bytes()
    again = lock.lock_plans(project, [cpu_plan(), cuda_plan()])
    assert project.lockfile.read_bytes() == first and again.sha256 == summary.sha256
    # the same inputs in another folder give the same bytes (locations are relative or canonical)
    other = make_project(tmp_path / "elsewhere", served[1].url, conda_channel)
    lock.lock_plans(other, [cpu_plan(), cuda_plan()])
    assert other.lockfile.read_bytes() == first
    assert current.lock_status(project, [cpu_plan(), cuda_plan()]).current
    stale = current.lock_status(project, [cpu_plan(python="3.12")])
    assert [(r.kind, r.environment) for r in stale.reasons] == [("python-changed", "cpu")]


def test_a_relock_resolves_an_environment_whose_dependencies_changed_and_keeps_the_others(locked, tmp_path):
    """Relocking one target carries the other environments over only while they still satisfy pixi.toml:
    one whose dependencies changed is resolved again, as pixi would."""
    project, _, _ = locked
    copy = tmp_path / "edited"
    shutil.copytree(project.root, copy, ignore=shutil.ignore_patterns("envs", "cache"))
    edited = ProjectPaths(copy)
    manifest = Manifest.load(edited.manifest)
    del manifest.doc["feature"]["cpu"]["dependencies"]["pip"]
    manifest.save()
    status = current.lock_status(edited, [cuda_plan()])
    assert [(r.kind, r.environment, r.packages) for r in status.reasons] == \
        [("packages-not-required", "cpu", ("pip", "setuptools", "wheel"))]
    summary = lock.lock_plans(edited, [cuda_plan()])
    assert [e.name for e in summary.locked] == ["cpu", "cuda13"] and summary.carried_over == ("default",)
    assert current.lock_status(edited, [cpu_plan(), cuda_plan()]).current
    cpu = {e.platform.name: e for e in read_lock(edited.lockfile, edited.root)["cpu"]}
    assert all("pip" not in [r.name for r in env.conda] for env in cpu.values())


def test_relocking_one_target_keeps_the_others_byte_for_byte(locked, tmp_path, served, conda_channel):
    project = make_project(tmp_path / "one-by-one", served[1].url, conda_channel)
    lock.lock_plans(project, [cpu_plan()])
    summary = lock.lock_plans(project, [cuda_plan()])
    assert summary.carried_over == ("cpu", "default")  # default: every platform was there after the first lock
    assert project.lockfile.read_bytes() == locked[0].lockfile.read_bytes()


def test_manifest_written_by_lock_is_pixis_current_form(locked):
    project, _, _ = locked
    text = project.manifest.read_text()
    assert text.startswith("# test workspace: comments must survive `lock`")
    assert 'torch = {version = "==2.13.0+cu130", index = "https://download.pytorch.org/whl/cu130"}' in text
    assert "system-requirements" not in text
    from resolver.core.toml import parse_toml

    data = parse_toml(text, what="pixi.toml", fix="")
    for name in ("cpu", "cuda13"):
        assert data["feature"][name]["dependencies"]["python"] == f"{PY}.*"
    assert data["feature"]["cuda13"]["dependencies"]["cuda-version"] == "13.0.*"
    if not SCHEMA.is_file():
        pytest.skip(f"pixi's manifest schema is not here ({SCHEMA}): the rest needs it")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(data))
    assert not errors, [e.message for e in errors]


def test_tampered_wheel_is_refused_naming_the_file(locked, tmp_path, monkeypatch):
    project, _, _ = locked
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # a machine that has not verified it yet
    copy = ProjectPaths(tmp_path / "copy")
    shutil.copytree(project.root, copy.root, ignore=shutil.ignore_patterns(".resolver"))
    wheel = copy.root / "wheels" / "rtpy-1.0.0-py3-none-any.whl"
    wheel.write_bytes(wheel.read_bytes() + b"\0")
    with pytest.raises(IntegrityError, match="rtpy-1.0.0-py3-none-any.whl"):
        install.install_environment(copy, "cpu")
    assert not copy.env("cpu").exists() and not list(copy.envs.glob(".*"))


def test_tampered_conda_package_is_refused(served, tmp_path, conda_channel, monkeypatch):
    channel, _ = served
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # a machine that has not verified it yet
    chan = tmp_path / "chan"
    shutil.copytree(channel, chan)
    server = cf.ChannelServer(chan)
    try:
        project = make_project(tmp_path / "p", server.url, conda_channel)
        lock.lock_plans(project, [cpu_plan()])
        target = cf.package_file(chan, "rt-lib")
        target.write_bytes(target.read_bytes()[:-1] + b"x")
        with pytest.raises(IntegrityError, match="rt-lib-2.1.0"):
            install.install_environment(project, "cpu")
        assert not project.env("cpu").exists()
    finally:
        server.close()


def test_a_conda_link_that_cannot_read_its_package_says_why_in_one_line(tmp_path, conda_channel):
    """rattler's error chain (fetch → package cache → io error) is one line with every cause, after one
    more try (a failed fetch of a local file was seen once under heavy load)."""
    from resolver.core.errors import BuildFailed
    from resolver.tools import conda

    records = conda.solve([conda_channel.as_uri() + "/"], ["python 3.11.*"], "linux-64",
                          ["__glibc=2.35=0", "__unix=0=0", "__linux=5.0=0", "__archspec=1=x86_64"])
    missing = [tmp_path / "gone" / r.file_name for r in records]
    with pytest.raises(BuildFailed) as info:
        conda.link(conda.records_for_files(list(records), missing), tmp_path / "prefix", platform="linux-64",
                   cache_dir=tmp_path / "cache")
    message = str(info.value)
    assert "failed to fetch python-3.11" in message and "No such file or directory" in message and "\n" not in message


@pytest.fixture
def silent_channel():
    """A channel URL whose server accepts connections and never answers (a firewall that drops)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/silent"
    sock.close()


def test_a_named_mirror_that_times_out_is_one_sentence_and_writes_nothing(served, tmp_path, silent_channel,
                                                                         conda_channel):
    project = make_project(tmp_path / "p", served[1].url, conda_channel)
    before = project.manifest.read_bytes()
    done = cli.run("lock", "--target", "cpu", "--channel", silent_channel, project=project.root, timeout=120)
    assert done.returncode == 3, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "cannot be reached" in errors[0] and silent_channel in errors[0]
    assert "Traceback" not in done.stderr  # within subprocess.run's timeout: the silent mirror was given up
    assert not project.lockfile.exists() and project.manifest.read_bytes() == before


def test_no_conda_channel_answering_falls_back_explicitly(tmp_path, monkeypatch, conda_channel):
    """The manifest's own channels unreachable, no mirror named (an air-gapped machine): each environment
    becomes a virtual environment of this Python, and the lock says so in its header."""
    monkeypatch.delenv("RESOLVER_CONDA_CHANNELS")
    project = make_project(tmp_path / "p", "http://127.0.0.1:9/nothing", conda_channel)
    summary = lock.lock_plans(project, [cpu_plan()])
    cpu = next(e for e in summary.locked if e.name == "cpu")
    assert cpu.fallback and cpu.conda_packages == 0 and cpu.pypi_packages == 2
    header = [line for line in project.lockfile.read_text().splitlines() if line.startswith("#")]
    assert any("environment cpu" in line and "fallback" in line and "pixi cannot install it" in line for line in header)
    assert any("environment cpu" in note and "fallback" in note for note in summary.notes)
    done = install.install_environment(project, "cpu")
    assert done.kind == "venv" and run(done.path / "bin" / "python", "-c", "import rtpy; print(rtpy.VALUE)") == "rtpy ok"
    # --no-conda is the same fallback, asked for
    again = lock.lock_plans(make_project(tmp_path / "q", "http://127.0.0.1:9/nothing", conda_channel), [cpu_plan()],
                            no_conda=True)
    assert next(e for e in again.locked if e.name == "cpu").fallback


def test_cli_relocks_stored_plans_and_installs(locked, tmp_path):
    project, _, _ = locked
    copy = tmp_path / "cli"
    shutil.copytree(project.root, copy, ignore=shutil.ignore_patterns("envs", "cache"))
    assert locked_plans.read_all(ProjectPaths(copy)) == []  # records copied from another checkout are not this one's
    for name in ("cpu", "cuda13"):  # what a lock of these targets here would have kept
        kept = locked_plans.record(project, name)
        locked_plans.save(ProjectPaths(copy), locked_plans.read(project, name), Manifest.load(copy / "pixi.toml"),
                          kept["pythons"])
    done = cli.run("lock", "--json", project=copy)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # the stored plans are what pixi.lock holds: nothing to resolve
    assert data["status"] == "up-to-date" and data["locked"] == [] and data["reasons"] == []
    done = cli.run("lock", "--check", "--json", project=copy)
    assert done.returncode == 0 and json.loads(done.stdout)["current"] is True
    done = cli.run("lock", "--force", "--json", project=copy)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["status"] == "locked" and data["reasons"] == []
    assert [e["environment"] for e in data["locked"]] == ["cpu", "cuda13"] and data["carried_over"] == ["default"]
    assert (copy / "pixi.lock").read_bytes() == project.lockfile.read_bytes()
    done = cli.run("install", "--env", "cpu", "--json", project=copy)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["kind"] == "conda" and data["path"] == str(copy / ".resolver" / "envs" / "cpu")
    cpu = lockfile(ProjectPaths(copy)).environment("cpu")
    conda = sorted(p.name for p in cpu.packages(cpu.platforms()[0]) if p.location.endswith(".conda"))
    assert conda == ["pip", "python", "rt-base", "rt-kernel", "rt-lib", "rt-tool", "setuptools", "wheel"]
    assert data["status"] == "installed" and data["conda_packages"] == len(conda)
    assert data["enter"]["pixi"] == "pixi shell -e cpu" and data["enter"]["shell"] == f"source {copy / '.resolver' / 'envs' / 'cpu' / 'bin' / 'activate'}"
    done = cli.run("install", "--env", "nope", project=copy)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no environment 'nope'" in done.stderr


def test_pixi_to_conda_lock_converts_the_lock(locked, tmp_path):
    """A third-party reader pinned to an older py-rattler (0.24) converts our lock."""
    project, _, _ = locked
    tool_venv = REPO / ".resolver" / "test-envs" / "pixi-to-conda-lock-0.4.5"
    exe = tool_venv / "bin" / "pixi-to-conda-lock"
    if not exe.exists():
        shutil.rmtree(tool_venv, ignore_errors=True)
        venv.create(tool_venv, with_pip=True)
        env = {k: v for k, v in os.environ.items() if k not in ("PIP_CONFIG_FILE", "PIP_NO_INDEX")}
        done = subprocess.run([str(tool_venv / "bin" / "python"), "-m", "pip", "install", "-q",
                               "pixi-to-conda-lock==0.4.5"], capture_output=True, text=True, env=env)
        if done.returncode != 0 and "NewConnectionError" in done.stderr + done.stdout:
            pytest.skip("PyPI is not reachable to install pixi-to-conda-lock")
        assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "conda-lock"
    done = subprocess.run([str(exe), str(project.lockfile), "-o", str(out)], capture_output=True, text=True,
                          cwd=project.root)
    assert done.returncode == 0, done.stderr[-3000:]
    import yaml

    converted = yaml.safe_load((out / "cuda13.conda-lock.yml").read_text())
    names = {(p["name"], p["manager"]) for p in converted["package"]}
    assert {("python", "conda"), ("rt-kernel", "conda"), ("cuda-nvcc", "conda"), ("torch", "pip"),
            ("rtpy", "pip")} <= names
    kernel = next(p for p in converted["package"] if p["name"] == "rt-kernel")
    assert kernel["url"].endswith("rt-kernel-1.2.0-cuda_1.conda") and kernel["url"].startswith("http://127.0.0.1")
    torch = next(p for p in converted["package"] if p["name"] == "torch")
    assert torch["hash"]["sha256"] == sha256_of(project.root / "wheels" / "torch-2.13.0+cu130-py3-none-any.whl")


def test_interrupted_install_never_looks_ready_and_a_rerun_repairs(locked, tmp_path):
    project, _, _ = locked
    copy = ProjectPaths(tmp_path / "interrupted")
    shutil.copytree(project.root, copy.root, ignore=shutil.ignore_patterns(".resolver"))
    proc = cli.start("install", "--env", "cpu", project=copy.root, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(copy.envs.glob(".cpu.tmp-*")) and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "install finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not copy.env("cpu").exists()  # nothing at the final place: it never looks ready
    summary = install.install_environment(copy, "cpu")
    assert summary.status == "installed" and not list(copy.envs.glob(".cpu.tmp-*"))
    assert run(copy.env("cpu") / "bin" / "rt-tool") == "rt-tool ok lib-2.1.0 base-1.0.0"


def test_remote_wheels_are_downloaded_once_into_the_cache(served, tmp_path, conda_channel, monkeypatch):
    """Wheels from an HTTP wheelhouse that serves no PEP 658 metadata: lock keeps what it downloads for
    their METADATA in the verified store, installs take them from there (none downloads again), and a
    damaged copy is fetched again, not trusted."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the store it damages is its own
    channel, server = served
    wheelhouse = cf.build_wheelhouse(tmp_path / "remote-wheels")
    wheel_server = cf.ChannelServer(wheelhouse)
    try:
        project = ProjectPaths(tmp_path / "p")
        project.root.mkdir()
        (project.root / "pixi.toml").write_text(manifest_text(server.url, conda_channel).replace(
            'find-links = ["./wheels"]', f'find-links = ["{wheel_server.url}"]'))

        def wheel_gets():
            return sorted(r for r in wheel_server.requests if r.startswith("GET") and r.endswith(".whl"))
        lock.lock_plans(project, [cpu_plan()])
        assert f"- pypi: {wheel_server.url}rtpy-1.0.0-py3-none-any.whl" in project.lockfile.read_text()
        after_lock = len(wheel_gets())  # uv's resolve and our METADATA read
        install.install_environment(project, "cpu")
        install.install_environment(project, "cpu", force=True, use_cache=False)
        assert len(wheel_gets()) == after_lock  # nothing downloaded again
        assert run(project.env("cpu") / "bin" / "python", "-c", "import rtpy; print(rtpy.VALUE)") == "rtpy ok"
        cached = next(project.verified.glob("*/*/rtpy-1.0.0-py3-none-any.whl"))
        cached.write_bytes(b"corrupted")  # a damaged cache entry is fetched again, not trusted
        install.install_environment(project, "cpu", force=True, use_cache=False)
        assert len(wheel_gets()) == after_lock + 1 and wheel_gets().count("GET /rtpy-1.0.0-py3-none-any.whl") >= 2
    finally:
        wheel_server.close()


def test_a_damaged_lock_is_kept_aside_and_rewritten_with_a_note(served, tmp_path, conda_channel):
    project = make_project(tmp_path / "p", served[1].url, conda_channel)
    project.lockfile.write_text("version: 7\nplatforms: [oops\n")
    summary = lock.lock_plans(project, [cpu_plan()])
    assert summary.notes and "could not be read" in summary.notes[0]
    (backup,) = project.root.glob("pixi.lock.unreadable-*")
    assert backup.read_text() == "version: 7\nplatforms: [oops\n"
    assert sorted(name for name, _ in lockfile(project).environments()) == ["cpu", "cuda13", "default"]


def test_a_channel_inside_the_project_is_recorded_relative(served, tmp_path, conda_channel):
    channel, _ = served
    project = make_project(tmp_path / "p", "./local-channel", conda_channel)
    shutil.copytree(channel, project.root / "local-channel")
    summary = lock.lock_plans(project, [cuda_plan()])
    text = project.lockfile.read_text()
    assert "- url: ./local-channel/" in text and "- conda: ./local-channel/linux-64/rt-kernel-1.2.0-cuda_1.conda" in text
    assert str(project.root) not in text
    assert next(e for e in summary.locked if e.name == "cuda13").conda_packages > 20
    done = install.install_environment(project, "cuda13")
    assert run(done.path / "bin" / "rt-kernel") == "rt-kernel cuda"


def test_every_declared_platform_is_locked_with_its_target_overrides(served, tmp_path, conda_channel):
    project = make_project(tmp_path / "p", served[1].url, conda_channel)
    name = tc.platform_name(conda_channel)
    text = project.manifest.read_text().replace(
        f'[feature.cpu]\nplatforms = ["{name}"]\ndependencies = {{ rt-tool = ">=0.3", rt-kernel = "1.2.*", pip = "*" }}',
        f'[feature.cpu]\nplatforms = ["{name}", "osx-arm64"]\n'
        'dependencies = { rt-tool = ">=0.3" }\ntarget.linux-64.dependencies = { rt-kernel = "1.2.*" }')
    project.manifest.write_text(text.replace("platforms = [{ name", 'platforms = ["osx-arm64", { name', 1))
    summary = lock.lock_plans(project, [cpu_plan()])
    cpu = {e.platform: e for e in summary.locked if e.name == "cpu"}
    assert sorted(cpu) == sorted([name, "osx-arm64"])
    assert cpu["osx-arm64"].pypi_packages == 2
    env = lockfile(project).environment("cpu")
    osx = next(p for p in env.platforms() if p.name == "osx-arm64")
    assert [str(v) for v in osx.virtual_packages] == ["__unix=0=0", "__osx=13.0", "__archspec=0=m1"]  # as pixi writes
    assert sorted(pkg.name for pkg in env.packages(osx) if pkg.location.endswith(".conda")) == \
        ["python", "rt-base", "rt-lib", "rt-tool"]
    assert install.install_environment(project, "cpu").platform == "linux-64"


def test_a_broken_cached_build_is_dropped_and_rebuilt(locked, tmp_path):
    project, _, _ = locked
    copy = ProjectPaths(tmp_path / "cache-broken")
    shutil.copytree(project.root, copy.root, ignore=shutil.ignore_patterns(".resolver"))
    install.install_environment(copy, "cpu", bytecode="all")  # the cached build keeps compiled bytecode
    (template,) = copy.cache.glob("envs/cpu-*")
    python = next((template / "bin").glob("python3.*"))
    python.unlink()
    python.symlink_to("/nonexistent/python3")  # as if the cached build had lost its interpreter
    shutil.rmtree(copy.env("cpu"))
    again = install.install_environment(copy, "cpu", bytecode="all")
    assert again.built_from == "lock" and run(again.path / "bin" / "rt-kernel") == "rt-kernel cpu"
    assert run(again.path / "bin" / "python", "-c", "print(1)") == "1"
    shutil.rmtree(copy.env("cpu"))  # the cached build made again is linked next time, bytecode and all
    linked = install.install_environment(copy, "cpu", bytecode="all")
    assert (linked.built_from, linked.bytecode) == ("cache", "all") and list(linked.path.rglob("*.pyc"))
    assert run(linked.path / "bin" / "python", "-c", "print(1)") == "1"
    # a file of the cached build edited through an environment (they share it): the cached build is dropped
    (template,) = copy.cache.glob("envs/cpu-*")
    shared = next(p for p in (linked.path / "bin").iterdir() if p.is_file() and not p.is_symlink())
    with open(shared, "ab") as handle:
        handle.write(b"\n# edited in place\n")
    shutil.rmtree(copy.env("cpu"))
    rebuilt = install.install_environment(copy, "cpu", bytecode="all")
    assert rebuilt.built_from == "lock" and b"edited in place" not in (rebuilt.path / "bin" / shared.name).read_bytes()


def test_cli_locks_for_another_machine_from_its_profile(served, tmp_path, conda_channel):
    """A laptop locks for a GPU node: `lock --profile node.json` plans for the node (resolver.plan.decide)
    and solves with the node's CUDA platform, not this host's."""
    from resolver.core.model import Request, Target
    from resolver.plan.planning import plan_for
    from resolver.plan.probe.profile import HardwareProfile

    profile = tmp_path / "node.json"
    profile.write_text(json.dumps({
        "platform": "linux-64", "glibc": "2.35", "python": f"{PY}.4",
        "nvidia": {"driver_version": "580.65.06", "cuda_driver_version": "13.0",
                   "gpus": [{"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]},
        "amd": None, "cuda_toolkit": None}))
    plan = plan_for(Request(target=Target.parse("cuda13.0")), HardwareProfile.from_file(profile))
    assert plan.backend == "cuda" and str(plan.backend_version) == "13.0"
    project = make_project(tmp_path / "p", served[1].url, conda_channel)
    version = plan.torch.requirement.split("==", 1)[1]
    cf.write_wheel(project.root / "wheels", "torch", version, {"torch/__init__.py": f'__version__ = "{version}"\n'})
    done = cli.run("lock", "--profile", str(profile), "--target", "cuda13.0", "--json", project=project.root)
    assert done.returncode == 0, done.stderr[-2000:]
    locked_env = next(e for e in json.loads(done.stdout)["locked"] if e["environment"] == plan.env_name)
    assert locked_env["torch"] == f"torch=={version}" and not locked_env["fallback"]
    lf = lockfile(project)
    (platform,) = [p for p in lf.platforms() if p.name == "p2"]  # pixi's alias of the second named platform
    assert "__cuda=13" in [str(v) for v in platform.virtual_packages]
    kernel = [p.location for p in lf.environment(plan.env_name).packages(platform) if p.name == "rt-kernel"]
    assert kernel[0].endswith("rt-kernel-1.2.0-cuda_1.conda")
    assert current.lock_status(project, [plan]).current


def test_a_channel_folder_that_is_not_indexed_is_one_sentence(tmp_path, monkeypatch, conda_channel):
    raw = tmp_path / "raw-channel"
    (raw / "noarch").mkdir(parents=True)
    monkeypatch.setenv("RESOLVER_CONDA_CHANNELS", f"{conda_channel},{raw}")
    project = make_project(tmp_path / "p", "http://127.0.0.1:9/unused", conda_channel)
    with pytest.raises(ResolverError, match="not indexed") as info:
        lock.lock_plans(project, [cpu_plan()])
    assert "\n" not in str(info.value)
    monkeypatch.setenv("RESOLVER_CONDA_CHANNELS", f"{conda_channel},{tmp_path / 'missing'}")
    with pytest.raises(ResolverError, match="does not exist"):
        lock.lock_plans(make_project(tmp_path / "q", "http://127.0.0.1:9/unused", conda_channel), [cpu_plan()])


def test_a_channel_without_python_is_one_sentence(served, tmp_path, monkeypatch, conda_channel):
    """conda-forge mirrored by a channel that has no python: the solve names python, exit 3, nothing written."""
    channel, server = served
    monkeypatch.setenv("RESOLVER_CONDA_CHANNELS", server.url)
    project = make_project(tmp_path / "p", server.url, conda_channel)
    with pytest.raises(ResolverError) as info:
        lock.lock_plans(project, [cpu_plan()])
    assert info.value.code == 3 and "no package python" in str(info.value) and "\n" not in str(info.value)
    assert not project.lockfile.exists()


def test_a_lock_edited_to_drop_python_is_refused_before_anything_is_built(locked, tmp_path):
    project, _, _ = locked
    copy = ProjectPaths(tmp_path / "no-python")
    shutil.copytree(project.root, copy.root, ignore=shutil.ignore_patterns(".resolver"))
    text = copy.lockfile.read_text()
    # drop python from the environments (the package list keeps its entry, as a hand edit would)
    kept = [line for line in text.splitlines(keepends=True)
            if not (line.startswith("      - conda:") and f"/python-{PY}." in line)]
    assert len(kept) == len(text.splitlines()) - 2  # the cpu and cuda13 entries
    copy.lockfile.write_text("".join(kept))
    with pytest.raises(ResolverError) as info:
        install.install_environment(copy, "cpu")
    assert info.value.code == 3 and "no conda python" in str(info.value) and "\n" not in str(info.value)
    assert not copy.env("cpu").exists() and not list(copy.envs.glob(".*"))


def test_sources_named_on_the_command_line_are_remembered_for_install(served, tmp_path, conda_channel, monkeypatch):
    monkeypatch.delenv("RESOLVER_CONDA_CHANNELS")
    project = make_project(tmp_path / "p", served[1].url, conda_channel)
    done = cli.run("lock", "--target", "cpu", "--channel", str(conda_channel), "--json", project=project.root)
    assert done.returncode == 0, done.stderr[-2000:]
    assert Sources.load(project.root).conda_channels == (str(conda_channel),)
    again = cli.run("lock", "--target", "cpu", "--json", project=project.root)
    assert again.returncode == 0, again.stderr[-2000:]  # no flag: the channel named before still answers
    assert Sources.load(project.root).conda_channels == (str(conda_channel),)
    assert not any(e["fallback"] for e in json.loads(again.stdout)["locked"]), again.stdout
    done = cli.run("install", "--env", "cpu", "--json", project=project.root)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["kind"] == "conda"


def test_a_machine_whose_python_is_too_old_gets_an_environment_with_a_supported_one(served, tmp_path, monkeypatch,
                                                                                   conda_channel):
    """`lock --profile` for a host with Python 3.8 (no torch supports it): the plan says why it chose
    another Python and the environment brings that Python itself (conda), instead of failing."""
    channel, server = served
    monkeypatch.delenv("RESOLVER_CONDA_CHANNELS")  # only the test channel: its python 3.12 stand-in
    profile = tmp_path / "py38.json"
    profile.write_text(json.dumps({"platform": "linux-64", "glibc": "2.31", "python": "3.8.10", "nvidia": None,
                                   "amd": None, "cuda_toolkit": None}))
    project = ProjectPaths(tmp_path / "p")
    project.root.mkdir()
    (project.root / "pixi.toml").write_text(f'[workspace]\nname = "py38"\nchannels = ["{server.url}"]\n'
                                            'platforms = ["linux-64"]\n')
    planned = cli.run("plan", "--profile", str(profile), "--target", "cpu", "--json", project=project.root)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    python = plan["python"]
    assert python != "3.8" and plan["conda_packages"]["python"] == f"{python}.*"
    why = next(t for t in plan["trace"] if t["rule"] == "python")
    assert "3.8" in why["because"] and f"its own Python {python}" in why["because"]
    done = cli.run("lock", "--profile", str(profile), "--target", "cpu", "--no-pypi", "--json", project=project.root)
    assert done.returncode == 0, done.stderr[-2000:]
    cpu = lockfile(project).environment("cpu")
    pythons = [p.location for p in cpu.packages(cpu.platforms()[0]) if p.name == "python"]
    assert len(pythons) == 1 and f"/python-{python}." in pythons[0]


def linux_kernel_only(project: ProjectPaths) -> ProjectPaths:
    """The CPU feature takes rt-kernel (built for linux-64 alone) on linux-64 only, as a real project takes
    a package some platforms lack."""
    text = project.manifest.read_text()
    text = text.replace('[feature.cpu]\n', '[feature.cpu]\ntarget.linux-64.dependencies = { rt-kernel = "1.2.*" }\n', 1)
    project.manifest.write_text(text.replace('rt-kernel = "1.2.*", pip = "*" }', 'pip = "*" }', 1))
    return project


def test_lock_platform_adds_one_the_cpu_environment_serves_and_a_gpu_one_does_not(served, tmp_path, conda_channel):
    """A teammate on a Mac: `lock --platform osx-arm64` declares it in [workspace] platforms and locks the CPU
    environment for it (and the default one); the CUDA environment stays on the machines its plan serves."""
    project = linux_kernel_only(make_project(tmp_path / "p", served[1].url, conda_channel))
    name = tc.platform_name(conda_channel)
    lock.lock_plans(project, [cpu_plan(), cuda_plan()])
    done = cli.run("lock", "--platform", "osx-arm64", "--json", project=project.root, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = Manifest.load(project.manifest)
    assert "osx-arm64" in manifest.platforms()
    assert sorted(p.name for p in manifest.environment("cpu").platforms) == sorted([name, "osx-arm64"])
    assert [p.name for p in manifest.environment("cuda13").platforms] == [f"{name}-cuda13"]
    envs = read_lock(project.lockfile, project.root)
    assert sorted(e.platform.subdir for e in envs["cpu"]) == ["linux-64", "osx-arm64"]
    assert [e.platform.subdir for e in envs["cuda13"]] == ["linux-64"]
    osx = next(e for e in envs["cpu"] if e.platform.subdir == "osx-arm64")
    assert {r.name for r in osx.conda} >= {"python", "rt-tool"} and {a.name for a in osx.pypi} == {"rtpy", "torch"}
    # macOS takes PyPI's unlabelled torch (the CPU index has no other): pinned so for it alone
    assert "torch==2.13.0" in manifest.environment("cpu", "osx-arm64").pypi_requirements()
    assert f"torch=={cpu_plan().torch.requirement.split('==')[1]}" in manifest.environment("cpu", name).pypi_requirements()
    again = cli.run("lock", "--platform", "osx-arm64", "--json", project=project.root, timeout=900)
    assert again.returncode == 0 and json.loads(again.stdout)["status"] == "up-to-date"  # declared: nothing to do
    assert install.install_environment(project, "cpu").platform == "linux-64"  # this machine's, as before


def team_project(base: Path, channel_url: str, toolchain: Path, others: str) -> ProjectPaths:
    """A workspace that lists this machine's platform and ``others`` and has no CPU environment yet; its wheelhouse
    holds the packages every resolver environment takes besides torch (pure-Python stand-ins)."""
    text = (f'[workspace]\nname = "team"\nchannels = ["conda-forge", "{channel_url}"]\n'
            f"platforms = [{tc.platform_entry(toolchain)}, {others}]\n\n[tool.resolver]\nfind-links = [\"./wheels\"]\n")
    project = ProjectPaths(projects.project(base, text, wheelhouse=True))
    for name in DEFAULT_PYPI:
        cf.write_wheel(project.root / "wheels", name, "1.0.0", {f"{name}/__init__.py": ""})
    return project


def test_a_new_cpu_environment_is_locked_for_every_platform_the_workspace_lists_that_its_sources_serve(served, tmp_path,
                                                                                                       conda_channel):
    """A mixed team's workspace lists Linux, Apple silicon and Windows: the CPU environment the resolver adds is
    locked for each platform its channels and indexes serve. The channel has no python for win-64, so win-64 is
    left out of the environment with a note whose command adds it later; a second lock has nothing to do."""
    project = team_project(tmp_path / "p", served[1].url, conda_channel, '"osx-arm64", "win-64"')
    summary = lock.lock_plans(project, [cpu_plan()])
    assert sorted((r.name, r.platform) for r in summary.locked if r.name == "cpu") == sorted(
        [("cpu", tc.platform_name(conda_channel)), ("cpu", "osx-arm64")])
    manifest = Manifest.load(project.manifest)
    assert sorted(p.name for p in manifest.environment("cpu").platforms) == sorted(
        [tc.platform_name(conda_channel), "osx-arm64"])
    assert "win-64" in manifest.platforms()  # the user's own list is theirs: only the environment leaves it out
    note = next(n for n in summary.notes if "win-64" in n)
    assert note.startswith("environment cpu is not locked for win-64 (") and note.endswith(
        "python -m resolver lock --platform win-64")
    envs = read_lock(project.lockfile, project.root)
    assert sorted(e.platform.subdir for e in envs["cpu"]) == ["linux-64", "osx-arm64"]
    assert current.lock_status(project).current
    assert "platform osx-arm64 to environment cpu" in summary.added and not any("win-64" in a for a in summary.added)
    ws = pixi_rules.Workspace.read(project.manifest.read_text(), project.lockfile.read_text(), project.root)
    # what pixi asks of the pair (the stand-in torch comes from the wheelhouse, so no index pin is checked)
    assert pixi_rules.every_environment(ws) == [] and pixi_rules.wheel_tags(ws) == [] and pixi_rules.manifest_form(ws) == []


def test_a_workspace_the_resolver_starts_lists_a_teams_platforms_and_keeps_those_it_can_lock(served, tmp_path,
                                                                                                conda_channel):
    """No pixi.toml yet: the one the lock writes lists linux-64, osx-arm64 and win-64 for the new CPU environment,
    less each platform no environment could be locked for."""
    from resolver.core.platforms import TEAM_PLATFORMS

    manifest = Manifest.new("team")
    assert [p.name for p in manifest.platforms().values()] == list(TEAM_PLATFORMS)
    project = team_project(tmp_path / "p", served[1].url, conda_channel, '"osx-arm64", "win-64"')
    manifest = Manifest.load(project.manifest)
    manifest.proposed = {"win-64", "osx-arm64"}  # as if the lock had made it: a platform nothing serves goes
    manifest.ensure_environment(cpu_plan())
    assert manifest.optional == [("cpu", "osx-arm64"), ("cpu", "win-64")]
    manifest.leave_out("cpu", "win-64")
    assert "win-64" not in manifest.platforms() and "osx-arm64" in manifest.platforms()
    assert [p.name for p in manifest.environment("cpu").platforms] == [tc.platform_name(conda_channel), "osx-arm64"]
    assert "torch==2.13.0" in manifest.environment("cpu", "osx-arm64").pypi_requirements()  # PyPI's, unlabelled
    manifest.leave_out("cpu", "osx-arm64")  # and its pin goes with it
    assert "osx-arm64" not in manifest.platforms() and "target" not in manifest.doc["feature"]["cpu"]


def test_lock_platform_refuses_what_the_resolver_does_not_lock_for(tmp_path):
    done = cli.run("lock", "--platform", "amiga-68k", project=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("error: --platform 'amiga-68k' is not a platform")
    assert "osx-arm64" in done.stderr and not (tmp_path / "pixi.toml").exists()
