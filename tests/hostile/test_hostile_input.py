"""What others hand you is hostile: a kernel package from a shared channel, what `channel publish` is
given, a pasted report, a folder others can write, a location in a shared lock.

Each test reproduces one attack as a hostile or careless teammate would make it, with real packages
(tests/support/package_factory.py writes them byte by byte; rattler reads, indexes and links them), a real HTTP
server on 127.0.0.1, real symbolic links, FIFOs and a real full disk, and asserts the safe outcome: the
documented exit code and one sentence naming the file and the reason, nothing linked, nothing outside
its root touched, no leftovers, no traceback and no Rust panic.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import (
    DATA,
    cli,
    hostile_pastes,  # noqa: E402
)
from support import channel_factory as cf  # noqa: E402
from support import package_factory as pf  # noqa: E402
from support.hostile import needs_mount, one_error, tree, write_project_lock  # noqa: E402
from support.processes import wait_until_reading_stdin

from resolver.core.errors import BadInput, IntegrityError  # noqa: E402
from resolver.project.paths import ProjectPaths  # noqa: E402

PAYLOAD = b"#!/bin/sh\necho pwned\n"


def clean_stderr(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr and "panicked" not in result.stderr and "RUST_BACKTRACE" not in result.stderr


# ------------------------------------------------------------------------- the packages of an attack

def evil(channel: Path, attack: str) -> Path:
    """One hostile package in ``channel`` (not indexed): what each attack puts into it."""
    index = pf.index_json("rt-kernel", "1.2.0", "cuda_1", depends=["__cuda >=12"])
    ok = {"name": "bin/rt-kernel", "data": PAYLOAD}
    if attack == "dotdot-path":  # paths.json sends the file beside the environment
        return pf.write_conda(channel, index, [ok, {"name": "escape.txt", "data": PAYLOAD}],
                              paths={"paths": [{"_path": "../escape.txt", "path_type": "hardlink"}]})
    if attack == "absolute-path":  # rattler panics on it (and once aborted the whole process)
        return pf.write_conda(channel, index, [ok], paths={"paths": [
            {"_path": str(channel.parent / "absolute-escape.txt"), "path_type": "hardlink"}]})
    if attack == "symlink-to-etc":  # a package that links into a system folder
        return pf.write_conda(channel, index, [ok, {"name": "etc", "symlink": "/etc"}])
    if attack == "symlink-climbing":  # each link looks harmless; together they climb out of the environment
        return pf.write_conda(channel, index, [ok, {"name": "lib/up", "symlink": ".."},
                                               {"name": "lib/out", "symlink": "up/../../outside"}])
    if attack == "member-dotdot":  # the archive itself names a path outside
        return pf.write_conda(channel, index, [ok, {"name": "../../escape.txt", "data": PAYLOAD}])
    if attack == "not-an-archive":
        path = channel / "linux-64" / "rt-kernel-1.2.0-cuda_1.conda"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"PK\x03\x04 this is no conda package")
        return path
    if attack == "paths-json-garbage":
        return pf.write_conda(channel, index, [ok], paths=b'{"paths": [{"_path": ')
    if attack == "index-says-another-package":  # a CPU build under the CUDA build's file name
        return pf.write_conda(channel, pf.index_json("rt-kernel", "1.2.0", "cpu_0"), [ok],
                              file_name="rt-kernel-1.2.0-cuda_1.conda")
    raise ValueError(attack)


ATTACKS = ("dotdot-path", "absolute-path", "symlink-to-etc", "symlink-climbing", "member-dotdot", "not-an-archive",
           "paths-json-garbage", "index-says-another-package")
REASONS = {"dotdot-path": "'..' part", "absolute-path": "an absolute path", "symlink-to-etc": "the absolute path /etc",
           "symlink-climbing": "outside the environment", "member-dotdot": "cannot be read",
           "not-an-archive": "cannot be read", "paths-json-garbage": "paths.json is not valid JSON",
           "index-says-another-package": "its file name is not rt-kernel-1.2.0-cpu_0.conda"}


def node(tmp_path: Path) -> tuple[ProjectPaths, SimpleNamespace]:
    """A fleet node's project and an environment prefix to link kernels into."""
    project = ProjectPaths(tmp_path / "node")
    prefix = project.envs / "cuda13"
    prefix.mkdir(parents=True)
    return project, SimpleNamespace(name="cuda13", path=prefix)


