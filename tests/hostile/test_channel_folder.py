"""`channel publish` indexes only what a publish put into the channel folder. py-rattler's indexer reads
every package file there and records its sha256, so: a FIFO or device under a package's name (in the
channel, or among the artefacts) is refused at once instead of hanging the indexer; a file of one of the
published names that no publish put there is replaced by the package published, never kept and indexed;
one the index records with other bytes is refused (a published package never changes under its name);
any other unindexed or swapped package file is refused. Each is one sentence, exit 3, in seconds, and the
channel as it was."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

from support import cli
from support.hostile import one_error, tree

CUDA = "rt-kernel-1.2.0-cuda_1.conda"
CPU = "rt-kernel-1.2.0-cpu_0.conda"


def artefacts(built: Path, to: Path) -> Path:
    shutil.copytree(built, to, ignore=shutil.ignore_patterns("repodata*"))
    return to


def publish(source: Path, site: Path):
    return cli.run("channel", "publish", "--from", str(source), "--to", str(site), "--json", timeout=180)


def index_sha(site: Path, name: str) -> str:
    return json.loads((site / "linux-64" / "repodata.json").read_text())["packages.conda"][name]["sha256"]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rebuilt(package: Path) -> bytes:
    """The same package with other bytes (its archive written again with other times): a rebuild that is
    not reproducible."""
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(package) as old, zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as new:
        for info in old.infolist():
            new.writestr(zipfile.ZipInfo(info.filename, (2001, 2, 3, 4, 5, 6)), old.read(info.filename))
    assert out.getvalue() != package.read_bytes()
    return out.getvalue()


def test_a_fifo_among_the_channels_packages_is_refused_at_once(tmp_path, built):
    site = tmp_path / "site"
    assert publish(artefacts(built, tmp_path / "first"), site).returncode == 0
    fifo = site / "linux-64" / "zz-1.0-h0_0.conda"
    os.mkfifo(fifo)
    started = time.monotonic()
    line = one_error(publish(artefacts(built, tmp_path / "second"), site), 3)
    assert time.monotonic() - started < 60  # the indexer would wait on it forever
    assert "zz-1.0-h0_0.conda is not a regular file (a FIFO, device or socket)" in line
    fifo.unlink()
    before = tree(site)
    assert tree(site) == before


def test_a_fifo_among_the_artefacts_is_refused_at_once(tmp_path, built):
    source = artefacts(built, tmp_path / "artefacts")
    os.mkfifo(source / "linux-64" / "zz-1.0-h0_0.conda")
    site = tmp_path / "site"
    line = one_error(publish(source, site), 3)
    assert "zz-1.0-h0_0.conda is not a regular file" in line and not site.exists()


def test_a_planted_file_of_a_published_name_is_replaced_never_indexed(tmp_path, built):
    """Someone put other bytes under the name the build publishes, before the first publish: the channel
    ends up with the built package and the index records its sha256, not the planted one's."""
    site = tmp_path / "site"
    (site / "linux-64").mkdir(parents=True)
    planted = site / "linux-64" / CUDA
    planted.write_bytes((built / "linux-64" / CPU).read_bytes())  # a valid package, the wrong one
    source = artefacts(built, tmp_path / "artefacts")
    done = publish(source, site)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert f"linux-64/{CUDA}" in report["replaced"] and f"linux-64/{CUDA}" not in report["kept"]
    assert sha(planted) == sha(source / "linux-64" / CUDA) == index_sha(site, CUDA)


def test_a_published_package_is_never_changed_under_its_name(tmp_path, built):
    site = tmp_path / "site"
    assert publish(artefacts(built, tmp_path / "first"), site).returncode == 0
    before = tree(site)
    source = artefacts(built, tmp_path / "second")
    (source / "linux-64" / CUDA).write_bytes(rebuilt(built / "linux-64" / CUDA))
    line = one_error(publish(source, site), 3)
    assert f"already publishes linux-64/{CUDA} with other content" in line
    assert tree(site) == before
    again = publish(artefacts(built, tmp_path / "third"), site)  # the same bytes: kept
    assert again.returncode == 0 and f"linux-64/{CUDA}" in json.loads(again.stdout)["kept"]


def test_a_package_swapped_or_dropped_into_the_channel_is_never_indexed(tmp_path, built):
    site = tmp_path / "site"
    first = artefacts(built, tmp_path / "first")
    (first / "linux-64" / CUDA).unlink()
    assert publish(first, site).returncode == 0
    published = site / "linux-64" / CPU
    recorded = index_sha(site, CPU)
    published.write_bytes((built / "linux-64" / CUDA).read_bytes())  # swapped after it was published
    before = tree(site)
    second = artefacts(built, tmp_path / "second")
    (second / "linux-64" / CPU).unlink()  # (a publish of it would put the published bytes back)
    line = one_error(publish(second, site), 3)
    assert f"holds linux-64/{CPU} with sha256" in line and "changed after it was published" in line
    assert tree(site) == before and index_sha(site, CPU) == recorded
    published.write_bytes((built / "linux-64" / CPU).read_bytes())
    dropped = site / "linux-64" / "other-1.0-h0_0.conda"
    dropped.write_bytes((built / "linux-64" / CPU).read_bytes())  # a valid package no publish put there
    line = one_error(publish(artefacts(built, tmp_path / "third"), site), 3)
    assert "other-1.0-h0_0.conda, which is not in its index" in line
    assert "other-1.0-h0_0.conda" not in (site / "linux-64" / "repodata.json").read_text()
