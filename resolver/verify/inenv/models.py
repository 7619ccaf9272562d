"""The model a verify run loads, through the real library (``mamba_ssm``'s MambaLMHeadModel or
transformers' MambaForCausalLM), and how its output is compared with the reference. Runs INSIDE the
environment (imports torch lazily, through the ``torch`` argument)."""

from __future__ import annotations

import time
from pathlib import Path

# Relative tolerance on logits (max |lib - ref| / max |ref|), per dtype. float32 kernels and the
# reference differ only in summation order; half precisions round every intermediate.
TOLERANCE = {"float32": 1e-3, "bfloat16": 4e-2, "float16": 1e-2}


def sync(torch, device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(torch, device, fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        sync(torch, device)
        start = time.perf_counter()
        result = fn()
        sync(torch, device)
        times.append(time.perf_counter() - start)
    return result, times


def compare_logits(torch, ref, lib, dtype_name: str) -> dict:
    ref32, lib32 = ref.float(), lib.float()
    if ref32.shape != lib32.shape:
        return {"ok": False, "why": f"shapes differ: reference {tuple(ref32.shape)}, library {tuple(lib32.shape)}"}
    finite = bool(torch.isfinite(lib32).all())
    max_abs = float((ref32 - lib32).abs().max()) if ref32.numel() else 0.0
    scale = float(ref32.abs().max()) or 1.0
    rel = max_abs / scale
    tol = TOLERANCE[dtype_name]
    return {"ok": finite and rel <= tol, "max_abs_err": max_abs, "rel_err": rel, "tolerance": tol, "finite": finite,
            "logit_scale": scale}


def compare_tokens(torch, ref_tokens, lib_tokens, ref_steps, tol: float) -> dict:
    """Greedy generations agree, or first differ where the reference's top two logits are a near-tie."""
    a, b = ref_tokens.tolist(), lib_tokens.tolist()
    if a == b:
        return {"ok": True, "tokens_equal": True}
    for row, (ra, rb) in enumerate(zip(a, b)):
        for step, (x, y) in enumerate(zip(ra, rb)):
            if x != y:
                top2 = torch.topk(ref_steps[step, row].float(), 2).values
                margin = float(top2[0] - top2[1])
                scale = float(ref_steps[step, row].float().abs().max()) or 1.0
                near_tie = margin <= 2 * tol * scale
                return {"ok": near_tie, "tokens_equal": False, "first_difference": {"row": row, "step": step,
                        "reference": x, "library": y, "reference_margin": margin, "near_tie": near_tie}}
    return {"ok": False, "tokens_equal": False, "why": "generations have different lengths"}


class Library:
    """The real library the checkpoint is loaded through."""

    def __init__(self, name: str, model, device, uses_kernels: bool) -> None:
        self.name, self.model, self.device, self.uses_kernels = name, model, device, uses_kernels

    def forward(self, torch, ids):
        with torch.no_grad():
            return self.model(ids).logits

    def generate(self, torch, ids, new_tokens: int):
        with torch.no_grad():
            if self.name.startswith("mamba_ssm"):
                out = self.model.generate(ids, max_length=ids.shape[1] + new_tokens, top_k=1,
                                          output_scores=True, return_dict_in_generate=True)
                return out.sequences[:, ids.shape[1]:], torch.stack(list(out.scores))
            out = self.model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                      output_logits=True, return_dict_in_generate=True, pad_token_id=0)
            return out.sequences[:, ids.shape[1]:], torch.stack(list(out.logits))


def load_mamba_ssm(torch, model_dir: Path, spec, state, dtype, device) -> Library:
    from mamba_ssm.models.config_mamba import MambaConfig
    from mamba_ssm.models.mixer_seq_simple import MambaLMHeadModel

    from resolver.verify.inenv.reference import canonical_weights

    config = MambaConfig(d_model=spec.d_model, n_layer=spec.n_layer, vocab_size=spec.vocab_size,
                         ssm_cfg={"d_state": spec.d_state, "d_conv": spec.d_conv, "expand": spec.expand,
                                  "dt_rank": spec.dt_rank, "conv_bias": spec.conv_bias, "bias": spec.bias},
                         rms_norm=spec.rms_norm, residual_in_fp32=spec.residual_in_fp32, fused_add_norm=True,
                         pad_vocab_size_multiple=1, tie_embeddings=spec.tie_embeddings)
    model = MambaLMHeadModel(config, device=device, dtype=dtype)
    weights = {k.replace("backbone.embeddings.weight", "backbone.embedding.weight"): v
               for k, v in canonical_weights(state, spec).items()}
    model.load_state_dict(weights, strict=True)
    model.eval()
    return Library("mamba_ssm.MambaLMHeadModel", model, device, uses_kernels=True)


def load_transformers(torch, model_dir: Path, cfg: dict, spec, state, dtype, device, uses_kernels: bool) -> Library:
    """from_pretrained for a transformers checkpoint; a mamba_ssm one (d_model, ssm_cfg) is mapped onto
    transformers' MambaConfig and its state dict loaded strictly."""
    from transformers import MambaConfig, MambaForCausalLM
    from transformers.utils import logging as hf_logging

    from resolver.verify.inenv.reference import canonical_weights

    hf_logging.set_verbosity_error()
    if cfg.get("model_type") == "mamba" or "hidden_size" in cfg:
        model = MambaForCausalLM.from_pretrained(str(model_dir), dtype=dtype)
    else:
        if not spec.rms_norm:
            raise ValueError("transformers' Mamba has RMSNorm only; this mamba_ssm checkpoint uses LayerNorm")
        config = MambaConfig(vocab_size=spec.vocab_size, hidden_size=spec.d_model, state_size=spec.d_state,
                             num_hidden_layers=spec.n_layer, conv_kernel=spec.d_conv, expand=spec.expand,
                             time_step_rank=spec.dt_rank, layer_norm_epsilon=spec.norm_eps, use_bias=spec.bias,
                             use_conv_bias=spec.conv_bias, residual_in_fp32=spec.residual_in_fp32,
                             tie_word_embeddings=spec.tie_embeddings)
        model = MambaForCausalLM(config)
        model.load_state_dict(canonical_weights(state, spec), strict=True)
        model = model.to(dtype)
    model = model.to(device).eval()
    return Library("transformers.MambaForCausalLM", model, device, uses_kernels=uses_kernels)
