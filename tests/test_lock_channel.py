"""lock → install against a real conda channel built here with py-rattler-build, served over HTTP.

The PyPI side uses a wheelhouse inside the project (so its locations are relative in pixi.lock)
with pip's own configuration switched off, so nothing outside the test is consulted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import channel_factory as cf  # noqa: E402

from resolver import install, lock  # noqa: E402
from resolver.decide.model import KernelChoice, Plan, TorchChoice, TorchSource  # noqa: E402
from resolver.errors import IntegrityError, ResolverError  # noqa: E402
from resolver.fs import sha256_of  # noqa: E402
from resolver.paths import ProjectPaths  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO.parent / "shared" / "schemas" / "pixi-manifest.schema.json"
PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def cpu_plan(glibc: str = "2.28") -> Plan:
    return Plan(backend="cpu", backend_version=None, python=PY, platform="linux-64", target="cpu",
                torch=TorchChoice("2.13.0", "cpu", TorchSource("pypi-index", "https://download.pytorch.org/whl/cpu"),
                                  local_version="cpu"),
                kernels=KernelChoice("none"), glibc=glibc)


def cuda_plan() -> Plan:
    return Plan(backend="cuda", backend_version="12.6", python=PY, platform="linux-64", target="cuda12.6",
                torch=TorchChoice("2.13.0", "cu126", TorchSource("pypi-index", "https://download.pytorch.org/whl/cu126"),
                                  local_version="cu126"),
                kernels=KernelChoice("build", ("8.6",)), glibc="2.35", cuda_driver="12.8")


MANIFEST = """\
# test workspace: comments must survive `lock`
[workspace]
name = "lock-test"
channels = ["{channel}"]
platforms = ["linux-64"]

[feature.cpu]
platforms = ["linux-64"]
dependencies = {{ rt-tool = ">=0.3", rt-kernel = "1.2.*", pip = "*" }}
pypi-dependencies = {{ rtpy = "*" }}

[feature.cuda12]
platforms = ["linux-64"]
system-requirements = {{ cuda = "12" }}
dependencies = {{ rt-tool = ">=0.3", rt-kernel = "1.2.*", pip = "*" }}
pypi-dependencies = {{ rtpy = "*" }}

[environments]
cpu = {{ features = ["cpu"], solve-group = "cpu" }}
cuda12 = {{ features = ["cuda12"], solve-group = "cuda12" }}

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