# ------------------------------------------------------------- 1. kernel packages from a shared channel


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_node_refuses_a_hostile_kernel_package_and_links_nothing(tmp_path, served, attack):
    """The shared channel holds a hostile package, indexed as published (rattler's own indexer, bypassing
    `channel publish`); the node fetches it as setup does, then would link it."""
    from resolver.fleet.channel import fetch_package

    site, server = served
    package = evil(site, attack)
    if attack not in ("not-an-archive", "member-dotdot"):  # rattler's indexer panics on those: published raw
        cf.reindex(site)
    else:
        entry = {"name": "rt-kernel", "version": "1.2.0", "build": "cuda_1", "build_number": 0, "subdir": "linux-64",
                 "depends": [], "sha256": hashlib.sha256(package.read_bytes()).hexdigest(),
                 "size": package.stat().st_size}
        (site / "linux-64" / "repodata.json").write_text(json.dumps({"packages.conda": {package.name: entry}}))
    project, env = node(tmp_path)
    before = tree(tmp_path)
    with pytest.raises(IntegrityError) as refused:
        fetch_package(server.url, package.name, project.channel, variant="rt-kernel for cuda13")
    assert refused.value.code == 4 and package.name in refused.value.message
    assert REASONS[attack] in str(refused.value), str(refused.value)
    assert not (project.channel / "linux-64" / package.name).exists()  # not kept for a later run to link
    assert tree(tmp_path) == {**before, **{k: v for k, v in tree(tmp_path).items() if k.startswith("node/.resolver/channel")}}
    assert not list(tmp_path.rglob("*escape*")) or attack in ("dotdot-path", "member-dotdot")  # only the served file


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_hostile_package_in_the_projects_channel_is_never_linked(tmp_path, attack):
    """Someone with write access to the checkout put the package straight into .resolver/channel (or an
    older resolver fetched it unchecked): linking it into the environment is refused, exit 4."""
    from resolver.kernels.into_env import add_to_environment

    project, env = node(tmp_path)
    package = evil(project.channel, attack)
    (project.channel / "noarch").mkdir(exist_ok=True)
    if attack not in ("not-an-archive", "member-dotdot"):
        cf.reindex(project.channel)
    else:
        (project.channel / "linux-64" / "repodata.json").write_text(json.dumps({"packages.conda": {package.name: {
            "name": "rt-kernel", "version": "1.2.0", "build": "cuda_1", "subdir": "linux-64"}}}))
    before = tree(tmp_path)
    with pytest.raises(IntegrityError) as refused:
        add_to_environment(project, env, package)
    assert package.name in refused.value.message and REASONS[attack] in str(refused.value)
    assert tree(tmp_path) == before  # nothing linked, nothing beside the environment, nothing in the cache
    assert not (env.path / "conda-meta").exists() and not (tmp_path / "node" / ".resolver" / "envs" / "escape.txt").exists()


def test_a_kernel_package_whose_links_stay_inside_is_linked(tmp_path, built):
    """The checks refuse what leads out, not what packages do every day (relative links, nested folders)."""
    from resolver.kernels.into_env import add_to_environment

    project, env = node(tmp_path)
    members = [{"name": "lib/libk.so.1", "data": b"\x7fELF"}, {"name": "lib/libk.so", "symlink": "libk.so.1"},
               {"name": "bin/k", "symlink": "../lib/libk.so"}, {"name": "share/k/README", "data": b"k\n"}]
    package = pf.write_conda(project.channel, pf.index_json("k-ok", "1.0.0", "h0_0"), members)
    (project.channel / "noarch").mkdir(exist_ok=True)
    cf.reindex(project.channel)
    add_to_environment(project, env, package)
    assert os.readlink(env.path / "bin" / "k") == "../lib/libk.so" and (env.path / "lib" / "libk.so.1").is_file()
    assert (env.path / "conda-meta" / "k-ok-1.0.0-h0_0.json").is_file()


