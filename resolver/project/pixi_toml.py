"""pixi.toml read: once per run, bounded, into plain data with every ``[tool.resolver.*]`` table as a typed view.

Every reader of the project's pixi.toml (sources, the default environment, the stored plans, install's
folders, the fleet) asks :func:`read_pixi_toml`, which reads the file once per run (a later ask for the
same unchanged file is answered from memory) through the one TOML reader (:mod:`resolver.core.toml`,
TOML 1.1 as pixi reads it). The file is untrusted: at most 4 MiB and 20,000 lines, and its
``[tool.resolver]`` at most 50,000 values; a larger one is one sentence (exit 3). What is written back
goes through :class:`resolver.project.manifest.Manifest` (tomlkit, comments kept) and its ``save``.

``[tool.resolver]`` (pixi ignores ``[tool]``) holds, each read through :class:`ResolverTables`:

* the source settings (``conda-channels``, ``torch-index``, ``extra-index-urls``, ``find-links``,
  ``mirrors``: :mod:`resolver.project.sources`), also read from pyproject.toml (:func:`read_tool_tables`);
* ``[tool.resolver.upgrade]``, the default environment and its upgrades (:mod:`resolver.project.upgrade_record`);
* ``[tool.resolver.fleet]``, the fleet's request and classes (:mod:`resolver.fleet.record`).

>>> t = ResolverTables.of({"tool": {"resolver": {"find-links": "./wheels", "upgrade": {"default": "cpu"}}}})
>>> t.sources, t.upgrade.default
({'find-links': './wheels'}, 'cpu')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from resolver.core.errors import BadInput
from resolver.project.paths import LOCK_LIMIT, MANIFEST_LIMIT

if TYPE_CHECKING:
    from resolver.project.paths import ProjectPaths
    from resolver.project.upgrade_record import Choice, UpgradeRecord

# tomlkit reads some 75 kB/s, and a run of blank lines slower still (400 kB of them: 15 s): a shared pixi.toml
# of more lines than any workspace has (a fleet's classes are a few hundred) is refused before it is parsed
MANIFEST_LINES = 20_000
# a fleet of a thousand classes writes some 30,000 values (nodes past NODE_LIST_MAX go to a file beside it)
TOOL_VALUES = 50_000
MANIFEST_FIX = "fix pixi.toml (its layout is pixi's: https://pixi.sh/latest/reference/pixi_manifest/)"


def read_manifest_text(path: Path) -> str:
    """The text of the pixi.toml at ``path``: a regular file, bounded in bytes and lines, UTF-8."""
    from resolver.core.fs import read_bytes_bounded

    try:  # bounded: never a FIFO, a device or a file of gigabytes
        text = read_bytes_bounded(path, limit=MANIFEST_LIMIT, what="the manifest").decode("utf-8")
    except BadInput as exc:
        if "does not exist" in exc.message:
            raise BadInput(f"{path} does not exist",
                           fix="run the command in the project folder (the one holding pixi.toml)") from None
        raise
    except UnicodeDecodeError as exc:
        raise BadInput(f"cannot read {path}: {exc}", fix=f"check the permissions and encoding of {path.name}") from None
    check_lines(text, path)
    return text


def check_lines(text: str, where: Path | str | None) -> None:
    if text.count("\n") > MANIFEST_LINES:
        where = where or "pixi.toml"
        raise BadInput(f"{where} has more than {MANIFEST_LINES} lines, more than a workspace's manifest has",
                       fix=f"restore {where} from version control")


@dataclass(frozen=True)
class FleetTable:
    """``[tool.resolver.fleet]``: what every node plans with, where nodes take kernels, the classes."""

    target: str = "auto"
    python: str | None = None
    kernel_channel: str | None = None
    classes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # name -> its table, as written

    @classmethod
    def of(cls, table: Any) -> "FleetTable":
        if not isinstance(table, Mapping):
            return cls()
        classes = table.get("classes", {})
        python = table.get("python")
        channel = table.get("kernel-channel")
        return cls(str(table.get("target") or "auto"), str(python) if python else None,
                   str(channel) if channel else None,
                   {str(name): entry for name, entry in classes.items() if isinstance(entry, Mapping)}
                   if isinstance(classes, Mapping) else {})


@dataclass(frozen=True)
class ResolverTables:
    """``[tool.resolver]`` of a parsed TOML document (pixi.toml or pyproject.toml), each table as its own type."""

    table: Mapping[str, Any] = field(default_factory=dict)
    where: str = "pixi.toml"

    @classmethod
    def of(cls, doc: Mapping[str, Any], where: str = "pixi.toml") -> "ResolverTables":
        tool = doc.get("tool", {})
        table = tool.get("resolver", {}) if isinstance(tool, Mapping) else None
        if not isinstance(table, Mapping):
            raise BadInput(f"[tool.resolver] in {where} is not a table", fix="make it a TOML table")
        if _values_over(table, TOOL_VALUES):
            raise BadInput(f"[tool.resolver] in {where} holds more than {TOOL_VALUES} values, more than a project's "
                           "settings and its fleet's classes have",
                           fix=f"restore {where} from version control, or lock the fleet again (`python -m resolver "
                               "lock --fleet DIR`)")
        return cls(table, where)

    @property
    def sources(self) -> dict[str, Any]:
        """The source settings as written: every key but the tables of their own (upgrade, fleet); ``mirrors``
        is the one setting that is a table."""
        return {str(k): v for k, v in self.table.items()
                if k not in ("upgrade", "fleet") and (not isinstance(v, Mapping) or k == "mirrors")}

    @property
    def upgrade(self) -> UpgradeRecord:
        from resolver.project.upgrade_record import UpgradeRecord

        return UpgradeRecord.from_table(self.table.get("upgrade"))

    @property
    def fleet(self) -> FleetTable:
        """The fleet's table, its values checked first (whoever reads it: they reach generated CI files)."""
        from resolver.project.manifest_shape import check_fleet

        check_fleet(self.table.get("fleet"), self.where)
        return FleetTable.of(self.table.get("fleet"))


