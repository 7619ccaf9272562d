"""What an environment's own Python can tell about torch, the GPU and the kernel extensions.

Runs INSIDE the target environment (it imports torch). ``python -m resolver.verify.inenv.facts`` prints
the facts as one JSON document; ``verify`` and ``doctor`` call :func:`collect` in-process.

An extension that fails to load with ``undefined symbol`` was compiled against a different torch:
:func:`load_extension` names the symbol (demangled when ``c++filt`` is at hand) and the torch the
extension says it was built for (its wheel's local version ``+cu12torch2.6...`` or the conda
build string ``cu130_torch2.14_...``), and the GPU architectures it carries (its ``.nv_fatbin``).

>>> parse_expected_torch("2.3.2.post1+cu12torch2.9cxx11abiTRUE")
'2.9'
>>> parse_expected_torch("cu130_torch2.14_cxx11_py311_sm90_h1a2b3c4_0")
'2.14'
>>> parse_archs("cu130_torch2.14_cxx11_py311_sm90.sm100_h1a2b3c4_0")
['sm_90', 'sm_100']
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from resolver.core.inenv_protocol import emit
from resolver.verify.inenv.fatbin import archs_of_library

# The libraries whose versions the report carries, besides the kernel packages (which the resolver names:
# ``--kernel DIST:MODULE,...`` for each, from its own kernel package list).
PACKAGES = ("torch", "transformers", "triton", "safetensors", "numpy", "einops")

_UNDEFINED = re.compile(r"undefined symbol: (\S+)")
_VERSION_NOT_FOUND = re.compile(r"version `([^']+)' not found")


def parse_expected_torch(label: str) -> str | None:
    """The torch major.minor a wheel local version or conda build string says it was built for."""
    m = re.search(r"torch(\d+)\.(\d+)", label) or re.search(r"torch(\d)(\d+)(?!\d)", label)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def parse_archs(label: str) -> list[str]:
    """GPU architectures named in a build string (``sm90``, ``sm_90``, ``gfx90a``)."""
    archs = [f"sm_{m}" for m in re.findall(r"(?<![a-z])sm_?(\d{2,3}[a-z]?)", label)]
    archs += re.findall(r"gfx[0-9a-f]{3,4}", label)
    return list(dict.fromkeys(archs))


def _demangle(symbol: str) -> str | None:
    tool = shutil.which("c++filt")
    if not tool:
        return None
    try:
        out = subprocess.run([tool, symbol], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out if out and out != symbol else None


def _owner(module_file: str) -> dict:
    """The distribution (wheel or conda package) that installed ``module_file``: name, version, build."""
    target = Path(module_file).resolve()
    for dist in md.distributions():
        for f in dist.files or ():
            if f.name == target.name and Path(dist.locate_file(f)).resolve() == target:
                return {"name": dist.metadata["Name"], "version": dist.version, "via": "python metadata"}
    prefix = Path(sys.prefix)
    for meta in sorted((prefix / "conda-meta").glob("*.json")) if (prefix / "conda-meta").is_dir() else ():
        try:
            record = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if any(str(prefix / f) == str(target) or f.endswith("/" + target.name) for f in record.get("files", ())):
            return {"name": record.get("name"), "version": record.get("version"), "build": record.get("build"),
                    "via": "conda-meta"}
    return {}


def _cuobjdump_archs(so: str) -> list[str]:
    tool = shutil.which("cuobjdump")
    if not tool:
        return []
    try:
        text = subprocess.run([tool, "--list-elf", so], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(set(re.findall(r"sm_\d+[a-z]?", text)), key=lambda a: int(re.sub(r"\D", "", a)))


def load_extension(name: str) -> dict:
    """Try to import one compiled extension module; on failure say why in words a person can act on."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        return {"module": name, "installed": False, "loaded": False}
    info: dict = {"module": name, "installed": True, "file": spec.origin, "owner": _owner(spec.origin)}
    label = " ".join(str(info["owner"].get(k) or "") for k in ("version", "build"))
    info["built_for_torch"] = parse_expected_torch(label)
    info["fatbin_archs"] = archs_of_library(spec.origin) if spec.origin.endswith((".so", ".pyd", ".dylib")) else []
    info["built_for_archs"] = (parse_archs(info["owner"].get("build") or "") or info["fatbin_archs"]
                               or _cuobjdump_archs(spec.origin))
    started = time.perf_counter()
    try:
        importlib.import_module(name)
    except ImportError as exc:  # undefined symbol, missing libstdc++ version, missing libc10.so ...
        message = str(exc)
        info.update(loaded=False, error=message.splitlines()[0][:500])
        m = _UNDEFINED.search(message)
        if m:
            info["abi"] = {"undefined_symbol": m.group(1), "demangled": _demangle(m.group(1)),
                           "namespace": "c10" if "c10" in m.group(1) else ("at" if "2at" in m.group(1) else None)}
        m = _VERSION_NOT_FOUND.search(message)
        if m:
            info["missing_version"] = m.group(1)
    except Exception as exc:  # noqa: BLE001 - a broken extension can raise anything at import
        info.update(loaded=False, error=f"{type(exc).__name__}: {exc}"[:500])
    else:
        info["loaded"] = True
    info["seconds"] = round(time.perf_counter() - started, 4)
    return info


