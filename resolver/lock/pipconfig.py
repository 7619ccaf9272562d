"""pip's own configuration (pip.conf, ``PIP_*``) as values: its indexes and wheelhouses.

The lock honours pip's configuration by driving pip itself; install and uv do not read pip.conf, so
they get it from here: local indexes and wheelhouses are mirrors install may take a locked file from
(by name, checked by sha256), and uv receives them as flags.

>>> parse_config_list("global.index-url='https://pypi.org/simple'\\n:env:.find-links='/a /b'\\n")
PipConfig(index_url='https://pypi.org/simple', extra_index_urls=(), find_links=('/a', '/b'))
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

_LINE = re.compile(r"^(?P<scope>[^.=]*)\.(?P<key>[a-z-]+)='(?P<value>.*)'$")


@dataclass(frozen=True)
class PipConfig:
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()

    @property
    def local_folders(self) -> tuple[str, ...]:
        """Every configured source that is a folder of this machine (a wheelhouse or a local index)."""
        out = []
        for value in (*self.find_links, *( [self.index_url] if self.index_url else []), *self.extra_index_urls):
            if value.startswith("file://"):
                out.append(re.sub(r"^file://", "", value))
            elif value.startswith("/"):
                out.append(value)
        return tuple(dict.fromkeys(out))


def parse_config_list(text: str) -> PipConfig:
    """``pip config list`` output: ``scope.key='value'`` lines; later scopes (env) win, as in pip."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if match:
            values[match.group("key")] = match.group("value")
    split = lambda key: tuple(v for v in re.split(r"\s+", values.get(key, "").strip()) if v)  # noqa: E731
    return PipConfig(index_url=values.get("index-url") or None, extra_index_urls=split("extra-index-url"),
                     find_links=split("find-links"))


def read_pip_config(python: str | None = None) -> PipConfig:
    """pip's configuration as ``python -m pip config list`` reports it (an empty one when pip says nothing)."""
    from resolver import proc

    done = proc.run([python or sys.executable, "-m", "pip", "config", "list"], timeout=60)
    return parse_config_list(done.stdout) if done.returncode == 0 else PipConfig()
