"""pixi.lock (v7): the environments we lock written as rattler writes them, the ones we keep as they were.

A lock is a function of pixi.toml and the sources' contents, byte for byte:

* what we lock now is written out (:func:`render_lock`) and read back and written again by rattler
  (:func:`resolver.tools.conda.canonical_lock_text`), so every field is spelled the one way pixi's own writer
  spells it (a wheel's ``requires_dist`` as rattler re-reads it, not as its METADATA happens to spell
  it), whatever it was read from: the wheel, an index's PEP 658 metadata, a cache;
* an environment kept from the lock there is (carried over) keeps its entries *as text*: the
  environment's channels, indexes, options and package list, and each package's entry, byte for
  byte, whatever wrote them (pixi, a newer pixi with fields rattler here does not know, or us), so
  a relock changes nothing of what it did not lock (:class:`RawLock`);
* platforms are written from pixi.toml, as pixi writes them: every declared virtual package in
  pixi's order, and a platform that is not a bare subdir under its alias ``p1``, ``p2``, ...
  (:mod:`.pixi_platforms`);
* locations inside the project are relative (``./...``), so the lock works on a teammate's machine.

Reading goes through rattler (:class:`resolver.tools.conda.LockView`), which is the judge of what a pixi.lock is.

>>> relative_location("file:///p/r/chan/noarch/a.conda", Path("/p/r"))
'./chan/noarch/a.conda'
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable
from urllib.parse import quote, unquote, urlsplit

from resolver.core.errors import BadInput
from resolver.core.fs import check_regular_file, read_bytes_bounded
from resolver.core.names import check_env_name
from resolver.core.versions import major_minor
from resolver.project.paths import LOCK_LIMIT

if TYPE_CHECKING:  # py-rattler is loaded only where a lock is read or written
    from resolver.tools.conda import CondaRecord, LockView


_KINDS = {"conda": 0, "conda_source": 1, "pypi": 2}  # rattler's order of package kinds (SelectorKind)


@dataclass(frozen=True)
class PypiArtifact:
    """One locked wheel: where it is and what it must hash to."""

    name: str
    version: str
    location: str  # absolute URL or absolute path (relative ones are resolved when read)
    sha256: str
    requires_dist: tuple[str, ...] = ()
    requires_python: str | None = None
    index: str | None = None  # the index it is pinned to (pixi's `index:`), None: the environment's first index

    @property
    def file_name(self) -> str:
        return unquote(self.location.rstrip("/").rsplit("/", 1)[-1])

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "location": self.location, "sha256": self.sha256}

    def lock_entry(self, location: str) -> list[str]:
        lines = [f"- pypi: {json.dumps(location)}", f"  name: {json.dumps(self.name)}",
                 f"  version: {json.dumps(self.version)}"]
        if self.sha256:
            lines.append(f"  sha256: {yaml_hex(self.sha256)}")
        if self.index:
            lines.append(f"  index: {json.dumps(self.index)}")
        if self.requires_dist:
            lines += ["  requires_dist:", *(f"  - {json.dumps(req)}" for req in self.requires_dist)]
        if self.requires_python:
            lines.append(f"  requires_python: {json.dumps(self.requires_python)}")
        return lines


@dataclass(frozen=True)
class LockedPlatform:
    name: str  # the manifest's name: "linux-64", or "linux-64-cuda13" (pixi.lock may call it p1)
    subdir: str
    virtual_packages: tuple[str, ...]  # as pixi.lock records them, in pixi's order


@dataclass(frozen=True)
class LockedEnv:
    """One environment on one platform, as locked."""

    name: str
    platform: LockedPlatform
    channels: tuple[str, ...]
    conda: tuple[CondaRecord, ...] = ()  # urls absolute
    pypi: tuple[PypiArtifact, ...] = ()
    indexes: tuple[str, ...] = field(default=())  # the PyPI indexes it was resolved with
    fallback: bool = False  # no conda python: a virtual environment of the host's Python (no channel answered)
    python: str | None = None  # "3.11": the conda python's, else the wheels' cpXY tag
    sources: tuple[str, ...] = ()  # conda packages pixi builds from source (pixi-build): not ours to install

    @property
    def fallback_note(self) -> str:
        return fallback_note(self.name, self.platform.name, self.python)

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.name, "platform": self.platform.name, "subdir": self.platform.subdir,
                "virtual_packages": list(self.platform.virtual_packages), "channels": list(self.channels),
                "conda": [f"{r.name}-{r.version}-{r.build}" for r in self.conda],
                "pypi": [f"{p.name}=={p.version}" for p in self.pypi]}


FALLBACK_HEADER = "# mamba-resolver: "


class NotALock(BadInput):
    """A regular file that rattler cannot read as a pixi.lock at all (pixi could not either)."""


def fallback_note(env: str, platform: str, python: str | None) -> str:
    return (f"environment {env} ({platform}) is a fallback: a virtual environment of this machine's Python "
            f"{python or ''}, because its conda packages were not solved (no conda channel answered, or --no-conda); "
            "pixi cannot install it until it is locked where a conda channel answers")


# ------------------------------------------------------------------------------------ the lock as text
@dataclass
class RawEnv:
    """An environment of a pixi.lock as text: its lines up to ``packages:`` (channels, indexes,
    options) and, per platform, its package selector lines."""

    head: list[str]
    packages: dict[str, list[tuple[tuple[int, str], list[str]]]]  # platform -> [(selector key, lines)]

    def indexes(self) -> tuple[str, ...]:
        out, inside = [], False
        for line in self.head:
            if inside and line.startswith("    - "):
                out.append(_unquote_yaml(line[6:]))
            elif line.startswith("    ") and line[4:5].isalpha():
                inside = line == "    indexes:"
        return tuple(out)


@dataclass
class RawLock:
    """A pixi.lock (v7, as rattler writes it) cut into the blocks rattler sorts: platforms by name,
    environments by name and in them platforms by name and packages by selector, packages by selector.
    Cutting and joining again gives the same bytes (:meth:`text`)."""

    platforms: dict[str, list[str]]
    envs: dict[str, RawEnv]
    packages: dict[tuple[int, str], list[str]]

    @classmethod
    def parse(cls, text: str) -> "RawLock":
        """``text`` cut into blocks; ValueError naming the first line not in rattler's layout."""
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        at = 0
        while at < len(lines) and lines[at].startswith("#"):
            at += 1

        def expect(*choices: str) -> str:
            nonlocal at
            if at >= len(lines) or lines[at] not in choices:
                raise ValueError(f"line {at + 1}: expected {' or '.join(repr(c) for c in choices)}")
            at += 1
            return lines[at - 1]

        def blocks(*stop: str) -> list[list[str]]:
            nonlocal at
            out: list[list[str]] = []
            while at < len(lines) and lines[at] not in stop:
                if lines[at].startswith("- "):
                    out.append([lines[at]])
                elif lines[at].startswith("  ") and out:
                    out[-1].append(lines[at])
                else:
                    raise ValueError(f"line {at + 1}: not in rattler's layout")
                at += 1
            return out

        expect("version: 7")
        platforms: dict[str, list[str]] = {}
        if expect("platforms:", "platforms: []") == "platforms:":
            for block in blocks("environments:", "environments: {}"):
                if not block[0].startswith("- name: "):
                    raise ValueError(f"platform entry {block[0]!r} does not start with its name")
                platforms[_unquote_yaml(block[0][len("- name: "):])] = block
        envs: dict[str, RawEnv] = {}
        if expect("environments:", "environments: {}") == "environments:":
            while at < len(lines) and lines[at] != "packages:" and lines[at] != "packages: []":
                line = lines[at]
                if not (line.startswith("  ") and not line.startswith("   ") and line.endswith(":")):
                    raise ValueError(f"line {at + 1}: expected an environment name")
                env = RawEnv([], {})
                envs[_unquote_yaml(line[2:-1])] = env
                at += 1
                while at < len(lines) and lines[at].startswith("    ") and lines[at] not in ("    packages:",
                                                                                            "    packages: {}"):
                    env.head.append(lines[at])
                    at += 1
                if expect("    packages:", "    packages: {}") == "    packages: {}":
                    continue
                platform = None
                while at < len(lines) and lines[at].startswith("      "):
                    line = lines[at]
                    if line.startswith("      - "):
                        if platform is None:
                            raise ValueError(f"line {at + 1}: a package outside a platform")
                        env.packages[platform].append((_selector(line[6:]), [line]))
                    elif line.startswith("        ") and platform is not None and env.packages[platform]:
                        env.packages[platform][-1][1].append(line)
                    elif not line.startswith("       ") and line.endswith(":"):
                        platform = _unquote_yaml(line[6:-1])
                        env.packages[platform] = []
                    else:
                        raise ValueError(f"line {at + 1}: not in rattler's layout")
                    at += 1
        packages: dict[tuple[int, str], list[str]] = {}
        if expect("packages:", "packages: []") == "packages:":
            for block in blocks(""):
                packages.setdefault(_selector(block[0]), block)
        if at != len(lines):
            raise ValueError(f"line {at + 1}: unexpected after the packages")
        return cls(platforms, envs, packages)

    def text(self, header: Iterable[str] = ()) -> str:
        """The lock, sorted as rattler sorts it, holding the packages its environments select."""
        out = list(header)
        out.append("version: 7")
        out += ["platforms:", *(line for name in sorted(self.platforms) for line in self.platforms[name])] \
            if self.platforms else ["platforms: []"]
        if self.envs:
            out.append("environments:")
            for name in sorted(self.envs):
                env = self.envs[name]
                out += [f"  {name}:", *env.head]
                if any(env.packages.values()):
                    out.append("    packages:")
                    for platform in sorted(p for p in env.packages if env.packages[p]):
                        out.append(f"      {platform}:")
                        out += [line for _, lines in sorted(env.packages[platform]) for line in lines]
                else:
                    out.append("    packages: {}")
        else:
            out.append("environments: {}")
        used = self._used()
        out += ["packages:", *(line for key in used for line in self.packages[key])] if used else ["packages: []"]
        return "\n".join(out) + "\n"

    def _used(self) -> list[tuple[int, str]]:
        """The packages the environments select, and those a source package builds with
        (``build_packages`` / ``host_packages``), as rattler keeps them."""
        return sorted(self.reachable(key for env in self.envs.values() for selected in env.packages.values()
                                     for key, _ in selected))

    def reachable(self, keys: Iterable[tuple[int, str]]) -> set[tuple[int, str]]:
        """``keys`` and the packages their entries name as build or host packages, transitively."""
        todo = list(keys)
        used: set[tuple[int, str]] = set()
        while todo:
            key = todo.pop()
            if key in used:
                continue
            if key not in self.packages:
                raise ValueError(f"no package entry for {key[1]}")
            used.add(key)
            inside = False
            for line in self.packages[key][1:]:
                if line.startswith("  ") and line[2:3].isalpha():
                    inside = line in ("  build_packages:", "  host_packages:")
                elif inside and line.startswith("  - "):
                    todo.append(_selector(line[2:]))
        return used


