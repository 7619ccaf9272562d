"""Issue 14: a shared pixi.lock, pixi.toml, captured machine, log or model is untrusted input.

Each test reproduces one attack literally, through the real command line (a real HTTP server on
127.0.0.1, a real FIFO, the real /dev/zero, a real full disk) and asserts the safe outcome: nothing
outside the root touched, no code run, the documented exit code, one ``error:`` line, no
traceback, no leftovers. The `patch` attacks are in test_untrusted_patch.py.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shutil
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support import DATA, REPO, cli, shipped_manifest
from support import channel_factory as cf  # noqa: E402
from support.hostile import MANIFEST, needs_mount, one_error, tree, write_project_lock

from resolver.core.errors import BadInput  # noqa: E402
from resolver.project.paths import ProjectPaths  # noqa: E402

MACHINES = DATA / "machines"


def leftovers(folder: Path) -> list[str]:
    """Temporary files of an atomic write or a half-made environment left under ``folder``."""
    return [str(p) for p in folder.rglob("*") if ".resolver-tmp-" in p.name or ".tmp-" in p.name]


class _AnyPath(http.server.BaseHTTPRequestHandler):
    """Answers every GET with the same bytes, whatever the (hostile) path: a server a lock points at."""

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        body = self.server.body  # type: ignore[attr-defined]
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args) -> None:  # noqa: A002
        pass


@pytest.fixture
def server():
    httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _AnyPath)
    httpd.daemon_threads = True
    httpd.body = b"PK\x05\x06" + b"\0" * 18  # type: ignore[attr-defined]
    httpd.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"  # type: ignore[attr-defined]
    yield httpd
    httpd.shutdown()
    httpd.server_close()


# ------------------------------------------------------------------ 1. environment names are paths


EVIL_ENV_NAMES = ["./../../docs", "./../../../victim/important", ".", "..", "a/b/c", "x" * 300, "CPU", "cpu\x1b[2J"]


@pytest.mark.parametrize("name", EVIL_ENV_NAMES, ids=["docs", "outside", "dot", "dotdot", "nested", "300-chars",
                                                       "uppercase", "escape"])
def test_lock_environment_name_that_is_a_path_is_refused_before_anything_is_touched(tmp_path, name):
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "README").write_text("the project's docs\n")
    (tmp_path / "victim" / "important").mkdir(parents=True)
    (tmp_path / "victim" / "important" / "data").write_text("keep\n")
    installed = project / ".resolver" / "envs" / "cpu"  # an environment installed earlier
    installed.mkdir(parents=True)
    (installed / "pyvenv.cfg").write_text("home = /usr/bin\n")
    wheel = cf.write_wheel(project / "wheels", "tiny", "1.0", {"tiny/__init__.py": "X = 1\n"})
    write_project_lock(project, str(wheel), hashlib.sha256(wheel.read_bytes()).hexdigest(), name)
    before_project, before_outside = tree(project), tree(tmp_path / "victim")
    result = cli.run("install",
                     project=project) if name != "cpu\x1b[2J" else cli.run("install", "--env", "cpu", project=project)
    line = one_error(result, 3)
    assert "environment name" in line and "lowercase letters, digits and '-'" in line
    assert "\x1b" not in result.stderr
    assert tree(project) == before_project  # docs/ kept, the installed environment not moved aside
    assert tree(tmp_path / "victim") == before_outside
    assert not leftovers(project)


def test_manifest_environment_name_that_is_a_path_is_refused_by_lock(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    manifest = MANIFEST + '[feature.x.pypi-dependencies]\nrtpy = "*"\n[environments]\n"../../escape" = ["x"]\n'
    (project / "pixi.toml").write_text(manifest)
    line = one_error(cli.run("lock", "--target", "cpu", "--no-pypi", project=project), 3)
    assert "'../../escape'" in line and "pixi.toml" in line
    assert (project / "pixi.toml").read_text() == manifest
    assert not (project / "pixi.lock").exists() and not leftovers(project)
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize("command", [("install", "--env"), ("verify", "--env"), ("doctor", "--env"),
                                     ("build", "--env"), ("bench", "--compare")])
def test_env_flag_that_is_a_path_is_a_usage_error(tmp_path, command):
    line = one_error(cli.run(*command, "../../etc", project=tmp_path), 2)
    assert "'../../etc'" in line and "lowercase letters" in line
    assert list(tmp_path.iterdir()) == []


def test_project_paths_env_is_the_last_guard(tmp_path):
    paths = ProjectPaths(tmp_path)
    assert paths.env("cuda12") == tmp_path / ".resolver" / "envs" / "cuda12"
    for name in ("..", ".", "a/b", "../x", "", "x" * 65, "cpu/../../x", "Cpu", None):
        with pytest.raises(BadInput):
            paths.env(name)


# --------------------------------------------------------------- 2. download file names are paths


@pytest.mark.parametrize("tail", [".%2F..%2F..%2F..%2F..%2F..%2F..%2Fplanted%2Ffile",
                                  "..%2F..%2F..%2F..%2F..%2F..%2F..%2Fplanted%2Ffile", "%2E%2E", "a%00b.whl"])
def test_lock_url_whose_file_name_is_a_path_writes_nothing(tmp_path, server, tail):
    project = tmp_path / "project"
    project.mkdir()
    url = f"{server.url}/whl/{tail}"
    write_project_lock(project, url, hashlib.sha256(server.body).hexdigest())
    before = tree(tmp_path)
    line = one_error(cli.run("install", "--env", "cpu", project=project), 3)
    assert "is not a plain file name" in line
    assert server.requests == []  # refused before the download
    assert tree(tmp_path) == before and not (tmp_path / "planted").exists()


def test_conda_records_go_through_the_same_guarded_fetch(tmp_path, server):
    from resolver.install.fetch import Finder, verified_copy
    from resolver.project.sources import Sources
    from resolver.tools.store import VerifiedStore

    cache = tmp_path / "project" / ".resolver" / "cache" / "verified"
    url = f"{server.url}/conda-forge/linux-64/..%2F..%2F..%2F..%2F..%2F..%2Fplanted.conda"
    with pytest.raises(BadInput, match="not a plain file name"):
        verified_copy(url, hashlib.sha256(server.body).hexdigest(), VerifiedStore(cache), Finder(Sources()))
    assert not (tmp_path / "planted.conda").exists() and not cache.exists() and server.requests == []
    good = verified_copy(f"{server.url}/conda-forge/linux-64/pkg-1.0-h0_0.conda", hashlib.sha256(server.body).hexdigest(),
                         VerifiedStore(cache), Finder(Sources()))
    assert good.name == "pkg-1.0-h0_0.conda" and good.read_bytes() == server.body


# ------------------------------------------------------------------------ 4. option injection into pip


@pytest.mark.parametrize("dependency", ['"-e{dir}" = "*"', '"--editable={dir}" = "*"', 'rtpy = " -e {dir}"',
                                        'rtpy = {{ version = "*", extras = ["-e{dir}"] }}'])
def test_pypi_dependency_that_is_a_pip_option_never_runs_code(tmp_path, dependency):
    project = tmp_path / "project"
    project.mkdir()
    evil = tmp_path / "evil"
    evil.mkdir()
    marker = tmp_path / "setup-py-ran"
    (evil / "setup.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\nfrom setuptools import setup\nsetup()\n")
    manifest = MANIFEST + "[feature.cpu.pypi-dependencies]\n" + dependency.format(dir=evil) + "\n" + \
        '[environments]\ncpu = { features = ["cpu"], no-default-feature = true }\n'
    (project / "pixi.toml").write_text(manifest)
    line = one_error(cli.run("lock", "--target", "cpu", project=project), 3)
    assert "pixi.toml" in line
    assert not marker.exists()
    assert (project / "pixi.toml").read_text() == manifest
    assert not (project / "pixi.lock").exists() and not leftovers(project)


def test_uv_gets_no_requirement_as_an_option(tmp_path):
    """Even a requirement that got past pixi.toml's checks never reaches uv as an option."""
    from resolver.lock import pypi

    with pytest.raises(BadInput, match="not a PyPI project name"):
        pypi.resolve(pypi.PypiRequest(("-e/some/dir",), python="3.11", platform="linux-64"), ProjectPaths(tmp_path))
    source = (REPO / "resolver" / "tools" / "uv.py").read_text()
    assert '"--", *(str(w) for w in wheels)' in source  # install: files after "--"; compile: a checked file


