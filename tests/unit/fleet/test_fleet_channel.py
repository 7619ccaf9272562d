"""The fleet's shared channel: `channel publish` into a folder a real HTTP server on 127.0.0.1 serves, and a
node fetching one exact package from it (sha256 from the channel's index). Real conda packages
(tests/support/channel_factory.py), real py-rattler index, real HTTP."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import channel_factory as cf
from support import cli

from resolver.core.errors import BadInput, IntegrityError, SourceUnreachable
from resolver.fleet.channel import fetch_package, packages_of


def publish(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return cli.run("channel", "publish", *args, "--json", project=cwd)


def index(folder: Path, subdir: str = "linux-64") -> dict:
    return json.loads((folder / subdir / "repodata.json").read_text())


def test_publish_adds_the_packages_and_indexes_them_once(built, served):
    site, server = served
    done = publish("--from", str(built), "--to", str(site))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    names = [f"{p.parent.name}/{p.name}" for p in packages_of(built)]
    assert sorted(report["added"]) == sorted(names) and report["kept"] == []
    for name in names:
        subdir, file_name = name.split("/")
        assert file_name in index(site, subdir)["packages.conda"]
        assert (site / name).read_bytes() == (built / name).read_bytes()
    again = publish("--from", str(built), "--to", site.as_uri())
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["added"] == [] and sorted(json.loads(again.stdout)["kept"]) == sorted(names)


def test_a_node_fetches_one_exact_package_over_http(built, served, tmp_path):
    site, server = served
    assert publish("--from", str(built), "--to", str(site)).returncode == 0
    wanted = cf.package_file(built, "rt-kernel", "cuda")
    local = tmp_path / "node-channel"
    got = fetch_package(server.url, wanted.name, local, variant="rt-kernel for a test class")
    assert got == local / "linux-64" / wanted.name and got.read_bytes() == wanted.read_bytes()
    assert wanted.name in index(local)["packages.conda"]  # the node's own channel is indexed: the driver takes it
    assert f"GET /linux-64/{wanted.name}" in server.requests
    # a variant the channel does not hold: one sentence, what to do
    with pytest.raises(BadInput) as missing:
        fetch_package(server.url, "rt-kernel-9.9-cu999_h0_0.conda", local, variant="rt-kernel for cuda13-sm90")
    assert f"kernel channel {server.url} has no rt-kernel-9.9-cu999_h0_0.conda (rt-kernel for cuda13-sm90)" \
        in missing.value.message and "build --matrix" in missing.value.fix
    # a package changed on the server after it was indexed is refused, and not left behind
    other = cf.package_file(built, "rt-kernel", "cpu")
    (site / "linux-64" / other.name).write_bytes(b"not the package the index describes")
    with pytest.raises(IntegrityError):
        fetch_package(server.url, other.name, local, variant="rt-kernel cpu")
    assert not (local / "linux-64" / other.name).exists()


def test_an_unreachable_or_read_only_channel_is_one_sentence_naming_it(built, served, tmp_path):
    site, server = served
    with pytest.raises(SourceUnreachable) as gone:
        fetch_package("http://127.0.0.1:9/kernels", "x-1-h0_0.conda", tmp_path / "c", variant="x")
    assert "kernel channel http://127.0.0.1:9/kernels cannot be reached" in gone.value.message
    assert not (tmp_path / "c").exists()
    done = publish("--from", str(built), "--to", server.url)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"channel {server.url} is served over HTTP, which is read-only" in done.stderr
    assert "Traceback" not in done.stderr and list(site.iterdir()) == []
    done = publish("--to", str(site), cwd=tmp_path)  # a project that built nothing
    assert done.returncode == 3 and "holds no built kernel package" in done.stderr and list(site.iterdir()) == []
