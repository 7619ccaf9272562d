"""The shape of a pixi.toml, checked before anything reads it: a shared manifest is untrusted input.

:class:`resolver.project.manifest.Manifest` reads tables and lists without asking what they are; this
module asks first, so a value of the wrong type (``channels = 5``, ``environments = "cpu"``) is one
:class:`BadInput` sentence naming the key (exit 3), never an AttributeError (exit 70). It also holds
the names that become paths or command-line arguments to their rules (:mod:`resolver.core.names`):
environment names (folders under ``.resolver/envs``) and PyPI dependency names and versions (pip or
uv arguments).

>>> check_manifest({"workspace": {"name": "x", "channels": ["conda-forge"], "platforms": ["linux-64"]}})
>>> check_manifest({"workspace": {"channels": 5}}, "pixi.toml")
Traceback (most recent call last):
...
resolver.core.errors.BadInput: pixi.toml: workspace.channels must be a list of channel names, not an integer. Fix: correct workspace.channels in pixi.toml (pixi's manifest reference lists each key's type).
"""

from __future__ import annotations

import re
from typing import Any

from resolver.core.errors import BadInput
from resolver.core.names import (
    ARCH_RULE,
    channel_problem,
    check_env_name,
    check_pypi_name,
    check_version_spec,
    control_characters,
    is_arch_name,
    printable,
)
from resolver.core.platforms import PLATFORMS

_KINDS = {str: "a string", bool: "true or false", int: "an integer", float: "a number", list: "a list",
          dict: "a table"}


class _Check:
    def __init__(self, where: str) -> None:
        self.where = where

    def bad(self, key: str, want: str, value: Any) -> BadInput:
        have = _KINDS.get(type(value), type(value).__name__)
        return BadInput(f"{self.where}: {key} must be {want}, not {have}",
                        fix=f"correct {key} in {self.where} (pixi's manifest reference lists each key's type)")

    def table(self, value: Any, key: str, *, optional: bool = True) -> dict:
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            raise self.bad(key, "a table", value)
        return value

    def strings(self, value: Any, key: str, want: str = "a list of strings") -> list:
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(key, want, value)
        return value

    def plain(self, value: Any, key: str, fix: str) -> None:
        """A string value that generated files may carry: no control characters (a line break among them)."""
        controls = control_characters(value) if isinstance(value, str) else []
        if controls:
            raise BadInput(f"{self.where}: {key} {printable(repr(value))} holds control characters "
                           f"({', '.join(dict.fromkeys(controls))})", fix=f"remove them from {key} in {self.where}, or {fix}")

    def string(self, value: Any, key: str) -> None:
        if value is not None and not isinstance(value, str):
            raise self.bad(key, "a string", value)

    def named_list(self, value: Any, key: str, names: tuple[str, ...], want: str) -> None:
        """A list whose items are strings or tables naming one of ``names`` as a string."""
        if value is None:
            return
        if not isinstance(value, list):
            raise self.bad(key, want, value)
        for item in value:
            if isinstance(item, str):
                continue
            if not isinstance(item, dict) or not any(isinstance(item.get(n), str) for n in names):
                raise self.bad(f"each entry of {key}", f"a string or a table with {' or '.join(names)}", item)

    def layer(self, layer: dict, key: str) -> None:
        """What :meth:`Manifest.environment` reads of the top level, the workspace or a feature."""
        prefix = f"{key}." if key else ""
        self.named_list(layer.get("channels"), f"{prefix}channels", ("channel",), "a list of channel names")
        self.named_list(layer.get("platforms"), f"{prefix}platforms", ("name", "platform"), "a list of platforms")
        self.dependencies(layer, prefix)
        options = self.table(layer.get("pypi-options"), f"{prefix}pypi-options")
        self.string(options.get("index-url"), f"{prefix}pypi-options.index-url")
        self.strings(options.get("extra-index-urls"), f"{prefix}pypi-options.extra-index-urls", "a list of URLs")
        links = options.get("find-links")
        if links is not None and (not isinstance(links, list) or not all(
                isinstance(fl, dict) and any(isinstance(fl.get(k), str) for k in ("path", "url")) for fl in links)):
            raise self.bad(f"{prefix}pypi-options.find-links", "a list of tables with path or url", links)
        for platform, table in self.table(layer.get("target"), f"{prefix}target").items():
            self.dependencies(self.table(table, f"{prefix}target.{platform}", optional=False),
                              f"{prefix}target.{platform}.")

    def dependencies(self, table: dict, prefix: str) -> None:
        for name, spec in self.table(table.get("dependencies"), f"{prefix}dependencies").items():
            if not isinstance(spec, (str, dict)):
                raise self.bad(f"{prefix}dependencies.{name}", "a version string or a table", spec)
            if isinstance(spec, dict):
                self.string(spec.get("version"), f"{prefix}dependencies.{name}.version")
                self.string(spec.get("build"), f"{prefix}dependencies.{name}.build")
        where = f"{self.where} [{prefix}pypi-dependencies]"
        for name, spec in self.table(table.get("pypi-dependencies"), f"{prefix}pypi-dependencies").items():
            check_pypi_name(name, where=where)  # reaches pip/uv as an argument: never an option
            if isinstance(spec, str):
                check_version_spec(spec, name=name, where=where)
            elif isinstance(spec, dict):
                if "version" in spec:
                    if not isinstance(spec["version"], str):
                        raise self.bad(f"{prefix}pypi-dependencies.{name}.version", "a string", spec["version"])
                    check_version_spec(spec["version"], name=name, where=where)
                self.string(spec.get("index"), f"{prefix}pypi-dependencies.{name}.index")
                for extra in self.strings(spec.get("extras"), f"{prefix}pypi-dependencies.{name}.extras"):
                    check_pypi_name(extra, where=f"{where} {printable(name)} extras")
            else:
                raise self.bad(f"{prefix}pypi-dependencies.{name}", "a version string or a table", spec)


