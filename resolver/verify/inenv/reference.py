"""Pure-PyTorch reference for the Mamba-1 kernels and a small Mamba language model.

This module imports torch; only code that runs *inside* a target environment uses it
(``resolver/verify/inenv/``). It is our own implementation of the semantics of the two CUDA/HIP kernel
packages, written from their documented interfaces:

- ``causal_conv1d(x, weight, bias, activation)`` is ``causal_conv1d_fn``: a depthwise 1-D
  convolution over time that sees only the present and the past (x: (batch, dim, seqlen),
  weight: (dim, width), optional bias (dim,), optional SiLU).
- ``selective_scan(u, delta, A, B, C, D, z, delta_bias, delta_softplus)`` is ``selective_scan_fn``
  for real-valued A: ``h_t = exp(delta_t * A) * h_{t-1} + delta_t * B_t * u_t`` and
  ``y_t = <h_t, C_t> + D * u_t``, gated by ``silu(z)``. B and C are either shared over time
  (dim, dstate) or vary with time (batch, dstate, seqlen) / grouped (batch, groups, dstate, seqlen).
- ``ReferenceMambaLM`` runs a Hugging Face style Mamba checkpoint (``MambaForCausalLM`` keys, or
  ``mamba_ssm``'s ``MambaLMHeadModel`` keys) with these two functions, including one-token
  decoding steps with carried state.

All accumulation is in float32; results are cast back to the input dtype, like the kernels.

>>> import torch
>>> x = torch.ones(1, 1, 3); w = torch.tensor([[1.0, 2.0]])
>>> causal_conv1d(x, w).tolist()
[[[2.0, 3.0, 3.0]]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

Tensor = torch.Tensor

_ACTIVATIONS = (None, "silu", "swish")


def causal_conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, activation: str | None = None,
                  initial_state: Tensor | None = None) -> Tensor:
    """out[b, d, t] = bias[d] + sum_k weight[d, k] * x[b, d, t - (width - 1) + k]  (zeros before t = 0).

    ``initial_state`` (batch, dim, width - 1) replaces the zeros before the first step.
    """
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be None, 'silu' or 'swish', not {activation!r}")
    dim, width = weight.shape
    if x.dim() != 3 or x.shape[1] != dim:
        raise ValueError(f"x must be (batch, {dim}, seqlen), got {tuple(x.shape)}")
    seqlen = x.shape[-1]
    xf = x.float()
    if initial_state is None:
        padded = F.pad(xf, (width - 1, 0))
    else:
        padded = torch.cat([initial_state.float(), xf], dim=-1)
    wf = weight.float()
    out = torch.zeros_like(xf)
    for k in range(width):
        out = out + wf[:, k, None] * padded[..., k:k + seqlen]
    if bias is not None:
        out = out + bias.float()[:, None]
    if activation is not None:
        out = F.silu(out)
    return out.to(x.dtype)


def causal_conv1d_step(x: Tensor, conv_state: Tensor, weight: Tensor, bias: Tensor | None = None,
                       activation: str | None = None) -> tuple[Tensor, Tensor]:
    """One decoding step. x: (batch, dim); conv_state: the last ``width`` inputs (batch, dim, width).

    Returns (out (batch, dim), new_state); equal to the last column of :func:`causal_conv1d` over the
    whole sequence.
    """
    state = torch.cat([conv_state[..., 1:], x[..., None].to(conv_state.dtype)], dim=-1)
    out = (state.float() * weight.float()).sum(-1)
    if bias is not None:
        out = out + bias.float()
    if activation is not None:
        out = F.silu(out)
    return out.to(x.dtype), state


def _per_step(M: Tensor, dim: int) -> Tensor:
    """B or C as (batch|1, dim, dstate, seqlen|1) whatever form it came in."""
    if M.dim() == 2:  # (dim, dstate): shared over time and batch
        return M.float()[None, :, :, None]
    if M.dim() == 3:  # (batch, dstate, seqlen): one per time step, shared by all channels
        return M.float()[:, None, :, :]
    if M.dim() == 4:  # (batch, groups, dstate, seqlen): channels split in groups
        groups = M.shape[1]
        if dim % groups:
            raise ValueError(f"dim {dim} is not a multiple of the {groups} groups of B/C")
        return M.float().repeat_interleave(dim // groups, dim=1)
    raise ValueError(f"B/C must have 2, 3 or 4 dimensions, got {M.dim()}")


def selective_scan(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Tensor | None = None,
                   z: Tensor | None = None, delta_bias: Tensor | None = None, delta_softplus: bool = False,
                   return_last_state: bool = False, initial_state: Tensor | None = None):
    """The Mamba-1 selective scan (real A). u, delta, z: (batch, dim, seqlen); A: (dim, dstate); D: (dim,).

    Returns out (batch, dim, seqlen) in u's dtype, and with ``return_last_state`` also the final state
    (batch, dim, dstate) in float32.
    """
    if A.is_complex():
        raise NotImplementedError("the reference covers real-valued A only (Mamba-1 checkpoints)")
    batch, dim, seqlen = u.shape
    dstate = A.shape[1]
    dt = delta.float()
    if delta_bias is not None:
        dt = dt + delta_bias.float()[:, None]
    if delta_softplus:
        dt = F.softplus(dt)
    uf = u.float()
    Bs, Cs = _per_step(B, dim), _per_step(C, dim)
    Af = A.float()
    h = (torch.zeros(batch, dim, dstate, device=u.device, dtype=torch.float32) if initial_state is None
         else initial_state.float().clone())
    ys = []
    for t in range(seqlen):
        Bt = Bs[..., 0 if Bs.shape[-1] == 1 else t]
        Ct = Cs[..., 0 if Cs.shape[-1] == 1 else t]
        dt_t = dt[:, :, t, None]
        h = torch.exp(dt_t * Af) * h + dt_t * Bt * uf[:, :, t, None]
        ys.append((h * Ct).sum(-1))
    y = torch.stack(ys, dim=-1) if ys else uf.new_zeros(batch, dim, 0)
    if D is not None:
        y = y + uf * D.float()[:, None]
    if z is not None:
        y = y * F.silu(z.float())
    out = y.to(u.dtype)
    return (out, h) if return_last_state else out


def selective_state_step(state: Tensor, x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor,
                         D: Tensor | None = None, z: Tensor | None = None, dt_bias: Tensor | None = None,
                         dt_softplus: bool = False) -> tuple[Tensor, Tensor]:
    """One decoding step of the scan. state: (batch, dim, dstate) float32; x, dt, z: (batch, dim);
    B, C: (batch, dstate). Returns (y (batch, dim) in x's dtype, new_state)."""
    dtf = dt.float()
    if dt_bias is not None:
        dtf = dtf + dt_bias.float()
    if dt_softplus:
        dtf = F.softplus(dtf)
    new = torch.exp(dtf[..., None] * A.float()) * state.float() + dtf[..., None] * B.float()[:, None, :] * x.float()[..., None]
    y = (new * C.float()[:, None, :]).sum(-1)
    if D is not None:
        y = y + x.float() * D.float()
    if z is not None:
        y = y * F.silu(z.float())
    return y.to(x.dtype), new


@dataclass(frozen=True)
class MambaSpec:
    """The shape of a Mamba-1 language model, read from either config.json dialect.

    >>> MambaSpec.from_config({"model_type": "mamba", "hidden_size": 64, "num_hidden_layers": 2,
    ...                        "vocab_size": 256}).dt_rank
    4
    """

    d_model: int
    n_layer: int
    vocab_size: int
    d_state: int = 16
    d_conv: int = 4
    expand: int = 2
    dt_rank: int = 0
    norm_eps: float = 1e-5
    rms_norm: bool = True
    residual_in_fp32: bool = True
    conv_bias: bool = True
    bias: bool = False
    tie_embeddings: bool = True

    @property
    def d_inner(self) -> int:
        return self.expand * self.d_model

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> "MambaSpec":
        if "hidden_size" in cfg:  # transformers' MambaConfig
            d_model = int(cfg["hidden_size"])
            rank = cfg.get("time_step_rank", "auto")
            return cls(d_model=d_model, n_layer=int(cfg["num_hidden_layers"]), vocab_size=int(cfg["vocab_size"]),
                       d_state=int(cfg.get("state_size", 16)), d_conv=int(cfg.get("conv_kernel", 4)),
                       expand=int(cfg.get("expand", 2)),
                       dt_rank=math.ceil(d_model / 16) if rank == "auto" else int(rank),
                       norm_eps=float(cfg.get("layer_norm_epsilon", 1e-5)), rms_norm=True,
                       residual_in_fp32=bool(cfg.get("residual_in_fp32", True)),
                       conv_bias=bool(cfg.get("use_conv_bias", True)), bias=bool(cfg.get("use_bias", False)),
                       tie_embeddings=bool(cfg.get("tie_word_embeddings", True)))
        if "d_model" in cfg:  # mamba_ssm's MambaConfig
            ssm = dict(cfg.get("ssm_cfg") or {})
            if ssm.get("layer", "Mamba1") != "Mamba1" or cfg.get("attn_layer_idx") or cfg.get("d_intermediate"):
                raise ValueError("the reference runs Mamba-1 checkpoints without attention or MLP layers")
            d_model = int(cfg["d_model"])
            vocab = int(cfg["vocab_size"])
            pad = int(cfg.get("pad_vocab_size_multiple", 8))
            if vocab % pad:
                vocab += pad - vocab % pad
            rank = ssm.get("dt_rank", "auto")
            return cls(d_model=d_model, n_layer=int(cfg["n_layer"]), vocab_size=vocab,
                       d_state=int(ssm.get("d_state", 16)), d_conv=int(ssm.get("d_conv", 4)),
                       expand=int(ssm.get("expand", 2)),
                       dt_rank=math.ceil(d_model / 16) if rank == "auto" else int(rank),
                       rms_norm=bool(cfg.get("rms_norm", True)), residual_in_fp32=bool(cfg.get("residual_in_fp32", True)),
                       conv_bias=bool(ssm.get("conv_bias", True)), bias=bool(ssm.get("bias", False)),
                       tie_embeddings=bool(cfg.get("tie_embeddings", True)))
        raise ValueError("config.json is neither a transformers MambaConfig (hidden_size) nor a mamba_ssm one (d_model)")


def canonical_weights(state: dict[str, Tensor], spec: MambaSpec) -> dict[str, Tensor]:
    """Rename a state dict to the transformers layout (``backbone.embeddings``) and fill a tied lm_head."""
    out: dict[str, Tensor] = {}
    for key, value in state.items():
        key = key.replace("backbone.embedding.weight", "backbone.embeddings.weight")
        out[key] = value
    if "lm_head.weight" not in out:
        if not spec.tie_embeddings:
            raise ValueError("the checkpoint has no lm_head.weight and does not tie it to the embeddings")
        out["lm_head.weight"] = out["backbone.embeddings.weight"]
    return out


def missing_weights(state: dict[str, Tensor], spec: MambaSpec) -> list[str]:
    """Weights the spec needs that the checkpoint lacks (after renaming), e.g. a layer the config promises."""
    have = set(state) | {k.replace("backbone.embedding.weight", "backbone.embeddings.weight") for k in state}
    need = ["backbone.embeddings.weight", "backbone.norm_f.weight"]
    if not spec.tie_embeddings:
        need.append("lm_head.weight")
    for i in range(spec.n_layer):
        p = f"backbone.layers.{i}."
        need += [p + "norm.weight"] + [p + "mixer." + n for n in ("A_log", "D", "in_proj.weight", "conv1d.weight",
                                                                  "x_proj.weight", "dt_proj.weight", "dt_proj.bias",
                                                                  "out_proj.weight")]
    return [k for k in need if k not in have]


def _norm(x: Tensor, weight: Tensor, bias: Tensor | None, eps: float, rms: bool) -> Tensor:
    xf = x.float()
    if rms:
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    else:
        xf = F.layer_norm(xf, (xf.shape[-1],), None, None, eps)
    out = weight.float() * xf
    if bias is not None:
        out = out + bias.float()
    return out.to(x.dtype)


class ReferenceMambaLM:
    """A Mamba-1 LM evaluated with :func:`causal_conv1d` and :func:`selective_scan` only.

    ``forward(ids)`` gives logits (batch, seqlen, vocab); ``generate(ids, n)`` decodes greedily one
    token at a time with carried conv/SSM state, returning (tokens (batch, n), step logits (n, batch, vocab)).
    """

    def __init__(self, spec: MambaSpec, state: dict[str, Tensor], *, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu") -> None:
        self.spec = spec
        weights = canonical_weights(state, spec)
        keep_fp32 = ("A_log", "mixer.D")
        self.w = {k: (v.to(device=device, dtype=torch.float32) if k.endswith(keep_fp32) else v.to(device=device, dtype=dtype))
                  for k, v in weights.items()}
        self.dtype = dtype
        self.device = torch.device(device)

    def _get(self, key: str) -> Tensor | None:
        return self.w.get(key)

    def _mixer(self, i: int, h: Tensor, cache: list | None) -> Tensor:
        p = f"backbone.layers.{i}.mixer."
        s = self.spec
        xz = F.linear(h, self.w[p + "in_proj.weight"], self._get(p + "in_proj.bias")).transpose(1, 2)
        x, z = xz.chunk(2, dim=1)
        conv_w = self.w[p + "conv1d.weight"].reshape(s.d_inner, s.d_conv)
        conv_b = self._get(p + "conv1d.bias")
        if cache is not None:
            cache.append({"conv": F.pad(x, (s.d_conv - x.shape[-1], 0)) if x.shape[-1] < s.d_conv else x[..., -s.d_conv:]})
        x = causal_conv1d(x, conv_w, conv_b, "silu")
        x_dbl = F.linear(x.transpose(1, 2), self.w[p + "x_proj.weight"])
        dt, B, C = torch.split(x_dbl, [s.dt_rank, s.d_state, s.d_state], dim=-1)
        dt = F.linear(dt, self.w[p + "dt_proj.weight"]).transpose(1, 2)
        A = -torch.exp(self.w[p + "A_log"].float())
        y, last = selective_scan(x, dt, A, B.transpose(1, 2), C.transpose(1, 2), self.w[p + "D"], z,
                                 delta_bias=self.w[p + "dt_proj.bias"], delta_softplus=True, return_last_state=True)
        if cache is not None:
            cache[-1]["ssm"] = last
        return F.linear(y.transpose(1, 2), self.w[p + "out_proj.weight"], self._get(p + "out_proj.bias"))

    def _mixer_step(self, i: int, h: Tensor, layer_cache: dict) -> Tensor:
        p = f"backbone.layers.{i}.mixer."
        s = self.spec
        xz = F.linear(h, self.w[p + "in_proj.weight"], self._get(p + "in_proj.bias"))
        x, z = xz.chunk(2, dim=-1)
        conv_w = self.w[p + "conv1d.weight"].reshape(s.d_inner, s.d_conv)
        x, layer_cache["conv"] = causal_conv1d_step(x, layer_cache["conv"], conv_w, self._get(p + "conv1d.bias"), "silu")
        dt, B, C = torch.split(F.linear(x, self.w[p + "x_proj.weight"]), [s.dt_rank, s.d_state, s.d_state], dim=-1)
        dt = F.linear(dt, self.w[p + "dt_proj.weight"])
        A = -torch.exp(self.w[p + "A_log"].float())
        y, layer_cache["ssm"] = selective_state_step(layer_cache["ssm"], x, dt, A, B, C, self.w[p + "D"], z,
                                                     dt_bias=self.w[p + "dt_proj.bias"], dt_softplus=True)
        return F.linear(y, self.w[p + "out_proj.weight"], self._get(p + "out_proj.bias"))

    def _run(self, ids: Tensor, cache: list | None, step: bool) -> Tensor:
        s = self.spec
        h = F.embedding(ids.to(self.device), self.w["backbone.embeddings.weight"])
        for i in range(s.n_layer):
            p = f"backbone.layers.{i}."
            normed = _norm(h, self.w[p + "norm.weight"], self._get(p + "norm.bias"), s.norm_eps, s.rms_norm)
            residual = h.float() if s.residual_in_fp32 else h
            out = self._mixer_step(i, normed, cache[i]) if step else self._mixer(i, normed, cache)
            h = residual + out
        h = _norm(h.to(self.dtype), self.w["backbone.norm_f.weight"], self._get("backbone.norm_f.bias"), s.norm_eps, s.rms_norm)
        return F.linear(h, self.w["lm_head.weight"]).float()

    @torch.no_grad()
    def forward(self, ids: Tensor) -> Tensor:
        return self._run(ids, None, step=False)

    @torch.no_grad()
    def prefill(self, ids: Tensor) -> tuple[Tensor, list]:
        cache: list = []
        return self._run(ids, cache, step=False), cache

    @torch.no_grad()
    def step(self, tokens: Tensor, cache: list) -> Tensor:
        return self._run(tokens, cache, step=True)

    @torch.no_grad()
    def generate(self, ids: Tensor, new_tokens: int) -> tuple[Tensor, Tensor]:
        logits, cache = self.prefill(ids)
        last = logits[:, -1]
        tokens, steps = [], []
        for _ in range(new_tokens):
            steps.append(last)
            nxt = last.argmax(-1)
            tokens.append(nxt)
            last = self.step(nxt, cache)
        return torch.stack(tokens, dim=1), torch.stack(steps)
