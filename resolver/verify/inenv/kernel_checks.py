"""Op-level checks: the two CUDA kernels against our pure-PyTorch reference, inside the environment.

``verify`` calls :func:`run_kernel_checks` after the architecture checks and before any model is
loaded. Each op runs on seeded inputs in every dtype verify checks, beside
:func:`resolver.verify.inenv.reference.causal_conv1d` / :func:`resolver.verify.inenv.reference.selective_scan` computed in
float32 on the *same* (already rounded) inputs, and is reported as a check named
``kernel:<op>:<dtype>`` with ``max_abs_err`` (max |kernel - reference|), ``rel_err`` (that divided by
max |reference|, the measure verify uses for logits) and the ``tolerance`` it is held to.

Tolerances (``KERNEL_TOLERANCE``), from what the upstream kernels compute (causal-conv1d 1.7.0
``causal_conv1d_fwd.cu``, mamba-ssm 2.3.2.post1 ``selective_scan_fwd_kernel.cuh``, both built with
``--use_fast_math``): every input is converted to float32, everything is accumulated in float32, and
the result is rounded once to the input dtype when it is stored. So

- float32 differs from the reference only by summation order and the fast-math ``exp2f``/``expf``
  (relative error about 2^-22 per call). Along the scan that error compounds over the steps the state
  remembers: with Mamba's slowest decay (``exp(delta * A)`` about 0.999) about 1000 steps x 2.4e-7,
  some 2.4e-4 at worst. Tolerance **1e-3**, the float32 logits tolerance of ``verify``.
- bfloat16 adds one rounding of the output: at most half a bfloat16 ulp, 2^-8 = 3.9e-3 of the value,
  so of max |reference|; with the float32 drift above, under 4.2e-3. Tolerance **1e-2**. (The logits
  tolerance, 4e-2, is looser because a model rounds after every layer; one op rounds once.)
- float16 likewise: half an ulp is 2^-11 = 4.9e-4, plus the drift: under 7.3e-4. Tolerance **2e-3**.

Semantic mistakes are far outside these: an anti-causal convolution or a scan without its softplus is
off by tens of percent (the negative controls in tests/support/kernel_cases.py).

Calling a kernel is decided by :func:`kernel_gate` first, a pure function of the device and the
extensions' facts: an extension that carries no code for the device's architecture is never called
(it would fail with "no kernel image is available for execution on the device"); its checks are
reported as skipped with that reason, next to the failed ``arch:`` check that names the fix.

>>> gate = kernel_gate(True, "sm_90", {"causal_conv1d_cuda": {"installed": True, "loaded": True,
...     "built_for_archs": ["sm_80"]}, "selective_scan_cuda": {"installed": True, "loaded": True,
...     "built_for_archs": ["sm_90"]}})
>>> gate.callable("selective_scan_cuda"), gate.callable("causal_conv1d_cuda")
(True, False)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from resolver.verify.inenv.facts import arch_supported

KERNEL_TOLERANCE = {"float32": 1e-3, "bfloat16": 1e-2, "float16": 2e-3}
# op name -> the compiled extension that runs it
OP_EXTENSION = {"causal_conv1d": "causal_conv1d_cuda", "selective_scan": "selective_scan_cuda"}
NO_KERNEL_IMAGE = "no kernel image is available for execution on the device"

# Inputs: sizes chosen to cover the kernels' code paths (widths 2-4, odd lengths, the scan's
# 2048-step chunks, time-varying and grouped B/C, z gating, the last state) in well under a second each.
CONV_CASES = (
    {"batch": 2, "dim": 256, "seqlen": 1024, "width": 4, "bias": True, "activation": "silu"},
    {"batch": 1, "dim": 64, "seqlen": 37, "width": 3, "bias": False, "activation": None},
    {"batch": 2, "dim": 128, "seqlen": 4099, "width": 2, "bias": True, "activation": "silu"},
)
SCAN_CASES = (
    {"batch": 2, "dim": 128, "dstate": 16, "seqlen": 1024, "groups": 0, "z": True, "last_state": True},
    {"batch": 1, "dim": 64, "dstate": 8, "seqlen": 2500, "groups": 2, "z": False, "last_state": False},
)


@dataclass(frozen=True)
class KernelGate:
    """Which kernel extensions may be called here; ``blocked`` pairs an extension with the reason."""

    device_arch: str | None
    blocked: tuple[tuple[str, str], ...]

    def reason(self, extension: str) -> str | None:
        return next((why for name, why in self.blocked if name == extension), None)

    def callable(self, extension: str) -> bool:
        return self.reason(extension) is None

    @property
    def all_callable(self) -> bool:
        return not self.blocked


def kernel_gate(gpu: bool, device_arch: str | None, extensions: dict,
                no_gpu: str = "no GPU is visible here: the CUDA/HIP kernels run on a GPU only") -> KernelGate:
    """Decide, before anything calls a kernel, which extensions can run on this device.

    ``extensions`` is facts' ``{module: {installed, loaded, built_for_archs, error}}``. An extension
    whose recorded architectures do not cover the device (``arch_supported`` False: no SASS for it,
    no PTX at or below it) is blocked; unknown architectures (None) are not, the call decides.
    """
    blocked = []
    for name in sorted(set(extensions) | set(OP_EXTENSION.values())):
        ext = extensions.get(name) or {}
        if not gpu:
            blocked.append((name, no_gpu))
        elif not ext.get("installed"):
            blocked.append((name, f"{name} is not installed"))
        elif not ext.get("loaded"):
            blocked.append((name, f"{name} does not load ({str(ext.get('error') or 'see load:' + name)[:200]})"))
        elif arch_supported(device_arch, ext.get("built_for_archs") or []) is False:
            built = " ".join(ext.get("built_for_archs") or [])
            blocked.append((name, f"not called: {name} carries code for {built} only, not for this {device_arch} GPU "
                                  f"(a call would fail with \"{NO_KERNEL_IMAGE}\")"))
    return KernelGate(device_arch, tuple(blocked))


def build_arch_fix(device_arch: str | None, env_name: str = "") -> str:
    """The command that rebuilds the kernels for this device (``--arch`` as build takes it).

    >>> build_arch_fix("sm_90", "cuda13"), build_arch_fix("sm_100"), build_arch_fix("gfx90a")
    ('python -m resolver build --env cuda13 --arch 9.0', 'python -m resolver build --arch 10.0', 'python -m resolver build --arch gfx90a')
    """
    if device_arch and device_arch.startswith("sm_"):
        digits = device_arch[3:].rstrip("abcdefghijklmnopqrstuvwxyz")
        arch = f"{digits[:-1]}.{digits[-1]}" if len(digits) >= 2 else digits
    else:
        arch = device_arch or "ARCH"
    return f"python -m resolver build{' --env ' + env_name if env_name else ''} --arch {arch}"


def arch_mismatch(name: str, built: list[str], device_arch: str, env_name: str = "") -> tuple[str, str]:
    """(detail, fix) of the failed ``arch:<extension>`` check: said instead of calling the kernel. The
    detail carries upstream's error text, so verify's diagnoses add the ``no-kernel-image`` signature."""
    fix = build_arch_fix(device_arch, env_name)
    return (f"{name} was built for {' '.join(built)}, not for this {device_arch} GPU: its kernels would fail with "
            f"\"{NO_KERNEL_IMAGE}\", so none is called; rebuild them for this GPU: {fix}"), fix


def _inputs_conv(torch, case: dict, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(case["batch"], case["dim"], case["seqlen"], generator=g)
    weight = torch.randn(case["dim"], case["width"], generator=g) / case["width"] ** 0.5
    bias = torch.randn(case["dim"], generator=g) * 0.1 if case["bias"] else None
    return x, weight, bias


def _inputs_scan(torch, case: dict, seed: int):
    g = torch.Generator().manual_seed(seed)
    b, d, n, length = case["batch"], case["dim"], case["dstate"], case["seqlen"]
    u = torch.randn(b, d, length, generator=g)
    delta = torch.randn(b, d, length, generator=g) * 0.5
    delta_bias = torch.randn(d, generator=g) * 0.1 - 2.0  # softplus(-2) ~ 0.13: Mamba's dt range
    # S4D-real initialisation, as Mamba's A_log: A = -(1..n), a little perturbed per channel
    A = -torch.arange(1, n + 1, dtype=torch.float32).repeat(d, 1) * (1 + 0.1 * torch.rand(d, n, generator=g))
    bc_shape = (b, case["groups"], n, length) if case["groups"] else (b, n, length)
    B = torch.randn(*bc_shape, generator=g)
    C = torch.randn(*bc_shape, generator=g)
    D = torch.randn(d, generator=g)
    z = torch.randn(b, d, length, generator=g) if case["z"] else None
    return u, delta, A, B, C, D, z, delta_bias


def _errors(torch, got, want) -> dict:
    """max |got - want| and that over max |want|; NaN/inf in the output counts as an infinite error."""
    got32, want32 = got.float(), want.float()
    if got32.shape != want32.shape:
        raise ValueError(f"the kernel returned shape {tuple(got32.shape)}, the reference {tuple(want32.shape)}")
    finite = bool(torch.isfinite(got32).all())
    max_abs = float((got32 - want32).abs().max()) if want32.numel() and finite else (0.0 if finite else math.inf)
    scale = float(want32.abs().max()) or 1.0
    return {"max_abs_err": max_abs, "rel_err": max_abs / scale, "scale": scale, "finite": finite}


def _number(value: float) -> float | None:
    """JSON has no inf/NaN: a non-finite error is written as null (``finite`` says why)."""
    return value if math.isfinite(value) else None


def compare_op(torch, op: str, kernel_fn, device, dtype_name: str, *, seed: int = 1234) -> dict:
    """Run ``kernel_fn`` (``causal_conv1d_fn`` or ``selective_scan_fn``, or anything with that signature)
    over the op's cases in ``dtype_name`` on ``device``, against the reference in float32 on the same
    rounded inputs. The worst case decides: ``{ok, max_abs_err, rel_err, tolerance, cases}``."""
    from resolver.verify.inenv import reference

    dtype, tol = getattr(torch, dtype_name), KERNEL_TOLERANCE[dtype_name]
    cases = []
    for index, case in enumerate(CONV_CASES if op == "causal_conv1d" else SCAN_CASES):
        started = time.perf_counter()
        if op == "causal_conv1d":
            x, weight, bias = (t.to(device=device, dtype=dtype) if t is not None else None
                               for t in _inputs_conv(torch, case, seed + index))
            got = kernel_fn(x, weight, bias, activation=case["activation"])
            want = reference.causal_conv1d(x.float(), weight.float(), bias.float() if bias is not None else None,
                                           case["activation"])
            errs = {"out": _errors(torch, got, want)}
        elif op == "selective_scan":
            u, delta, A, B, C, D, z, delta_bias = _inputs_scan(torch, case, seed + index)
            # u, delta, B, C, z in the checked dtype; A, D and delta_bias float32, as the kernel requires
            u, delta, B, C = (t.to(device=device, dtype=dtype).contiguous() for t in (u, delta, B, C))
            z = z.to(device=device, dtype=dtype) if z is not None else None
            A, D, delta_bias = (t.to(device) for t in (A, D, delta_bias))
            got = kernel_fn(u, delta, A, B, C, D, z, delta_bias, True, case["last_state"])
            want = reference.selective_scan(u.float(), delta.float(), A, B.float(), C.float(), D,
                                            z.float() if z is not None else None, delta_bias, True,
                                            case["last_state"])
            if case["last_state"]:
                errs = {"out": _errors(torch, got[0], want[0]), "last_state": _errors(torch, got[1], want[1])}
            else:
                errs = {"out": _errors(torch, got, want)}
        else:
            raise ValueError(f"unknown op {op!r}")
        worst = max(errs.values(), key=lambda e: e["rel_err"])
        cases.append({"case": case, "outputs": {k: {n: _number(v) if isinstance(v, float) else v for n, v in e.items()}
                                                for k, e in errs.items()},
                      "max_abs_err": worst["max_abs_err"], "rel_err": worst["rel_err"],
                      "finite": all(e["finite"] for e in errs.values()),
                      "seconds": round(time.perf_counter() - started, 4)})
    worst = max(cases, key=lambda c: c["rel_err"])
    ok = all(c["finite"] for c in cases) and worst["rel_err"] <= tol
    for c in cases:
        c["max_abs_err"], c["rel_err"] = _number(c["max_abs_err"]), _number(c["rel_err"])
    return {"ok": ok, "max_abs_err": worst["max_abs_err"], "rel_err": worst["rel_err"], "tolerance": tol,
            "finite": all(c["finite"] for c in cases), "cases": cases}


def _kernel_function(op: str):
    if op == "causal_conv1d":
        from causal_conv1d import causal_conv1d_fn

        return causal_conv1d_fn
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn

    return selective_scan_fn


def run_kernel_checks(torch, device, dtypes: list[str], gate: KernelGate) -> list[dict]:
    """One check per op and dtype: pass/fail against the tolerance, or skip with the gate's reason."""
    checks = []
    for op, extension in OP_EXTENSION.items():
        why = gate.reason(extension)
        for dtype_name in dtypes:
            name = f"kernel:{op}:{dtype_name}"
            if why:
                checks.append({"name": name, "status": "skip", "detail": why})
                continue
            if dtype_name not in KERNEL_TOLERANCE:
                checks.append({"name": name, "status": "skip", "detail": f"no tolerance is defined for {dtype_name}"})
                continue
            started = time.perf_counter()
            try:
                result = compare_op(torch, op, _kernel_function(op), device, dtype_name)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
            except Exception as exc:  # noqa: BLE001 - a kernel that raises is a finding, reported with its message
                message = f"{type(exc).__name__}: {exc}".strip()
                checks.append({"name": name, "status": "fail", "error": message[:2000],
                               "detail": f"{op} ({extension}) raised on {device} in {dtype_name}: {message[:400]}"})
                continue
            seconds = round(time.perf_counter() - started, 3)
            detail = (f"{op} kernel vs reference on {device}, {dtype_name}, {len(result['cases'])} shapes: "
                      + (f"max abs err {result['max_abs_err']:.3g}, rel {result['rel_err']:.3g}" if result["finite"]
                         else "the kernel returned NaN/inf") + f" (tolerance {result['tolerance']})")
            checks.append({"name": name, "status": "pass" if result["ok"] else "fail", "detail": detail,
                           "max_abs_err": result["max_abs_err"], "rel_err": result["rel_err"],
                           "tolerance": result["tolerance"], "seconds": seconds, "cases": result["cases"]})
    return checks
