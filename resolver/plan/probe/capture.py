"""``probe --capture DIR``: record what the probe reads on this machine into a sysroot folder.

The probe runs once against a :class:`RecordingSystem`, which passes every question to the live
machine and remembers the answer; the answers are then written in the sysroot layout
(docs/sysroot.md), and the folder is replayed to check it gives the same profile. So a capture
holds exactly what the probe needs, nothing more (no PATH, no unrelated files).

>>> import tempfile
>>> report = capture_machine(tempfile.mkdtemp() + "/m")
>>> report.replay_matches
True
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

from resolver.core.errors import BadInput
from resolver.core.fs import make_folder, write_atomic, write_text_atomic
from resolver.plan.probe.profile import HardwareProfile
from resolver.plan.probe.sysroot import COMMANDS, META
from resolver.plan.probe.system import CommandResult, LiveSystem


class _RecordingEnv(Mapping[str, str]):
    """The live environment; remembers which variables the probe looked at."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self.seen: dict[str, str] = {}

    def __getitem__(self, key: str) -> str:
        value = self._env[key]
        self.seen[key] = value
        return value

    def __contains__(self, key: object) -> bool:
        found = key in self._env
        if found and isinstance(key, str):
            self.seen[key] = self._env[key]
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._env)

    def __len__(self) -> int:
        return len(self._env)


@dataclass
class RecordingSystem:
    """A :class:`LiveSystem` that remembers every answer. ``live`` is False so NVML (which a
    sysroot cannot replay) is not used and nvidia-smi answers instead."""

    inner: LiveSystem
    files: dict[str, str | None] = field(default_factory=dict)
    existing: dict[str, bool] = field(default_factory=dict)
    globbed: set[str] = field(default_factory=set)
    commands: dict[tuple[str, ...], CommandResult | None] = field(default_factory=dict)
    live: bool = False

    def __post_init__(self) -> None:
        self.environ = _RecordingEnv(self.inner.environ)

    def read(self, path: str) -> str | None:
        self.files[path] = self.inner.read(path)
        return self.files[path]

    def exists(self, path: str) -> bool:
        self.existing[path] = self.inner.exists(path)
        return self.existing[path]

    def glob(self, pattern: str) -> list[str]:
        found = self.inner.glob(pattern)
        self.globbed.update(found)
        return found

    def run(self, argv: list[str]) -> CommandResult | None:
        self.commands[tuple(argv)] = self.inner.run(argv)
        return self.commands[tuple(argv)]

    def uname(self) -> tuple[str, str]:
        return self.inner.uname()

    def python_version(self) -> str:
        return self.inner.python_version()

    def glibc_version(self) -> tuple[str | None, str]:
        return self.inner.glibc_version()

    def cpu_count(self) -> int | None:
        return self.inner.cpu_count()


@dataclass(frozen=True)
class CaptureReport:
    folder: Path
    files: int
    commands: int
    profile: HardwareProfile
    replay_matches: bool

    def to_json(self) -> dict:
        return {"folder": str(self.folder), "files": self.files, "commands": self.commands,
                "replay_matches": self.replay_matches, "profile": self.profile.to_json()}


def _toml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=True)  # a JSON string is a valid TOML basic string


def _safe_name(argv: tuple[str, ...], number: int) -> str:
    tool = os.path.basename(argv[0])
    rest = "-".join(a.lstrip("-").split("=")[0] for a in argv[1:])[:40]
    return f"{number:02d}-{tool}{'-' + rest if rest else ''}.txt".replace("/", "_")


def _comparable(profile: HardwareProfile) -> dict:
    data = profile.to_json()
    data.pop("notes")
    data.pop("sources")
    data.pop("memory_available_mib")  # changes from one read to the next
    return data


def capture_machine(folder: str | Path, environ: Mapping[str, str] | None = None) -> CaptureReport:
    """Probe this machine, write what was read into ``folder`` (which must be empty or absent)."""
    from resolver.plan.probe.machine import probe_machine

    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise BadInput(f"capture folder {folder} exists and is not empty", fix="name a new folder")
    recorder = RecordingSystem(LiveSystem(environ))
    profile = probe_machine(system=recorder)
    make_folder(folder)
    written = 0
    for path, text in sorted(recorder.files.items()):
        if text is None:
            continue
        target = folder / path.lstrip("/")
        write_text_atomic(target, text, under=folder)  # the capture folder: nothing written through a link
        written += 1
    for path in sorted(recorder.globbed | {p for p, ok in recorder.existing.items() if ok}):
        target = folder / path.lstrip("/")
        if target.exists():
            continue
        if os.path.isdir(path):
            make_folder(target, under=folder)
        else:  # a marker (/.dockerenv) or a device node (/dev/dxg): an empty file says "it exists"
            write_atomic(target, b"", under=folder)
        written += 1
    out_dir = folder / "_commands"
    lines = ["# Tool runs recorded by `python -m resolver probe --capture DIR`; a tool absent here is not installed.\n"]
    ran = [(argv, r) for argv, r in recorder.commands.items() if r is not None]
    for number, (argv, result) in enumerate(ran, 1):
        lines.append("\n[[command]]\n")
        lines.append(f"argv = [{', '.join(_toml_str(a) for a in argv)}]\n")
        lines.append(f"exit_code = {result.exit_code}\n")
        if result.timed_out:
            lines.append("timed_out = true\n")
        if result.stdout:
            name = _safe_name(argv, number)
            write_text_atomic(out_dir / name, result.stdout, under=folder)
            lines.append(f"stdout_file = {_toml_str('_commands/' + name)}\n")
        if result.stderr:
            lines.append(f"stderr = {_toml_str(result.stderr)}\n")
    write_text_atomic(folder / COMMANDS, "".join(lines), under=folder)
    system, machine = recorder.uname()
    glibc, _ = recorder.glibc_version()
    meta = ["# Captured by `python -m resolver probe --capture DIR`; layout: docs/sysroot.md.\n",
            f"system = {_toml_str(system)}\n", f"machine = {_toml_str(machine)}\n",
            f"python = {_toml_str(recorder.python_version())}\n"]
    if glibc:
        meta.append(f"glibc = {_toml_str(glibc)}\n")
    count = recorder.cpu_count()
    if count:
        meta.append(f"cpu_count = {count}\n")
    meta.append("\n[environ]\n")
    meta.extend(f"{key} = {_toml_str(value)}\n" for key, value in sorted(recorder.environ.seen.items()))
    write_text_atomic(folder / META, "".join(meta), under=folder)
    replayed = probe_machine(folder)
    return CaptureReport(folder, written, len(ran), profile, _comparable(replayed) == _comparable(profile))