def _selector(line: str) -> tuple[int, str]:
    """The sort key rattler gives a package: its kind, then its id (``- conda: URL`` -> (0, URL))."""
    match = re.match(r"^- (conda|conda_source|pypi): (.+)$", line)
    if not match:
        raise ValueError(f"{line[:120]!r} is not a package entry")
    return _KINDS[match.group(1)], _unquote_yaml(match.group(2))


# ------------------------------------------------------------------------------------------- writing
def fresh_lock(envs: list[LockedEnv], platforms: list[LockedPlatform], aliases: dict[str, str], root: Path) -> RawLock:
    """``envs`` (just locked) and ``platforms`` (every platform of the lock to be, from pixi.toml) as
    rattler writes them, cut into blocks. ``aliases``: manifest platform name -> its name in pixi.lock."""
    from resolver.tools.conda import canonical_lock_text

    out = ["version: 7", "platforms:" if platforms else "platforms: []"]
    for platform in platforms:
        name = aliases.get(platform.name, platform.name)
        out.append(f"- name: {json.dumps(name)}")
        if name != platform.subdir:
            out.append(f"  subdir: {platform.subdir}")
        if platform.virtual_packages:
            out += ["  virtual-packages:", *(f"  - {json.dumps(v)}" for v in platform.virtual_packages)]
    entries: dict[tuple[int, str], list[str]] = {}
    grouped: dict[str, list[LockedEnv]] = {}
    for env in envs:
        grouped.setdefault(env.name, []).append(env)
    out.append("environments:" if grouped else "environments: {}")
    for name in sorted(grouped):
        first = grouped[name][0]
        out += [f"  {name}:", "    channels:" if first.channels else "    channels: []"]
        out += [f"    - url: {json.dumps(_shared(c, root))}" for c in first.channels]
        indexes = next((e.indexes for e in grouped[name] if e.indexes and e.pypi), ())
        if indexes:
            out += ["    indexes:", *(f"    - {json.dumps(url)}" for url in indexes)]
        selected = [e for e in grouped[name] if e.conda or e.pypi]
        out.append("    packages:" if selected else "    packages: {}")
        for env in selected:
            out.append(f"      {json.dumps(aliases.get(env.platform.name, env.platform.name))}:")
            for record in env.conda:
                location = _shared(record.url, root)
                entries.setdefault((0, location), record.lock_entry(location, with_channel=location == record.url))
                out.append(f"      - conda: {json.dumps(location)}")
            for art in env.pypi:
                location = _shared(art.location, root)
                entries.setdefault((2, location), art.lock_entry(location))
                out.append(f"      - pypi: {json.dumps(location)}")
    out.append("packages:" if entries else "packages: []")
    out += [line for key in sorted(entries) for line in entries[key]]
    try:
        canonical = canonical_lock_text("\n".join(out) + "\n")
    except ValueError as exc:  # what we wrote, rattler refuses: never write it
        raise BadInput(f"the lock being written is not one rattler reads back ({exc})",
                       fix="report this with the pixi.toml that gave it; the previous pixi.lock is unchanged") from None
    return RawLock.parse(canonical)


