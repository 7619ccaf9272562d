"""The overlay: a folder mirroring the ROCm root's layout that holds only fixed headers.

``<overlay>/include/hip/amd_detail/amd_hip_bf16.h`` is the fixed header. Compiling with
``-I<overlay>/include`` first makes ``#include <hip/amd_detail/amd_hip_bf16.h>`` (how
``hip/hip_bf16.h`` includes it) find the fixed copy. The fixed header itself includes siblings with
quotes (``#include "math_fwd.h"``), which the compiler looks up beside the including file first and
then on the -I path as ``<dir>/math_fwd.h`` — never as ``hip/amd_detail/math_fwd.h``. So the overlay
also carries those siblings (and theirs, transitively) as symlinks to the ROCm root's own files:
symlinks, not copies, so that ``#pragma once`` (math_fwd.h) still sees a single file.

Default place: ``.resolver/overlay/rocm-<version>/`` in the project. It belongs to the ROCm
installation, not to a Python environment: every environment built against that ROCm shares it,
and reinstalling an environment does not lose it. ``resolver-overlay.json`` records which ROCm
root and which source checksum each fixed header came from, so a ROCm upgrade makes it stale
instead of silently wrong.

>>> from resolver.project.paths import ProjectPaths
>>> default_overlay(ProjectPaths(Path("/p")), "6.0.2")
PosixPath('/p/.resolver/overlay/rocm-6.0.2')
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from resolver.core.errors import BadInput, EnvironmentProblem
from resolver.core.fs import read_bytes_bounded
from resolver.core.names import inside
from resolver.project.paths import ProjectPaths

RECORD_NAME = "resolver-overlay.json"
_QUOTED_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)


def default_overlay(project: ProjectPaths, rocm_version: str | None) -> Path:
    return project.overlay(rocm_version)


HEADER_LIMIT = 16 << 20  # the bf16 header is ~100 kB; a "header" past this is not one


def read_header(path: Path) -> bytes:
    """A ROCm header's bytes: a regular file of at most :data:`HEADER_LIMIT` (never a FIFO or a device,
    which would hang or fill memory); one sentence otherwise."""
    try:
        return read_bytes_bounded(path, limit=HEADER_LIMIT, what="the ROCm header",
                                  fix="reinstall the header from your ROCm packages (e.g. hip-dev)")
    except BadInput as exc:
        if exc.message.startswith("cannot read"):
            raise EnvironmentProblem(exc.message, fix="check the ROCm installation's permissions") from None
        raise


def quoted_siblings(root: Path, rel_file: str, data: bytes) -> list[str]:
    """Files (relative to ``root``) that ``rel_file`` reaches through quoted includes resolved beside
    the including file, transitively; these must sit beside the fixed copy in the overlay. Only files
    inside ``root`` count: an include of an absolute path or one leading out of the root is the
    compiler's business, never a link in the overlay."""
    found: list[str] = []
    pending = [(rel_file, data)]
    seen = {rel_file}
    while pending:
        current, content = pending.pop()
        folder = PurePosixPath(current).parent
        for match in _QUOTED_INCLUDE.finditer(content):
            name = match.group(1).decode("utf-8", "replace")
            if name.startswith("/") or "\0" in name:
                continue
            rel = os.path.normpath(str(folder / name)).replace(os.sep, "/")
            if rel.startswith(("../", "/")) or rel in ("..", ".") or rel in seen:
                continue
            candidate = root / rel
            if candidate.is_file() and inside(root, candidate, strict=True):
                seen.add(rel)
                found.append(rel)
                pending.append((rel, read_header(candidate)))
    return sorted(found)
