"""resolver/verify/inenv/reference.py against naive Python loops, run with a real torch (the cpu_project environment).

The resolver's own venv has no torch, so tests/support/reference_cases.py runs in the environment's Python
and reports the largest absolute error of each case; two negative controls prove the comparison can fail.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from support import REPO, TESTS

# float32 against float64 loops; the bf16 case rounds its input to 8 bits of mantissa.
LIMITS = {
    "conv_bias_silu": 1e-5, "conv_nobias_noact": 1e-5, "conv_initial_state": 1e-5, "conv_short_sequence": 1e-5,
    "conv_step_vs_full": 1e-5, "scan_variable_BC_full": 1e-5, "scan_last_state": 1e-5, "scan_shared_BC": 1e-5,
    "scan_grouped_BC": 1e-5, "scan_bf16_input": 5e-2, "scan_step_vs_full": 1e-5,
    "lm_prefill_matches_forward": 1e-5, "lm_steps_match_forward": 1e-4, "lm_mamba_ssm_keys": 0.0,
}
CONTROLS = ("control_conv_anticausal", "control_scan_no_softplus")


@pytest.fixture(scope="module")
def cases(cpu_project) -> dict:
    python = cpu_project / ".resolver" / "envs" / "cpu" / "bin" / "python"
    done = subprocess.run([str(python), str(TESTS / "support" / "reference_cases.py")], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", sorted(LIMITS))
def test_reference_matches_naive_loops(cases, case):
    assert cases[case] <= LIMITS[case], f"{case}: max abs error {cases[case]:.3g} > {LIMITS[case]}"


@pytest.mark.parametrize("case", CONTROLS)
def test_negative_controls_are_detected(cases, case):
    assert cases[case] > 0.1, f"{case} should differ from the naive loops, got {cases[case]:.3g}"


def test_every_case_is_checked(cases):
    assert set(cases) == set(LIMITS) | set(CONTROLS)