def render_lock(envs: list[LockedEnv], root: Path, platforms: list[LockedPlatform] | None = None,
                aliases: dict[str, str] | None = None) -> str:
    """``envs`` as pixi.lock v7 text (nothing carried over). Same input, same bytes."""
    chosen = platforms if platforms is not None else list({e.platform.name: e.platform for e in envs}.values())
    return fresh_lock(envs, chosen, aliases or {}, root).text(fallback_header(envs, aliases or {}))


def fallback_header(envs: Iterable[LockedEnv], aliases: dict[str, str]) -> list[str]:
    """The lock's header lines marking fallback environments, each platform named as the lock names it."""
    return [FALLBACK_HEADER + fallback_note(env.name, aliases.get(env.platform.name, env.platform.name), env.python)
            for env in envs if env.fallback]


def _shared(location: str, root: Path) -> str:
    """A location as the lock records it: inside the project relative, everything else as it is."""
    return relative_location(location, root) or location


def relative_location(value: str, root: Path) -> str | None:
    root_text = str(root.resolve()).rstrip("/") + "/"
    if value.startswith("file://"):
        candidate = unquote(urlsplit(value).path)
    elif value.startswith("/"):
        candidate = value
    else:
        return None
    trailing = "/" if candidate.endswith("/") else ""
    candidate = candidate.rstrip("/") + "/" if trailing else candidate
    if not candidate.startswith(root_text):
        return None
    return "./" + quote(candidate[len(root_text):], safe="/+-_.~")


