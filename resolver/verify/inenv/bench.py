"""Throughput of the library (kernel path) and of the reference: prompt processing and decoding. Runs
INSIDE the environment."""

from __future__ import annotations

import statistics

from resolver.verify.inenv.models import Library, timed


def bench(torch, device, lib: Library, ref, ids, args) -> dict:
    """Prompt processing: one forward over the prompt (median tokens/s and latency). Decoding: the
    fastest greedy generation of N tokens minus the fastest of 1 token (same prefill), divided by N - 1:
    the per-token step latency, without subtracting two differently-measured things."""
    batch, plen, new = ids.shape[0], ids.shape[1], max(args.new_tokens, 2)
    out: dict = {}
    for label, forward, generate in (("library", lambda: lib.forward(torch, ids), lambda n: lib.generate(torch, ids, n)),
                                     ("reference", lambda: ref.forward(ids), lambda n: ref.generate(ids, n))):
        if label == "reference" and args.skip_reference_bench:
            continue
        forward()  # warm-up (Triton autotuning, caches)
        generate(new)
        _, f_times = timed(torch, device, forward, args.repeat)
        _, one_times = timed(torch, device, lambda: generate(1), args.repeat)
        _, g_times = timed(torch, device, lambda: generate(new), args.repeat)
        prefill = statistics.median(f_times)
        # the difference of the fastest runs: least disturbed by other load on a shared machine
        step = (min(g_times) - min(one_times)) / (new - 1)
        entry = {"prefill_latency_ms": prefill * 1e3, "prefill_tokens_per_s": batch * plen / prefill,
                 "generate_latency_ms": statistics.median(g_times) * 1e3, "repeat": args.repeat,
                 "prefill_all_ms": [round(x * 1e3, 3) for x in f_times],
                 "generate_all_ms": [round(x * 1e3, 3) for x in g_times]}
        if step > 0:
            entry.update(per_token_latency_ms=step * 1e3, decode_tokens_per_s=batch / step)
        else:  # the machine was too noisy for the difference to mean anything
            entry.update(per_token_latency_ms=None, decode_tokens_per_s=None, note="decode timing too noisy")
        out[label] = entry
    if "reference" in out:
        lib_b, ref_b = out["library"], out["reference"]
        out["speedup_prefill"] = ref_b["prefill_latency_ms"] / lib_b["prefill_latency_ms"]
        out["speedup_decode"] = (lib_b["decode_tokens_per_s"] / ref_b["decode_tokens_per_s"]
                                 if lib_b["decode_tokens_per_s"] and ref_b["decode_tokens_per_s"] else None)
    return out
