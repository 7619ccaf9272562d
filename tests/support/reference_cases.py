"""Run INSIDE a torch environment: resolver.verify.inenv.reference against naive Python loops, printed as JSON.

Each case prints its largest absolute error against an independent scalar-loop implementation
written straight from the kernels' documented semantics. ``tests/unit/verify/test_reference.py`` runs this
file with the test environment's Python (the resolver's own venv has no torch) and checks the numbers.
"""

from __future__ import annotations

import json
import math
import sys

import torch

from resolver.verify.inenv.reference import (
    MambaSpec,
    ReferenceMambaLM,
    causal_conv1d,
    causal_conv1d_step,
    selective_scan,
    selective_state_step,
)


def naive_conv(x, w, b, silu, init=None):
    batch, dim, L = x.shape
    width = w.shape[1]
    out = torch.zeros(batch, dim, L, dtype=torch.float64)
    for bi in range(batch):
        for d in range(dim):
            for t in range(L):
                acc = float(b[d]) if b is not None else 0.0
                for k in range(width):
                    src = t - (width - 1) + k
                    if src >= 0:
                        acc += float(w[d, k]) * float(x[bi, d, src])
                    elif init is not None:
                        acc += float(w[d, k]) * float(init[bi, d, width - 1 + src])
                out[bi, d, t] = acc / (1 + math.exp(-acc)) if silu else acc
    return out