def test_a_package_the_index_misdescribes_is_refused(tmp_path, served, built):
    """The channel's index says the package needs CUDA 12; the package itself says nothing of the kind."""
    from resolver.fleet.channel import fetch_package

    site, server = served
    package = pf.write_conda(site, pf.index_json("rt-kernel", "1.2.0", "cuda_1"), [{"name": "bin/k", "data": b"k"}])
    cf.reindex(site)
    index = json.loads((site / "linux-64" / "repodata.json").read_text())
    index["packages.conda"][package.name]["depends"] = ["__cuda >=12"]
    (site / "linux-64" / "repodata.json").write_text(json.dumps(index))
    with pytest.raises(IntegrityError, match="its info/index.json says depends"):
        fetch_package(server.url, package.name, tmp_path / "local", variant="rt-kernel")
    assert not (tmp_path / "local" / "linux-64" / package.name).exists()


def test_rattler_failures_on_malformed_packages_are_one_sentence_without_run_again(tmp_path):
    """What reaches rattler anyway (a package linked without the checks, a channel holding a broken file)
    is one sentence with the right exit code; "run again" only where a rerun can help."""
    from resolver.tools.conda import add_package, index_channel

    channel = tmp_path / "channel"
    package = pf.write_conda(channel, pf.index_json("k-bad", "1.0.0", "h0_0"), [{"name": "bin/k", "data": b"k"}],
                             paths=b"{not json")
    (channel / "noarch").mkdir()
    cf.reindex(channel)
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    with pytest.raises(IntegrityError) as linked:
        add_package(prefix, package, cache_dir=tmp_path / "cache")
    assert "malformed" in linked.value.message and "run the same command again" not in str(linked.value)
    (channel / "linux-64" / "zz-junk-1.0-h0_0.conda").write_bytes(b"not a zip at all")
    with pytest.raises(BadInput) as indexed:  # rattler's indexer panics on it
        index_channel(channel, ("linux-64",))
    assert "cannot be indexed" in indexed.value.message and indexed.value.code == 3


# ------------------------------------------------------------------------ 2. channel publish: all or none


