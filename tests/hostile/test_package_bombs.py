"""A package is bounded before and while it is read: a small archive that unpacks to tens of GiB (a
decompression bomb: zeros in zstd RLE blocks, four bytes of archive per 128 KiB) is refused from what its
info/paths.json states before its payload is read, from each member's header while it streams when
paths.json lies, and by the running total when it is spread over many members; one sentence, exit 4,
in seconds, and `channel publish` publishes nothing. The archives are real and a few MiB on disk."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from support import cli
from support import package_factory as pf  # noqa: E402
from support.hostile import one_error, tree

from resolver.core.errors import IntegrityError  # noqa: E402
from resolver.tools.package_check import check_package, unpacked_bound

GiB = 1 << 30
INDEX = pf.index_json("rt-kernel", "1.2.0", "cuda_1")
NAME = "rt-kernel-1.2.0-cuda_1.conda"


def bomb(channel: Path, kind: str) -> Path:
    if kind == "stated":  # paths.json tells the truth: refused before the payload
        return pf.write_conda_bomb(channel, INDEX, [("lib/zero.bin", 64 * GiB)])
    if kind == "lying":  # paths.json says one byte: the member's header says 64 GiB
        return pf.write_conda_bomb(channel, INDEX, [("lib/zero.bin", 64 * GiB)], stated={"paths": [
            {"_path": "lib/zero.bin", "path_type": "hardlink", "size_in_bytes": 1}], "paths_version": 1})
    files = [(f"lib/z{n}.bin", 64 << 20) for n in range(64)]  # 4 GiB in members of 64 MiB, paths.json lying
    return pf.write_conda_bomb(channel, INDEX, files, stated={"paths": [
        {"_path": name, "path_type": "hardlink", "size_in_bytes": 0} for name, _ in files], "paths_version": 1})


@pytest.mark.parametrize("kind", ["stated", "lying", "spread"])
def test_a_decompression_bomb_is_refused_quickly_with_one_sentence(tmp_path, kind):
    package = bomb(tmp_path / "channel", kind)
    assert package.stat().st_size < 4 << 20
    started = time.monotonic()
    with pytest.raises(IntegrityError, match=f"package {NAME} is refused: .*unpacks to .*more than") as caught:
        check_package(package, subdir="linux-64")
    assert caught.value.code == 4
    assert time.monotonic() - started < 10  # unbounded, the "stated" one streams 64 GiB of zeros first


def test_the_bound_follows_the_archive_and_keeps_real_packages(tmp_path):
    """A package that unpacks to less than its bound passes: what real packages do."""
    files = [("lib/zero.bin", 100 << 20)]  # 100 MiB of zeros in a 3 KiB archive, under the floor of 256 MiB
    package = pf.write_conda_bomb(tmp_path / "channel", INDEX, files)
    check_package(package, subdir="linux-64")
    assert unpacked_bound(package.stat().st_size) >= 100 << 20


def test_publish_refuses_a_bomb_and_publishes_nothing(tmp_path, built):
    source = tmp_path / "artefacts"
    shutil.copytree(built, source, ignore=shutil.ignore_patterns("repodata*"))
    (source / "linux-64" / NAME).unlink()
    bomb(source, "lying")
    site = tmp_path / "site"
    first = tmp_path / "first"
    shutil.copytree(built, first, ignore=shutil.ignore_patterns("repodata*", NAME))
    assert cli.run("channel", "publish", "--from", str(first), "--to", str(site), timeout=180).returncode == 0
    before = tree(site)
    started = time.monotonic()
    done = cli.run("channel", "publish", "--from", str(source), "--to", str(site), timeout=180)
    line = one_error(done, 4)
    assert NAME in line and "unpacks to more than" in line
    assert time.monotonic() - started < 60
    assert tree(site) == before


def wheel_bomb(folder: Path) -> Path:
    """A real wheel of tiny 1.0 (METADATA and all) with 512 MiB of zeros deflated into ~0.5 MiB beside it."""
    import zipfile

    from support import channel_factory as cf

    wheel = cf.write_wheel(folder, "tiny", "1.0", {"tiny/__init__.py": "X = 1\n"})
    with zipfile.ZipFile(wheel, "a", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive, \
            archive.open("tiny/zero.bin", "w", force_zip64=True) as member:
        block = b"\0" * (1 << 20)
        for _ in range(512):
            member.write(block)
    return wheel


def test_a_wheel_bomb_is_refused_before_the_installer_sees_it(tmp_path):
    import hashlib

    from support.hostile import write_project_lock

    from resolver.tools.package_check import check_wheel

    wheel = wheel_bomb(tmp_path / "wheels")
    assert wheel.stat().st_size < 4 << 20
    with pytest.raises(IntegrityError, match="tiny-1.0-py3-none-any.whl is refused: it unpacks to 512.0 MiB"):
        check_wheel(wheel)
    project = tmp_path / "project"
    project.mkdir()
    write_project_lock(project, str(wheel), hashlib.sha256(wheel.read_bytes()).hexdigest())
    started = time.monotonic()
    line = one_error(cli.run("install", "--env", "cpu", project=project, timeout=300,
                             env={"RESOLVER_FIND_LINKS": str(wheel.parent)}), 4)
    assert "tiny-1.0-py3-none-any.whl is refused: it unpacks to" in line
    assert time.monotonic() - started < 120
    assert not (project / ".resolver" / "envs" / "cpu").exists()