@pytest.fixture(autouse=True)
def isolated_pip(monkeypatch):
    """pip sees only the project's wheelhouse: its machine configuration is switched off."""
    for key in [k for k in os.environ if k.startswith(("PIP_", "RESOLVER_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")


def make_project(base: Path, channel_url: str) -> ProjectPaths:
    base.mkdir(parents=True, exist_ok=True)
    (base / "pixi.toml").write_text(MANIFEST.format(channel=channel_url))
    cf.build_wheelhouse(base / "wheels")
    return ProjectPaths(base)


@pytest.fixture(scope="module")
def locked(served, tmp_path_factory):
    """A project locked for cpu and cuda12 and both environments installed (shared by the module)."""
    channel, server = served
    mp = pytest.MonkeyPatch()
    for key in [k for k in os.environ if k.startswith(("PIP_", "RESOLVER_"))]:
        mp.delenv(key)
    mp.setenv("PIP_CONFIG_FILE", os.devnull)
    mp.setenv("PIP_NO_INDEX", "1")
    project = make_project(tmp_path_factory.mktemp("proj") / "p", server.url)
    summary = lock.lock_plans(project, [cpu_plan(), cuda_plan()])
    installed = {name: install.install_environment(project, name) for name in ("cpu", "cuda12")}
    mp.undo()
    return project, summary, installed


def run(path: Path, *args: str) -> str:
    return subprocess.run([str(path), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_lock_records_both_targets_with_the_right_variant(locked):
    project, summary, _ = locked
    assert [e.name for e in summary.locked] == ["cpu", "cuda12"]
    from rattler import LockFile

    lf = LockFile.from_path(str(project.lockfile))
    assert sorted(name for name, _ in lf.environments()) == ["cpu", "cuda12"]
    platforms = {p.name: [str(v) for v in p.virtual_packages] for p in lf.platforms()}
    assert "__cuda=12.8=0" in platforms["linux-64-cuda12"]
    assert not any(v.startswith("__cuda") for v in platforms["linux-64"])
    builds = {}
    for name, env in lf.environments():
        for plat in env.platforms():
            for pkg in env.packages(plat):
                if pkg.name == "rt-kernel":
                    builds[name] = pkg.location.rsplit("/", 1)[1]
    assert builds == {"cpu": "rt-kernel-1.2.0-cpu_0.conda", "cuda12": "rt-kernel-1.2.0-cuda_1.conda"}


def test_pypi_entries_have_relative_locations_and_real_sha256(locked):
    project, _, _ = locked
    text = project.lockfile.read_text()
    assert "- pypi: ./wheels/torch-2.13.0+cpu-py3-none-any.whl" in text
    assert str(project.root) not in text
    from rattler import LockFile

    env = LockFile.from_path(str(project.lockfile)).environment("cuda12")
    pypi = {p.name: p for p in env.pypi_packages_for_platform(env.platforms()[0])}
    assert sorted(pypi) == ["rtpy", "torch"]
    torch = pypi["torch"]
    assert str(torch.version) == "2.13.0+cu126"
    wheel = project.root / "wheels" / "torch-2.13.0+cu126-py3-none-any.whl"
    assert torch.hashes.sha256.hex() == sha256_of(wheel)


def test_installed_environments_run(locked):
    project, _, installed = locked
    for name, variant in (("cpu", "cpu"), ("cuda12", "cuda")):
        summary = installed[name]
        assert summary.kind == "venv" and summary.path == project.env(name) and summary.status == "installed"
        bin_dir = summary.path / "bin"
        assert run(bin_dir / "rt-tool") == "rt-tool ok lib-2.1.0 base-1.0.0"
        assert run(bin_dir / "rt-kernel") == f"rt-kernel {variant}"
        local = "cpu" if name == "cpu" else "cu126"
        assert run(bin_dir / "python", "-c", "import torch, rtpy; print(torch.__version__, rtpy.VALUE)") == \
            f"2.13.0+{local} rtpy ok"
        # scripts written during the build point at the final place, not the temporary one
        assert run(bin_dir / "pip", "--version").startswith("pip ")
        assert ".tmp-" not in (bin_dir / "pip").read_text().splitlines()[0]
        marker = json.loads((summary.path / "resolver-ready.json").read_text())
        assert marker["lock_digest"] == install.locked_environment_digest(project, name)
    assert not list(project.envs.glob(".*"))  # no temporary folder left behind


def test_reinstall_is_a_no_op_and_repairs_a_missing_marker(locked):
    project, _, _ = locked
    assert install.install_environment(project, "cpu").status == "up-to-date"
    (project.env("cpu") / "resolver-ready.json").unlink()
    again = install.install_environment(project, "cpu")
    assert again.status == "installed" and (project.env("cpu") / "resolver-ready.json").is_file()
    assert run(project.env("cpu") / "bin" / "rt-kernel") == "rt-kernel cpu"


def test_lock_is_deterministic_and_current(locked, tmp_path, served):
    project, summary, _ = locked
    first = project.lockfile.read_bytes()
    again = lock.lock_plans(project, [cpu_plan(), cuda_plan()])
    assert project.lockfile.read_bytes() == first and again.sha256 == summary.sha256
    # the same inputs in another folder give the same bytes (locations are relative)
    other = make_project(tmp_path / "elsewhere", served[1].url)
    lock.lock_plans(other, [cpu_plan(), cuda_plan()])
    assert other.lockfile.read_bytes() == first
    assert lock.lock_is_current(project, cpu_plan())
    assert lock.lock_is_current(project, cuda_plan())
    assert not lock.lock_is_current(project, cpu_plan(glibc="2.35"))


def test_relocking_one_target_keeps_the_other(locked, tmp_path, served):
    project = make_project(tmp_path / "one-by-one", served[1].url)
    lock.lock_plans(project, [cpu_plan()])
    summary = lock.lock_plans(project, [cuda_plan()])
    assert summary.carried_over == ("cpu",)
    assert project.lockfile.read_bytes() == locked[0].lockfile.read_bytes()


def test_manifest_written_by_lock_keeps_comments_and_validates(locked):
    project, _, _ = locked
    text = project.manifest.read_text()
    assert text.startswith("# test workspace: comments must survive `lock`")
    assert 'torch = {version = "==2.13.0+cu126", index = "https://download.pytorch.org/whl/cu126"}' in text
    jsonschema = pytest.importorskip("jsonschema")
    import tomllib

    schema = json.loads(SCHEMA.read_text())
    errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(tomllib.loads(text)))
    assert not errors, [e.message for e in errors]


def test_tampered_wheel_is_refused_naming_the_file(locked, tmp_path):
    project, _, _ = locked
    copy = ProjectPaths(tmp_path / "copy")
    shutil.copytree(project.root, copy.root, ignore=shutil.ignore_patterns(".resolver"))
    wheel = copy.root / "wheels" / "rtpy-1.0.0-py3-none-any.whl"
    wheel.write_bytes(wheel.read_bytes() + b"\0")
    with pytest.raises(IntegrityError, match="rtpy-1.0.0-py3-none-any.whl"):
        install.install_environment(copy, "cpu")
    assert not copy.env("cpu").exists() and not list(copy.envs.glob(".*"))


def test_tampered_conda_package_is_refused(served, tmp_path):
    channel, _ = served
    chan = tmp_path / "chan"
    shutil.copytree(channel, chan)
    server = cf.ChannelServer(chan)
    try:
        project = make_project(tmp_path / "p", server.url)
        lock.lock_plans(project, [cpu_plan()])
        target = cf.package_file(chan, "rt-lib")
        target.write_bytes(target.read_bytes()[:-1] + b"x")
        with pytest.raises(IntegrityError, match="rt-lib-2.1.0"):
            install.install_environment(project, "cpu")
    finally:
        server.close()


def test_unreachable_channel_is_one_sentence_and_no_conda_still_locks(tmp_path):
    project = make_project(tmp_path / "p", "http://127.0.0.1:9/nothing")
    with pytest.raises(ResolverError, match="cannot be reached") as info:
        lock.lock_plans(project, [cpu_plan()])
    assert "--no-conda" in str(info.value) and "\n" not in str(info.value)
    summary = lock.lock_plans(project, [cpu_plan()], no_conda=True)
    assert summary.locked[0].conda_packages == 0 and summary.locked[0].pypi_packages == 2


def test_cli_relocks_stored_plans_and_installs(locked, tmp_path):
    project, _, _ = locked
    copy = tmp_path / "cli"
    shutil.copytree(project.root, copy, ignore=shutil.ignore_patterns("envs", "cache"))
    env = dict(os.environ, RESOLVER_PROJECT=str(copy), PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1")
    env.pop("PIP_FIND_LINKS", None)
    cmd = [sys.executable, "-m", "resolver"]
    done = subprocess.run([*cmd, "lock", "--json"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [e["environment"] for e in data["locked"]] == ["cpu", "cuda12"]
    assert (copy / "pixi.lock").read_bytes() == project.lockfile.read_bytes()
    done = subprocess.run([*cmd, "install", "--env", "cuda12", "--json"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["kind"] == "venv" and data["path"] == str(copy / ".resolver" / "envs" / "cuda12")
    assert data["status"] == "installed" and data["conda_packages"] == 5
    done = subprocess.run([*cmd, "install", "--env", "nope"], env=env, capture_output=True, text=True)
    assert done.returncode == 7 and done.stderr.count("\n") == 1 and "no environment 'nope'" in done.stderr


def test_pixi_to_conda_lock_converts_the_lock(locked, request, tmp_path):
    """A third-party reader pinned to an older py-rattler (0.24) converts our lock."""
    project, _, _ = locked
    tool_venv = Path(request.config.cache.mkdir("pixi-to-conda-lock")) / "venv"
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

    converted = yaml.safe_load((out / "cuda12.conda-lock.yml").read_text())
    names = {(p["name"], p["manager"]) for p in converted["package"]}
    assert {("rt-kernel", "conda"), ("rt-tool", "conda"), ("torch", "pip"), ("rtpy", "pip")} <= names
    kernel = next(p for p in converted["package"] if p["name"] == "rt-kernel")
    assert kernel["url"].endswith("rt-kernel-1.2.0-cuda_1.conda") and kernel["url"].startswith("http://127.0.0.1")
    torch = next(p for p in converted["package"] if p["name"] == "torch")
    assert torch["hash"]["sha256"] == sha256_of(project.root / "wheels" / "torch-2.13.0+cu126-py3-none-any.whl")


def test_interrupted_install_never_looks_ready_and_a_rerun_repairs(locked, tmp_path):
    project, _, _ = locked
    copy = ProjectPaths(tmp_path / "interrupted")
    shutil.copytree(project.root, copy.root, ignore=shutil.ignore_patterns(".resolver"))
    env = dict(os.environ, RESOLVER_PROJECT=str(copy.root), PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1")
    proc = subprocess.Popen([sys.executable, "-m", "resolver", "install", "--env", "cpu"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    import signal
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(copy.envs.glob(".cpu.tmp-*")) and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "install finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not copy.env("cpu").exists()  # nothing at the final place: it never looks ready
    assert list(copy.envs.glob(".cpu.tmp-*"))  # the half-built folder is only the temporary one
    summary = install.install_environment(copy, "cpu")
    assert summary.status == "installed" and not list(copy.envs.glob(".cpu.tmp-*"))
    assert run(copy.env("cpu") / "bin" / "rt-tool") == "rt-tool ok lib-2.1.0 base-1.0.0"


def test_remote_wheels_are_downloaded_once_into_the_cache(served, tmp_path):
    """Wheels from an HTTP wheelhouse: install downloads each locked file once into .resolver/cache,
    verifies it, and every later install reuses it (pip itself fetched them once while resolving)."""
    channel, server = served
    wheelhouse = cf.build_wheelhouse(tmp_path / "remote-wheels")
    wheel_server = cf.ChannelServer(wheelhouse)
    try:
        project = ProjectPaths(tmp_path / "p")
        project.root.mkdir()
        (project.root / "pixi.toml").write_text(MANIFEST.format(channel=server.url).replace(
            'find-links = ["./wheels"]', f'find-links = ["{wheel_server.url}"]'))
        lock.lock_plans(project, [cpu_plan()])
        assert f"- pypi: {wheel_server.url}rtpy-1.0.0-py3-none-any.whl" in project.lockfile.read_text()
        def wheel_gets():
            return [r for r in wheel_server.requests if r.startswith("GET") and r.endswith(".whl")]
        before = len(wheel_gets())
        install.install_environment(project, "cpu")
        first = wheel_gets()[before:]
        assert sorted(first) == ["GET /rtpy-1.0.0-py3-none-any.whl", "GET /torch-2.13.0%2Bcpu-py3-none-any.whl"]
        install.install_environment(project, "cpu", force=True, use_cache=False)
        assert len(wheel_gets()) == before + 2
        assert run(project.env("cpu") / "bin" / "python", "-c", "import rtpy; print(rtpy.VALUE)") == "rtpy ok"
        cached = next(project.cache.glob("pypi/downloads/*/rtpy-1.0.0-py3-none-any.whl"))
        cached.write_bytes(b"corrupted")  # a damaged cache entry is fetched again, not trusted
        install.install_environment(project, "cpu", force=True, use_cache=False)
        assert wheel_gets()[-1] == "GET /rtpy-1.0.0-py3-none-any.whl" and len(wheel_gets()) == before + 3
    finally:
        wheel_server.close()


def test_a_damaged_lock_is_rewritten_with_a_note(served, tmp_path):
    project = make_project(tmp_path / "p", served[1].url)
    project.lockfile.write_text("version: 7\nplatforms: [oops\n")
    summary = lock.lock_plans(project, [cpu_plan()])
    assert summary.notes and "could not be read" in summary.notes[0]
    from rattler import LockFile

    assert [name for name, _ in LockFile.from_path(str(project.lockfile)).environments()] == ["cpu"]


def test_local_kernel_channel_is_indexed_used_and_relative(served, tmp_path):
    channel, _ = served
    project = make_project(tmp_path / "p", "unused")
    project.manifest.write_text(project.manifest.read_text().replace('channels = ["unused"]', "channels = []"))
    shutil.copytree(channel, project.channel)
    for index in project.channel.glob("*/repodata.json"):
        index.unlink()  # not indexed yet: lock indexes it
    summary = lock.lock_plans(project, [cuda_plan()])
    assert (project.channel / "linux-64" / "repodata.json").is_file()
    text = project.lockfile.read_text()
    assert "- url: ./.resolver/channel/" in text and "- conda: ./.resolver/channel/linux-64/rt-kernel-1.2.0-cuda_1.conda" in text
    assert summary.locked[0].conda_packages == 5
    done = install.install_environment(project, "cuda12")
    assert run(done.path / "bin" / "rt-kernel") == "rt-kernel cuda"


def test_all_platforms_locks_the_other_declared_platform_with_its_target_overrides(served, tmp_path):
    project = make_project(tmp_path / "p", served[1].url)
    text = project.manifest.read_text().replace(
        '[feature.cpu]\nplatforms = ["linux-64"]\ndependencies = { rt-tool = ">=0.3", rt-kernel = "1.2.*", pip = "*" }',
        '[feature.cpu]\nplatforms = ["linux-64", "osx-arm64"]\ndependencies = { rt-tool = ">=0.3", pip = "*" }\n'
        'target.linux-64.dependencies = { rt-kernel = "1.2.*" }')
    project.manifest.write_text(text.replace('platforms = ["linux-64"]\n\n[feature.cpu]',
                                             'platforms = ["linux-64", "osx-arm64"]\n\n[feature.cpu]'))
    summary = lock.lock_plans(project, [cpu_plan()], all_platforms=True)
    assert [(e.platform, e.conda_packages, e.pypi_packages) for e in summary.locked] == \
        [("linux-64", 5, 2), ("osx-arm64", 4, 2)]
    from rattler import LockFile

    env = LockFile.from_path(str(project.lockfile)).environment("cpu")
    osx = next(p for p in env.platforms() if p.name == "osx-arm64")
    assert "__osx=11.0=0" in [str(v) for v in osx.virtual_packages]
    assert sorted(pkg.name for pkg in env.packages(osx) if pkg.location.endswith(".conda")) == \
        ["pip", "rt-base", "rt-lib", "rt-tool"]
    again = lock.lock_plans(project, [cpu_plan()])  # platforms locked before stay locked
    assert [e.platform for e in again.locked] == ["linux-64", "osx-arm64"]
    assert install.install_environment(project, "cpu").platform == "linux-64"


def test_a_broken_cached_build_is_dropped_and_rebuilt(locked, tmp_path):
    project, _, _ = locked
    copy = ProjectPaths(tmp_path / "cache-broken")
    shutil.copytree(project.root, copy.root, ignore=shutil.ignore_patterns(".resolver"))
    install.install_environment(copy, "cpu")
    (template,) = copy.cache.glob("envs/cpu-*")
    python = template / "bin" / "python"
    python.unlink()
    python.symlink_to("/nonexistent/python3")  # as if the interpreter it was made from had been removed
    again = install.install_environment(copy, "cpu", force=True)
    assert again.built_from == "lock" and run(again.path / "bin" / "rt-kernel") == "rt-kernel cpu"
    assert run(again.path / "bin" / "python", "-c", "print(1)") == "1"


def test_cli_locks_for_another_machine_from_its_profile(served, tmp_path):
    """A laptop locks for a GPU node: `lock --profile node.json` plans for the node (resolver.decide)
    and solves with the node's virtual packages (__cuda from its driver), not this host's."""
    from resolver.decide.model import Request
    from resolver.planning import plan_for
    from resolver.probe.profile import HardwareProfile

    profile = tmp_path / "node.json"
    profile.write_text(json.dumps({
        "platform": "linux-64", "glibc": "2.35", "python": PY,
        "nvidia": {"driver_version": "570.86.15", "cuda_driver_version": "12.8",
                   "gpus": [{"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]},
        "amd": None, "cuda_toolkit": None}))
    plan = plan_for(Request(), HardwareProfile.from_file(profile))
    assert plan.backend == "cuda"
    project = make_project(tmp_path / "p", served[1].url)
    version = plan.torch.requirement.split("==", 1)[1]
    cf.write_wheel(project.root / "wheels", "torch", version, {"torch/__init__.py": f'__version__ = "{version}"\n'})
    env = dict(os.environ, RESOLVER_PROJECT=str(project.root))
    done = subprocess.run([sys.executable, "-m", "resolver", "lock", "--profile", str(profile), "--json"],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    (locked_env,) = json.loads(done.stdout)["locked"]
    assert locked_env["environment"] == plan.env_name and locked_env["torch"] == f"torch=={version}"
    from rattler import LockFile

    lf = LockFile.from_path(str(project.lockfile))
    (platform,) = [p for p in lf.platforms() if p.name == f"linux-64-{plan.env_name}"]
    assert f"__cuda={plan.cuda_driver}=0" in [str(v) for v in platform.virtual_packages]
    assert "__glibc=2.35=0" in [str(v) for v in platform.virtual_packages]
    kernel = [p.location for p in lf.environment(plan.env_name).packages(platform) if p.name == "rt-kernel"]
    assert kernel[0].endswith("rt-kernel-1.2.0-cuda_1.conda")
    assert lock.lock_is_current(project, plan)


def test_a_channel_folder_that_is_not_indexed_is_one_sentence(tmp_path):
    raw = tmp_path / "raw-channel"
    (raw / "noarch").mkdir(parents=True)
    project = make_project(tmp_path / "p", str(raw))
    with pytest.raises(ResolverError, match="not indexed") as info:
        lock.lock_plans(project, [cpu_plan()])
    assert "\n" not in str(info.value)
    with pytest.raises(ResolverError, match="does not exist"):
        lock.lock_plans(make_project(tmp_path / "q", str(tmp_path / "missing")), [cpu_plan()])
