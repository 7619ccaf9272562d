"""Shared pieces of the patch tests (no tests here): a synthetic ROCm root in a temporary folder, and a CLI runner
that adds the synthetic checksum table through RESOLVER_PATCH_TABLES (the same path as the real one)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
from pathlib import Path

from support import cli

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "rocm"
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
              command_prefix: list[str] | None = None, in_process: bool | None = None) -> tuple[int, dict | None, str]:
    """Run ``resolver patch``: in this process through ``resolver.cli.main`` (fast), or as a real
    subprocess when a prefix (unshare), a crash point or ``in_process=False`` asks for one."""
    environ = dict(os.environ, RESOLVER_PROJECT=str(project), RESOLVER_PATCH_TABLES=str(TABLE))
    for name in ("ROCM_PATH", "ROCM_HOME", "RESOLVER_CRASH_AT"):
        environ.pop(name, None)
    environ.update(env or {})
    argv = ["patch", *args] + (["--json"] if json_out else [])
    if in_process is None:
        in_process = command_prefix is None and "RESOLVER_CRASH_AT" not in environ
    if in_process:
        code, stdout, stderr = _in_process(argv, environ, project)
    else:
        result = cli.run(*argv, environment=environ, cwd=project, prefix=command_prefix or (), timeout=60)
        code, stdout, stderr = result.returncode, result.stdout, result.stderr
    data = json.loads(stdout) if json_out and stdout.strip() else None
    return code, data, stderr if json_out else stdout + stderr


def _in_process(argv: list[str], environ: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    from resolver.cli import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return code, out.getvalue(), err.getvalue()
