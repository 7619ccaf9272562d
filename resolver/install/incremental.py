"""Installing only what changed: an installed environment against a new lock, artefact by artefact.

Install records, in the environment's ready marker, every artefact it put there (``artifacts``: kind,
name, version and sha256 of each conda package and wheel). When the lock changes, the difference is
what is installed: a wheel whose sha256 is the same stays, wherever the lock now says it lives (the
sha256 decides, not the URL); a new or changed wheel is installed, a wheel the lock no longer holds
is uninstalled. torch is not touched when only a small package changes. The conda part changing is
a rebuild of the whole environment (the linking of conda packages is one transaction).

Packages installed by hand (in the environment, in no record of install's, owned by no conda
package: :mod:`resolver.install.drift`) are kept and named; with ``exact`` they are uninstalled and
each named (``- tabulate (installed by hand)``).

>>> old = ("pypi torch 2.13.0 " + "a" * 64, "pypi six 1.16.0 " + "b" * 64)
>>> new = ("pypi torch 2.13.0 " + "a" * 64, "pypi six 1.17.0 " + "c" * 64, "pypi tabulate 0.9.0 " + "d" * 64)
>>> d = diff(old, new)
>>> d.added, d.changed, d.removed, d.conda_changed
(('tabulate',), ('six',), (), False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from resolver.core.names import canonical_name

if TYPE_CHECKING:
    from resolver.lock.lockfile import LockedEnv


def artifact_lines(env: LockedEnv) -> tuple[str, ...]:
    """What the ready marker records of each locked artefact: ``KIND NAME VERSION SHA256`` (a conda package
    without a sha256 by its md5), sorted."""
    conda = [f"conda {r.name} {r.version}-{r.build} {r.sha256 or r.md5 or ''}".rstrip() for r in env.conda]
    pypi = [f"pypi {canonical_name(a.name)} {a.version} {a.sha256}" for a in env.pypi]
    return tuple(sorted([*conda, *pypi]))


def _parsed(lines: Iterable[str]) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """(conda, pypi): name -> (version, sha256) of the marker's lines."""
    conda: dict[str, tuple[str, str]] = {}
    pypi: dict[str, tuple[str, str]] = {}
    for line in lines:
        parts = str(line).split(" ")
        if len(parts) < 3:
            continue
        kind, name, version = parts[0], parts[1], parts[2]
        digest = parts[3] if len(parts) > 3 else ""
        (conda if kind == "conda" else pypi)[name] = (version, digest)
    return conda, pypi


@dataclass(frozen=True)
class Difference:
    """What installing a new lock over an installed environment changes."""

    added: tuple[str, ...]  # wheels the old install did not have
    changed: tuple[str, ...]  # wheels of another sha256 now
    removed: tuple[str, ...]  # wheels the lock no longer holds
    conda_changed: bool  # any conda package added, removed or of another sha256: a rebuild

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed or self.conda_changed)


def diff(old: Iterable[str], new: Iterable[str]) -> Difference:
    """The difference between the artefacts an environment was installed with (``old``, its marker's lines)
    and those of the new lock (``new``, :func:`artifact_lines`)."""
    old_conda, old_pypi = _parsed(old)
    new_conda, new_pypi = _parsed(new)
    conda_changed = {n: d for n, (_, d) in old_conda.items()} != {n: d for n, (_, d) in new_conda.items()}
    added = tuple(sorted(set(new_pypi) - set(old_pypi)))
    removed = tuple(sorted(set(old_pypi) - set(new_pypi)))
    changed = tuple(sorted(n for n in set(old_pypi) & set(new_pypi) if old_pypi[n][1] != new_pypi[n][1]))
    return Difference(added, changed, removed, conda_changed)


def verify_inputs(env: LockedEnv, roots: Iterable[str]) -> str:
    """The fingerprint of what verify checks in ``env``: every conda package and the wheels of ``roots``
    (torch and what verify loads a model with) with everything they require, by sha256. A wheel nothing
    of theirs requires (a package the user added) is not part of it: adding one does not verify again."""
    from resolver.core.fingerprint import fingerprint

    wheels = {canonical_name(a.name): a for a in env.pypi}
    todo = [canonical_name(r) for r in roots]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in wheels:
            continue
        seen.add(name)
        todo.extend(_required_names(wheels[name].requires_dist))
    lines = [f"conda {r.name} {r.sha256 or r.md5}" for r in env.conda]
    lines += [f"pypi {name} {wheels[name].sha256}" for name in seen]
    return fingerprint("\n".join(sorted(lines)).encode("utf-8"))


def _required_names(requires: Iterable[str]) -> list[str]:
    """The names a wheel's ``Requires-Dist`` lines require, whatever their markers (a superset is safe)."""
    import re

    names = []
    for line in requires:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", str(line))
        if match:
            names.append(canonical_name(match.group(1)))
    return names
