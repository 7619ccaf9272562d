"""The exit codes README.md's commands are expected to end with."""

from __future__ import annotations

# exit code each tour command must give: the refusal and doctor's "problem found" are the point of the demo
EXPECTED_EXIT = {
    "python -m resolver probe": 0,
    "python -m resolver plan": 0,
    "python -m resolver plan --target rocm6.0": 0,
    "python -m resolver plan --target cuda13.0 --profile tests/data/profiles/v100.json": 2,
    "python -m resolver setup --dry-run": 0,
    "python -m resolver doctor --log tests/data/logs/mamba-267-no-kernel-image.log": 1,
}
