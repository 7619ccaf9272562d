"""``verify`` and ``bench`` inside the target environment: one process, one JSON document on stdout.

Run as ``python -m resolver.verify.inenv.verify --model DIR [--mode verify|bench] ...`` by the resolver
(see :mod:`resolver.verify.in_env`). It imports torch once, checks the kernel extensions, loads the
checkpoint through the real library present (``mamba_ssm``'s ``MambaLMHeadModel`` when its kernels
load and a GPU is there; transformers' ``MambaForCausalLM`` otherwise) and through
:mod:`resolver.verify.inenv.reference`, and compares logits and greedy generations. Everything a person needs
to read is in the JSON; chatter from libraries goes to stderr.

The last line on stdout is ``RESOLVER-JSON <document>`` so that stray prints cannot corrupt it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import random
import sys
import time
import traceback
import warnings
from pathlib import Path

from resolver.core.inenv_protocol import emit
from resolver.verify.inenv import kernel_checks
from resolver.verify.inenv.bench import bench
from resolver.verify.inenv.models import (
    TOLERANCE,
    compare_logits,
    compare_tokens,
    load_mamba_ssm,
    load_transformers,
    timed,
)


def prompt_ids(batch: int, length: int, vocab: int, seed: int) -> list[list[int]]:
    """The same prompt in every environment (Python's own RNG, not torch's)."""
    rng = random.Random(seed)
    return [[rng.randrange(1, vocab) for _ in range(length)] for _ in range(batch)]


def _check(name: str, status: str, detail: str, **numbers) -> dict:
    return {"name": name, "status": status, "detail": detail, **numbers}


def _hide_kernel_packages(modules: list[str]) -> None:
    """Make the kernel packages unimportable for the rest of this process: transformers 5.x calls
    them whenever they import, and their CUDA code cannot run on CPU."""
    for name in list(sys.modules):
        # transformers binds the kernel functions when its Mamba module is imported: re-import it too
        if name.split(".")[0] in modules or name.startswith("transformers.models.mamba"):
            del sys.modules[name]
    for name in modules:
        sys.modules[name] = None  # type: ignore[assignment]


def run(args, report: dict) -> dict:
    """Fill ``report`` step by step (so a failure half-way still hands back what was learned)."""
    t0 = time.perf_counter()
    checks = report["checks"]
    import torch

    from resolver.verify.inenv import facts as facts_mod

    report["timings"]["import_torch_s"] = round(time.perf_counter() - t0, 3)
    kernels = facts_mod.parse_kernels(args.kernel)
    facts = facts_mod.collect(torch, kernels)
    facts["extensions"].update(facts_mod.extra_extensions(args.extension))
    report["facts"] = facts
    device_kind = facts["device"]["kind"]
    gpu = device_kind in ("cuda", "rocm") and not args.cpu
    device = torch.device("cuda:0" if gpu else "cpu")
    if gpu:  # float32 must mean float32: no TF32 in cuDNN convolutions (on by default) or matmuls
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    report["device"] = {"used": str(device), **facts["device"]}

    # 1. kernel extensions
    exts = facts["extensions"]
    compiled = facts_mod.compiled_modules(kernels)
    installed = {n: e for n, e in exts.items() if e["installed"] and n in compiled}
    if not installed:
        checks.append(_check("kernel_extensions", "skip", f"the kernel packages ({', '.join(kernels) or 'none named'}) "
                             "are not installed in this environment"))
    else:
        for name in sorted(set(compiled) - set(installed)):
            checks.append(_check(f"load:{name}", "skip", f"{name} is not installed ({compiled[name]})"))
    for name in args.extension:
        if not exts[name]["installed"]:
            checks.append(_check(f"load:{name}", "fail", f"{name} is not importable from this environment"))
    asked = {n: exts[n] for n in args.extension if exts[n]["installed"]}
    for name, ext in {**installed, **asked}.items():
        if ext["loaded"]:
            archs = ext.get("built_for_archs") or []
            carries = f"; carries {' '.join(archs)}" if archs else ""
            checks.append(_check(f"load:{name}", "pass", f"{name} loads with torch {facts['torch']['version']} "
                                 f"({ext['file']}){carries}", built_for=archs))
        else:
            detail = ext.get("error", "")
            if ext.get("abi"):
                expected = ext.get("built_for_torch")
                detail = (f"ABI mismatch: {name} needs {ext['abi'].get('demangled') or ext['abi']['undefined_symbol']}, "
                          f"which torch {facts['torch']['version']} does not export; it was built for "
                          f"{'torch ' + expected if expected else 'another torch'}")
            checks.append(_check(f"load:{name}", "fail", detail, **{k: ext.get(k) for k in ("abi", "built_for_torch")}))
    # the Python packages around the extensions must import too (mamba_ssm pulls in Triton at import time)
    for module, dist in facts_mod.python_packages(kernels).items():
        if not facts["packages"].get(dist):
            continue
        started = time.perf_counter()
        try:
            with contextlib.redirect_stdout(sys.stderr):
                importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - ImportError, or whatever a broken install raises
            checks.append(_check(f"import:{module}", "fail", f"`import {module}` fails: {type(exc).__name__}: {exc}"[:600]))
            report["errors"].append({"where": f"import:{module}", "error": f"{type(exc).__name__}: {exc}"[:2000]})
        else:
            checks.append(_check(f"import:{module}", "pass", f"`import {module}` works "
                                 f"({time.perf_counter() - started:.2f} s)"))
    if args.expect_archs:
        checks.extend(_plan_arch_checks({**installed, **asked}, args.expect_archs.split(",")))
    kernels_loaded = bool(installed) and all(e["loaded"] for e in installed.values())
    device_arch = (facts["device"].get("devices") or [{}])[0].get("arch") if gpu else None
    # decided before anything calls a kernel: an extension without code for this GPU is never called
    kernel_exts = {n: e for n, e in exts.items() if n in compiled}
    gate = (kernel_checks.kernel_gate(gpu, device_arch, kernel_exts) if not args.cpu or device_kind == "cpu" else
            kernel_checks.kernel_gate(False, None, kernel_exts,
                                      no_gpu="--cpu: the run stays on the CPU, so no kernel is called"))
    kernels_callable = gpu and kernels_loaded and all(gate.callable(n) for n in installed)
    report["kernels"] = {"installed": sorted(installed), "loaded": kernels_loaded, "can_run_here": kernels_callable,
                         "blocked": dict(gate.blocked)}
    dtypes = [d for d in args.dtypes.split(",") if d] if args.dtypes else (["float32", "bfloat16"] if gpu else ["float32"])

    # 2. the GPU and the architectures
    if not gpu:
        checks.append(_check("gpu", "skip", "no GPU is visible here: the CUDA/HIP kernels cannot run on this machine; "
                             "checking the pure-PyTorch reference path and that the extensions load"))
    else:
        for dev in facts["device"]["devices"][:1]:
            arch = dev.get("arch")
            torch_ok = facts_mod.arch_supported(arch, facts["torch"]["arch_list"])
            checks.append(_check("arch:torch", "pass" if torch_ok else "fail",
                                 f"{dev['name']} is {arch}; torch was built for {' '.join(facts['torch']['arch_list'])}",
                                 arch=arch))
            for name, ext in installed.items():
                built = ext.get("built_for_archs") or []
                ok = facts_mod.arch_supported(arch, built)
                status = "skip" if ok is None else ("pass" if ok else "fail")
                detail = (f"{name} was built for {' '.join(built)}" if built else
                          f"the architectures {name} was built for are not recorded (the kernel run below decides)")
                if ok is False:  # said before any call, which would crash with "no kernel image is available"
                    detail, fix = kernel_checks.arch_mismatch(name, built, arch, args.env_name)
                    checks.append(_check(f"arch:{name}", status, detail, built_for=built, arch=arch, fix=fix))
                    continue
                checks.append(_check(f"arch:{name}", status, f"{detail}; the device is {arch}", built_for=built))
    if args.mode == "verify":
        # 2b. each kernel against the reference, op by op (skipped, with the reason, where it cannot run)
        checks.extend(kernel_checks.run_kernel_checks(torch, device, dtypes, gate))

    # 3. the model through the reference and through a real library
    from safetensors.torch import load_file

    from resolver.verify.inenv.reference import MambaSpec, ReferenceMambaLM, missing_weights

    model_dir = Path(args.model)
    cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    spec = MambaSpec.from_config(cfg)
    weight_files = sorted(model_dir.glob("*.safetensors")) or [model_dir / "pytorch_model.bin"]
    state: dict = {}
    for f in weight_files:
        if f.suffix == ".safetensors":
            state.update(load_file(str(f)))
        else:  # mamba_ssm's save_pretrained writes a pickled state dict; load tensors only
            state.update(torch.load(str(f), map_location="cpu", weights_only=True))
    report["model"] = {"path": str(model_dir), "files": [f.name for f in weight_files],
                       "parameters": int(sum(v.numel() for v in state.values())),
                       "spec": {k: getattr(spec, k) for k in spec.__dataclass_fields__}}
    missing = missing_weights(state, spec)
    if missing:
        checks.append(_check("checkpoint", "fail", f"the weights do not fit config.json: {len(missing)} tensors are missing "
                             f"(first: {', '.join(missing[:3])})", missing=missing[:20]))
        report["ok"] = False
        return report
    checks.append(_check("checkpoint", "pass", f"{len(state)} tensors fit config.json ({spec.n_layer} layers, "
                         f"d_model {spec.d_model}, vocab {spec.vocab_size})"))

    use_mamba_ssm = kernels_callable and facts["packages"].get("mamba-ssm") and not args.library == "transformers"
    if not kernels_callable:  # no GPU, or kernels without code for it: transformers must not reach them either
        _hide_kernel_packages([m for modules in kernels.values() for m in modules])
    ids = torch.tensor(prompt_ids(args.batch, args.prompt_len, spec.vocab_size, args.seed), device=device)
    report["inputs"] = {"batch": args.batch, "prompt_len": args.prompt_len, "new_tokens": args.new_tokens,
                        "seed": args.seed, "dtypes": dtypes}
    results = report.setdefault("results", {})
    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        entry = results.setdefault(dtype_name, {})
        t = time.perf_counter()
        ref = ReferenceMambaLM(spec, state, dtype=dtype, device=device)
        ref_logits, ref_times = timed(torch, device, lambda: ref.forward(ids), 2 if gpu else 1)
        (ref_tokens, ref_steps), ref_gen_times = timed(torch, device, lambda: ref.generate(ids, args.new_tokens), 1)
        entry["reference"] = {"forward_s": ref_times[-1], "generate_s": ref_gen_times[0],
                              "tokens": ref_tokens.tolist()}
        report["timings"][f"reference_{dtype_name}_s"] = round(time.perf_counter() - t, 3)
        if args.mode == "verify" and device.type == "cpu" and ref_logits.isfinite().all():
            checks.append(_check(f"reference:{dtype_name}", "pass",
                                 f"the reference path runs ({args.batch}x{args.prompt_len} tokens, {args.new_tokens} generated)"))
        t = time.perf_counter()
        try:
            with contextlib.redirect_stdout(sys.stderr):
                if use_mamba_ssm:
                    lib = load_mamba_ssm(torch, model_dir, spec, state, dtype, device)
                else:
                    lib = load_transformers(torch, model_dir, cfg, spec, state, dtype, device,
                                            uses_kernels=kernels_callable)
                report["timings"]["library_load_s"] = round(time.perf_counter() - t, 3)
                # on a GPU the first call compiles/autotunes (Triton): time the second one
                lib_logits, lib_times = timed(torch, device, lambda: lib.forward(torch, ids), 2 if gpu else 1)
                (lib_tokens, lib_steps), lib_gen_times = timed(
                    torch, device, lambda: lib.generate(torch, ids, args.new_tokens), 1)
        except Exception as exc:  # noqa: BLE001 - a library failure is a finding, not a crash
            msg = f"{type(exc).__name__}: {exc}"
            report["errors"].append({"where": f"library:{dtype_name}", "error": msg[:2000],
                                     "traceback": traceback.format_exc()[-4000:]})
            checks.append(_check(f"library:{dtype_name}", "fail", f"loading/running the checkpoint failed: {msg[:300]}"))
            continue
        report["library"] = {"name": lib.name, "uses_kernels": lib.uses_kernels, "device": str(device)}
        entry["library"] = {"name": lib.name, "forward_s": lib_times[-1], "generate_s": lib_gen_times[0],
                            "tokens": lib_tokens.tolist()}
        cmp_logits = compare_logits(torch, ref_logits, lib_logits, dtype_name)
        cmp_tokens = compare_tokens(torch, ref_tokens, lib_tokens.to(ref_tokens.device), ref_steps, TOLERANCE[dtype_name])
        entry["logits"], entry["generation"] = cmp_logits, cmp_tokens
        what = "kernel path" if lib.uses_kernels else "torch path"
        checks.append(_check(f"logits:{dtype_name}", "pass" if cmp_logits["ok"] else "fail",
                             f"{lib.name} ({what}, {device}) vs reference: max abs err "
                             f"{cmp_logits.get('max_abs_err', float('nan')):.3g}, rel {cmp_logits.get('rel_err', float('nan')):.3g} "
                             f"(tolerance {cmp_logits.get('tolerance')})" if "rel_err" in cmp_logits else cmp_logits["why"],
                             **{k: cmp_logits.get(k) for k in ("max_abs_err", "rel_err", "tolerance")}))
        gen_detail = ("greedy generations are identical" if cmp_tokens.get("tokens_equal") else
                      f"greedy generations differ: {cmp_tokens.get('first_difference') or cmp_tokens.get('why')}")
        checks.append(_check(f"generate:{dtype_name}", "pass" if cmp_tokens["ok"] else "fail", gen_detail))
        if args.dump_logits and dtype_name == dtypes[0]:
            _dump(Path(args.dump_logits), lib_logits, lib_tokens)
        if args.dump_dir:  # every dtype: another environment's run is compared with this one (upgrade)
            _dump(Path(args.dump_dir) / f"{dtype_name}.f32", lib_logits, lib_tokens)
        if args.mode == "bench" and args.prompt_lens:
            # one process for every length: torch, the library and Triton's autotuning are paid once
            by_len = entry.setdefault("bench_by_prompt_len", {})
            for length in args.prompt_lens:
                long_ids = torch.tensor(prompt_ids(args.batch, length, spec.vocab_size, args.seed), device=device)
                started = time.perf_counter()
                by_len[str(length)] = bench(torch, device, lib, ref, long_ids, args)
                by_len[str(length)]["seconds"] = round(time.perf_counter() - started, 3)
        elif args.mode == "bench":
            entry["bench"] = bench(torch, device, lib, ref, ids, args)
        elif gpu and lib.uses_kernels:
            entry["speedup_forward"] = ref_times[-1] / lib_times[-1] if lib_times[-1] else None
            checks.append(_check(f"speed:{dtype_name}", "pass", f"kernel path forward {lib_times[-1] * 1e3:.2f} ms vs "
                                 f"reference {ref_times[-1] * 1e3:.2f} ms (x{entry['speedup_forward']:.1f})"))
    report["timings"]["total_in_env_s"] = round(time.perf_counter() - t0, 3)
    report["ok"] = all(c["status"] != "fail" for c in checks)
    return report


def _plan_arch_checks(extensions: dict, plan_archs: list[str]) -> list[dict]:
    """The GPU code each compiled module carries (read from its fat binary) against the plan's list:
    runs anywhere, GPU or not, so a build for the wrong GPUs is caught before a kernel is launched."""
    from resolver.verify.inenv import facts as facts_mod

    expected = facts_mod.plan_arch_names([a for a in plan_archs if a])
    out = []
    for name, ext in sorted(extensions.items()):
        if not ext.get("file", "").endswith((".so", ".pyd", ".dylib")):
            continue  # a pure-Python package: no GPU code to read
        carried = ext.get("fatbin_archs") or []
        if not carried:
            out.append(_check(f"archs:{name}", "skip", f"no fat binary could be read from {ext.get('file')}; "
                              f"the plan asked for {' '.join(expected)}"))
            continue
        why = facts_mod.arch_mismatch(carried, expected)
        if why is None:
            out.append(_check(f"archs:{name}", "pass", f"{name} carries {' '.join(sorted(carried))} (read from its "
                              f"fat binary), exactly the plan's {' '.join(expected)}", carried=carried))
        else:
            out.append(_check(f"archs:{name}", "fail", f"{name} does not match the plan: {why} (read from its fat "
                              f"binary); rebuild with `python -m resolver build`", carried=carried, expected=expected))
    return out


def _dump(path: Path, logits, tokens) -> None:
    """Raw little-endian float32 logits + a JSON sidecar: readable by the resolver without numpy."""
    import array

    flat = logits.detach().float().cpu().contiguous().view(-1).tolist()
    data = array.array("f", flat)
    if sys.byteorder != "little":
        data.byteswap()
    path.write_bytes(data.tobytes())
    path.with_suffix(".json").write_text(json.dumps({"shape": list(logits.shape), "tokens": tokens.tolist()}))


DEPRECATIONS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
WARNINGS_KEPT = 60


def summarize_warnings(caught: list) -> list[dict]:
    """The warnings raised while torch, the libraries and the model ran: one entry per distinct (category,
    message, place) with how often it came, the package whose file raised it, and whether it announces a
    deprecation (a DeprecationWarning, PendingDeprecationWarning or FutureWarning, or a message saying so).

    >>> import warnings as w
    >>> items = [w.WarningMessage(FutureWarning("`torch.cuda.amp.custom_fwd(args...)` is deprecated"), FutureWarning,
    ...          "/e/lib/python3.11/site-packages/mamba_ssm/ops/x.py", 7)] * 2
    >>> [(s["package"], s["count"], s["deprecation"]) for s in summarize_warnings(items)]
    [('mamba_ssm', 2, True)]
    """
    out: dict[tuple, dict] = {}
    for item in caught:
        category = getattr(item, "category", Warning)
        message = str(getattr(item, "message", ""))[:400]
        filename = str(getattr(item, "filename", "") or "")
        key = (category.__name__, message, filename, getattr(item, "lineno", 0))
        if key in out:
            out[key]["count"] += 1
            continue
        if len(out) >= WARNINGS_KEPT:
            continue
        out[key] = {"category": category.__name__, "message": message, "file": filename,
                    "line": getattr(item, "lineno", 0), "package": _package_of(filename), "count": 1,
                    "deprecation": issubclass(category, DEPRECATIONS) or "deprecat" in message.lower()}
    return list(out.values())


def _package_of(filename: str) -> str:
    """The top-level package a file belongs to (``site-packages/mamba_ssm/ops/x.py`` → ``mamba_ssm``)."""
    parts = Path(filename).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    if "resolver" in parts:
        return "resolver"
    return Path(filename).stem or "?"


def _lengths(text: str) -> tuple[int, ...]:
    values = tuple(int(v) for v in text.split(",") if v.strip())
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma list of positive lengths")
    return values


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m resolver.verify.inenv.verify")
    p.add_argument("--model", required=True)
    p.add_argument("--mode", choices=("verify", "bench"), default="verify")
    p.add_argument("--dtypes", default="", help="comma list: float32,bfloat16,float16 (default: float32 on CPU, +bfloat16 on GPU)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--prompt-lens", type=_lengths, default=(), help="bench mode: comma list of prompt lengths, "
                   "each benchmarked in this one process (e.g. 512,2048,8192)")
    p.add_argument("--new-tokens", type=int, default=8)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--cpu", action="store_true", help="stay on the CPU even when a GPU is visible")
    p.add_argument("--library", choices=("auto", "transformers"), default="auto")
    p.add_argument("--dump-logits", default="", help="write the library's logits (float32) to this file")
    p.add_argument("--dump-dir", default="", help="write the library's logits (float32) of every dtype to "
                   "DIR/<dtype>.f32 (+ .json with the greedy tokens)")
    p.add_argument("--skip-reference-bench", action="store_true")
    p.add_argument("--extension", action="append", default=[], help="also check that this compiled module loads")
    p.add_argument("--kernel", action="append", default=[], metavar="DIST:MODULE,...",
                   help="a kernel package and its modules (the resolver passes its kernel package list)")
    p.add_argument("--expect-archs", default="", help="comma list of the plan's GPU architectures (9.0, gfx90a): "
                   "each compiled module's fat binary must carry exactly these")
    p.add_argument("--env-name", default="", help="the environment's name in the resolver, for fix commands")
    return p


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = build_parser().parse_args(argv)
    report: dict = {"schema": 1, "mode": args.mode, "checks": [], "errors": [], "timings": {}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # each distinct warning is counted, none is printed
        try:
            run(args, report)
        except Exception as exc:  # noqa: BLE001 - always hand back a document, with what was learned so far
            report.update(ok=False, fatal=f"{type(exc).__name__}: {exc}"[:2000],
                          traceback=traceback.format_exc()[-6000:])
    report["warnings"] = summarize_warnings(caught)
    emit(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
