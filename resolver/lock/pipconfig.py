"""pip's own configuration (pip.conf, ``PIP_*``) as values: its indexes, wheelhouses and constraints.

uv, the lock's and install's PyPI engine, does not read pip.conf, so they get pip's configuration from
here and hand it to uv as flags (:mod:`resolver.tools.uv`). It is read the way pip reads it (pip's
"Configuration" documentation), without starting pip: the files, in order (later wins) —
``$XDG_CONFIG_DIRS/pip/pip.conf`` (``/etc/xdg``) and ``/etc/pip.conf``; ``~/.pip/pip.conf`` and
``$XDG_CONFIG_HOME/pip/pip.conf`` (``~/.config``); ``<sys.prefix>/pip.conf``; then ``$PIP_CONFIG_FILE``
(set to ``os.devnull``, no file is read at all) — each file's ``[global]`` then ``[install]``
section, then the ``PIP_<KEY>`` environment variables.

>>> parse_sections({"global": {"index-url": "https://pypi.org/simple"}}, {"PIP_FIND_LINKS": "/a /b"})
PipConfig(index_url='https://pypi.org/simple', extra_index_urls=(), find_links=('/a', '/b'), constraints=(), no_index=False)
"""

from __future__ import annotations

import configparser
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

KEYS = ("index-url", "extra-index-url", "find-links", "constraint", "no-index")


@dataclass(frozen=True)
class PipConfig:
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()  # constraint files pip applies to every resolve
    no_index: bool = False

    @property
    def local_folders(self) -> tuple[str, ...]:
        """Every configured source that is a folder of this machine (a wheelhouse or a local index)."""
        out = []
        for value in (*self.find_links, *([self.index_url] if self.index_url else []), *self.extra_index_urls):
            if value.startswith("file://"):
                out.append(re.sub(r"^file://", "", value))
            elif value.startswith("/"):
                out.append(value)
        return tuple(dict.fromkeys(out))


def config_files(environ: Mapping[str, str]) -> list[Path]:
    """pip's configuration files, weakest first."""
    chosen = environ.get("PIP_CONFIG_FILE")
    if chosen == os.devnull:
        return []
    home = Path(environ.get("HOME") or Path.home())
    xdg_dirs = [Path(d) for d in (environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(os.pathsep) if d]
    files = [d / "pip" / "pip.conf" for d in reversed(xdg_dirs)] + [Path("/etc/pip.conf")]
    files += [home / ".pip" / "pip.conf", Path(environ.get("XDG_CONFIG_HOME") or home / ".config") / "pip" / "pip.conf"]
    files += [Path(sys.prefix) / "pip.conf"]
    if chosen:
        files.append(Path(chosen))
    return files


def parse_sections(sections: Mapping[str, Mapping[str, str]], environ: Mapping[str, str]) -> PipConfig:
    values: dict[str, str] = {}
    for section in ("global", "install"):
        for key, value in (sections.get(section) or {}).items():
            if key in KEYS:
                values[key] = value
    for key in KEYS:
        value = environ.get("PIP_" + key.upper().replace("-", "_"))
        if value is not None:
            values[key] = value
    split = lambda key: tuple(v for v in re.split(r"\s+", values.get(key, "").strip()) if v)  # noqa: E731
    return PipConfig(index_url=values.get("index-url") or None, extra_index_urls=split("extra-index-url"),
                     find_links=split("find-links"), constraints=split("constraint"),
                     no_index=values.get("no-index", "").strip().lower() in ("1", "true", "yes", "on"))


def read_pip_config(environ: Mapping[str, str] | None = None) -> PipConfig:
    """pip's configuration on this machine, as pip would apply it to ``pip install``."""
    environ = os.environ if environ is None else environ
    sections: dict[str, dict[str, str]] = {}
    for path in config_files(environ):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue  # pip would stop on a broken file; a lock only needs the sources it can read
        for section in parser.sections():
            sections.setdefault(section, {}).update({k: v for k, v in parser.items(section)})
    return parse_sections(sections, environ)