def test_a_cache_of_uv_flags_from_an_older_resolver_runs_nothing(tmp_path):
    """Older resolvers kept the flags of the last lock's uv runs in .resolver/cache/pypi/last-resolves.json
    and started uv with them before anything was checked: a crafted one ran any program as uv's
    ``--python``. That file is no longer read: while a lock waits for the project lock (long enough
    for any started uv to run its interpreter), nothing has run."""
    (tmp_path / "pixi.toml").write_text(MANIFEST)
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    evil.chmod(0o755)
    key = json.dumps([["cpu"], [], False, [], None, [], []])  # what `lock --target cpu` was remembered under
    job = {"requirements": ["six"], "python": "3.11", "platform": "x86_64-manylinux_2_28",
           "flags": ["--python", str(evil), "--no-index"], "uv_cache": None}
    cache = tmp_path / ".resolver" / "cache" / "pypi"
    cache.mkdir(parents=True)
    (cache / "last-resolves.json").write_text(json.dumps({key: {"cpu/linux-64": job}}))
    state = tmp_path / ".resolver" / "state"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from resolver.project.paths import project_lock\n"
                               f"with project_lock(Path({str(state)!r})):\n    print('held', flush=True); "
                               "time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        locking = cli.start("lock", "--target", "cpu", project=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
        try:
            for line in locking.stdout:  # it reaches the project lock, and waits
                if "waiting for another resolver run" in line:
                    break
            time.sleep(3)
            assert not marker.exists()
        finally:
            locking.terminate()
            locking.wait(30)
    finally:
        holder.kill()
        holder.wait()
    assert not marker.exists()


