"""A lock entry is what it says: the file behind it is the package it names.

The sha256 in pixi.lock proves only that the file is the one the lock's author pointed at; the entry's
name and version are claims beside it. Before anything is installed, every verified copy is opened and
its own statement of what it is compared with the entry (names canonical by PEP 503, PyPI versions
normalised by PEP 440):

* a wheel: its file name's name and version, and its ``*.dist-info/METADATA`` ``Name`` and ``Version``
  (the one ``.dist-info`` folder it holds, its METADATA read to a bound);
* a conda package: its ``info/index.json`` ``name``, ``version``, ``build`` and ``subdir``.

A mismatch is one :class:`IntegrityError` (exit 4) naming the entry and what the file really is, and
nothing is installed.

>>> wheel_file_name("Typing_Extensions-4.12.2-py3-none-any.whl")
('typing-extensions', '4.12.2')
"""

from __future__ import annotations

import json
import re
import zipfile
from email.parser import HeaderParser
from pathlib import Path

from resolver.core.errors import IntegrityError
from resolver.core.names import canonical_name, printable
from resolver.core.versions import same_version

METADATA_LIMIT = 4 << 20  # the largest METADATA on PyPI (a long description) is well under this
INDEX_LIMIT = 1 << 20
_FIX = ("restore pixi.lock from version control and relock with `python -m resolver lock --force`; if the file "
        "came from a mirror or wheelhouse, replace it with the real one")


def wheel_file_name(file_name: str) -> tuple[str, str] | None:
    """The canonical name and the version a wheel's file name states (None: not a wheel's name)."""
    parts = file_name[:-4].split("-") if file_name.endswith(".whl") else []
    if len(parts) not in (5, 6) or not all(parts):
        return None
    return canonical_name(parts[0]), parts[1]


def check_wheel(path: Path, name: str, version: str, file_name: str, requires_dist: tuple[str, ...] = ()) -> None:
    """Refuse the wheel at ``path`` (locked as ``file_name``) unless its name and its METADATA say it is
    ``name`` ``version``, and every requirement the lock records for it (``requires_dist``) is one of its
    METADATA's ``Requires-Dist`` (a claimed requirement the file does not have would make a package the
    lock adds look required)."""
    entry = f"{name} {version}"
    stated = wheel_file_name(file_name)
    if stated is None:
        _refuse(entry, f"its file {printable(file_name)} is not named as a wheel is")
    if stated[0] != canonical_name(name) or not same_version(stated[1], version):
        _refuse(entry, f"its file {printable(file_name)} is {stated[0]} {printable(stated[1])}")
    meta = _wheel_metadata(path, entry)
    meta_name, meta_version = meta.get("Name"), meta.get("Version")
    if not meta_name or not meta_version:
        _refuse(entry, f"the METADATA of {printable(file_name)} names no package or version")
    if canonical_name(str(meta_name)) != canonical_name(name) or not same_version(str(meta_version), version):
        _refuse(entry, f"the METADATA of {printable(file_name)} says it is {printable(str(meta_name))} "
                       f"{printable(str(meta_version))}")
    own = {requirement_key(str(text)) for text in meta.get_all("Requires-Dist") or []}
    claimed = [text for text in requires_dist if requirement_key(text) not in own]
    if claimed:
        _refuse(entry, f"pixi.lock says it requires {printable(claimed[0])}, which the METADATA of "
                       f"{printable(file_name)} does not")


def requirement_key(text: str) -> tuple | str:
    """What a PEP 508 requirement reaches: the package (its canonical name) and the extras asked of it;
    text that is no requirement: itself. (Versions and markers are left out: a lock's writer may spell
    them otherwise, rattler orders a marker's alternatives, and neither makes another package required.)

    >>> requirement_key('numpy>=1 ; extra == "opt"') == requirement_key("NumPy >=1.0; extra == 'opt'")
    True
    >>> requirement_key("hf-xet ; os_name == 'a' or os_name == 'b'") == requirement_key("hf_xet ; os_name == 'b'")
    True
    """
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement:
        return text.strip()
    return canonical_name(req.name), tuple(sorted(canonical_name(extra) for extra in req.extras))


def check_conda(path: Path, name: str, version: str, build: str, subdir: str) -> None:
    """Refuse the conda package at ``path`` unless its ``info/index.json`` says it is ``name`` ``version``
    ``build`` for ``subdir``."""
    from resolver.tools.conda import read_package_index

    entry = f"{name} {version} {build}"
    data = read_package_index(path, limit=INDEX_LIMIT)
    try:
        index = json.loads(data) if data is not None else None
    except (ValueError, RecursionError):
        index = None
    if not isinstance(index, dict):
        _refuse(entry, f"{printable(path.name)} holds no readable info/index.json")
    said = {key: index.get(key) for key in ("name", "version", "build", "subdir")}
    wanted = {"name": name, "version": version, "build": build, "subdir": subdir}
    wrong = [key for key in wanted if said[key] != wanted[key]]
    if wrong:
        _refuse(entry, f"the info/index.json of {printable(path.name)} says "
                       + ", ".join(f"{key} {printable(str(said[key]))}" for key in wrong))


def _wheel_metadata(path: Path, entry: str):
    try:
        with zipfile.ZipFile(path) as archive:
            found = [info for info in archive.infolist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", info.filename)]
            if len(found) != 1:
                _refuse(entry, f"{printable(path.name)} holds {len(found)} .dist-info/METADATA files, not one")
            if found[0].file_size > METADATA_LIMIT:
                _refuse(entry, f"the METADATA of {printable(path.name)} is larger than {METADATA_LIMIT >> 20} MiB")
            text = archive.read(found[0]).decode("utf-8", errors="replace")
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, ValueError, EOFError):
        _refuse(entry, f"{printable(path.name)} is not a readable wheel")
    return HeaderParser().parsestr(text)


def _refuse(entry: str, why: str):
    raise IntegrityError(f"pixi.lock's entry {printable(entry)} is not the file it points at: {why}", fix=_FIX)