def _bc(M, bi, d, n, t, dim):
    if M.dim() == 2:
        return float(M[d, n])
    if M.dim() == 3:
        return float(M[bi, n, t])
    groups = M.shape[1]
    return float(M[bi, d // (dim // groups), n, t])


def naive_scan(u, delta, A, B, C, D=None, z=None, delta_bias=None, softplus=False):
    batch, dim, L = u.shape
    N = A.shape[1]
    out = torch.zeros(batch, dim, L, dtype=torch.float64)
    last = torch.zeros(batch, dim, N, dtype=torch.float64)
    for bi in range(batch):
        for d in range(dim):
            h = [0.0] * N
            for t in range(L):
                dt = float(delta[bi, d, t]) + (float(delta_bias[d]) if delta_bias is not None else 0.0)
                if softplus:
                    dt = math.log1p(math.exp(dt))
                y = 0.0
                for n in range(N):
                    h[n] = math.exp(dt * float(A[d, n])) * h[n] + dt * _bc(B, bi, d, n, t, dim) * float(u[bi, d, t])
                    y += h[n] * _bc(C, bi, d, n, t, dim)
                if D is not None:
                    y += float(D[d]) * float(u[bi, d, t])
                if z is not None:
                    zz = float(z[bi, d, t])
                    y *= zz / (1 + math.exp(-zz))
                out[bi, d, t] = y
            last[bi, d] = torch.tensor(h, dtype=torch.float64)
    return out, last


def err(a, b) -> float:
    return float((a.double() - b.double()).abs().max())


def main() -> None:
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    res: dict[str, float] = {}
    batch, dim, L, N, W = 2, 6, 7, 3, 4

    x, w, b = r(batch, dim, L), r(dim, W), r(dim)
    res["conv_bias_silu"] = err(causal_conv1d(x, w, b, "silu"), naive_conv(x, w, b, True))
    res["conv_nobias_noact"] = err(causal_conv1d(x, w, None, None), naive_conv(x, w, None, False))
    init = r(batch, dim, W - 1)
    res["conv_initial_state"] = err(causal_conv1d(x, w, b, None, initial_state=init), naive_conv(x, w, b, False, init))
    xs = r(batch, dim, 2)  # shorter than the filter
    res["conv_short_sequence"] = err(causal_conv1d(xs, w, b, "silu"), naive_conv(xs, w, b, True))
    # decoding steps reproduce the full convolution
    state = torch.zeros(batch, dim, W)
    steps = []
    for t in range(L):
        o, state = causal_conv1d_step(x[:, :, t], state, w, b, "silu")
        steps.append(o)
    res["conv_step_vs_full"] = err(torch.stack(steps, -1), causal_conv1d(x, w, b, "silu"))
    # negative control: an anti-causal convolution must NOT match
    res["control_conv_anticausal"] = err(causal_conv1d(x.flip(-1), w, b, "silu").flip(-1), naive_conv(x, w, b, True))

    u, delta, z = r(batch, dim, L), r(batch, dim, L) * 0.5, r(batch, dim, L)
    A = -torch.rand(dim, N, generator=g) - 0.1
    D, dbias = r(dim), r(dim) * 0.1
    Bv, Cv = r(batch, N, L), r(batch, N, L)
    out, last = selective_scan(u, delta, A, Bv, Cv, D, z, dbias, True, return_last_state=True)
    ref_out, ref_last = naive_scan(u, delta, A, Bv, Cv, D, z, dbias, True)
    res["scan_variable_BC_full"] = err(out, ref_out)
    res["scan_last_state"] = err(last, ref_last)
    Bs, Cs = r(dim, N), r(dim, N)
    res["scan_shared_BC"] = err(selective_scan(u, delta.abs(), A, Bs, Cs), naive_scan(u, delta.abs(), A, Bs, Cs)[0])
    Bg, Cg = r(batch, 2, N, L), r(batch, 2, N, L)
    res["scan_grouped_BC"] = err(selective_scan(u, delta, A, Bg, Cg, D, None, dbias, True),
                                 naive_scan(u, delta, A, Bg, Cg, D, None, dbias, True)[0])
    res["scan_bf16_input"] = err(selective_scan(u.bfloat16(), delta, A, Bv, Cv, D, z, dbias, True).float(), ref_out)
    # one-token state steps reproduce the scan
    h = torch.zeros(batch, dim, N)
    ys = []
    for t in range(L):
        y, h = selective_state_step(h, u[:, :, t], delta[:, :, t], A, Bv[:, :, t], Cv[:, :, t], D, z[:, :, t], dbias, True)
        ys.append(y)
    res["scan_step_vs_full"] = err(torch.stack(ys, -1), out)
    # negative control: dropping the softplus must NOT match
    res["control_scan_no_softplus"] = err(selective_scan(u, delta, A, Bv, Cv, D, z, dbias, False), ref_out)

    # the language model: prefill + one-token steps == forward over the longer sequence
    spec = MambaSpec.from_config({"model_type": "mamba", "hidden_size": 16, "num_hidden_layers": 2, "vocab_size": 32,
                                  "state_size": 4, "conv_kernel": 3, "tie_word_embeddings": True})
    weights = {"backbone.embeddings.weight": r(32, 16), "backbone.norm_f.weight": 1 + 0.1 * r(16)}
    for i in range(2):
        p = f"backbone.layers.{i}."
        weights.update({p + "norm.weight": 1 + 0.1 * r(16), p + "mixer.A_log": torch.log(torch.arange(1, 5.0)).repeat(32, 1),
                        p + "mixer.D": r(32), p + "mixer.in_proj.weight": r(64, 16) * 0.25,
                        p + "mixer.conv1d.weight": r(32, 1, 3) * 0.5, p + "mixer.conv1d.bias": r(32) * 0.1,
                        p + "mixer.x_proj.weight": r(1 + 8, 32) * 0.2, p + "mixer.dt_proj.weight": r(32, 1),
                        p + "mixer.dt_proj.bias": r(32) * 0.1 - 2, p + "mixer.out_proj.weight": r(16, 32) * 0.2})
    model = ReferenceMambaLM(spec, weights)
    ids = torch.randint(0, 32, (2, 9), generator=g)
    full = model.forward(ids)
    logits, cache = model.prefill(ids[:, :5])
    stepped = [logits[:, -1]]
    for t in range(5, 9):
        stepped.append(model.step(ids[:, t], cache))
    res["lm_prefill_matches_forward"] = err(logits, full[:, :5])
    res["lm_steps_match_forward"] = err(torch.stack(stepped[1:], 1), full[:, 5:])
    res["lm_mamba_ssm_keys"] = err(ReferenceMambaLM(spec, {k.replace("embeddings", "embedding"): v
                                                           for k, v in weights.items()}).forward(ids), full)
    print(json.dumps(res))


if __name__ == "__main__":
    sys.exit(main())
