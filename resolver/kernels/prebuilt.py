"""Upstream release wheels: their names, and whether one is reachable *right now* (short timeout).

Upstream setup.py guesses ``{pkg}-{ver}+cu{major}torch{M.m}cxx11abi{TRUE|FALSE}-cp{py}-cp{py}-linux_x86_64.whl``
on the GitHub release; offline that guess must never hang the build, so the check is one HEAD
request with a few seconds' timeout, and any failure means "build from source".

>>> wheel_file_name("mamba_ssm-{version}+{backend_tag}torch{torch_mm}cxx11abi{abi}-cp{py}-cp{py}-linux_x86_64.whl",
...                 version="2.3.2.post1", backend="cuda", toolkit_or_torch_cuda="12.9", torch="2.9.1+cu129",
...                 cxx11_abi=True, python="3.11")
'mamba_ssm-2.3.2.post1+cu12torch2.9cxx11abiTRUE-cp311-cp311-linux_x86_64.whl'
"""

from __future__ import annotations

from pathlib import Path

from resolver.core.versions import major_minor
from resolver.tools import net
from resolver.tools.net import probe_status


def wheel_file_name(template: str, *, version: str, backend: str, toolkit_or_torch_cuda: str, torch: str,
                    cxx11_abi: bool, python: str) -> str:
    major, minor = major_minor(toolkit_or_torch_cuda).split(".")
    tag = f"cu{major}" if backend == "cuda" else f"hip{major}{minor}"
    torch_mm = major_minor(torch)
    return template.format(version=version, backend_tag=tag, torch_mm=torch_mm,
                           abi=str(bool(cxx11_abi)).upper(), py=python.replace(".", ""))


def reachable(url: str, *, timeout: float = 5.0) -> bool:
    """Whether ``url`` answers with a success or a redirect right now (offline: quickly False)."""
    status = probe_status(url, timeout=timeout)
    return isinstance(status, int) and 200 <= status < 400


PREBUILT_LIMIT = 2 << 30  # an upstream kernel wheel is a few hundred MB


def download(url: str, target: Path, *, timeout: float = 30.0) -> Path:
    return net.download(url, target, timeout=timeout, limit=PREBUILT_LIMIT)