# ------------------------------------------------------------------------------ 7. unbounded reads


def test_doctor_log_from_dev_zero_on_stdin_is_bounded(tmp_path):
    with open("/dev/zero", "rb") as zero:
        result = cli.run("doctor", "--log", "-", stdin=zero, timeout=60, memory_limit=1 << 30, project=tmp_path)
    assert "larger than 64 MiB" in one_error(result, 3)


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "folder"])
def test_doctor_log_that_is_not_a_regular_file(tmp_path, kind):
    target = {"dev-zero": Path("/dev/zero"), "fifo": tmp_path / "log.fifo", "folder": tmp_path / "logs"}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    line = one_error(cli.run("doctor", "--log", str(target), timeout=60, project=tmp_path), 3)
    assert ("is a folder" if kind == "folder" else "not a regular file") in line


def _sysroot(tmp_path: Path, machine: str = "a100-gcp-ubuntu2404") -> Path:
    root = tmp_path / "sysroot"
    shutil.copytree(MACHINES / machine, root)
    return root


def _command(root: Path, stdout_file: str) -> None:
    (root / "commands.toml").write_text(
        '[[command]]\nargv = ["nvidia-smi", "--query-gpu=name,compute_cap,driver_version,memory.total,uuid", '
        f'"--format=csv,noheader"]\nexit_code = 9\nstdout_file = {json.dumps(stdout_file)}\n')


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "link-to-dev-zero"])
def test_sysroot_output_file_that_is_a_device_or_fifo_is_refused(tmp_path, kind):
    root = _sysroot(tmp_path)
    if kind == "dev-zero":
        _command(root, "/dev/zero")
    elif kind == "fifo":
        os.mkfifo(root / "_commands" / "flood")
        _command(root, "_commands/flood")
    else:
        (root / "_commands" / "zero").symlink_to("/dev/zero")
        _command(root, "_commands/zero")
    result = cli.run("probe", "--sysroot", str(root), timeout=60, memory_limit=1 << 30, project=tmp_path)
    line = one_error(result, 3)
    assert "stdout_file" in line and ("not a regular file" in line or "leads outside" in line)


def test_sysroot_file_that_is_a_fifo_does_not_hang_the_probe(tmp_path):
    root = _sysroot(tmp_path)
    (root / "proc" / "driver" / "nvidia").mkdir(parents=True)
    os.mkfifo(root / "proc" / "driver" / "nvidia" / "version")
    line = one_error(cli.run("probe", "--sysroot", str(root), timeout=60, project=tmp_path), 3)
    assert "not a regular file" in line