def absolute_location(value: str, root: Path) -> str:
    """A lock location made absolute (a URL): ``./x`` is taken from ``root``; plain paths become file URLs."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", value):
        return value
    path = Path(unquote(value))
    return (path if path.is_absolute() else (root / path)).resolve().as_uri() + ("/" if value.endswith("/") else "")


def yaml_hex(value: str) -> str:
    """A hex digest as a YAML value that every reader takes as text: quoted where it would read as a
    number (all digits, an octal with a leading 0, or digits around one ``e``, a float), plain as pixi
    writes it otherwise.

    >>> yaml_hex("ab" * 32) == "ab" * 32, yaml_hex("1" * 64) == '"' + "1" * 64 + '"'
    (True, True)
    """
    return json.dumps(value) if re.fullmatch(r"[0-9]+(?:[eE][0-9]+)?", value) else value


def _unquote_yaml(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return json.loads(value) if value[0] == '"' else value[1:-1].replace("''", "'")
    return value


# ------------------------------------------------------------------------------------------- reading
def _wheel_python(pypi: Iterable[PypiArtifact]) -> str | None:
    """The one ``cpXY`` tag the wheels share (``3.11``), else None."""
    found = sorted({f"{m.group(1)}.{m.group(2)}" for a in pypi for m in [re.search(r"-cp(\d)(\d+)-", a.file_name)] if m})
    return found[0] if len(found) == 1 else None


def _header(text: str) -> tuple[str, ...]:
    """The comment lines the lock starts with (rattler drops comments, so they are ours to keep)."""
    return tuple(itertools.takewhile(lambda line: line.startswith("#"), text.splitlines()))


def _fallbacks_in_header(text: str) -> dict[tuple[str, str], str | None]:
    """(environment, platform) -> Python X.Y of the pairs the lock's header marks as fallbacks
    (:attr:`LockedEnv.fallback_note` writes them)."""
    found: dict[tuple[str, str], str | None] = {}
    for line in _header(text):
        match = re.match(re.escape(FALLBACK_HEADER) + r"environment (\S+) \((\S+)\) is a fallback: .*?"
                         r"Python (\d+\.\d+)?", line)
        if match:
            found[(match.group(1), match.group(2))] = match.group(3)
    return found


def _deeply_nested(text: str) -> bool:
    """Whether the text opens 8 YAML flow collections (``[``, ``{``) with none closed in between: a lock nests
    them two deep at most, and rattler's YAML reader is quadratic in the depth (200 kB of ``{a: ``: 25 s)."""
    return _NESTED.search(text) is not None


_NESTED = re.compile(r"(?:[\[{][^\[\]{}]*){8}")


@dataclass(frozen=True)
class ExistingLock:
    """The pixi.lock there is: rattler's reading of it, its text cut into blocks (version 7; an older
    one as rattler converts it, which is what pixi writes next), the header notes, and its platform
    names aligned with the manifest's by identity (``renames``: locked name -> manifest name)."""

    view: LockView
    raw: RawLock
    header: tuple[str, ...]
    renames: dict[str, str]
    fallbacks: dict[tuple[str, str], str | None]

    def platform_of(self, manifest_name: str) -> str | None:
        """The locked name of the manifest's platform ``manifest_name``, if the lock has it."""
        return next((locked for locked, name in self.renames.items() if name == manifest_name), None)


def load_lock(path: Path, root: Path, platforms: Iterable[Any] = ()) -> ExistingLock:
    """The lock at ``path``, read and cut; ``platforms``: the manifest's (:class:`PixiPlatform`), to
    align names as pixi does when it loads a lock. BadInput when rattler cannot read it, ValueError
    when it reads but is not laid out as rattler writes it."""
    from resolver.project.pixi_platforms import align
    from resolver.tools.conda import canonical_lock_text

    text, view = _read(path)
    try:  # as it is, when it is laid out as rattler writes version 7 (pixi's own locks are)
        raw = RawLock.parse(text)
        _agree(raw, view)
    except ValueError:  # an older version, or another layout: as rattler writes it, which is what pixi writes next
        raw = RawLock.parse(canonical_lock_text(text))
        _agree(raw, view)
    return ExistingLock(view, raw, _header(text), align(view.platforms(), platforms), _fallbacks_in_header(text))


def _read(path: Path) -> tuple[str, LockView]:
    """The text of the lock at ``path`` and rattler's reading of it (BadInput when it is no pixi.lock)."""
    from resolver.tools.conda import LockView

    if not path.is_file():
        if os.path.lexists(path):  # a folder, FIFO or device is not "missing": and never read
            check_regular_file(path, limit=LOCK_LIMIT, what="the lock file",
                               fix="put the project's pixi.lock there (from version control, or `python -m resolver lock`)")
        raise BadInput(f"{path} does not exist", fix="run `python -m resolver lock` first")
    text = read_bytes_bounded(path, limit=LOCK_LIMIT, what="the lock file").decode("utf-8", errors="replace")
    if _deeply_nested(text):  # the YAML reader takes seconds per 100 kB of "{a: " before it gives up
        raise NotALock(f"{path} cannot be read as a pixi.lock (its YAML is nested too deeply)",
                       fix="restore it from version control or run `python -m resolver lock` again")
    try:
        view = LockView(path)
    except ValueError as exc:
        raise NotALock(f"{path} cannot be read as a pixi.lock ({exc})",
                       fix="restore it from version control or run `python -m resolver lock` again") from None
    for name in view.environments():
        check_env_name(name, where=str(path),  # names become folders: .resolver/envs/<name>
                       fix="restore pixi.lock from version control (or lock again); environment names are "
                           "lowercase letters, digits and '-'")
    return text, view


def _agree(raw: RawLock, view: LockView) -> None:
    """rattler's reading and our cutting see the same environments, platforms and package counts."""
    if sorted(raw.envs) != sorted(view.environments()):
        raise ValueError("its environments are not where rattler's layout puts them")
    for name, env in raw.envs.items():
        counts = {p: n for p, n in view.counts(name).items() if n}
        if {p: len(s) for p, s in env.packages.items() if s} != counts:
            raise ValueError(f"environment {name}'s packages are not where rattler's layout puts them")


def check_lock_text(text: str, raw: RawLock) -> None:
    """The lock about to be written reads back with rattler, as the environments it was made of."""
    from resolver.tools.conda import LockView

    try:
        _agree(raw, LockView(text=text))
    except ValueError as exc:  # a fault of ours, never written
        raise BadInput(f"the pixi.lock composed here does not read back ({exc})",
                       fix="report this with the pixi.toml and pixi.lock it came from; both are left as they were") \
            from None


def read_lock(path: Path, root: Path, platforms: Iterable[Any] = ()) -> dict[str, list[LockedEnv]]:
    """Every environment of a pixi.lock, per platform, with locations made absolute; platform names
    aligned with ``platforms`` (the manifest's) as pixi aligns them."""
    from resolver.project.pixi_platforms import align

    text, view = _read(path)
    return _locked_envs(view, root, align(view.platforms(), platforms), _fallbacks_in_header(text), _indexes(text))


def locked_envs(existing: ExistingLock, root: Path) -> dict[str, list[LockedEnv]]:
    """:func:`read_lock` of a lock already read (:func:`load_lock`)."""
    return _locked_envs(existing.view, root, existing.renames, existing.fallbacks,
                        {name: env.indexes() for name, env in existing.raw.envs.items()})


def _locked_envs(view: LockView, root: Path, renames: dict[str, str], fallbacks: dict[tuple[str, str], str | None],
                 indexes: dict[str, tuple[str, ...]]) -> dict[str, list[LockedEnv]]:
    lock_platforms = view.platforms()
    result: dict[str, list[LockedEnv]] = {}
    for name in view.environments():
        channels = tuple(absolute_location(c, root) for c in view.channels(name))
        locked = []
        for plat in view.counts(name):
            conda, pypi_entries, sources = view.packages(name, plat, lambda loc: absolute_location(loc, root))
            pypi = tuple(PypiArtifact(p.name, p.version, absolute_location(p.location, root), p.sha256,
                                      p.requires_dist, p.requires_python) for p in pypi_entries)
            python = next((major_minor(r.version) for r in conda if r.name == "python"), None)
            subdir, packages = lock_platforms.get(plat, (plat, ()))
            locked.append(LockedEnv(
                name=name, platform=LockedPlatform(renames.get(plat, plat), subdir, packages), channels=channels,
                conda=conda, pypi=pypi, indexes=indexes.get(name, ()), fallback=(name, plat) in fallbacks,
                python=python or fallbacks.get((name, plat)) or _wheel_python(pypi), sources=sources))
        result[name] = locked
    return result


def _indexes(text: str) -> dict[str, tuple[str, ...]]:
    """Environment -> the PyPI ``indexes`` the lock records for it (rattler reads them but does not say)."""
    from resolver.tools.conda import canonical_lock_text

    try:
        raw = RawLock.parse(text)
    except ValueError:  # laid out otherwise than rattler writes: as rattler would write it
        try:
            raw = RawLock.parse(canonical_lock_text(text))
        except ValueError:
            return {}
    return {name: env.indexes() for name, env in raw.envs.items()}


def replace_platform(env: LockedEnv, platform: LockedPlatform) -> LockedEnv:
    return dataclasses.replace(env, platform=platform)
