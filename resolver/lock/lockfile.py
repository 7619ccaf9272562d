"""pixi.lock (v7) written and read through py-rattler's ``LockFile``, plus the two things it lacks.

py-rattler writes the layout pixi reads; we then post-process its text, deterministically:

* PyPI entries get ``sha256``, ``requires_dist`` and ``requires_python`` (``add_pypi_package`` records
  only name, version and location; ../shared/notes/py-rattler.md §0.4);
* locations inside the project become relative (``./...``), so the lock works on a teammate's
  machine (v7 allows it; rattler then refuses to build records from them, so :func:`read_lock`
  rebuilds the records itself, §0.3).

>>> relativize_line("  - conda: file:///p/r/chan/noarch/a.conda", Path("/p/r"))
'  - conda: ./chan/noarch/a.conda'
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from resolver.errors import BadInput
from resolver.fs import check_regular_file
from resolver.names import check_env_name

LOCK_LIMIT = 256 << 20  # a lock of every CUDA build for three platforms is a few MB


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


@dataclass(frozen=True)
class LockedPlatform:
    name: str  # "linux-64", or "linux-64-cuda12" when the env has its own virtual packages
    subdir: str
    virtual_packages: tuple[str, ...]


@dataclass(frozen=True)
class LockedEnv:
    """One environment on one platform, as locked."""

    name: str
    platform: LockedPlatform
    channels: tuple[str, ...]
    conda: tuple[Any, ...] = ()  # rattler RepoDataRecord, urls absolute
    pypi: tuple[PypiArtifact, ...] = ()
    indexes: tuple[str, ...] = field(default=())
    fallback: bool = False  # no conda python: a virtual environment of the host's Python (no channel answered)
    python: str | None = None  # "3.11": the conda python's, else the wheels' cpXY tag

    @property
    def fallback_note(self) -> str:
        return (f"environment {self.name} ({self.platform.name}) is a fallback: a virtual environment of this "
                f"machine's Python {self.python or ''}, because its conda packages were not solved (no conda channel "
                "answered, or --no-conda); pixi cannot install it until it is locked where a conda channel answers")

    def with_manifest(self, spec) -> "LockedEnv":
        """This entry with the PyPI indexes the manifest names now (the lock records them per environment)."""
        import dataclasses

        pypi = tuple(dataclasses.replace(a, index=spec.package_index(a.name)) for a in self.pypi)
        return dataclasses.replace(self, pypi=pypi, indexes=tuple(spec.pypi_indexes()) if spec.pypi else ())

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.name, "platform": self.platform.name, "subdir": self.platform.subdir,
                "virtual_packages": list(self.platform.virtual_packages), "channels": list(self.channels),
                "conda": [f"{r.name.normalized}-{r.version}-{r.build}" for r in self.conda],
                "pypi": [f"{p.name}=={p.version}" for p in self.pypi]}


FALLBACK_HEADER = "# mamba-resolver: "


def render_lock(envs: list[LockedEnv], root: Path) -> str:
    """``envs`` as pixi.lock v7 text (py-rattler's layout, plus what it cannot write). Same input, same bytes."""
    import tempfile

    from resolver.conda import rattler

    r = rattler()
    from rattler.platform import Subdir

    platforms: dict[str, LockedPlatform] = {}
    for env in envs:
        seen = platforms.setdefault(env.platform.name, env.platform)
        if seen != env.platform:
            raise ValueError(f"platform {env.platform.name} declared twice with different virtual packages")
    lock_platforms = {name: r.LockPlatform(name, Subdir(p.subdir), list(p.virtual_packages))
                      for name, p in sorted(platforms.items())}
    lock = r.LockFile(list(lock_platforms.values()))
    channels_done: set[str] = set()
    extras: dict[str, PypiArtifact] = {}
    for env in sorted(envs, key=lambda e: (e.name, e.platform.name)):
        if env.name not in channels_done:
            lock.set_channels(env.name, [r.LockChannel(c) for c in env.channels])
            channels_done.add(env.name)
        plat = lock_platforms[env.platform.name]
        for record in sorted(env.conda, key=lambda rec: rec.url):
            lock.add_conda_package(env.name, plat, record)
        for art in sorted(env.pypi, key=lambda a: (a.name, a.location)):
            lock.add_pypi_package(env.name, plat, art.name, art.version, art.location)
            extras[art.location] = art
    indexes = {env.name: env.indexes for env in envs if env.indexes}
    header = [f"{FALLBACK_HEADER}{env.fallback_note}" for env in sorted(envs, key=lambda e: (e.name, e.platform.name))
              if env.fallback]
    with tempfile.TemporaryDirectory(prefix="resolver-lock-") as tmp:
        raw = Path(tmp) / "pixi.lock"
        try:
            lock.to_path(str(raw))
        except OSError:
            raise
        except Exception as exc:  # rattler's IoError (disk full, read-only) is not an OSError
            raise BadInput(f"cannot write pixi.lock: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}",
                           fix="free disk space (or make the project folder writable) and lock again") from None
        text = postprocess(raw.read_text(encoding="utf-8"), extras, indexes, root)
    return "".join(f"{line}\n" for line in header) + text


def postprocess(text: str, extras: dict[str, PypiArtifact], indexes: dict[str, tuple[str, ...]], root: Path) -> str:
    """Add what py-rattler does not write: each environment's PyPI ``indexes``, and after each ``- pypi:``
    entry's ``version:`` its sha256, ``index``, ``requires_dist`` and ``requires_python``; and make
    locations inside the project relative."""
    out: list[str] = []
    section = ""
    env_name = None
    current: PypiArtifact | None = None
    for line in text.splitlines():
        if not line.startswith(" ") and line.endswith(":"):
            section = line[:-1]
        elif section == "environments" and line.startswith("  ") and not line.startswith("   ") and line.endswith(":"):
            env_name = line.strip()[:-1]
        elif section == "environments" and line == "    packages:" and indexes.get(env_name):
            out.append("    indexes:")
            out += [f"    - {url}" for url in indexes[env_name]]
        elif section == "packages" and line.startswith("- "):
            current = extras.get(_unquote_yaml(line.split(": ", 1)[1])) if line.startswith("- pypi: ") else None
        if section == "packages" and line.startswith("  channel: ") and \
                relative_location(_unquote_yaml(line.split(": ", 1)[1]), root) is not None:
            continue  # py-rattler names a folder channel per package; its URL says it, relative, already
        out.append(relativize_line(line, root))
        if section == "packages" and current is not None and line.startswith("  version: "):
            out.append(f"  sha256: {current.sha256}")
            if current.index:
                out.append(f"  index: {current.index}")
            if current.requires_dist:
                out.append("  requires_dist:")
                out += [f"  - {json.dumps(req)}" for req in current.requires_dist]
            if current.requires_python:
                out.append(f"  requires_python: {json.dumps(current.requires_python)}")
            current = None
    return "\n".join(out) + "\n"


_LOCATION_LINE = re.compile(r"^(\s*-?\s*(?:conda|pypi|url): )(.*)$")


def relativize_line(line: str, root: Path) -> str:
    """A location line whose target lies inside ``root`` rewritten as ``./relative``."""
    match = _LOCATION_LINE.match(line)
    if not match:
        return line
    value = _unquote_yaml(match.group(2))
    rel = relative_location(value, root)
    return line if rel is None else match.group(1) + rel


def relative_location(value: str, root: Path) -> str | None:
    root_text = str(root.resolve()).rstrip("/") + "/"
    if value.startswith("file://"):
        candidate = unquote(urlsplit(value).path)
    elif value.startswith("/"):
        candidate = value
    else:
        return None
    if not candidate.startswith(root_text):
        return None
    return "./" + quote(candidate[len(root_text):], safe="/+-_.~")


def absolute_location(value: str, root: Path) -> str:
    """A lock location made absolute (a URL): ``./x`` is taken from ``root``; plain paths become file URLs."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", value):
        return value
    path = Path(unquote(value))
    return (path if path.is_absolute() else (root / path)).resolve().as_uri() + ("/" if value.endswith("/") else "")


def _unquote_yaml(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return json.loads(value) if value[0] == '"' else value[1:-1].replace("''", "'")
    return value


def _wheel_python(pypi: list[PypiArtifact]) -> str | None:
    """The one ``cpXY`` tag the wheels share (``3.11``), else None."""
    found = sorted({f"{m.group(1)}.{m.group(2)}" for a in pypi for m in [re.search(r"-cp(\d)(\d+)-", a.file_name)] if m})
    return found[0] if len(found) == 1 else None


def _fallbacks_in_header(path: Path) -> dict[tuple[str, str], str | None]:
    """(environment, platform) → Python X.Y of the pairs the lock's header marks as fallbacks
    (:attr:`LockedEnv.fallback_note` writes them)."""
    found: dict[tuple[str, str], str | None] = {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.startswith("#"):
                break
            match = re.match(re.escape(FALLBACK_HEADER) + r"environment (\S+) \((\S+)\) is a fallback: .*?"
                             r"Python (\d+\.\d+)?", line)
            if match:
                found[(match.group(1), match.group(2))] = match.group(3)
    return found


def _indexes_in_text(path: Path) -> dict[str, tuple[str, ...]]:
    """Environment → the PyPI ``indexes`` pixi.lock records for it (py-rattler reads but does not expose them)."""
    found: dict[str, tuple[str, ...]] = {}
    section, env_name, listing = "", None, False
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if line and not line.startswith((" ", "#", "-")):
                section, env_name, listing = line.split(":", 1)[0], None, False
            elif section == "environments" and re.fullmatch(r"  [^\s-][^:]*:", line):
                env_name, listing = _unquote_yaml(line.strip()[:-1]), False
            elif env_name is not None and line == "    indexes:":
                listing = True
                found[env_name] = ()
            elif listing and line.startswith("    - "):
                found[env_name] += (_unquote_yaml(line[len("    - "):]),)
            else:
                listing = False
    return found


def read_lock(path: Path, root: Path) -> dict[str, list[LockedEnv]]:
    """Every environment of a pixi.lock, per platform, with locations made absolute."""
    from resolver.conda import rattler

    r = rattler()
    if not path.is_file():
        if os.path.lexists(path):  # a folder, FIFO or device is not "missing": and never read
            check_regular_file(path, limit=LOCK_LIMIT, what="the lock file",
                               fix="put the project's pixi.lock there (from version control, or `python -m resolver lock`)")
        raise BadInput(f"{path} does not exist", fix="run `python -m resolver lock` first")
    check_regular_file(path, limit=LOCK_LIMIT, what="the lock file", fix="restore pixi.lock from version control")
    try:
        lock = r.LockFile.from_path(str(path))
    except Exception as exc:  # rattler.exceptions.LockFileError and parse errors
        raise BadInput(f"{path} cannot be read as a pixi.lock ({str(exc).splitlines()[0][:200]})",
                       fix="restore it from version control or run `python -m resolver lock` again") from None
    fallbacks = _fallbacks_in_header(path)
    indexes = _indexes_in_text(path)
    result: dict[str, list[LockedEnv]] = {}
    for name, env in lock.environments():
        check_env_name(name, where=str(path),  # names become folders: .resolver/envs/<name>
                       fix="restore pixi.lock from version control (or lock again); environment names are "
                           "lowercase letters, digits and '-'")
        channels = tuple(absolute_location(str(c.url if hasattr(c, "url") else c), root) for c in env.channels())
        locked = []
        for plat in env.platforms():
            conda, pypi = [], []
            for pkg in env.packages(plat) or []:
                location = absolute_location(str(pkg.location), root)
                if isinstance(pkg, r.PypiLockedPackage):
                    hashes = pkg.hashes
                    sha = getattr(hashes, "sha256", None) if hashes is not None else None
                    pypi.append(PypiArtifact(
                        name=str(pkg.name), version=str(pkg.version), location=location,
                        sha256=sha.hex() if isinstance(sha, (bytes, bytearray)) else (sha or ""),
                        requires_dist=tuple(str(x) for x in (pkg.requires_dist or ())),
                        requires_python=str(pkg.requires_python) if pkg.requires_python else None))
                else:
                    file_name = unquote(location.rsplit("/", 1)[1])
                    channel = location.rsplit("/", 2)[0] + "/"
                    conda.append(r.RepoDataRecord(pkg.package_record, file_name=file_name, url=location,
                                                  channel=channel))
            python = next((".".join(str(rec.version).split(".")[:2]) for rec in conda
                           if rec.name.normalized == "python"), None)
            locked.append(LockedEnv(
                name=name, platform=LockedPlatform(plat.name, str(plat.subdir),
                                                   tuple(str(v) for v in plat.virtual_packages)),
                channels=channels, conda=tuple(conda), pypi=tuple(pypi), indexes=indexes.get(name, ()),
                fallback=(name, plat.name) in fallbacks,
                python=python or fallbacks.get((name, plat.name)) or _wheel_python(pypi)))
        result[name] = locked
    return result