@dataclass(frozen=True)
class PixiToml:
    """A project's pixi.toml as plain data (read-only: shared by every reader in this run)."""

    path: Path
    data: Mapping[str, Any]

    @property
    def tool(self) -> ResolverTables:
        return ResolverTables.of(self.data, str(self.path))

    def environment_names(self) -> list[str]:
        return environment_names(self.data)


def environment_names(doc: Mapping[str, Any]) -> list[str]:
    """Every environment pixi sees: the declared ones and ``default`` (always there)."""
    environments = doc.get("environments", {})
    return sorted({"default", *(str(k) for k in (environments.keys() if isinstance(environments, Mapping) else ()))})


_READ: dict[str, tuple[str, dict[str, Any]]] = {}  # path -> (its text, its data): the last read of each file


def read_pixi_toml(path: Path, *, whole: bool = True) -> PixiToml:
    """The pixi.toml at ``path``, parsed once per run for as long as the file is unchanged. ``whole``: the shape
    of every table is checked (:mod:`resolver.project.manifest_shape`), as reading environments needs; without
    it only the ``[tool.resolver]`` views check theirs (what install asks of a project, which needs the lock)."""
    data = _parsed(path)
    if whole:
        from resolver.project.manifest_shape import check_manifest

        check_manifest(data, str(path))
    return PixiToml(path, data)


def read_tool_tables(path: Path) -> ResolverTables:
    """``[tool.resolver]`` of another TOML file of the project (pyproject.toml); empty when there is none."""
    if not path.is_file():
        return ResolverTables()
    return ResolverTables.of(_parsed(path), str(path))


