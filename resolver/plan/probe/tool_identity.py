"""What a toolkit binary really is, as data a remembered answer can be keyed by.

``nvcc`` on PATH is often a wrapper script (``exec /usr/local/cuda/bin/nvcc "$@"``) or a link into a
toolkit folder that is itself a link (``/usr/local/cuda -> /usr/local/cuda-12.4``). Its answer depends
on the binary at the end of that chain, not on the wrapper: switching ``/usr/local/cuda`` leaves the
wrapper's bytes and stat as they were. So the identity follows the chain: the real file behind every
link (its path, size, times, inode), and for a script, its bytes, the real target of every absolute path
it names and the value (and the real folder) of every variable it reads, a few levels deep. The
toolkit variables (``CUDA_HOME``, ``ROCM_PATH`` ...) are part of it too: compilers read them.

>>> import os, tempfile
>>> root = tempfile.mkdtemp()
>>> for version in ("12.4", "12.6"):
...     os.makedirs(f"{root}/cuda-{version}/bin")
...     _ = open(f"{root}/cuda-{version}/bin/nvcc", "w").write(f"#!/bin/sh\\necho {version}\\n")
>>> os.symlink(f"{root}/cuda-12.4", f"{root}/cuda")
>>> _ = open(f"{root}/nvcc", "w").write(f"#!/bin/sh\\nexec {root}/cuda/bin/nvcc \\"$@\\"\\n")
>>> before = tool_identity(f"{root}/nvcc", {})
>>> os.remove(f"{root}/cuda"); os.symlink(f"{root}/cuda-12.6", f"{root}/cuda")
>>> tool_identity(f"{root}/nvcc", {}) == before
False
"""

from __future__ import annotations

import os
import re
from typing import Any, Mapping

from resolver.core.errors import BadInput
from resolver.core.fs import open_read

TOOLKIT_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "ROCM_PATH", "ROCM_HOME", "HIP_PATH", "HIP_PLATFORM",
                "HIP_CLANG_PATH", "HIP_DEVICE_LIB_PATH")
SCRIPT_LIMIT = 256 << 10  # a wrapper script is a few hundred bytes; a larger file is read as a binary
_DEPTH = 3  # wrappers of wrappers
_MOST_PATHS = 64
_ABSOLUTE = re.compile(rb"(?<![\w$}.-])/[\w.+-]+(?:/[\w.+-]+)*")
_VARIABLE = re.compile(rb"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def tool_identity(exe: str, environ: Mapping[str, str]) -> list[Any]:
    """The identity of ``exe`` as ``environ`` would run it (JSON data; raises OSError when ``exe`` cannot be
    read)."""
    seen: set[str] = set()
    facts: list[Any] = [[name, environ.get(name)] for name in TOOLKIT_VARS]
    facts.append(_file(exe, environ, seen, _DEPTH, strict=True))
    return facts


def _file(path: str, environ: Mapping[str, str], seen: set[str], depth: int, *, strict: bool = False) -> Any:
    """``path``'s real file and what it is: its stat, and for a script what the script reaches."""
    real = os.path.realpath(path)
    if real in seen or len(seen) >= _MOST_PATHS:
        return [path, real]
    seen.add(real)
    try:
        info = os.stat(real)
    except OSError:
        if strict:
            raise
        return [path, real, None]
    fact: list[Any] = [path, real, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]
    if depth <= 0 or not os.path.isfile(real) or info.st_size > SCRIPT_LIMIT:
        return fact
    try:
        with open_read(real, what="the tool") as handle:
            text = handle.read(SCRIPT_LIMIT)
    except (OSError, BadInput):
        return fact
    if not text.startswith(b"#!"):
        return fact
    fact.append(text)  # a script counts by its bytes too (the fingerprint hashes them)
    for name in sorted({m.decode() for m in _VARIABLE.findall(text)}):
        value = environ.get(name)
        fact.append([name, value, os.path.realpath(value) if value and value.startswith("/") else None])
    for named in dict.fromkeys(m.decode(errors="replace") for m in _ABSOLUTE.findall(text)):
        if os.path.lexists(named):
            fact.append(_file(named, environ, seen, depth - 1) if os.path.isfile(named) else [named, os.path.realpath(named)])
    return fact