def test_nvidia_smi_that_floods_its_output_is_stopped(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\nexec yes 'NVIDIA-SMI flood line'\n")
    (fake / "nvidia-smi").chmod(0o755)
    result = cli.run("probe", "--json", env={"PATH": f"{fake}:{os.environ['PATH']}"}, timeout=120,
                 memory_limit=2 << 30, project=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    notes = json.loads(result.stdout)["notes"]
    assert any("printed more than 4 MiB and was stopped" in n for n in notes), notes


def _model(tmp_path: Path, **config) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    base = {"model_type": "mamba", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 256, "state_size": 16}
    (folder / "config.json").write_text(json.dumps({**base, **config}) if config.get("raw") is None else config["raw"])
    (folder / "model.safetensors").write_bytes(b"\0" * 4096)
    return folder


@pytest.mark.parametrize("config,expected", [
    ({"num_hidden_layers": 1e8}, "not a whole number"),
    ({"num_hidden_layers": 4000}, "M parameters"),
    ({"hidden_size": -1}, "not a whole number"),
    ({"raw": "[" * 100000 + "]" * 100000}, "nested too deeply"),
    ({"raw": '{"vocab_size": ' + "9" * 5000 + "}"}, "thousands of digits"),
])
def test_model_config_that_would_fill_memory_is_refused_before_any_process(tmp_path, config, expected):
    model = _model(tmp_path, **config)
    line = one_error(cli.run("verify", "--model", str(model), project=tmp_path), 3)
    assert expected in line


# ------------------------------------------------------------------------------- 8. sysroot escapes


@pytest.mark.parametrize("where", ["absolute", "dotdot", "link"])
def test_sysroot_output_file_outside_the_sysroot_is_never_read(tmp_path, where):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("SECRET-FIRST-LINE\n")
    root = _sysroot(tmp_path)
    if where == "absolute":
        _command(root, str(secret))
    elif where == "dotdot":
        _command(root, "../outside/secret.txt")
    else:
        (root / "_commands" / "linked.txt").symlink_to(secret)
        _command(root, "_commands/linked.txt")
    result = cli.run("probe", "--sysroot", str(root), project=tmp_path)
    assert "leads outside the sysroot" in one_error(result, 3)
    assert "SECRET" not in result.stdout + result.stderr


# ------------------------------------------------------------------------ 10. exit 70 for bad input


WRONG_MANIFESTS = {
    "channels-int": '[workspace]\nname = "t"\nchannels = 5\nplatforms = ["linux-64"]\n',
    "platforms-string": '[workspace]\nname = "t"\nchannels = ["conda-forge"]\nplatforms = "linux-64"\n',
    "workspace-int": 'workspace = 3\n',
    "environments-string": 'environments = "cpu"\n' + MANIFEST,
    "environment-int": MANIFEST + '[environments]\ncpu = 5\n',
    "feature-string": 'feature = "cpu"\n' + MANIFEST,
    "pypi-deps-list": MANIFEST + '[feature.cpu]\npypi-dependencies = ["torch"]\n',
    "pypi-dep-int": MANIFEST + '[feature.cpu.pypi-dependencies]\ntorch = 5\n',
    "extras-string": MANIFEST + '[feature.cpu.pypi-dependencies]\nrtpy = { version = "*", extras = "x" }\n',
    "find-links-strings": MANIFEST + '[pypi-options]\nfind-links = ["/srv"]\n',
    "target-string": 'target = "linux-64"\n' + MANIFEST,
    "no-default-feature-string": MANIFEST + '[environments]\ncpu = { features = [], no-default-feature = "yes" }\n',
    "tool-resolver-int": MANIFEST + '[tool.resolver]\nfind-links = 5\n',
    "huge-integer": MANIFEST + "x = " + "9" * 5000 + "\n",
    "deeply-nested": MANIFEST + "x = " + "[" * 5000 + "]" * 5000 + "\n",
}


@pytest.mark.parametrize("name", sorted(WRONG_MANIFESTS))
def test_manifest_with_wrong_types_is_bad_input_with_no_leftovers(tmp_path, name):
    (tmp_path / "pixi.toml").write_text(WRONG_MANIFESTS[name])
    line = one_error(cli.run("lock", "--target", "cpu", "--no-pypi", project=tmp_path), 3)
    assert "pixi.toml" in line or "[tool.resolver]" in line
    assert (tmp_path / "pixi.toml").read_text() == WRONG_MANIFESTS[name]
    assert not (tmp_path / "pixi.lock").exists() and not leftovers(tmp_path)


def test_manifest_that_is_a_folder_is_bad_input_with_no_leftovers(tmp_path):
    (tmp_path / "pixi.toml").mkdir()
    line = one_error(cli.run("lock", "--target", "cpu", "--no-pypi", project=tmp_path), 3)
    assert "is a folder" in line
    assert not leftovers(tmp_path) and not (tmp_path / "pixi.lock").exists()


PROFILE = {"platform": "linux-64", "glibc": "2.35", "python": "3.11.7", "nvidia": None, "amd": None,
           "cuda_toolkit": None}


@pytest.mark.parametrize("text,expected", [
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    (json.dumps(PROFILE)[:-1] + ', "cpu_count": ' + "9" * 5000 + "}", "thousands of digits"),
    (json.dumps({**PROFILE, "notes": 5}), "'notes'"),
    (json.dumps({**PROFILE, "sources": {"a": 1}}), "'sources'"),
    (json.dumps({**PROFILE, "overrides": 5}), "'overrides'"),
    (json.dumps({**PROFILE, "overrides": {"CONDA_OVERRIDE_CUDA": 12}}), "'overrides'"),
    (json.dumps({**PROFILE, "nvidia": {"driver_version": "550.54.15", "gpus": [], "sources": "x"}}), "nvidia.sources"),
], ids=["deep", "huge-int", "notes", "sources", "overrides", "override-value", "nvidia-sources"])
def test_profile_json_that_used_to_crash_is_bad_input(tmp_path, text, expected):
    (tmp_path / "p.json").write_text(text)
    assert expected in one_error(cli.run("plan", "--profile", "p.json", project=tmp_path), 3)


@pytest.mark.parametrize("glibc", ['"banana"', '"2.x"', "235", '""'])
def test_bad_glibc_in_a_captured_machine_is_bad_input(tmp_path, glibc):
    root = _sysroot(tmp_path)
    meta = root / "_meta.toml"
    meta.write_text(meta.read_text().replace('glibc = "2.39"', f"glibc = {glibc}"))
    assert "'glibc'" in one_error(cli.run("probe", "--sysroot", str(root), project=tmp_path), 3)


def _on_a_full_disk(project: Path, command: list[str], prepare: str = "") -> subprocess.CompletedProcess:
    """Run ``command`` with ``project`` on a 256 kB tmpfs filled to the last page (a real ENOSPC)."""
    script = (f"set -e; mount -t tmpfs -o size=256k tmpfs {project}; cd {project}; {prepare}"
              f"dd if=/dev/zero of={project}/filler bs=4k 2>/dev/null || true; set +e; "
              f"{' '.join(command)}; code=$?; "
              f"find {project} -name '*.resolver-tmp-*' -o -name '.*.tmp-*' -o -name 'pixi.lock' > {project.parent}/left; "
              "exit $code")
    env = dict(os.environ, RESOLVER_PROJECT=str(project))
    return subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, timeout=300)


@needs_mount
def test_disk_full_while_writing_the_lock_is_bad_input_without_leftovers(tmp_path):
    seeded = tmp_path / "seed"
    seeded.mkdir()
    (seeded / "pixi.toml").write_text(MANIFEST)
    assert cli.run("lock", "--target", "cpu", "--no-pypi", project=seeded).returncode == 0  # pixi.toml now holds cpu
    project = tmp_path / "project"
    project.mkdir()
    prepare = (f"cp {seeded / 'pixi.toml'} .; mkdir -p .resolver/state; "
               "echo 'pid 1, started 00:00:00 ........' > .resolver/state/project.lock; ")
    result = _on_a_full_disk(project, cli.argv("lock", "--target", "cpu", "--no-pypi"),
                             prepare)
    line = one_error(result, 3)
    assert "cannot write" in line and "disk space" in line  # whichever file of the project it was writing
    assert (tmp_path / "left").read_text() == ""


# --------------------------------------------------------------------------- 11. misleading sentences


@needs_mount
def test_disk_full_during_a_download_says_disk_not_network(tmp_path, server):
    server.body = os.urandom(1 << 20)
    project = tmp_path / "project"
    project.mkdir()
    write_project_lock(project, f"{server.url}/whl/tiny-1.0-py3-none-any.whl", hashlib.sha256(server.body).hexdigest())
    prepare = f"cp {tmp_path}/lockcopy/pixi.toml {tmp_path}/lockcopy/pixi.lock .; "
    (tmp_path / "lockcopy").mkdir()
    for name in ("pixi.toml", "pixi.lock"):
        shutil.copy(project / name, tmp_path / "lockcopy" / name)
    result = _on_a_full_disk(project, cli.argv("install", "--env", "cpu"), prepare)
    line = one_error(result, 3)
    assert "No space left on device" in line and "disk space" in line and "network" not in line
    assert [p for p in (tmp_path / "left").read_text().split() if not p.endswith("pixi.lock")] == []


@pytest.mark.parametrize("value", ["2.x", "2.28abc", "v2", "2..3"])
def test_conda_override_glibc_that_is_not_a_version_is_refused_not_truncated(tmp_path, value):
    line = one_error(cli.run("probe", "--json", env={"CONDA_OVERRIDE_GLIBC": value}, project=tmp_path), 3)
    assert "CONDA_OVERRIDE_GLIBC" in line and "2.28" in line


def test_setup_dry_run_writes_nothing(tmp_path):
    (tmp_path / "pixi.toml").write_text(shipped_manifest())
    before = tree(tmp_path)
    result = cli.run("setup", "--dry-run", "--target", "cpu", timeout=300, project=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "would-run" in result.stdout
    assert tree(tmp_path) == before


@pytest.mark.parametrize("args", [("verify", "--dtypes", "float64"), ("verify", "--dtypes", "float32,,x"),
                                  ("bench", "--dtype", "int8")])
def test_unknown_dtypes_are_refused_before_anything_runs(tmp_path, args):
    assert "unknown dtype" in one_error(cli.run(*args, project=tmp_path), 2)


# ------------------------------------------------------------------------------ 12. terminal escapes


HOSTILE = "\x1b]0;owned\x07\x1b[2J\u202eevil"


def test_gpu_name_with_terminal_escapes_is_printed_escaped(tmp_path):
    root = _sysroot(tmp_path)
    (root / "_commands" / "01-nvidia-smi-query-gpu.txt").write_text(
        f"NVIDIA A100-SXM4-40GB{HOSTILE}, 8.0, 550.54.15, 40960 MiB, GPU-1\n")
    result = cli.run("probe", "--sysroot", str(root), project=tmp_path)
    assert result.returncode == 0, result.stderr
    text = result.stdout + result.stderr
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert "\\x1b]0;owned\\x07\\x1b[2J\\u202eevil" in result.stdout
    as_json = cli.run("probe", "--sysroot", str(root), "--json", project=tmp_path)
    assert json.loads(as_json.stdout)["nvidia"]["gpus"][0]["name"].endswith(HOSTILE)  # JSON keeps the value


def test_log_lines_with_terminal_escapes_are_printed_escaped(tmp_path):
    (tmp_path / "build.log").write_text(f"compiling\nsomething odd {HOSTILE}\n")
    result = cli.run("doctor", "--log", "build.log", project=tmp_path)
    assert result.returncode == 8  # no known error in it: unrecognised, its last lines quoted back
    assert "\x1b" not in result.stdout + result.stderr and "\u202e" not in result.stdout
    assert "\\x1b]0;owned\\x07" in result.stdout


def test_error_line_quoting_input_is_one_escaped_line(tmp_path):
    result = cli.run("doctor", "--log", f"missing\n{HOSTILE}.log", project=tmp_path)
    line = one_error(result, 3)
    assert "\\x0a" in line and "\\x1b]0;owned\\x07" in line and "\\u202e" in line
    assert "\x1b" not in result.stderr and "\u202e" not in result.stderr


@pytest.mark.parametrize("command,kind", [(("install", "--env", "cpu"), "folder"), (("install", "--env", "cpu"), "fifo"),
                                          (("lock", "--target", "cpu", "--no-pypi"), "folder")])
def test_lock_file_that_is_a_folder_or_fifo_is_not_called_missing(tmp_path, command, kind):
    """(`lock` over a FIFO simply replaces it with the new lock: nothing is read from it.)"""
    (tmp_path / "pixi.toml").write_text(MANIFEST)
    if kind == "folder":
        (tmp_path / "pixi.lock").mkdir()
    else:
        os.mkfifo(tmp_path / "pixi.lock")
    line = one_error(cli.run(*command, timeout=60, project=tmp_path), 3)
    assert "does not exist" not in line
    assert ("folder" in line) if kind == "folder" else ("not a regular file" in line)
    assert not leftovers(tmp_path)