def _parsed(path: Path) -> dict[str, Any]:
    """The data of the TOML file at ``path``, parsed again only when its text changed (the text is read each
    time: a file rewritten within one clock tick may keep its size and time, not its text)."""
    from resolver.core.toml import parse_toml

    text = read_manifest_text(path)
    known = _READ.get(str(path))
    if known is not None and known[0] == text:
        return known[1]
    data = parse_toml(text, what=str(path), fix=f"fix the TOML syntax of {path.name}")
    _READ[str(path)] = (text, data)
    while len(_READ) > 8:  # a run reads one project's few files; a test session many projects
        _READ.pop(next(iter(_READ)))
    return data


def _values_over(table: Mapping[str, Any], limit: int) -> bool:
    count, stack = 0, [table]
    while stack:
        item = stack.pop()
        children = list(item.values()) if isinstance(item, Mapping) else item if isinstance(item, list) else None
        if children is None:
            count += 1
            if count > limit:
                return True
        else:
            stack.extend(children)
    return False


# -------------------------------------------------------------------------- the default environment
def read_upgrade_record(project: ProjectPaths) -> UpgradeRecord:
    """``[tool.resolver.upgrade]`` of the project's pixi.toml (empty when there is no pixi.toml)."""
    if not project.manifest.is_file():
        from resolver.project.upgrade_record import UpgradeRecord

        return UpgradeRecord()
    return read_pixi_toml(project.manifest, whole=False).tool.upgrade


def default_environment(project: ProjectPaths) -> str | None:
    """The environment pixi.toml names as the project's default (None: none is named, or pixi.toml cannot be
    read as TOML, which the commands that read the rest of it report). A malformed record is one BadInput."""
    if not project.manifest.is_file():
        return None
    try:
        data = _parsed(project.manifest)
    except BadInput:
        return None
    return ResolverTables.of(data, str(project.manifest)).upgrade.default


def default_choice(project: ProjectPaths) -> Choice | None:
    """The default environment and the request that plans it, when pixi.toml records both."""
    record = read_upgrade_record(project)
    return record.choice(record.default)


def check_environment_name(project: ProjectPaths, name: str | None) -> None:
    """``--env/-e NAME`` names an environment of the project: one pixi.toml declares, or one installed here.
    Otherwise one sentence naming the ones pixi.toml has (exit 2), for every command that takes the flag.
    Nothing is said when there is no readable pixi.toml (the command itself reports that)."""
    if name is None or not project.manifest.is_file():
        return
    try:
        data = _parsed(project.manifest)
    except BadInput:
        return
    known = environment_names(data)
    if name in known or (project.env(name) / "conda-meta").is_dir() or (project.env(name) / "pyvenv.cfg").is_file():
        return
    locked = _locked_names(project.lockfile)
    if locked is None or name in locked:  # install works from pixi.lock alone; a broken one is its to say
        return
    from resolver.core.errors import UsageError

    declared = [n for n in known if n != "default"] or known
    extra = [n for n in locked if n not in known]
    raise UsageError(f"no environment '{name}'; pixi.toml has: {', '.join(declared)}"
                     + (f" (and pixi.lock: {', '.join(extra)})" if extra else ""),
                     fix=f"use -e {declared[0]}" + (f" (or one of {', '.join(declared[1:] + extra)})"
                                                    if declared[1:] + extra else "")
                         + ", or add an environment with `python -m resolver lock --target cpu`")


def _locked_names(lockfile: Path) -> list[str] | None:
    """The environments pixi.lock names (its ``environments:`` keys, read as text: no lock parser for a
    refusal); none when there is no pixi.lock; None when it is there but unreadable or holds no
    ``environments:`` block (the command that reads it says what is wrong with it, which matters more
    than the name)."""
    import re

    from resolver.core.fs import read_bytes_bounded

    if not lockfile.exists() and not lockfile.is_symlink():
        return []
    try:
        text = read_bytes_bounded(lockfile, limit=LOCK_LIMIT, what="the lock file").decode("utf-8", "replace")
    except (BadInput, OSError):
        return None
    block = re.search(r"^environments:\n((?:[ \t].*\n|\n)*)", text, flags=re.M)
    return sorted(set(re.findall(r"^  ([A-Za-z0-9_.\-]+):\s*$", block.group(1), flags=re.M))) if block else None
