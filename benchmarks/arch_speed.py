"""How much the present-GPU architecture list saves: one translation unit, one arch vs upstream's list.

Compiles the same causal-conv1d (or mamba-ssm) .cu file twice with the flags upstream's setup.py
uses: once for one architecture (default sm_90), once for the upstream default list of this nvcc
(nine architectures with CUDA 13; sm_103 included, since upstream compiles it), side by side, and
prints the times and their ratio. Uses an environment's torch headers (``--env``, default cuda13)
and the verified sdist from ``.resolver/cache/sdists`` (downloaded if missing).

    python benchmarks/arch_speed.py                       # causal_conv1d_update.cu, sm_90 vs upstream
    python benchmarks/arch_speed.py --unit csrc/causal_conv1d_fwd.cu --arch 8.6 --json

The two compiles run one after the other (never together) so they do not share the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from resolver.install.environment import Environment  # noqa: E402
from resolver.kernels.archs import parse_arch_list, upstream_default_archs  # noqa: E402
from resolver.kernels.packages import KernelPackage  # noqa: E402
from resolver.kernels.sdist import ensure_sdist  # noqa: E402
from resolver.kernels.toolkit import find_toolkit  # noqa: E402
from resolver.project.paths import ProjectPaths  # noqa: E402

# The nvcc flags causal-conv1d 1.7.0 / mamba-ssm 2.3.2.post1 pass besides the gencode list (their
# setup.py), plus what torch's BuildExtension adds for every CUDA file.
UPSTREAM_FLAGS = ["-O3", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
                  "-U__CUDA_NO_BFLOAT16_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
                  "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
                  "--expt-relaxed-constexpr", "--expt-extended-lambda", "--use_fast_math", "-lineinfo",
                  "--compiler-options", "-fPIC", "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=bench"]

_TORCH_FLAGS = ("import json, sys, torch\nfrom torch.utils.cpp_extension import include_paths\n"
                "print(json.dumps({'includes': include_paths(device_type='cuda'), 'abi': int(torch._C._GLIBCXX_USE_CXX11_ABI),"
                " 'python_include': __import__('sysconfig').get_paths()['include']}))")


def gencode(archs) -> list[str]:
    out: list[str] = []
    for arch in archs:
        digits = arch.replace(".", "")
        out += ["-gencode", f"arch=compute_{digits},code=sm_{digits}"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="causal-conv1d", choices=("causal-conv1d", "mamba-ssm"))
    parser.add_argument("--unit", default=None, help="the .cu file inside the sdist (default: the package's smallest)")
    parser.add_argument("--arch", default="9.0")
    parser.add_argument("--env", default="cuda13")
    parser.add_argument("--threads", type=int, default=1, help="nvcc --threads for both compiles (upstream: 4)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    project = ProjectPaths.discover(Path(__file__).resolve().parent.parent)
    package = KernelPackage.named(args.package)
    sdist = ensure_sdist(package.sdist, project.cache / "sdists")
    toolkit = find_toolkit("cuda")
    env = Environment.find(project, args.env)
    facts = json.loads(env.run_python(["-c", _TORCH_FLAGS], timeout=300).stdout.strip().splitlines()[-1])
    one = parse_arch_list(args.arch, backend="cuda")
    upstream = upstream_default_archs(toolkit.major_minor)
    unit = args.unit or {"causal-conv1d": "csrc/causal_conv1d_update.cu",
                         "mamba-ssm": "csrc/selective_scan/selective_scan_fwd_fp32.cu"}[args.package]

    with tempfile.TemporaryDirectory(prefix="arch-speed-") as scratch:
        with tarfile.open(sdist) as archive:
            archive.extractall(scratch, filter="data")
        root = next(Path(scratch).iterdir())
        source = root / unit
        includes = [f"-I{source.parent}", f"-I{root / 'csrc'}"] + [f"-I{p}" for p in facts["includes"]] + \
                   [f"-I{facts['python_include']}", f"-I{toolkit.home / 'include'}"]
        base = [str(toolkit.compiler), "-c", str(source), "-o", os.devnull, "-std=c++20",
                f"-D_GLIBCXX_USE_CXX11_ABI={facts['abi']}", "--threads", str(args.threads), *includes, *UPSTREAM_FLAGS]
        results = {}
        for label, archs in (("one", one), ("upstream", upstream)):
            started = time.monotonic()
            done = subprocess.run(base + gencode(archs), capture_output=True, text=True)
            seconds = time.monotonic() - started
            if done.returncode != 0:
                print(f"compile for {label} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
                return 1
            results[label] = {"archs": list(archs), "seconds": round(seconds, 1)}
    ratio = results["upstream"]["seconds"] / max(results["one"]["seconds"], 0.01)
    report = {"package": args.package, "unit": unit, "nvcc": toolkit.version, "nvcc_threads": args.threads,
              "one_arch": results["one"], "upstream_list": results["upstream"], "ratio": round(ratio, 2)}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{args.package} {unit} with nvcc {toolkit.version} (--threads {args.threads})")
        print(f"  {', '.join(one):<40} {results['one']['seconds']:>7.1f} s")
        print(f"  {', '.join(upstream):<40} {results['upstream']['seconds']:>7.1f} s   (upstream default)")
        print(f"  ratio upstream / present-GPU list: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