def publish(source: Path, to: Path | str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return cli.run("channel", "publish", "--from", str(source), "--to", str(to), project=cwd, timeout=180)


def good_and(built: Path, tmp_path: Path, attack: str | None) -> Path:
    """CI's artefacts: the real built packages, and one hostile one among them."""
    source = tmp_path / "artefacts"
    shutil.copytree(built, source, ignore=shutil.ignore_patterns("repodata*"))
    if attack:
        evil(source, attack)  # replaces the real rt-kernel cuda build
    return source


@pytest.mark.parametrize("attack", ATTACKS)
def test_publish_with_one_bad_package_leaves_the_channel_exactly_as_it_was(tmp_path, built, attack):
    site = tmp_path / "site"
    assert publish(good_and(built, tmp_path / "first", None), site).returncode == 0
    (site / "linux-64" / "rt-kernel-1.2.0-cuda_1.conda").unlink()  # so the hostile one would be added
    cf.reindex(site)
    before = tree(site)
    source = good_and(built, tmp_path / "second", attack)
    (source / "linux-64" / "rt-kernel-9.9.9-new_0.conda").write_bytes(
        (built / "linux-64" / "rt-kernel-1.2.0-cpu_0.conda").read_bytes())  # a good new one, not added either
    done = publish(source, site)
    line = one_error(done, 4)
    clean_stderr(done)
    assert "rt-kernel-1.2.0-cuda_1.conda" in line and REASONS[attack] in line
    assert tree(site) == before


def test_publish_refuses_a_broken_package_someone_dropped_into_the_channel(tmp_path, built):
    """The indexer would read (and panic on) an unindexed file in the shared folder: it is checked as ours are."""
    site = tmp_path / "site"
    assert publish(good_and(built, tmp_path / "first", None), site).returncode == 0
    (site / "linux-64" / "dropped-1.0-h0_0.conda").write_bytes(os.urandom(4000))
    before = tree(site)
    done = publish(good_and(built, tmp_path / "second", None), site)
    line = one_error(done, 3)
    clean_stderr(done)
    assert "dropped-1.0-h0_0.conda" in line and "not in its index" in line
    assert tree(site) == before


@needs_mount
def test_publish_that_fills_the_disk_leaves_the_channel_as_it_was(tmp_path, built):
    """A real ENOSPC half-way through the copies: what was added is removed, the indexes are as they were."""
    site = tmp_path / "site"
    site.mkdir()
    source = good_and(built, tmp_path / "src", None)
    big = pf.write_conda(source, pf.index_json("big", "1.0.0", "h0_0"), [{"name": "share/big", "data": os.urandom(200_000)}])
    first = good_and(built, tmp_path / "first", None)
    script = (f"set -e; mount -t tmpfs -o size=256k tmpfs {site}; "
              f"{sys.executable} -m resolver channel publish --from {first} --to {site} >/dev/null; "
              f"find {site} -type f -exec sha256sum {{}} + | sort > {tmp_path}/before; "
              f"set +e; {sys.executable} -m resolver channel publish --from {source} --to {site}; code=$?; "
              f"find {site} -type f -exec sha256sum {{}} + | sort > {tmp_path}/after; exit $code")
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    assert big.stat().st_size > 200_000
    line = one_error(done, 3)
    assert "No space left" in line or "disk" in line
    assert (tmp_path / "after").read_text() == (tmp_path / "before").read_text() != ""


# --------------------------------------------------------------------------- 3. pasted text is linear


PASTE_BOUND_S = 2.0


def _quick_attacks(kind: str) -> list[tuple[str, str]]:
    """The attacks the report named, on the first line of the kind that holds a key or a table cell: the
    field name followed by a long run of blanks (as many lines), the line repeated on one line, and the
    line as every line of the paste."""
    line = next(line for line in hostile_pastes.sample_lines(kind) if ":" in line or "|" in line or "," in line)
    cut = min(i + 1 for i in (line.find(":"), line.find("|"), line.find(",")) if i >= 0)
    stretched = (line[:cut] + " " * hostile_pastes.LINE)[:hostile_pastes.LINE] + "x"
    return [("key then blanks", hostile_pastes._fill(stretched, hostile_pastes.SIZE)),
            ("line repeated on one line", (line + " ") * (hostile_pastes.SIZE // (len(line) + 1))),
            ("line as every line", hostile_pastes._fill(line, hostile_pastes.SIZE))]


@pytest.mark.parametrize("kind", hostile_pastes.KINDS)
def test_a_crafted_1mb_paste_answers_in_under_two_seconds(tmp_path, kind):
    read = hostile_pastes.reader(kind)
    for label, text in _quick_attacks(kind):
        path = tmp_path / "paste.txt"
        path.write_text(text)
        assert 900_000 <= path.stat().st_size <= 1_100_000
        started = time.perf_counter()
        read(path)
        seconds = time.perf_counter() - started
        assert seconds < PASTE_BOUND_S, f"{kind}, {label}: {seconds:.2f} s"


def test_the_reported_pastes_through_the_command_line(tmp_path):
    """A field name followed by a long run of blanks, one key repeated on a line: 1 MB each, the whole
    command (interpreter start included) under 2 s."""
    pastes = {"blanks": "Product Name" + " " * 999_000 + "x\n",
              "repeated key": "NVRM version: " * 70_000 + "\n",
              "blank lines": "\n" * 1_000_000}
    for label, text in pastes.items():
        path = tmp_path / f"{label}.txt"
        path.write_text(text)
        started = time.perf_counter()
        done = cli.run("probe", "--from-report", str(path), timeout=60)
        seconds = time.perf_counter() - started
        assert seconds < PASTE_BOUND_S, f"{label}: {seconds:.2f} s"
        line = one_error(done, 3)
        assert ("holds no output the probe can read" in line or "lines, more than" in line), line


def test_a_paste_past_the_caps_is_refused_in_one_sentence():
    from resolver.plan.probe.report import MAX_BYTES, MAX_GPUS, MAX_LINES, profile_from_report

    with pytest.raises(BadInput, match=f"more than the {MAX_LINES} the probe reads"):
        profile_from_report("GPU 0: NVIDIA A100 (UUID: GPU-1)\n" * (MAX_LINES + 1))
    with pytest.raises(BadInput, match="larger than 4 MiB"):
        profile_from_report("x" * (MAX_BYTES + 1))
    gpus = "".join(f"GPU {n}: NVIDIA A100-SXM4-80GB (UUID: GPU-{n})\n" for n in range(MAX_GPUS + 1))
    with pytest.raises(BadInput, match=f"lists {MAX_GPUS + 1} GPUs; one machine has at most {MAX_GPUS}"):
        profile_from_report(gpus)
    line = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)" + " " * 10_000 + "x"  # past the line cap: cut, not slow
    assert profile_from_report(line).nvidia.driver_version is None


@pytest.mark.fuzz
@pytest.mark.parametrize("kind", hostile_pastes.KINDS)
def test_every_crafted_1mb_paste_answers_in_under_two_seconds(tmp_path, kind):
    seconds, label, count = hostile_pastes.slowest(kind, tmp_path)
    print(f"pastes {kind}: {count} crafted 1 MB pastes, slowest {seconds:.3f} s ({label})")
    assert seconds < PASTE_BOUND_S, f"{kind}, {label}: {seconds:.2f} s"


# ------------------------------------------------------------------ 4. folders others can write: links


def test_a_project_lock_that_is_a_link_is_never_written_through(tmp_path):
    project = tmp_path / "project"
    (project / ".resolver" / "state").mkdir(parents=True)
    write_project_lock(project, "https://files.example/tiny-1.0-py3-none-any.whl", "0" * 64)
    victim = tmp_path / "victim.txt"
    victim.write_text("someone's file\n")
    (project / ".resolver" / "state" / "project.lock").symlink_to(victim)
    before = tree(tmp_path)
    for command in (["lock", "--target", "cpu", "--no-conda", "--no-pypi"], ["install", "--env", "cpu"],
                    ["setup", "--dry-run"]):
        done = cli.run(*command, project=project)
        line = one_error(done, 3)
        assert "project.lock" in line and "symbolic link" in line
        assert victim.read_text() == "someone's file\n" and tree(tmp_path) == before


def test_publish_never_writes_through_a_link_in_the_channel(tmp_path, built):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("someone's file\n")
    for name, link_to in (("linux-64", elsewhere), (".publish.lock", victim), ("linux-64/repodata.json", victim),
                          ("noarch/rt-base-1.0.0-h0_0.conda", victim)):
        site = tmp_path / f"site-{name.replace('/', '-')}"
        (site / "linux-64").mkdir(parents=True, exist_ok=name != "linux-64")
        if name == "linux-64":
            (site / "linux-64").rmdir()
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).symlink_to(link_to)
        before = tree(tmp_path)
        done = publish(built, site)
        line = one_error(done, 3)
        assert "symbolic link" in line and str(site / name) in line
        assert tree(tmp_path) == before and list(elsewhere.iterdir()) == [] and victim.read_text() == "someone's file\n"


def test_an_atomic_write_never_follows_a_link_planted_at_its_temporary_name(tmp_path):
    from resolver.core.fs import temp_path, write_json_atomic

    victim = tmp_path / "victim.txt"
    victim.write_text("someone's file\n")
    step = tmp_path / "state" / "steps" / "install.json"
    step.parent.mkdir(parents=True)
    temp_path(step).symlink_to(victim)
    write_json_atomic(step, {"done": True})
    assert victim.read_text() == "someone's file\n" and json.loads(step.read_text()) == {"done": True}
    assert not step.is_symlink() and not temp_path(step).exists()


# --------------------------------------------------------------------- 5. local locations in a lock


def test_a_lock_cannot_make_install_read_a_local_file(tmp_path):
    """file:///any, ../../.., ./../x: never opened (a FIFO there would hang the read), refused by name,
    exit 3, and no digest of the file in the message (it was a hash oracle)."""
    project = tmp_path / "project"
    project.mkdir()
    secret = tmp_path / "secret.env"
    secret.write_text("TOKEN=hunter2\n")
    fifo = tmp_path / "fifo.whl"
    os.mkfifo(fifo)
    digest = hashlib.sha256(secret.read_bytes()).hexdigest()
    depth = "../" * len(project.parts)
    for location in (secret.as_uri(), "../secret.env", f"./{depth}{str(secret).lstrip('/')}", fifo.as_uri()):
        write_project_lock(project, location, "0" * 64)
        started = time.monotonic()
        done = cli.run("install", "--env", "cpu", timeout=60, project=project)
        line = one_error(done, 3)
        assert "outside every folder this project declares" in line and Path(location).name in line
        assert digest[:8] not in done.stderr + done.stdout and time.monotonic() - started < 30
        assert not (project / ".resolver" / "envs" / "cpu").exists()


def test_a_location_inside_a_declared_folder_is_still_read_and_checked(tmp_path):
    """find-links declared in pixi.toml: its files are read, and a wrong one is named with its digest."""
    project = tmp_path / "project"
    wheels = project / "wheels"
    wheels.mkdir(parents=True)
    wheel = cf.write_wheel(wheels, "tiny", "1.0", {"tiny/__init__.py": "X = 1\n"})
    write_project_lock(project, wheel.as_uri(), "0" * 64)
    (project / "pixi.toml").write_text((project / "pixi.toml").read_text() + '[tool.resolver]\nfind-links = ["./wheels"]\n')
    line = one_error(cli.run("install", "--env", "cpu", project=project), 4)
    assert "does not match pixi.lock" in line and hashlib.sha256(wheel.read_bytes()).hexdigest()[:12] in line
    (wheels / "escape.whl").symlink_to(tmp_path / "secret")  # a link in the declared folder leading out of it
    (tmp_path / "secret").write_text("TOKEN=hunter2\n")
    write_project_lock(project, (wheels / "escape.whl").as_uri(), "0" * 64)
    (project / "pixi.toml").write_text((project / "pixi.toml").read_text() + '[tool.resolver]\nfind-links = ["./wheels"]\n')
    line = one_error(cli.run("install", "--env", "cpu", project=project), 3)
    assert "outside every folder this project declares" in line


# ------------------------------------------------------------------------------------- 6. smaller ones


def test_a_fleet_folder_with_a_link_loop_is_bad_input(tmp_path):
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    shutil.copy(DATA / "profiles" / "v100.json", fleet / "v100.json")
    (fleet / "loop.json").symlink_to(fleet / "loop.json")
    line = one_error(cli.run("plan", "--fleet", str(fleet),
                             project=tmp_path), 3)  # a link in the folder is never followed
    assert "loop.json" in line and "symbolic link" in line
    line = one_error(cli.run("plan", "--profile", str(fleet / "v100.json"), "--profile", str(fleet / "loop.json"),
                             project=tmp_path), 3)
    assert "loop.json" in line and "loop of symbolic links" in line


@pytest.mark.parametrize("sig,code,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_killed_probe_does_not_promise_to_resume(sig, code, word):
    probe = cli.start("probe", "--from-report", "-", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)
    wait_until_reading_stdin(probe.pid)  # the moment it waits for the paste
    probe.send_signal(sig)
    _, err = probe.communicate(timeout=30)
    assert probe.returncode == code and err.startswith(word), err
    assert "resume" not in err and "run the same command again" in err and "Traceback" not in err


def test_publish_takes_no_package_through_a_link(tmp_path, built):
    """CI's artefact folder holding a link (to a file of the runner, to another package) publishes nothing."""
    source = good_and(built, tmp_path, None)
    secret = tmp_path / "secret.conda"
    secret.write_text("TOKEN=hunter2\n")
    (source / "linux-64" / "zz-1.0-h0_0.conda").symlink_to(secret)
    site = tmp_path / "site"
    line = one_error(publish(source, site), 3)
    assert "zz-1.0-h0_0.conda is a symbolic link" in line and not site.exists()
