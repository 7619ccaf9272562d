"""Where ROCm is installed and which release it is, read from files only (no ``hipcc`` run).

The root is ``--rocm-root``, else ``$ROCM_PATH``, else ``$ROCM_HOME``, else ``/opt/rocm``. The
release comes from ``<root>/.info/version`` (``6.0.2-115``: the ROCm release, what the packages
install), else from ``<root>/include/hip/hip_version.h`` (major.minor only: HIP's patch number is a
build number, not the ROCm point release).

>>> parse_info_version("6.0.2-115\\n")
DottedVersion(parts=(6, 0, 2))
>>> parse_hip_version_header("#define HIP_VERSION_MAJOR 6\\n#define HIP_VERSION_MINOR 1\\n#define HIP_VERSION_PATCH 40091\\n")
DottedVersion(parts=(6, 1))
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from resolver.core.errors import BadInput
from resolver.core.fs import read_text_bounded
from resolver.core.versions import DottedVersion

DEFAULT_ROOT = Path("/opt/rocm")
ENV_VARS = ("ROCM_PATH", "ROCM_HOME")


@dataclass(frozen=True)
class RocmRoot:
    path: Path
    version: DottedVersion | None
    version_source: str | None  # the file the version was read from, relative to the root
    origin: str  # "--rocm-root" | "ROCM_PATH" | "ROCM_HOME" | "default"

    def to_json(self) -> dict[str, str | None]:
        return {"rocm_root": str(self.path), "rocm_version": str(self.version) if self.version else None,
                "version_source": self.version_source, "origin": self.origin}


def candidate_roots(explicit: str | Path | None, environ: Mapping[str, str] | None = None) -> list[tuple[Path, str]]:
    """Where to look, in order: what was asked for, else the environment variables, else /opt/rocm."""
    if explicit is not None:
        return [(Path(explicit), "--rocm-root")]
    env = os.environ if environ is None else environ
    found = [(Path(env[name]), name) for name in ENV_VARS if env.get(name, "").strip()]
    return found[:1] or [(DEFAULT_ROOT, "default")]


def locate_rocm(explicit: str | Path | None = None, environ: Mapping[str, str] | None = None) -> RocmRoot | None:
    """The ROCm installation to patch, or None when there is none. A ``--rocm-root`` that does not
    exist is a typo, not "no ROCm": it is an error."""
    path, origin = candidate_roots(explicit, environ)[0]
    if not path.is_dir():
        if origin == "--rocm-root":
            what = "is not a folder" if os.path.lexists(path) else "does not exist"
            raise BadInput(f"the ROCm root {path} {what}",
                           fix="pass the folder that holds include/hip (e.g. --rocm-root /opt/rocm-6.0.2)")
        return None
    if explicit is not None and not (path / "include").is_dir() and not (path / ".info").is_dir():
        raise BadInput(f"{path} does not look like a ROCm root (no include/ and no .info/)",
                       fix="pass the folder that holds include/hip (e.g. --rocm-root /opt/rocm-6.0.2)")
    version, source = read_rocm_version(path)
    return RocmRoot(path.resolve(), version, source, origin)


def read_rocm_version(root: Path) -> tuple[DottedVersion | None, str | None]:
    """The release from ``.info/version``, else ``hip_version.h``; a file that is missing, not a regular
    file (a FIFO would hang the read), too large or unparsable says nothing."""
    for rel, parse in ((".info/version", parse_info_version), ("include/hip/hip_version.h", parse_hip_version_header)):
        try:
            return parse(read_text_bounded(root / rel, limit=1 << 20, what="ROCm file")), rel
        except (BadInput, ValueError):
            continue
    return None, None


def parse_info_version(text: str) -> DottedVersion:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return DottedVersion.parse(first.split("-", 1)[0])


def parse_hip_version_header(text: str) -> DottedVersion:
    parts = {}
    for name in ("MAJOR", "MINOR"):
        match = re.search(rf"^\s*#\s*define\s+HIP_VERSION_{name}\s+(\d+)", text, re.MULTILINE)
        if not match:
            raise ValueError(f"no HIP_VERSION_{name}")
        parts[name] = int(match.group(1))
    return DottedVersion((parts["MAJOR"], parts["MINOR"]))
