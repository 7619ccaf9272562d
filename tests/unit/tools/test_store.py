"""The verified store gives out a file only when its content is known to have its sha256: hashed now,
or hashed earlier with a record only this user can have written (private folders, a record naming
size, mtime, inode and ctime). A file planted with a record of its own making is hashed and refused."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import REPO, cli
from support import channel_factory as cf  # noqa: E402

from resolver.lock.lockfile import LockedEnv, LockedPlatform, PypiArtifact, render_lock  # noqa: E402
from resolver.tools import store as store_module  # noqa: E402
from resolver.tools.store import RECORD, VerifiedStore, _identity  # noqa: E402

NAME = "tiny-1.0-py3-none-any.whl"


@pytest.fixture
def wheels(tmp_path: Path) -> dict[str, Path]:
    real = cf.write_wheel(tmp_path / "real", "tiny", "1.0", {"tiny/__init__.py": "VALUE = 'real'\n"})
    planted = cf.write_wheel(tmp_path / "planted", "tiny", "1.0", {"tiny/__init__.py": "VALUE = 'planted'\n"})
    return {"real": real, "planted": planted}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def plant(root: Path, sha256: str, data: bytes, record) -> Path:
    """``data`` stored under ``sha256`` with a side record made by ``record(stat)``, as another program could."""
    folder = root / sha256[:2] / sha256
    folder.mkdir(parents=True)
    target = folder / NAME
    target.write_bytes(data)
    (folder / RECORD).write_text(record(target.stat()))
    return target


@pytest.fixture
def hashed(monkeypatch) -> list[Path]:
    """Every file the store hashes."""
    calls: list[Path] = []
    real = store_module.sha256_of

    def counting(path):
        calls.append(Path(path))
        return real(path)

    monkeypatch.setattr(store_module, "sha256_of", counting)
    return calls


def test_a_planted_file_with_a_record_of_its_own_size_mtime_inode_is_hashed_and_refused_by_install(tmp_path, wheels):
    """The attack as it worked before: a file in the user's store and a ``.verified`` beside it naming the
    file's own size, mtime and inode. install hashes it, refuses it, and installs the locked file."""
    project = tmp_path / "project"
    project.mkdir()
    real = wheels["real"]
    (project / "pixi.toml").write_text('[workspace]\nname = "t"\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n'
                                       f'[tool.resolver]\nfind-links = ["{real.parent}"]\n')  # the lock's folder, declared
    art = PypiArtifact("tiny", "1.0", real.as_uri(), sha(real))
    env = LockedEnv("cpu", LockedPlatform("linux-64", "linux-64", ()), ("https://conda.anaconda.org/conda-forge/",),
                    (), (art,), fallback=True, python=f"{sys.version_info.major}.{sys.version_info.minor}")
    (project / "pixi.lock").write_text(render_lock([env], project))
    cache = tmp_path / "user-cache"
    root = cache / "mamba-resolver" / "verified"
    planted = plant(root, sha(real), wheels["planted"].read_bytes(),
                    lambda st: f"{st.st_size} {st.st_mtime_ns} {st.st_ino}")
    plant_ctime = json.dumps({"inputs_digest": _identity(planted.stat()), "value": sha(real)})
    assert plant_ctime  # (the newer form is refused too, when the folder is not private: see below)
    environ = dict(os.environ, RESOLVER_PROJECT=str(project), XDG_CACHE_HOME=str(cache), PIP_CONFIG_FILE=os.devnull,
                   PIP_NO_INDEX="1")
    done = cli.run("install", "--env", "cpu", "--json", cwd=project, environment=environ, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    python = project / ".resolver" / "envs" / "cpu" / "bin" / "python"
    value = subprocess.run([str(python), "-c", "import tiny; print(tiny.VALUE)"], capture_output=True, text=True)
    assert value.stdout.strip() == "real", value.stderr
    assert planted.read_bytes() == real.read_bytes()  # the store now holds the checked copy


def test_without_a_source_the_planted_file_is_still_refused(tmp_path, wheels):
    from resolver.core.errors import BadInput
    from resolver.install.fetch import Finder, verified_copy
    from resolver.project.sources import Sources

    store = VerifiedStore(tmp_path / "verified")
    wanted = sha(wheels["real"])
    plant(store.root, wanted, wheels["planted"].read_bytes(), lambda st: f"{st.st_size} {st.st_mtime_ns} {st.st_ino}")
    with pytest.raises(BadInput, match="nowhere to be found"):
        verified_copy((tmp_path / "gone" / NAME).as_uri(), wanted, store, Finder(Sources(), declared=(str(tmp_path / "gone"),)))
    assert not store.path_for(wanted, NAME).exists()


def test_a_full_record_in_a_folder_others_may_write_is_not_trusted(tmp_path, wheels, hashed):
    store = VerifiedStore(tmp_path / "verified")
    wanted = sha(wheels["real"])
    target = store.copy_in(wheels["real"], wanted, NAME)
    assert store.find(wanted, NAME) == target and hashed == []  # our own record, private folders: no hashing
    os.chmod(target.parent, 0o777)
    assert store.find(wanted, NAME) == target and hashed == [target]  # trusted no longer: hashed (and it matches)
    # another user swaps the content and writes a record of every fact, ctime included
    target.chmod(0o644)
    target.write_bytes(wheels["planted"].read_bytes())
    info = target.stat()
    (target.parent / RECORD).write_text(json.dumps({"inputs_digest": _identity(info), "value": wanted}))
    assert store.find(wanted, NAME) is None and not target.exists()


def test_a_rewrite_that_restores_size_and_mtime_moves_ctime_and_is_hashed(tmp_path, wheels, hashed):
    store = VerifiedStore(tmp_path / "verified")
    real = cf.write_wheel(tmp_path / "same-size", "tiny", "1.0", {"tiny/__init__.py": "VALUE = 'evil'\n"})
    wanted = sha(wheels["real"])
    target = store.copy_in(wheels["real"], wanted, NAME)
    before = target.stat()
    assert real.stat().st_size == before.st_size  # same size, different bytes
    target.chmod(0o644)
    with open(target, "r+b") as handle:  # in place: the inode stays
        handle.write(real.read_bytes())
    target.chmod(0o444)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = target.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert store.find(wanted, NAME) is None and hashed == [target]


def test_links_planted_in_the_store_are_never_followed(tmp_path, wheels):
    store = VerifiedStore(tmp_path / "verified")
    wanted = sha(wheels["real"])
    target = store.path_for(wanted, NAME)
    target.parent.mkdir(parents=True)
    outside = tmp_path / "outside.whl"
    outside.write_bytes(wheels["real"].read_bytes())  # even the right bytes: a link is not our copy
    os.symlink(outside, target)
    assert store.find(wanted, NAME) is None and not target.is_symlink() and outside.read_bytes()
    # a record that is a link to a record of the right facts is not read
    kept = store.copy_in(wheels["real"], wanted, NAME)
    good = tmp_path / "good-record"
    good.write_bytes((kept.parent / RECORD).read_bytes())
    (kept.parent / RECORD).unlink()
    os.symlink(good, kept.parent / RECORD)
    assert not store._trusted(kept, wanted, os.lstat(kept))


def test_the_store_layout_has_one_home():
    """Only resolver/tools/store.py spells the store's layout (sha256[:2]/sha256/name)."""
    root = REPO / "resolver"
    spelled = [str(p.relative_to(root)) for p in root.rglob("*.py") if "[:2] /" in p.read_text()]
    assert spelled == ["tools/store.py"]