def check_manifest(data: Any, where: str = "pixi.toml") -> None:
    """Raise one :class:`BadInput` for the first part of ``data`` (a parsed pixi.toml, plain Python
    values) whose type or name the resolver cannot use; return None when all of it is usable."""
    check = _Check(where)
    check.table(data, "the file", optional=False)
    workspace_key = "workspace" if "workspace" in data else "project"
    workspace = check.table(data.get(workspace_key), f"[{workspace_key}]")
    check.layer(workspace, workspace_key)
    check.layer(data, "")
    for name, feature in check.table(data.get("feature"), "[feature]").items():
        check.layer(check.table(feature, f"feature.{name}", optional=False), f"feature.{name}")
    for name, entry in check.table(data.get("environments"), "[environments]").items():
        check_env_name(name, where=f"{where} [environments]",
                       fix=f"rename environment {printable(repr(name))} in {where} (e.g. 'cuda12')")
        if isinstance(entry, list):
            check.strings(entry, f"environments.{name}", "a list of feature names or a table")
        elif isinstance(entry, dict):
            check.strings(entry.get("features"), f"environments.{name}.features", "a list of feature names")
            if "no-default-feature" in entry and not isinstance(entry["no-default-feature"], bool):
                raise check.bad(f"environments.{name}.no-default-feature", "true or false", entry["no-default-feature"])
            check.string(entry.get("solve-group"), f"environments.{name}.solve-group")
        else:
            raise check.bad(f"environments.{name}", "a list of feature names or a table", entry)
    tool = check.table(data.get("tool"), "[tool]")
    resolver = check.table(tool.get("resolver"), "[tool.resolver]")
    for key, value in resolver.items():
        if key == "mirrors":
            mirrors = check.table(value, "tool.resolver.mirrors")
            if not all(isinstance(v, str) for v in mirrors.values()):
                raise check.bad("tool.resolver.mirrors", "a table of URL prefix = replacement strings", mirrors)
        elif key == "fleet":
            _check_fleet(check, value)
        elif key == "upgrade":
            _check_upgrade(check, value)
        elif not isinstance(value, str):
            check.strings(value, f"tool.resolver.{key}", "a string or a list of strings")


def _check_upgrade(check, value) -> None:
    """``[tool.resolver.upgrade]`` (written by ``upgrade``): environment names, and per environment a table of
    strings (resolver.project.upgrade_record reads the rest)."""
    fix = "correct [tool.resolver.upgrade] in pixi.toml (docs/upgrade.md)"
    table = check.table(value, "tool.resolver.upgrade")
    for role in ("default", "candidate", "previous"):
        check.string(table.get(role), f"tool.resolver.upgrade.{role}")
        if table.get(role) is not None:
            check_env_name(table[role], where=f"[tool.resolver.upgrade] {role}", fix=fix)
    for name, entry in check.table(table.get("environments"), "tool.resolver.upgrade.environments").items():
        check_env_name(name, where="[tool.resolver.upgrade.environments]", fix=fix)
        for key, item in check.table(entry, f"tool.resolver.upgrade.environments.{name}").items():
            check.string(item, f"tool.resolver.upgrade.environments.{name}.{key}")


