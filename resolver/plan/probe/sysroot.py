"""A captured machine in a folder (``probe --sysroot DIR``); the layout is documented in docs/sysroot.md.

::

    DIR/_meta.toml        system, machine, python (required); glibc, cpu_count, [environ] (optional)
    DIR/commands.toml     [[command]] argv = [...], exit_code, stdout | stdout_file, stderr
    DIR/<absolute path>   every file the probe reads, e.g. DIR/proc/driver/nvidia/version

A tool without a ``[[command]]`` entry for exactly that argv is not installed; a file that is not
under DIR does not exist. Nothing of the live machine is consulted.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "_meta.toml").write_text('system = "Linux"\\nmachine = "x86_64"\\npython = "3.10.12"\\n')
>>> SysrootSystem(d).uname()
('Linux', 'x86_64')
"""

from __future__ import annotations

import glob as _glob
import os
import re
from pathlib import Path
from typing import Any, Mapping

from resolver.core.errors import BadInput
from resolver.core.fs import read_bytes_bounded
from resolver.core.names import inside, printable
from resolver.core.toml import parse_toml
from resolver.plan.probe.system import CommandResult

META = "_meta.toml"
COMMANDS = "commands.toml"
_FIX = "capture a machine with `python -m resolver probe --capture DIR`, or see docs/sysroot.md for the layout"
_FILE_FIX = f"record the output as a regular file of at most 16 MiB inside the sysroot; {_FIX}"


FILE_LIMIT = 16 << 20  # the largest file a capture holds is a tool's output of a few hundred kB
_VERSION = re.compile(r"^\d+(\.\d+)*$")


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        text = read_bytes_bounded(path, limit=FILE_LIMIT, what="sysroot file", fix=_FILE_FIX).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"cannot read sysroot file {path}: {exc}", fix=_FIX) from None
    return parse_toml(text, what=f"sysroot file {path}", fix=_FIX)


class SysrootSystem:
    """A machine replayed from a folder. ``environ`` entries are laid over the folder's ``[environ]``."""

    live = False
    replays_a_capture = True  # answers only what was recorded, so asking costs nothing (see collect_env.py)

    def __init__(self, root: str | Path, environ: Mapping[str, str] | None = None) -> None:
        self.root = Path(root)
        if not self.root.exists():
            raise BadInput(f"sysroot folder {self.root} does not exist", fix=_FIX)
        if not self.root.is_dir():
            raise BadInput(f"sysroot {self.root} is not a folder", fix=_FIX)
        meta_path = self.root / META
        if not meta_path.is_file():
            raise BadInput(f"sysroot {self.root} has no {META} (system, machine and python are required)", fix=_FIX)
        self._meta = _load_toml(meta_path)
        for key in ("system", "machine", "python"):
            if not isinstance(self._meta.get(key), str) or not self._meta[key].strip():
                raise BadInput(f"{meta_path}: '{key}' is missing or not a string", fix=_FIX)
        for key in ("python", "glibc"):
            value = self._meta.get(key)
            if value is not None and (not isinstance(value, str) or not _VERSION.match(value.strip())):
                raise BadInput(f"{meta_path}: '{key}' must be a version such as \"2.35\", not {printable(repr(value))}",
                               fix=_FIX)
        env = self._meta.get("environ", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise BadInput(f"{meta_path}: [environ] must map names to strings", fix=_FIX)
        self.environ: Mapping[str, str] = {**env, **(environ or {})}
        self._commands = self._load_commands()

    def _load_commands(self) -> dict[tuple[str, ...], CommandResult]:
        path = self.root / COMMANDS
        if not path.exists():
            return {}
        entries = _load_toml(path).get("command", [])
        if not isinstance(entries, list):
            raise BadInput(f"{path}: 'command' must be an array of tables ([[command]])", fix=_FIX)
        commands: dict[tuple[str, ...], CommandResult] = {}
        for number, entry in enumerate(entries, 1):
            where = f"{path} command #{number}"
            argv = entry.get("argv") if isinstance(entry, dict) else None
            if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
                raise BadInput(f"{where}: 'argv' must be a non-empty list of strings", fix=_FIX)
            code = entry.get("exit_code", 0)
            if isinstance(code, bool) or not isinstance(code, int):
                raise BadInput(f"{where}: 'exit_code' must be an integer", fix=_FIX)
            stdout = entry.get("stdout", "")
            if "stdout_file" in entry:
                stdout = self._stdout_file(entry["stdout_file"], where)
            stderr = entry.get("stderr", "")
            if not isinstance(stdout, str) or not isinstance(stderr, str):
                raise BadInput(f"{where}: 'stdout' and 'stderr' must be strings", fix=_FIX)
            commands[tuple(argv)] = CommandResult(tuple(argv), code, stdout, stderr,
                                                  timed_out=bool(entry.get("timed_out")))
        return commands

    def _stdout_file(self, name: Any, where: str) -> str:
        """A recorded output file: a path inside the sysroot (``_commands/01-nvidia-smi.txt``), never an
        absolute path, ``..`` or a link out of it, never a device or FIFO, at most :data:`FILE_LIMIT`."""
        if not isinstance(name, str) or not name.strip():
            raise BadInput(f"{where}: 'stdout_file' must be a path inside the sysroot", fix=_FIX)
        out_path = self.root / name
        if name.startswith("/") or not inside(self.root, out_path, strict=True):
            raise BadInput(f"{where}: stdout_file {printable(repr(name))} leads outside the sysroot {self.root}",
                           fix="give it relative to the sysroot folder, e.g. _commands/01-nvidia-smi.txt")
        return read_bytes_bounded(out_path, limit=FILE_LIMIT, what=f"{where}: stdout_file",
                                  fix=_FILE_FIX).decode("utf-8", "replace")

    def _local(self, path: str) -> Path | None:
        """The file inside the sysroot for a machine path, or None if it would lead outside."""
        local = self.root / path.lstrip("/")
        real_root = os.path.realpath(self.root)
        real = os.path.realpath(local)
        return local if real == real_root or real.startswith(real_root + os.sep) else None

    def read(self, path: str) -> str | None:
        local = self._local(path)
        if local is None or not os.path.lexists(local):
            return None
        try:
            data = read_bytes_bounded(local, limit=FILE_LIMIT, what="sysroot file", fix=_FILE_FIX)
        except BadInput as exc:
            if any(why in exc.message for why in ("does not exist", "cannot read", "is a folder")):
                return None  # as on a machine: the probe notes what it could not read
            raise  # a FIFO, device node or huge file where a file was recorded: a malformed capture
        return data.decode("utf-8", "replace")

    def exists(self, path: str) -> bool:
        local = self._local(path)
        return local is not None and os.path.lexists(local)

    def glob(self, pattern: str) -> list[str]:
        base = str(self.root)
        found = _glob.glob(os.path.join(_glob.escape(base), pattern.lstrip("/")))
        return sorted("/" + os.path.relpath(p, base).replace(os.sep, "/") for p in found)

    def run(self, argv: list[str]) -> CommandResult | None:
        return self._commands.get(tuple(argv))

    def uname(self) -> tuple[str, str]:
        return self._meta["system"], self._meta["machine"]

    def python_version(self) -> str:
        return self._meta["python"].strip()

    def glibc_version(self) -> tuple[str | None, str]:
        value = self._meta.get("glibc")
        if isinstance(value, str) and value.strip():
            return value.strip(), f"{META} glibc"
        return None, f"{META} has no glibc"

    def cpu_count(self) -> int | None:
        value = self._meta.get("cpu_count")
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    @property
    def meta(self) -> Mapping[str, Any]:
        return self._meta
