"""Shared pieces of the patch tests (no tests here): a synthetic ROCm root in a temporary folder, and a CLI runner
that adds the synthetic checksum table through RESOLVER_PATCH_TABLES (the same path as the real one)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "rocm"
TABLE = FIXTURES / "known-headers.toml"
HEADER = "include/hip/amd_detail/amd_hip_bf16.h"
SIX = ("__float2bfloat16", "__bfloat1622float2", "__double2bfloat16", "__float22bfloat162_rn", "__high2float",
       "__low2float")


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def make_rocm(folder: Path, version: str | None = "6.0.2-115", header: Path | None = None) -> Path:
    """A ROCm root with the synthetic 6.0 tree; ``header`` replaces amd_hip_bf16.h; ``version``
    None removes .info/version (hip_version.h still says 6.0)."""
    root = folder / "rocm"
    shutil.copytree(FIXTURES / "root-6.0", root)
    if header is not None:
        shutil.copyfile(header, root / HEADER)
    if version is None:
        (root / ".info" / "version").unlink()
    else:
        (root / ".info" / "version").write_text(version + "\n")
    return root


def tree_state(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``root`` with its checksum and mtime: to prove nothing was touched."""
    return {str(p.relative_to(root)): (sha(p), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def run_patch(project: Path, *args: str, env: dict[str, str] | None = None, json_out: bool = True,
              command_prefix: list[str] | None = None) -> tuple[int, dict | None, str]:
    environ = dict(os.environ, RESOLVER_PROJECT=str(project), RESOLVER_PATCH_TABLES=str(TABLE))
    for name in ("ROCM_PATH", "ROCM_HOME", "RESOLVER_CRASH_AT"):
        environ.pop(name, None)
    environ.update(env or {})
    argv = [sys.executable, "-m", "resolver", "patch", *args] + (["--json"] if json_out else [])
    result = subprocess.run((command_prefix or []) + argv, capture_output=True, text=True, env=environ,
                            cwd=project, timeout=60)
    data = None
    if json_out and result.stdout.strip():
        data = json.loads(result.stdout)
    return result.returncode, data, result.stderr