FLEET_FIX = "lock the fleet again (`python -m resolver lock --fleet DIR`)"
# what `lock --fleet` writes for each class: ``build --matrix`` carries these values into CI YAML and a shell
# script, so each is checked here, where pixi.toml is read, against the values it can take
_CLASS_CHOICES = {"backend": ("cpu", "cuda", "rocm"), "strategy": ("build", "prebuilt", "none"),
                  "toolkit-source": ("", "system", "environment", "target", "missing")}
_TOOLKIT = re.compile(r"(?:nvcc|hipcc) [0-9]{1,3}(?:\.[0-9]{1,4}){0,2}")
_NODE = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]*")  # resolver.fleet.nodes.node_name's names


def _check_fleet(check, value) -> None:
    """``[tool.resolver.fleet]`` (written by ``lock --fleet``): a kernel-channel string and one table of strings
    and lists of strings per class (and its node count), each named as an environment is. What ``build --matrix``
    writes into generated files is checked for what it can be: the kernel channel a URL or folder
    (:func:`resolver.core.names.channel_problem`), each class's architectures, platform, backend, toolkit and
    strategy one of their known forms; no string anywhere in the table holds a control character."""
    fleet = check.table(value, "tool.resolver.fleet")
    for key in ("kernel-channel", "target", "python", "node-list"):
        check.string(fleet.get(key), f"tool.resolver.fleet.{key}")
        if key != "kernel-channel":  # checked as a channel below
            check.plain(fleet.get(key), f"tool.resolver.fleet.{key}", FLEET_FIX)
    channel = fleet.get("kernel-channel")
    if channel is not None:
        problem = channel_problem(channel)
        if problem:
            raise BadInput(f"{check.where}: tool.resolver.fleet.kernel-channel {printable(repr(channel))} {problem}",
                           fix=f"set it to the channel's http(s):// URL or folder (e.g. "
                               f"\"https://kernels.example.org/mamba/\") in {check.where}, or remove it")
    for name, entry in check.table(fleet.get("classes"), "tool.resolver.fleet.classes").items():
        check_env_name(name, where="[tool.resolver.fleet.classes]", fix=FLEET_FIX)
        for key, item in check.table(entry, f"tool.resolver.fleet.classes.{name}").items():
            field = f"tool.resolver.fleet.classes.{name}.{key}"
            if key == "node-count":
                if isinstance(item, bool) or not isinstance(item, int) or item < 0:
                    raise check.bad(field, "a number of nodes", item)
                continue
            if not isinstance(item, str):
                check.strings(item, field, "a string or a list of strings")
            for text in (item if isinstance(item, list) else [item]):
                check.plain(text, field, FLEET_FIX)
            _check_class_value(check, field, key, item)


def check_fleet(value: Any, where: str = "pixi.toml") -> None:
    """``[tool.resolver.fleet]`` alone, as :func:`check_manifest` checks it (None: there is none)."""
    if value is not None:
        _check_fleet(_Check(where), value)


def _check_class_value(check, field: str, key: str, item) -> None:
    """One value of a class's table, against the forms ``lock --fleet`` writes (one sentence naming it otherwise)."""
    def refuse(want: str, shown) -> BadInput:
        return BadInput(f"{check.where}: {field} {printable(repr(shown))} is not {want}",
                        fix=f"correct {field} in {check.where}, or {FLEET_FIX}")

    if key == "archs":
        if not isinstance(item, list):
            raise check.bad(field, "a list of architectures", item)
        for arch in item:
            if not is_arch_name(arch):
                raise refuse(ARCH_RULE, arch)
    elif key == "nodes":
        for node in (item if isinstance(item, list) else [item]):
            if not _NODE.fullmatch(node):
                raise refuse("a node's name (letters, digits, '.', '_' and '-')", node)
    elif key in _CLASS_CHOICES:
        if item not in _CLASS_CHOICES[key]:
            choices = ", ".join(repr(c) for c in _CLASS_CHOICES[key] if c)
            raise refuse(f"one of {choices}", item)
    elif key == "platform":
        if item not in PLATFORMS:
            raise refuse("a conda platform (linux-64, linux-aarch64, osx-arm64, …)", item)
    elif key == "toolkit":
        if item != "" and not (isinstance(item, str) and _TOOLKIT.fullmatch(item)):
            raise refuse("a compiler and its version (e.g. \"nvcc 12.6\" or \"hipcc 6.2\")", item)
