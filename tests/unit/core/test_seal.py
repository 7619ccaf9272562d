"""The seal on records (resolver.core.seal): a key of this user's in the user's cache (the session's),
made once and kept private; a record sealed for one place and these bytes, and nothing else."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from resolver.core import seal


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(seal, "_keys", {})
    return tmp_path / "cache" / "mamba-resolver"


def test_the_key_is_made_once_private_to_this_user(cache, tmp_path):
    blob = seal.seal(tmp_path / "r.json", b"{}")
    key = cache / seal.KEY_NAME
    info = os.lstat(key)
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600 and info.st_size == seal.KEY_BYTES
    assert [p.name for p in cache.iterdir()] == [seal.KEY_NAME]  # no temporary left behind
    seal._keys.clear()  # another run: the same key
    assert seal.unseal(tmp_path / "r.json", blob) == b"{}"


def test_runs_that_start_together_agree_on_one_key(cache, tmp_path):
    program = ("import sys; from resolver.core import seal; "
               "sys.stdout.write(seal.seal(sys.argv[1], b'x').decode())")
    runs = [subprocess.Popen([sys.executable, "-c", program, str(tmp_path / "r.json")], stdout=subprocess.PIPE,
                             env=dict(os.environ)) for _ in range(6)]
    blobs = {run.communicate(timeout=60)[0] for run in runs}
    assert len(blobs) == 1 and seal.unseal(tmp_path / "r.json", blobs.pop()) == b"x"


def test_a_key_made_anew_while_this_process_runs_is_the_one_it_uses(cache, tmp_path):
    """The user's cache emptied while a long run goes on, and another run made a new key there: this
    process seals and reads with that key from then on, so neither run takes the other's records for
    strangers (a stale key would make every record of one look forged to the other)."""
    program = ("import sys; from resolver.core import seal; "
               "sys.stdout.write(seal.seal(sys.argv[1], b'theirs').decode())")
    place = tmp_path / "r.json"
    mine = seal.seal(place, b"mine")
    (cache / seal.KEY_NAME).unlink()
    theirs = subprocess.run([sys.executable, "-c", program, str(place)], capture_output=True, env=dict(os.environ),
                            timeout=60, check=True).stdout
    assert seal.unseal(place, theirs) == b"theirs"
    assert seal.unseal(place, mine) is None  # sealed under the key that is gone
    again = seal.seal(place, b"mine again")
    check = ("import sys; from resolver.core import seal; "
             "sys.stdout.write(repr(seal.unseal(sys.argv[1], sys.stdin.buffer.read())))")
    read_there = subprocess.run([sys.executable, "-c", check, str(place)], input=again, capture_output=True,
                                env=dict(os.environ), timeout=60, check=True).stdout
    assert read_there == b"b'mine again'"


@pytest.mark.parametrize("planted", ["link", "readable-by-others", "short", "folder"])
def test_a_key_file_that_is_not_private_is_never_used_nor_replaced(cache, tmp_path, planted):
    """Someone else's key (a link to a file they know, one others can read) would let them seal records:
    the run then keeps a key of its own, for itself, and the file stays as it was."""
    cache.mkdir(parents=True)
    key = cache / seal.KEY_NAME
    known = tmp_path / "known-key"
    known.write_bytes(b"k" * seal.KEY_BYTES)
    known.chmod(0o600)
    if planted == "link":
        key.symlink_to(known)
    elif planted == "readable-by-others":
        key.write_bytes(b"k" * seal.KEY_BYTES)
        key.chmod(0o644)
    elif planted == "short":
        key.write_bytes(b"k")
        key.chmod(0o600)
    else:
        key.mkdir()
    blob = seal.seal(tmp_path / "r.json", b"x")
    assert seal.unseal(tmp_path / "r.json", blob) == b"x"  # this run's own key
    assert seal._key() != b"k" * seal.KEY_BYTES
    seal._keys.clear()
    assert seal.unseal(tmp_path / "r.json", blob) is None  # and it does not outlive the run
    assert os.path.lexists(key) and (planted != "link" or key.is_symlink())


def test_a_record_is_sealed_for_its_place_and_its_bytes(cache, tmp_path):
    place = tmp_path / "state" / "a.json"
    blob = seal.seal(place, b'{"a": 1}')
    assert seal.unseal(place, blob) == b'{"a": 1}'
    assert seal.unseal(tmp_path / "state" / "b.json", blob) is None  # another name
    assert seal.unseal(tmp_path / "clone" / "state" / "a.json", blob) is None  # another checkout
    assert seal.unseal(place, blob[:-1] + b"2") is None  # other bytes
    assert seal.unseal(place, b'{"a": 1}') is None  # no seal at all (plain JSON, as a clone brings it)
    assert seal.unseal(place, blob[:20]) is None
    (tmp_path / "state").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "state")
    assert seal.unseal(tmp_path / "via" / "a.json", blob) == b'{"a": 1}'  # the real place counts


def test_without_a_user_cache_records_live_as_long_as_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "~unexpanded")
    monkeypatch.setattr(seal, "_keys", {})
    blob = seal.seal(tmp_path / "r.json", b"x")
    assert seal.unseal(tmp_path / "r.json", blob) == b"x"
    seal._keys.clear()
    assert seal.unseal(tmp_path / "r.json", blob) is None
