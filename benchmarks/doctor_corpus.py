"""doctor on a held-out corpus of real logs (benchmarks/doctor_corpus/, cited in its SOURCE.md): how many
it recognises, and how many with the cause each thread settled on.

    .venv/bin/python benchmarks/doctor_corpus.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "doctor_corpus"
EXPECTED = {  # what the thread settled on; None: no error in the log (a copy cut before it)
    "applio-1006-sm120": "torch-lacks-gpu-arch", "wyoming-1-sm120": "torch-lacks-gpu-arch",
    "lightmunet-39-libcudart": "cuda-runtime-library-missing", "medmamba-15-libcudart11": "cuda-runtime-library-missing",
    "umamba-80-libcudart12": "cuda-runtime-library-missing", "vim-68-libcudart12": "cuda-runtime-library-missing",
    "llamacpp-15196-rocm643-bf16": "rocm-bf16-duplicate-other-header", "mscclpp-349-rocm60-bf16": "rocm60-bf16-multiple-definition",
    "mamba-465-undefined-c10": "undefined-c10-symbol", "mamba-764-undefined-c10": "undefined-c10-symbol",
    "mambachat-3-bare-metal": "nvcc-missing", "ultralight-34-incompatible": "causal-conv1d-out-of-step",
    "vim-95-incompatible": "causal-conv1d-out-of-step", "mamba-40-cut-before-error": None,
}


def main() -> int:
    right = recognised = 0
    for log in sorted(CORPUS.glob("*.log")):
        done = subprocess.run([sys.executable, "-m", "resolver", "doctor", "--log", str(log), "--json"],
                              capture_output=True, text=True, timeout=120)
        doc = json.loads(done.stdout)
        first = doc["log"]["matches"][0]["id"] if doc["log"]["matches"] else None
        recognised += first is not None
        right += first == EXPECTED[log.stem]
        print(f"{log.stem:32} exit {done.returncode}  {first or 'unrecognised':36} expected {EXPECTED[log.stem]}")
    total = len(EXPECTED)
    print(f"recognised {recognised}/{total}; the thread's cause (or 'unrecognised' for a log without one) {right}/{total}")
    return 0 if right == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
