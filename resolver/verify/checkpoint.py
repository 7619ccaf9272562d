"""The small deterministic Mamba checkpoint ``verify`` and ``bench`` use when no ``--model`` is given.

Written in pure Python (no torch, no numpy), so the same bytes come out on every machine and in
every environment: Hugging Face layout (``config.json`` + ``model.safetensors``, transformers'
``MambaForCausalLM`` keys, its own lm_head), float32, weights drawn from ``random.Random(seed)``.
Embeddings and lm_head are deliberately large (uniform ±1.7, ±1.0) so that greedy decoding has
clear margins and kernel/reference comparisons are not decided by near-ties.

>>> spec = TinySpec()
>>> spec.dt_rank, sorted(tensor_shapes(spec))[:2]
(4, ['backbone.embeddings.weight', 'backbone.layers.0.mixer.A_log'])
"""

from __future__ import annotations

import array
import json
import math
import random
import struct
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from resolver.core.fs import make_folder, write_atomic

FORMAT = 2  # bump when the generated weights or config change, so cached copies are rewritten
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


@dataclass(frozen=True)
class TinySpec:
    vocab_size: int = 256
    hidden_size: int = 64
    num_hidden_layers: int = 2
    state_size: int = 16
    conv_kernel: int = 4
    expand: int = 2
    seed: int = 20240601

    @property
    def intermediate(self) -> int:
        return self.expand * self.hidden_size

    @property
    def dt_rank(self) -> int:
        return math.ceil(self.hidden_size / 16)

    def config(self) -> dict:
        return {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "vocab_size": self.vocab_size,
                "hidden_size": self.hidden_size, "num_hidden_layers": self.num_hidden_layers,
                "state_size": self.state_size, "conv_kernel": self.conv_kernel, "expand": self.expand,
                "time_step_rank": self.dt_rank, "layer_norm_epsilon": 1e-5, "use_bias": False,
                "use_conv_bias": True, "residual_in_fp32": True, "tie_word_embeddings": False,
                "hidden_act": "silu", "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0,
                "torch_dtype": "float32", "resolver_tiny_spec": asdict(self)}

    def key(self) -> str:
        """A short content key for the cache folder name."""
        from resolver.core.fingerprint import fingerprint

        return fingerprint([FORMAT, asdict(self)])[:12]


def tensor_shapes(spec: TinySpec) -> dict[str, tuple[int, ...]]:
    d, di, n, w, r = spec.hidden_size, spec.intermediate, spec.state_size, spec.conv_kernel, spec.dt_rank
    shapes: dict[str, tuple[int, ...]] = {"backbone.embeddings.weight": (spec.vocab_size, d),
                                          "backbone.norm_f.weight": (d,), "lm_head.weight": (spec.vocab_size, d)}
    for i in range(spec.num_hidden_layers):
        p = f"backbone.layers.{i}."
        shapes.update({p + "norm.weight": (d,), p + "mixer.A_log": (di, n), p + "mixer.D": (di,),
                       p + "mixer.in_proj.weight": (2 * di, d), p + "mixer.conv1d.weight": (di, 1, w),
                       p + "mixer.conv1d.bias": (di,), p + "mixer.x_proj.weight": (r + 2 * n, di),
                       p + "mixer.dt_proj.weight": (di, r), p + "mixer.dt_proj.bias": (di,),
                       p + "mixer.out_proj.weight": (d, di)})
    return shapes


def _values(name: str, shape: tuple[int, ...], rng: random.Random, spec: TinySpec) -> list[float]:
    count = math.prod(shape)
    short = name.rsplit(".", 2)[-2] + "." + name.rsplit(".", 1)[-1] if "mixer" in name else name
    if name.endswith("A_log"):
        return [math.log(1 + j % shape[1]) for j in range(count)]  # S4D-real: A = -(1..N)
    if name.endswith(("mixer.D", "norm.weight", "norm_f.weight")):
        return [1.0 + 0.1 * (rng.random() - 0.5) for _ in range(count)]
    if name.endswith("dt_proj.bias"):  # softplus(bias) log-uniform in [1e-3, 1e-1]
        out = []
        for _ in range(count):
            dt = math.exp(math.log(1e-3) + rng.random() * (math.log(1e-1) - math.log(1e-3)))
            out.append(dt + math.log(-math.expm1(-dt)))
        return out
    if name.endswith("embeddings.weight"):
        bound = 1.7
    elif name == "lm_head.weight":
        bound = 1.0
    elif short.startswith("conv1d"):
        bound = 1.0 / math.sqrt(spec.conv_kernel)
    elif short == "dt_proj.weight":
        bound = spec.dt_rank ** -0.5
    else:
        bound = 1.0 / math.sqrt(shape[-1])
    return [bound * (2.0 * rng.random() - 1.0) for _ in range(count)]


def safetensors_bytes(tensors: dict[str, tuple[tuple[int, ...], list[float]]]) -> bytes:
    """Serialise float32 tensors in the safetensors format (8-byte little-endian header size, JSON header, data)."""
    header: dict = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name in sorted(tensors):
        shape, values = tensors[name]
        data = array.array("f", values)
        if sys.byteorder != "little":
            data.byteswap()
        raw = data.tobytes()
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    return struct.pack("<Q", len(head)) + head + b"".join(blobs)


def write_tiny_checkpoint(folder: Path, spec: TinySpec | None = None) -> Path:
    """Write the checkpoint into ``folder`` (atomically: temp files, then rename). Returns the folder."""
    make_folder(folder)
    for filename, payload in _payloads(spec or TinySpec()).items():
        write_atomic(folder / filename, payload, label="checkpoint")
    return folder


def _payloads(spec: TinySpec) -> dict[str, bytes]:
    rng = random.Random(spec.seed)
    tensors = {name: (shape, _values(name, shape, rng, spec)) for name, shape in sorted(tensor_shapes(spec).items())}
    return {WEIGHTS_FILE: safetensors_bytes(tensors), CONFIG_FILE: (json.dumps(spec.config(), indent=2) + "\n").encode()}


def default_checkpoint(cache_dir: Path, spec: TinySpec | None = None) -> Path:
    """The cached default checkpoint under ``cache_dir``, written on first use, and again whenever its
    files are not byte for byte what the spec generates (a cache is checked by its content: verify
    must never run on weights someone else put there)."""
    from resolver.core.errors import BadInput
    from resolver.core.fs import read_bytes_bounded

    spec = spec or TinySpec()
    folder = cache_dir / f"verify-model-{spec.key()}"
    for filename, payload in _payloads(spec).items():
        try:
            same = read_bytes_bounded(folder / filename, limit=len(payload), what="the cached checkpoint",
                                      follow_symlinks=False, own=True) == payload
        except BadInput:
            same = False
        if not same:  # the rename replaces a link planted there, never what it points at
            write_atomic(folder / filename, payload, label="checkpoint")
    return folder
