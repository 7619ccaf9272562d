"""Where packages come from: conda channels, the PyTorch index, extra indexes, wheelhouses, mirrors.

Defaults are the real sources (the manifest's channels, normally conda-forge; the plan's PyTorch
index ``https://download.pytorch.org/whl/<variant>``; PyPI through pip's own configuration).
Air-gapped clusters replace them with mirrors, set (strongest first) by flags, environment
variables, ``[tool.resolver]`` in pixi.toml, then ``[tool.resolver]`` in pyproject.toml (both read by
:mod:`resolver.project.pixi_toml`):

=================== ============================ =========================================
key                 environment variable         meaning
=================== ============================ =========================================
conda-channels      RESOLVER_CONDA_CHANNELS      channels used instead of the manifest's
torch-index         RESOLVER_TORCH_INDEX         index for torch; ``{variant}`` → cu126 …
extra-index-urls    RESOLVER_EXTRA_INDEX_URLS    more PyPI-style indexes (pip --extra-index-url)
find-links          RESOLVER_FIND_LINKS          local wheel folders (pip --find-links)
mirrors             (table only)                 URL prefix → replacement, applied to all
=================== ============================ =========================================

Lists in environment variables are separated by commas or whitespace. Relative paths are taken
from the project root. pip's own configuration (pip.conf, ``PIP_*``) always applies on top.
What flags and environment variables set for a successful ``lock`` is remembered for this checkout
only (``.resolver/state/sources.json``, between pixi.toml and the environment variables; never a URL
that carries credentials), so ``install`` after ``lock --channel DIR`` finds the files where the lock
did, and a later ``lock`` without the flag uses the same channel (a new flag replaces it; delete the
file to forget it).

>>> s = Sources(mirrors=(("https://download.pytorch.org/whl", "https://mirror.example/torch"),))
>>> s.mirror("https://download.pytorch.org/whl/cu126")
'https://mirror.example/torch/cu126'
>>> channel_url("conda-forge")
'https://conda.anaconda.org/conda-forge/'
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from resolver.core.errors import BadInput
from resolver.project.paths import ProjectPaths
from resolver.project.pixi_toml import read_tool_tables

DEFAULT_TORCH_INDEX = "https://download.pytorch.org/whl/{variant}"
ENV_VARS = {"conda-channels": "RESOLVER_CONDA_CHANNELS", "torch-index": "RESOLVER_TORCH_INDEX",
            "extra-index-urls": "RESOLVER_EXTRA_INDEX_URLS", "find-links": "RESOLVER_FIND_LINKS"}


@dataclass(frozen=True)
class Sources:
    """The source settings in force for one lock run (already merged from every layer)."""

    conda_channels: tuple[str, ...] | None = None  # None: the manifest's own channels
    torch_index: str | None = None  # None: the plan's / the manifest's index
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    mirrors: tuple[tuple[str, str], ...] = ()
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # key → where it was set

    @classmethod
    def load(cls, root: Path, *, flags: Mapping[str, Any] | None = None,
             environ: Mapping[str, str] | None = None) -> "Sources":
        """Merge defaults < pyproject.toml < pixi.toml < environment variables < flags."""
        environ = os.environ if environ is None else environ
        merged: dict[str, Any] = {}
        origins: dict[str, str] = {}
        for name in ("pyproject.toml", "pixi.toml"):
            for key, value in read_tool_tables(root / name).sources.items():
                merged[key] = value
                origins[key] = f"{name} [tool.resolver]"
        for key, value in _remembered(root).items():
            merged[key] = value
            origins[key] = _REMEMBERED_ORIGIN
        for key, var in ENV_VARS.items():
            if environ.get(var, "").strip():
                merged[key] = environ[var] if key == "torch-index" else _split(environ[var])
                origins[key] = f"${var}"
        for key, value in (flags or {}).items():
            if value not in (None, [], ()):
                merged[key] = value
                origins[key] = "command line"
        unknown = set(merged) - {*ENV_VARS, "mirrors"}
        if unknown:
            raise BadInput(f"unknown key(s) in [tool.resolver]: {', '.join(sorted(unknown))}",
                           fix=f"use only {', '.join(sorted({*ENV_VARS, 'mirrors'}))}")
        mirrors = merged.get("mirrors") or {}
        if not isinstance(mirrors, Mapping):
            raise BadInput("[tool.resolver] mirrors must be a table of URL prefix = replacement",
                           fix='write e.g. mirrors = { "https://conda.anaconda.org/conda-forge" = "/srv/cf" }')
        channels = merged.get("conda-channels")
        return cls(
            conda_channels=None if not channels else tuple(_location(c, root) for c in _as_list(channels)),
            torch_index=str(merged["torch-index"]) if merged.get("torch-index") else None,
            extra_index_urls=tuple(_location(u, root) for u in _as_list(merged.get("extra-index-urls"))),
            find_links=tuple(_location(u, root) for u in _as_list(merged.get("find-links"))),
            mirrors=tuple(sorted(((str(k).rstrip("/"), _location(str(v), root).rstrip("/"))
                                  for k, v in mirrors.items()), key=lambda kv: -len(kv[0]))),
            origins=tuple(sorted(origins.items())))

    def remember(self, root: Path) -> None:
        """Keep what flags and environment variables set, for the next run in this checkout (what an
        earlier lock remembered stays until a flag or variable sets that key again)."""
        from resolver.core.names import redact_url

        chosen = {key: getattr(self, key.replace("-", "_")) for key, origin in self.origins
                  if key in ENV_VARS and (origin in ("command line", _REMEMBERED_ORIGIN) or origin.startswith("$"))}
        # a URL with credentials in it is used, never written down: set it again (or use a netrc file) next time
        kept = {k: [u for u in v if redact_url(u) == u] if isinstance(v, tuple) else v
                for k, v in sorted(chosen.items()) if not isinstance(v, str) or redact_url(v) == v}
        path = ProjectPaths(root).sources_record
        if chosen or path.is_file():
            from resolver.core.records import write_record

            write_record(path, {k: v for k, v in kept.items() if v}, label="sources", strict=True)

    def mirror(self, url: str) -> str:
        """``url`` with the longest matching mirror prefix replaced."""
        for prefix, replacement in self.mirrors:
            if url == prefix or url.startswith(prefix + "/"):
                return replacement + url[len(prefix):]
        return url

    def canonical(self, location: str) -> str | None:
        """The canonical URL of a location under a mirror (the mirror table read backwards), else None.

        >>> s = Sources(mirrors=(("https://download.pytorch.org/whl/cpu", "/srv/wheels"),))
        >>> s.canonical("file:///srv/wheels/torch-2.13.0%2Bcpu-cp311-none-any.whl")
        'https://download.pytorch.org/whl/cpu/torch-2.13.0%2Bcpu-cp311-none-any.whl'
        >>> s.canonical("file:///elsewhere/x.whl") is None
        True
        """
        target = _as_url(location)
        bases = sorted(((_as_url(replacement).rstrip("/") + "/", prefix) for prefix, replacement in self.mirrors),
                       key=lambda bp: -len(bp[0]))  # the deepest mirror folder holding the file
        for base, prefix in bases:
            if target.startswith(base):
                return prefix.rstrip("/") + "/" + target[len(base):]
        return None

    def channels_for(self, manifest_channels: list[str]) -> list[str]:
        """The conda channel URLs to solve against: each manifest channel through its mirror. ``conda-channels``
        (``--channel``, RESOLVER_CONDA_CHANNELS) name mirrors of the manifest's channels, in order."""
        chosen = [channel_url(self.mirror(channel_url(c).rstrip("/"))) for c in manifest_channels]
        if self.conda_channels is not None:
            replacements = [channel_url(c) for c in self.conda_channels]
            chosen = replacements[:len(chosen)] + chosen[len(replacements):]
        return chosen

    def torch_index_for(self, default_url: str | None, variant: str) -> str | None:
        """The index torch comes from: the override template, else ``default_url``; mirrors applied."""
        url = self.torch_index.replace("{variant}", variant) if self.torch_index else default_url
        return self.mirror(url) if url else None

    def to_json(self) -> dict[str, Any]:
        return {"conda_channels": list(self.conda_channels) if self.conda_channels is not None else None,
                "torch_index": self.torch_index, "extra_index_urls": list(self.extra_index_urls),
                "find_links": list(self.find_links), "mirrors": dict(self.mirrors), "set_by": dict(self.origins)}


