"""The files `build --matrix --format github|gitlab|slurm` writes, read back the way their engines read them: the
YAML by a YAML reader against the engines' published schemas, the Slurm script by bash itself, and run in a
scratch folder where `sbatch`, `uname` and the resolver's Python are programs that record what they were given."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from functools import lru_cache
from pathlib import Path

from support import DATA

SLURM_ARRAYS = ("variants", "archs", "platforms", "known_platforms", "default_channel")
SLURM_BODY = '\npython="${RESOLVER_PYTHON:-python}"\n'  # where the script's values end and its constant text begins


@lru_cache(maxsize=None)
def schema(name: str):
    """The engine's published JSON schema (tests/data/schemas), as a validator."""
    import jsonschema

    validator = jsonschema.Draft7Validator(json.loads((DATA / "schemas" / f"{name}.json").read_text()))
    validator.check_schema(validator.schema)
    return validator


def problems(name: str, document) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in schema(name).iter_errors(document)]


def slurm_values(text: str) -> dict[str, list[str]]:
    """The values a generated Slurm script holds, as bash itself reads them: its text up to the constant body,
    then each array printed as its name, its length and its words, NUL-terminated (nothing of the script runs
    but assignments)."""
    head = text[:text.index(SLURM_BODY)]
    shown = "".join(f"printf '%s\\0' {name} \"${{#{name}[@]}}\" \"${{{name}[@]}}\"\n" for name in SLURM_ARRAYS)
    done = subprocess.run(["bash", "-c", head + "\nset +u\n" + shown], capture_output=True, timeout=30, check=True)
    words = done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]
    values: dict[str, list[str]] = {}
    while words:
        name, count, words = words[0], int(words[1]), words[2:]
        values[name], words = words[:count], words[count:]
    return values


def comment_lines(text: str) -> list[str]:
    """The comment lines a generated file starts with (its header)."""
    lines = text.split("\n")
    if lines[0].startswith("#!"):
        lines = lines[1:]
    header = []
    for line in lines:
        if not line.startswith("#") or line.startswith("#SBATCH"):
            break
        header.append(line)
    return header


def sbatch_directives(text: str) -> list[str]:
    """The ``#SBATCH`` options sbatch reads from a script: those before its first line that is neither blank nor
    a comment (sbatch stops there)."""
    found = []
    for line in text.split("\n")[1:]:
        if line.strip() and not line.startswith("#"):
            break
        if line.startswith("#SBATCH"):
            found.append(line)
    return found


_RECORDER = """#!/bin/sh
# records its name and arguments, NUL-separated, one call a file
n=0
while [ -e "$RECORD_DIR/$n" ]; do n=$((n + 1)); done
{ printf '%s\\0' "$(basename "$0")"; for a in "$@"; do printf '%s\\0' "$a"; done; } > "$RECORD_DIR/$n"
case "$(basename "$0")" in
  sbatch) echo "4242$n" ;;
  uname) echo "$FAKE_MACHINE" ;;
esac
"""


def stubs(folder: Path) -> Path:
    """A folder of programs that record their arguments: sbatch (answers a job id), uname (answers $FAKE_MACHINE)
    and python (the resolver's Python, as RESOLVER_PYTHON names it)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("sbatch", "uname", "python"):
        path = folder / name
        path.write_text(_RECORDER)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


def calls(record: Path) -> list[list[str]]:
    """What the stubs were called with, in order: [program, arg, …] each."""
    found = sorted(record.iterdir(), key=lambda p: int(p.name)) if record.is_dir() else []
    return [p.read_bytes().decode("utf-8", "surrogateescape").split("\0")[:-1] for p in found]


def run_slurm(script: Path, scratch: Path, *, task: int | None = None, machine: str = "x86_64",
              env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
    """``bash kernels.sbatch`` (``task`` None: the submitting run) or one array task, in ``scratch``, with every
    program it starts recorded: (the run, the calls)."""
    import shutil

    record = scratch / "calls"
    shutil.rmtree(record, ignore_errors=True)
    record.mkdir(parents=True)
    bin_dir = stubs(scratch / "bin")
    environ = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "RECORD_DIR": str(record), "FAKE_MACHINE": machine,
               "RESOLVER_PYTHON": str(bin_dir / "python"), "HOME": str(scratch), "LC_ALL": "C.UTF-8"}
    if task is not None:
        environ["SLURM_ARRAY_TASK_ID"] = str(task)
    environ.update(env or {})
    done = subprocess.run(["bash", str(script)], cwd=scratch, env=environ, capture_output=True, timeout=60)
    return done, calls(record)


def run_wrap(command: str, scratch: Path) -> list[list[str]]:
    """What sbatch's ``--wrap`` command starts when Slurm runs it (under /bin/sh), recorded."""
    import shutil

    record = scratch / "calls"
    shutil.rmtree(record, ignore_errors=True)
    record.mkdir(parents=True)
    bin_dir = stubs(scratch / "bin")
    subprocess.run(["sh", "-c", command], cwd=scratch, capture_output=True, timeout=60,
                   env={"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "RECORD_DIR": str(record),
                        "HOME": str(scratch)})
    return calls(record)
