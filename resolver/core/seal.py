"""The seal on the resolver's records: what a run trusts as already done was written by this user, here.

Everything the resolver keeps between runs (``.resolver/state/``: the "pixi.lock is current" answer, the
plans behind pixi.lock, setup's step stamps, the sources last locked with; an environment's ready marker;
the records of the caches) lives in folders a clone, a pull request or an unpacked archive can fill. So
every record carries a seal: an HMAC-SHA256, under a key that only the user's cache holds, of the record's
bytes and of the real path it was written for. A record that came with the working tree (sealed by
someone else's key, or by this user's for another checkout) fails the check and reads as absent: the work
is done again, never skipped on the word of a file.

The key is 32 random bytes in ``<user cache>/mamba-resolver/record.key``, made once with
``O_CREAT|O_EXCL``, mode 600, linked into place so two first runs agree on one key, and used only while it
is a regular file of this user that no one else may read. Where the user's cache cannot hold one (no home,
a read-only cache, a key file that is not private), this process makes its own: records are then trusted
within the run that wrote them and no longer.

On disk a record is one line, ``mamba-resolver-seal-v1 <hex>``, then the record's bytes.

>>> import tempfile, pathlib
>>> place = pathlib.Path(tempfile.mkdtemp()) / "a.json"
>>> blob = seal(place, b'{"done": true}')
>>> unseal(place, blob), unseal(place.with_name("b.json"), blob), unseal(place, blob.replace(b"true", b"false"))
(b'{"done": true}', None, None)
"""

from __future__ import annotations

import hmac
import os
from pathlib import Path

KEY_NAME = "record.key"
KEY_BYTES = 32
_TAG = b"mamba-resolver-seal-v1 "
_SEAL_LEN = len(_TAG) + 64 + 1  # the tag, the hex HMAC, a newline
SEAL_OVERHEAD = _SEAL_LEN
# the key of each user cache folder, read again only when its file is another (a cache emptied and its key
# made anew by another process while this one runs: the old key would seal what no one else can read)
_keys: dict[str, tuple[tuple[int, int, int] | None, bytes]] = {}


def user_cache_dir() -> Path | None:
    """The resolver's folder in the user's cache (``$XDG_CACHE_HOME/mamba-resolver``, ``~/.cache/…``):
    what is worth keeping across projects (verified artefacts, unpacked conda packages, remembered plans,
    the answers of toolkit binaries) and the key of the records' seal."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not base or base.startswith("~"):
        return None
    from resolver.core.fs import register_root

    register_root(Path(base) / "mamba-resolver", what="the resolver's folder in the user's cache")
    return Path(base) / "mamba-resolver"


def seal(place: str | Path, payload: bytes) -> bytes:
    """``payload`` with its seal in front, for the file at ``place`` (the path the record is read back
    from: a record written in a staging folder that is then renamed is sealed for its final path)."""
    return _TAG + _mac(place, payload).encode("ascii") + b"\n" + payload


def unseal(place: str | Path, blob: bytes) -> bytes | None:
    """The payload of a sealed record read from ``place``; None when the seal is missing or is not this
    user's key's for this place and these bytes (the record came from elsewhere, or was edited)."""
    if len(blob) < _SEAL_LEN or not blob.startswith(_TAG) or blob[_SEAL_LEN - 1:_SEAL_LEN] != b"\n":
        return None
    payload = blob[_SEAL_LEN:]
    given = blob[len(_TAG):_SEAL_LEN - 1]
    return payload if hmac.compare_digest(given, _mac(place, payload).encode("ascii")) else None


def _mac(place: str | Path, payload: bytes) -> str:
    place = os.path.abspath(place)
    where = os.path.join(os.path.realpath(os.path.dirname(place)), os.path.basename(place))
    message = os.fsencode(where) + b"\0" + payload
    return hmac.new(_key(), message, "sha256").hexdigest()


def _key() -> bytes:
    base = user_cache_dir()
    name = str(base) if base is not None else ""
    identity = _key_file_identity(base)
    known = _keys.get(name)
    if known is not None and known[0] == identity:
        return known[1]
    # no key the cache can keep: this process's own (the one it had, else a new one)
    key = (_stored_key(base) if base is not None else None) or (known[1] if known else os.urandom(KEY_BYTES))
    _keys[name] = (_key_file_identity(base), key)
    return key


def _key_file_identity(folder: Path | None) -> tuple[int, int, int] | None:
    if folder is None:
        return None
    try:
        info = os.lstat(folder / KEY_NAME)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_mtime_ns


def _stored_key(folder: Path) -> bytes | None:
    """The key kept in ``folder`` (made there if there is none); None when it cannot be kept or read as
    a private file of this user's."""
    from resolver.core.errors import ResolverError
    from resolver.core.fs import place_new

    path = folder / KEY_NAME
    key = _read_key(path)
    if key is not None:
        return key
    if os.path.lexists(path):
        return None  # something else is there: never trusted, never replaced
    try:
        place_new(path, os.urandom(KEY_BYTES), mode=0o600)
    except (OSError, ResolverError):
        return None
    return _read_key(path)


def _read_key(path: Path) -> bytes | None:
    from resolver.core.errors import ResolverError
    from resolver.core.fs import open_read

    try:
        with open_read(path, what="the records' key") as handle:
            info = os.fstat(handle.fileno())
            if info.st_uid != os.getuid() or info.st_mode & 0o077 or info.st_size != KEY_BYTES:
                return None
            key = handle.read(KEY_BYTES + 1)
    except (OSError, ResolverError):
        return None
    return key if len(key) == KEY_BYTES else None