def torch_facts(torch) -> dict:
    facts = {"version": torch.__version__, "cuda": torch.version.cuda, "hip": getattr(torch.version, "hip", None),
             "cxx11_abi": bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)), "file": torch.__file__}
    try:
        facts["arch_list"] = torch.cuda.get_arch_list()
    except Exception:  # noqa: BLE001 - CPU builds may raise
        facts["arch_list"] = []
    return facts


def device_facts(torch) -> dict:
    """The first accelerator torch can see, or {"kind": "cpu"}. Never raises."""
    try:
        available = torch.cuda.is_available()
    except Exception as exc:  # noqa: BLE001
        return {"kind": "cpu", "error": str(exc)[:300]}
    if not available:
        return {"kind": "cpu", "count": 0}
    hip = getattr(torch.version, "hip", None)
    devices = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        if hip:
            arch = getattr(props, "gcnArchName", "").split(":")[0] or None
            devices.append({"index": index, "name": props.name, "arch": arch, "memory_gib": round(props.total_memory / 2**30, 1)})
        else:
            major, minor = props.major, props.minor
            devices.append({"index": index, "name": props.name, "capability": f"{major}.{minor}",
                            "arch": f"sm_{major}{minor}", "memory_gib": round(props.total_memory / 2**30, 1)})
    facts = {"kind": "rocm" if hip else "cuda", "count": len(devices), "devices": devices}
    try:  # the CUDA version the driver supports, e.g. 13000 -> "13.0" (the driver API, as nvidia-smi shows it)
        raw = torch._C._cuda_getDriverVersion() if not hip else None
        facts["driver_cuda"] = f"{raw // 1000}.{raw % 1000 // 10}" if raw else None
    except Exception:  # noqa: BLE001 - private API; absent in some builds
        facts["driver_cuda"] = None
    return facts


def arch_supported(arch: str | None, compiled: list[str]) -> bool | None:
    """Whether code compiled for ``compiled`` runs on ``arch``: exact SASS, or PTX (compute_XY) of an
    equal or lower version that the driver can JIT. None when nothing is known."""
    if not arch or not compiled:
        return None
    if arch in compiled:
        return True
    if arch.startswith("sm_"):
        want = int(re.sub(r"\D", "", arch))
        ptx = [int(re.sub(r"\D", "", a)) for a in compiled if a.startswith("compute_")]
        return any(p <= want for p in ptx)
    return False


def parse_kernels(specs: list[str]) -> dict[str, tuple[str, ...]]:
    """``["causal-conv1d:causal_conv1d_cuda,causal_conv1d"]`` -> ``{"causal-conv1d": ("causal_conv1d_cuda", ...)}``.

    >>> parse_kernels(["causal-conv1d:causal_conv1d_cuda,causal_conv1d", "mamba-ssm:selective_scan_cuda"])
    {'causal-conv1d': ('causal_conv1d_cuda', 'causal_conv1d'), 'mamba-ssm': ('selective_scan_cuda',)}
    """
    out: dict[str, tuple[str, ...]] = {}
    for spec in specs:
        dist, _, modules = spec.partition(":")
        out[dist.strip()] = tuple(m.strip() for m in modules.split(",") if m.strip())
    return out