_REMEMBERED_ORIGIN = f"the last lock here ({ProjectPaths(Path('.')).sources_record})"


def _remembered(root: Path) -> dict[str, Any]:
    """What the last lock here was told (:attr:`~resolver.project.paths.ProjectPaths.sources_record`): locations
    only (a URL, a path or a channel name; never an option), read as untrusted data."""
    from resolver.core.records import Fields, ListOf, Text, read_record

    location = Text(r"[^-\s][^\s]*", 8192)
    shape = Fields({}, {key: location if key == "torch-index" else ListOf(location, 256) for key in ENV_VARS})
    data = read_record(ProjectPaths(root).sources_record, shape, limit=1 << 20) or {}
    return {k: v for k, v in data.items() if v}


def channel_url(name: str) -> str:
    """A channel as a URL with a trailing slash: names go to anaconda.org, paths become file URLs."""
    text = str(name).strip()
    if re.match(r"^[a-z][a-z0-9+.-]*://", text):
        return text.rstrip("/") + "/"
    if text.startswith(("/", "./", "../", "~")) or os.sep in text:
        return Path(text).expanduser().resolve().as_uri() + "/"
    return f"https://conda.anaconda.org/{text.strip('/')}/"


def _as_url(location: str) -> str:
    """A location as a URL: paths become file URLs (quoted as pip and rattler quote them)."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", location):
        return location
    return Path(location).expanduser().resolve().as_uri()


def _split(text: str) -> list[str]:
    return [part for part in re.split(r"[,\s]+", text) if part]


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return _split(value)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise BadInput(f"[tool.resolver]: {value!r:.60} is not a string or a list of strings",
                       fix="write each setting as a string or a list of strings")
    return list(value)


def _location(text: str, root: Path) -> str:
    """Paths relative to the project root become absolute; URLs and channel names stay."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", text) or not text.startswith((".", "/", "~")):
        return text
    path = Path(text).expanduser()
    return str(path if path.is_absolute() else (root / path).resolve())
