"""Reading a kernel build's log: ninja progress and the first real compiler error, with a hint.

>>> NinjaProgress.parse("[3/12] /usr/local/cuda/bin/nvcc -c a.cu")
(3, 12)
>>> first_error(["x.cu(7): warning #177-D: variable declared but never referenced",
...              "csrc/x.cpp:4:10: fatal error: foo.h: No such file or directory"]).line
'csrc/x.cpp:4:10: fatal error: foo.h: No such file or directory'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NINJA = re.compile(r"^\s*\[(\d+)/(\d+)\]\s")

# (pattern, hint); checked in order over the whole log; the first that matches anywhere wins.
_HINTS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"Killed|signal 9|SIGKILL|out of memory|Cannot allocate memory|std::bad_alloc|"
                r"nvcc error\s*:\s*'\w+' died due to signal"),
     "memory", "the compiler ran out of memory: build with fewer jobs (`--jobs 1`) or free some RAM"),
    (re.compile(r"C\+\+(?:20|17) or later compatible compiler is required|requires (?:at least )?C\+\+20|"
                r"-std=c\+\+2a|'concept' does not name a type|'requires' was not declared"),
     "cxx-standard", "torch >= 2.13 needs C++20: the recipe's cxx_std fix must apply (is recipes/<pkg>/resolver.toml intact?)"),
    (re.compile(r"CUDA_HOME environment variable is not set|nvcc: (?:command )?not found|No such file or directory: '[^']*nvcc'|"
                r"CUDA_HOME.*None|fatal error: (?:cuda_runtime(?:_api)?|cuda|cuda_fp16|cuda_bf16)\.h: No such file"),
     "cuda-home", "the build did not find the CUDA toolkit (nvcc or its headers): set CUDA_HOME to the toolkit root (the folder with bin/nvcc and include/cuda_runtime.h)"),
    (re.compile(r"hipcc: (?:command )?not found|ROCM_PATH|HIP_HOME is None"),
     "rocm-path", "hipcc was not found by the build: set ROCM_PATH to the ROCm root"),
    (re.compile(r"multiple definition of `__hip|redefinition of '__hip_|amd_hip_bf16\.h"),
     "rocm-overlay", "ROCm 6.0's bf16 header needs the resolver's overlay: run `python -m resolver patch` and rebuild"),
    (re.compile(r"Unsupported gpu architecture|nvcc fatal\s*:\s*Unsupported gpu architecture"),
     "arch", "this nvcc does not know one of the requested architectures: choose others with --arch"),
    (re.compile(r"unsupported GNU version|gcc versions later than \d+ are not supported"),
     "host-compiler", "nvcc refuses this g++ version: point CXX/CC (and NVCC_CCBIN) at a supported older gcc"),
    (re.compile(r"ModuleNotFoundError: No module named 'torch'"),
     "no-torch", "the environment's Python has no torch: install the environment first (`python -m resolver install`)"),
    (re.compile(r"undefined symbol: _ZN3c10|undefined reference to `c10::"),
     "abi", "torch and the extension disagree on the C++ ABI or version: rebuild against the environment's torch"),
)

# A compiler diagnostic: g++/clang "file:line:col: error: …", nvcc "file(line): error: …", "nvcc fatal : …",
# "#error", linker "undefined reference".
_ERROR = re.compile(
    r"(?:^|\s)(?:[^\s:]+:\d+:(?:\d+:)?\s*(?:fatal )?error:|[^\s(]+\(\d+\):\s*(?:catastrophic )?error[:\s]|"
    r"nvcc fatal\s*:|#error\b|/usr/bin/ld: .*undefined reference|collect2: error:|ninja: build stopped|"
    r"error: command '.*' failed|RuntimeError: Error compiling objects|Killed\b|.*died due to signal)")
_NOISE = re.compile(r"warning|note:|In file included from|^\s*\d+ errors? detected")


@dataclass(frozen=True)
class CompilerError:
    line: str  # the first real error line
    context: tuple[str, ...]  # a few following lines (the offending source, a caret)
    hint_id: str
    hint: str


class NinjaProgress:
    @staticmethod
    def parse(line: str) -> tuple[int, int] | None:
        match = _NINJA.match(line)
        return (int(match.group(1)), int(match.group(2))) if match else None


def first_error(lines: list[str]) -> CompilerError | None:
    """The first line of ``lines`` that is a real error (not a warning), with its hint."""
    hint_id, hint = classify(lines)
    for index, raw in enumerate(lines):
        line = raw.rstrip()
        if _ERROR.search(line) and not _NOISE.search(line.split("error", 1)[0]):
            return CompilerError(line.strip(), tuple(l.rstrip() for l in lines[index + 1:index + 4]), hint_id, hint)
    if hint_id != "unknown":
        line = next(l.strip() for l in lines if _hint_pattern(hint_id).search(l))
        return CompilerError(line, (), hint_id, hint)
    return None


def classify(lines: list[str]) -> tuple[str, str]:
    text = "\n".join(lines)
    for pattern, hint_id, hint in _HINTS:
        if pattern.search(text):
            return hint_id, hint
    return "unknown", "read the full log; the first error above is usually the cause"


def _hint_pattern(hint_id: str) -> re.Pattern[str]:
    return next(p for p, h, _ in _HINTS if h == hint_id)