def compiled_modules(kernels: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """The kernel packages' modules that are compiled extensions, each with its distribution; a module
    that is not installed counts too (nothing tells it apart then: it is reported as missing)."""
    out = {}
    for dist, modules in kernels.items():
        for module in modules:
            spec = importlib.util.find_spec(module)
            if spec is None or not (spec.submodule_search_locations or (spec.origin or "").endswith(".py")):
                out[module] = dist
    return out


def python_packages(kernels: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """The kernel packages' installed pure-Python packages (``mamba_ssm``), each with its distribution."""
    compiled = compiled_modules(kernels)
    return {module: dist for dist, modules in kernels.items() for module in modules
            if module not in compiled and importlib.util.find_spec(module) is not None}


def package_versions(kernels: dict[str, tuple[str, ...]] | None = None) -> dict:
    out = {}
    for name in (*PACKAGES, *(kernels or {})):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def collect(torch=None, kernels: dict[str, tuple[str, ...]] | None = None) -> dict:
    """All facts, loading each installed kernel extension once."""
    started = time.perf_counter()
    if torch is None:
        import torch  # noqa: PLC0415
    facts = {"python": platform.python_version(), "executable": sys.executable, "prefix": sys.prefix,
             "torch": torch_facts(torch), "device": device_facts(torch), "packages": package_versions(kernels),
             "kernels": {dist: list(modules) for dist, modules in (kernels or {}).items()},
             "extensions": {name: load_extension(name) for name in compiled_modules(kernels or {})},
             "tools": {tool: shutil.which(tool) for tool in ("ninja", "nvcc", "hipcc", "c++")}}
    facts["bytecode"] = bytecode_facts(torch)
    facts["seconds"] = round(time.perf_counter() - started, 3)
    return facts


def bytecode_facts(torch) -> dict:
    """Whether torch's modules have cached bytecode. Without it (installed with --no-compile, and
    PYTHONDONTWRITEBYTECODE set or a read-only prefix) every import compiles torch again: ~3x slower."""
    import importlib.util as iu

    init = Path(torch.__file__)
    cached = Path(iu.cache_from_source(str(init))).is_file()
    return {"torch_cached": cached, "dont_write_bytecode": bool(sys.flags.dont_write_bytecode),
            "writable": os.access(init.parent, os.W_OK), "site_packages": str(init.parent.parent)}


def plan_arch_names(archs: list[str]) -> list[str]:
    """A plan's arch list as fat binaries name them: ``9.0`` -> ``sm_90``; gfx targets unchanged.

    >>> plan_arch_names(["9.0", "10.0", "gfx90a"])
    ['sm_90', 'sm_100', 'gfx90a']
    """
    return [f"sm_{a.replace('.', '')}" if re.fullmatch(r"\d+\.\d+[a-z]?", a) else a for a in archs]


def arch_mismatch(carried: list[str], expected: list[str]) -> str | None:
    """Why the cubins a module carries differ from the plan's architectures, or None when they match.

    >>> arch_mismatch(["sm_90"], ["sm_90"]) is None
    True
    >>> arch_mismatch(["sm_80", "sm_90"], ["sm_90"])
    'it also carries sm_80, which the plan did not ask for'
    >>> arch_mismatch(["sm_80"], ["sm_90"])
    'it lacks sm_90 and carries sm_80, which the plan did not ask for'
    """
    cubins = {a for a in carried if not a.startswith("compute_")}
    missing = [a for a in expected if a not in cubins]
    extra = sorted(cubins - set(expected))
    parts = []
    if missing:
        parts.append(f"lacks {' '.join(missing)}")
    if extra:
        parts.append(f"{'also ' if not missing else ''}carries {' '.join(extra)}, which the plan did not ask for")
    return ("it " + " and ".join(parts)) if parts else None


def extra_extensions(names: list[str]) -> dict:
    return {name: load_extension(name) for name in names}


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m resolver.verify.inenv.facts")
    parser.add_argument("--extension", action="append", default=[], help="also try to load this extension module")
    parser.add_argument("--kernel", action="append", default=[], metavar="DIST:MODULE,...",
                        help="a kernel package and its modules (the resolver passes its list)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - report, do not crash
        emit({"torch_import_error": f"{type(exc).__name__}: {exc}"[:1000], "python": platform.python_version(),
              "packages": package_versions(parse_kernels(args.kernel)), "prefix": sys.prefix})
        return 0
    facts = collect(torch, parse_kernels(args.kernel))
    facts["extensions"].update(extra_extensions(args.extension))
    facts["torch_import_seconds"] = round(time.perf_counter() - started - facts["seconds"], 3)
    emit(facts)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    sys.exit(main())
