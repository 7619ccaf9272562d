"""Run INSIDE a torch environment: resolver.verify.inenv.kernel_checks' comparison, with stand-ins of known behaviour.

No GPU here, so the CUDA kernels cannot be called; what can be proven on the CPU is that the comparison
and its tolerances separate right from wrong:
- a stand-in that does what the kernels do (float32 arithmetic on the given inputs, one rounding of the
  output to the input dtype; that is resolver.verify.inenv.reference on the rounded inputs) passes, and in bfloat16
  its error is the single rounding the tolerance was derived from (at most 2^-8 of max |reference|);
- an anti-causal convolution, a scan without its softplus (it overflows) and one without its skip
  term D fail in every dtype, by far more than the tolerance;
- without a GPU every kernel check is skipped with the reason, and nothing is called.
Prints one JSON line; tests/unit/kernels/test_kernel_checks.py reads it.
"""

from __future__ import annotations

import json

import torch

from resolver.verify.inenv import reference
from resolver.verify.inenv.kernel_checks import compare_op, kernel_gate, run_kernel_checks


def conv_like_kernel(x, weight, bias=None, activation=None):
    return reference.causal_conv1d(x, weight, bias, activation)


def conv_anticausal(x, weight, bias=None, activation=None):
    return reference.causal_conv1d(x.flip(-1), weight, bias, activation).flip(-1)


def scan_like_kernel(u, delta, A, B, C, D, z, delta_bias, softplus, last_state):
    return reference.selective_scan(u, delta, A, B, C, D, z, delta_bias, softplus, last_state)


def scan_without_softplus(u, delta, A, B, C, D, z, delta_bias, softplus, last_state):
    return reference.selective_scan(u, delta, A, B, C, D, z, delta_bias, False, last_state)


def scan_without_D(u, delta, A, B, C, D, z, delta_bias, softplus, last_state):
    return reference.selective_scan(u, delta, A, B, C, None, z, delta_bias, softplus, last_state)


def summary(result: dict) -> dict:
    return {k: result[k] for k in ("ok", "max_abs_err", "rel_err", "tolerance", "finite")} | {
        "shapes": len(result["cases"]), "outputs": sorted({o for c in result["cases"] for o in c["outputs"]})}


def main() -> None:
    cpu = torch.device("cpu")
    out: dict = {}
    for dtype in ("float32", "bfloat16"):
        out[f"conv_like_kernel:{dtype}"] = summary(compare_op(torch, "causal_conv1d", conv_like_kernel, cpu, dtype))
        out[f"conv_anticausal:{dtype}"] = summary(compare_op(torch, "causal_conv1d", conv_anticausal, cpu, dtype))
        out[f"scan_like_kernel:{dtype}"] = summary(compare_op(torch, "selective_scan", scan_like_kernel, cpu, dtype))
        out[f"scan_without_softplus:{dtype}"] = summary(compare_op(torch, "selective_scan", scan_without_softplus, cpu, dtype))
        out[f"scan_without_D:{dtype}"] = summary(compare_op(torch, "selective_scan", scan_without_D, cpu, dtype))
    no_gpu = kernel_gate(False, None, {})
    out["checks_without_gpu"] = run_kernel_checks(torch, cpu, ["float32", "bfloat16"], no_gpu)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
