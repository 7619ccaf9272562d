"""Crafted 1 MB pastes: for each kind of text that `probe --from-report` and `doctor --log` read, inputs
built from real captured outputs of that kind (tests/data/machines, tests/data/logs) to make a pattern that
backtracks slow.

Each line of a sample is cut where one run of characters ends and another begins (where a pattern's
repetition hands over to the next part), and the cut is followed by a long run of a character (a
blank, a tab, a digit, a letter, the character at the cut) and one character that fails the rest of
the pattern. The attack line fills 1 MB as many lines of a few thousand characters (what a reader sees
after capping its lines) or as one line; the sample line repeated on one line and as every line are
attacks too. ``python tests/support/hostile_pastes.py [--all]`` prints the slowest paste of each kind.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Iterator

HERE = Path(__file__).resolve().parents[1] / "data"  # the samples are named under tests/data

# Large logs of the shapes a line-by-line or pattern-by-pattern reader pays most for, one unit each, repeated
# to the size wanted: millions of blank lines, lines of blanks, every line a near miss of a signature, one line
# without an end (the doctor --log time test and benchmarks/doctor_log_size.py).
LOG_SHAPES = {
    "blank lines": "\n",
    "lines of blanks": " " * 200 + "\n",
    "near misses": "version `GLIBC_x' found; undefined symbol: _Zx; killed? no: Segmentation  fault; "
                   "causal_conv1d mamba rocm-x torch.__version__ = ? site-packages\n",
    "one line": "İstanbul Ω ninja: error: 'csrc ",
    "near misses on one line": "version `GLIBC_x' found; killed? no: Segmentation  fault; causal_conv1d rocm-x "
                               "torch.__version__ = ? site-packages ",
}
MACHINES = HERE / "machines"
SIZE = 1_000_000  # "any 1 MB input"
LINE = 4000  # a long line, just under the report reader's cap on line length

_CSV = "name, compute_cap, driver_version, memory.total [MiB]\nNVIDIA H100 80GB HBM3, 9.0, 550.54.15, 81559 MiB\n"
_HOST = ("ldd (Ubuntu GLIBC 2.35-0ubuntu3.6) 2.35\n"
         "Linux gpu-07 5.15.0-100-generic #110-Ubuntu SMP Wed Feb 7 13:27:48 UTC 2024 x86_64 x86_64 x86_64 GNU/Linux\n")

# kind -> the real outputs it is made from (paths under tests/data/), or literal text
SAMPLES: dict[str, tuple[str, ...]] = {
    "nvidia-smi": ("machines/l4-plain-nvidia-smi-only/_commands/01-nvidia-smi.txt",
                   "machines/b200-driver610-kmd-header/_commands/01-nvidia-smi.txt",
                   "machines/report-nvidia-smi-L-and-plain-quadro-rtx4000.txt"),
    "nvidia-smi -q": ("machines/report-nvidia-smi-q-v100-hami.txt",),
    "nvidia-smi -L": ("machines/a100-4x-mig-nvidia-smi-L-only/_commands/01-nvidia-smi-L.txt",),
    "nvidia-smi --query-gpu": ("machines/h100-8x-ubuntu2204/_commands/01-nvidia-smi-query-gpu.txt", f"={_CSV}"),
    "/proc/driver/nvidia/version": ("machines/gh200-aarch64-ubuntu2204/proc/driver/nvidia/version",),
    "rocminfo": ("machines/mi210-k8s-rocm6.2/_commands/01-rocminfo.txt",
                 "machines/mi300xvf-8x-rocminfo-excerpt/_commands/01-rocminfo.txt"),
    "amd-smi": ("machines/rx9070xt-2x-rocm7.1.1-amdsmi-table/_commands/01-amd-smi.txt",
                "machines/mi300x-rocm6.3-amdsmi/_commands/01-amd-smi-static.txt",
                "machines/mi300xvf-rocm7.1.1-amdsmi-version/_commands/02-amd-smi-version.txt"),
    "rocm-smi": ("machines/report-rocm-smi-productname-mi300x-vf.txt",),
    "collect_env": ("machines/report-collect-env-rocm-mi210.txt",),
    "nvcc, hipcc, ldd, uname": ("machines/a100-gcp-ubuntu2404/_commands/02-nvcc-version.txt",
                                "machines/mi300x-rocm6.3-amdsmi/_commands/02-hipcc-version.txt", f"={_HOST}"),
    "doctor --log": tuple(f"logs/{p.name}" for p in sorted((HERE / "logs").glob("*.log"))),
}
KINDS = tuple(SAMPLES)


def sample_lines(kind: str) -> list[str]:
    """The distinct non-blank lines of the samples of ``kind``."""
    lines: list[str] = []
    for source in SAMPLES[kind]:
        text = source[1:] if source.startswith("=") else (HERE / source).read_text(encoding="utf-8", errors="replace")
        lines += [line.rstrip() for line in text.splitlines() if line.strip()]
    return list(dict.fromkeys(lines))


def _cuts(line: str) -> list[int]:
    """Where one run of characters of a kind (letter/digit, blank, other) ends and the next begins."""
    def kind(c: str) -> int:
        return 0 if c.isalnum() else 1 if c.isspace() else 2
    return [i for i in range(1, len(line)) if kind(line[i]) != kind(line[i - 1])] + [len(line)]


def _fill(line: str, size: int) -> str:
    """``line`` repeated as lines up to ``size`` characters."""
    return (line + "\n") * max(1, size // (len(line) + 1))


def attacks(kind: str, *, every: bool = False, size: int = SIZE) -> Iterator[tuple[str, str]]:
    """(label, text) pairs: the crafted pastes of ``kind``. Without ``every``, the lines of the first sample
    and the cuts after a key (a colon, an equals sign, a bar) only: the attacks a reader of text meets first."""
    lines = sample_lines(kind)
    if not every:
        first = SAMPLES[kind][0]
        lines = [line for line in lines if line in sample_lines_of(first)]
    for number, line in enumerate(lines):
        yield f"line {number} repeated on one line", (line + " ") * (size // (len(line) + 1))
        yield f"line {number} as every line", _fill(line, size)
        for cut in _cuts(line):
            if not every and not (line[cut - 1] in ":=|" or cut == len(line)):
                continue
            for filler in dict.fromkeys(" \t0a" + (line[cut] if cut < len(line) else "") + line[cut - 1]):
                attack = (line[:cut] + filler * LINE)[:LINE] + "\x01"
                yield (f"line {number} cut at {cut}, then {filler!r} x {LINE} (many lines)", _fill(attack, size))
                if every:
                    yield (f"line {number} cut at {cut}, then {filler!r} to 1 MB (one line)",
                           line[:cut] + filler * (size - cut - 1) + "\x01")


def sample_lines_of(source: str) -> set[str]:
    text = source[1:] if source.startswith("=") else (HERE / source).read_text(encoding="utf-8", errors="replace")
    return {line.rstrip() for line in text.splitlines() if line.strip()}


def reader(kind: str) -> Callable[[Path], object]:
    """What the command does with a pasted file of ``kind``: read it and parse it (no process start)."""
    from resolver.core.errors import ResolverError

    if kind == "doctor --log":
        from resolver.doctor.checks import read_log
        from resolver.doctor.signatures import load_signatures, match_log

        signatures = load_signatures()

        def read(path: Path) -> object:
            return match_log(read_log(str(path))[1], signatures)
    else:
        from resolver.plan.probe.report import profile_from_report, read_report

        def read(path: Path) -> object:
            return profile_from_report(read_report(str(path)))

    def guarded(path: Path) -> object:
        try:
            return read(path)
        except ResolverError as exc:  # a refusal is an answer
            return exc
    return guarded


def slowest(kind: str, folder: Path, *, every: bool = False) -> tuple[float, str, int]:
    """(seconds, label, how many were tried) of the slowest crafted paste of ``kind``."""
    read = reader(kind)
    path = folder / "paste.txt"
    worst, label, count = 0.0, "", 0
    for name, text in attacks(kind, every=every):
        path.write_text(text, encoding="utf-8")
        started = time.perf_counter()
        read(path)
        seconds = time.perf_counter() - started
        count += 1
        if seconds > worst:
            worst, label = seconds, name
    return worst, label, count


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(HERE.parents[1]))
    with tempfile.TemporaryDirectory() as tmp:
        for kind in KINDS:
            seconds, label, count = slowest(kind, Path(tmp), every="--all" in sys.argv)
            print(f"{kind:28s} {count:5d} pastes, slowest {seconds:6.3f} s: {label}", flush=True)
