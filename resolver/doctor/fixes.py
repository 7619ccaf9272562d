"""Fixes that run where they are printed: which environment, which Python the log came from, which
architecture, which package. Pure functions of the log, the project and the probe.

>>> where_log_ran("  File \\"/home/me/.venv/lib/python3.10/site-packages/mamba_ssm/__init__.py\\", line 3", None)
'/home/me/.venv'
>>> package_in_log("import causal_conv1d_cuda\\nImportError: libcudart.so.12: cannot open shared object file")
'causal-conv1d'
>>> without_arch("python -m resolver build --env {env} --arch {arch} --jobs 1")
'python -m resolver build --env {env} --jobs 1'
"""

from __future__ import annotations

import re
from pathlib import Path

HOW_TO_GET_ARCH = ("`nvidia-smi --query-gpu=name,compute_cap --format=csv` prints the compute capability "
                   "(`rocminfo | grep gfx` the gfx target); pass it with --arch")
_LINE_LIMIT = 2000
# a Python prefix as tracebacks and pip print it: <prefix>/lib/python3.X/site-packages, or <prefix>\Lib\site-packages
# (the prefix is the path before the marker, found with str methods: a pattern of bounded repeats of
# path parts backtracked exponentially on "/a/a/a/..." lines, 50 s for 25 parts)
_SITE_END = re.compile(r"/lib(?:64)?/python3\.\d{1,2}/site-packages/")
_NOT_IN_PATH = re.compile(r"[\s\"':]")
_PREFIX_MAX = 6000
_SITE_WINDOWS = re.compile(r"([A-Za-z]:\\[^\"'\n]{0,300}?)\\Lib\\site-packages\\", re.IGNORECASE)
_PACKAGES = (("causal-conv1d", re.compile(r"causal[_-]conv1d", re.I)),
             ("mamba-ssm", re.compile(r"selective_scan_cuda|mamba[_-]ssm", re.I)))


def where_log_ran(text: str, project_root: Path | None) -> str | None:
    """The Python prefix the log's tracebacks and pip lines name, when it is not one of this project's
    environments (None when the log names none, or names one of ours)."""
    prefixes: list[str] = []
    for line in _lines_holding(text, "site-packages"):
        line = line[:_LINE_LIMIT]
        if "site-packages" not in line:
            continue
        windows = _SITE_WINDOWS.search(line)
        for found in (_site_prefix(line), windows.group(1) if windows else None):
            if found and found not in prefixes:
                prefixes.append(found)
    if not prefixes:
        return None
    ours = str((project_root / ".resolver" / "envs").resolve()) if project_root else None
    outside = [p for p in prefixes if not (ours and p.startswith(ours))]
    return outside[0] if outside and len(outside) == len(prefixes) else None


def env_in_log(text: str, project_root: Path | None) -> str | None:
    """The environment of this project whose folder the log's paths name (``<root>/.resolver/envs/<name>/``),
    the last one named; None when it names none.

    >>> env_in_log("  File \\"/p/.resolver/envs/cu126/lib/python3.12/site-packages/x.py\\"", Path("/p"))
    'cu126'
    """
    if project_root is None:
        return None
    marker = str(project_root / ".resolver" / "envs") + "/"
    at = text.rfind(marker)
    if at < 0:
        return None
    name = text[at + len(marker):at + len(marker) + 200].split("/", 1)[0]
    return name if name and not _NOT_IN_PATH.search(name) else None


def _site_prefix(line: str) -> str | None:
    """The POSIX prefix before the first ``/lib/python3.X/site-packages/`` of ``line``: from the first ``/``
    of the path that ends there (a path holds no blank, quote or colon).

    >>> _site_prefix('pip: "/opt/conda/envs/x/lib64/python3.12/site-packages/torch"'), _site_prefix("/a" * 40)
    ('/opt/conda/envs/x', None)
    """
    for end in _SITE_END.finditer(line):
        start = max((m.end() for m in _NOT_IN_PATH.finditer(line, max(0, end.start() - _PREFIX_MAX), end.start())),
                    default=max(0, end.start() - _PREFIX_MAX))
        slash = line.find("/", start, end.start())
        if slash >= 0 and end.start() - slash >= 2:
            return line[slash:end.start()]
    return None


def _lines_holding(text: str, literal: str, limit: int = 10_000):
    """The lines of ``text`` that hold ``literal``, first to last, found by substring search (the others
    are never split out); at most ``limit`` of them."""
    at = text.find(literal)
    for _ in range(limit):
        if at < 0:
            return
        start = text.rfind("\n", 0, at) + 1
        stop = text.find("\n", at)
        stop = len(text) if stop < 0 else stop
        yield text[start:stop]
        at = text.find(literal, stop)


def package_in_log(text: str) -> str | None:
    """The kernel package the log's failure is in (the last one it names: the traceback's end), found
    from the end of the log in its lower-case copy.

    >>> package_in_log("mamba_ssm/x.py\\nbuilding Causal-Conv1d"), package_in_log("nothing")
    ('causal-conv1d', None)
    """
    from resolver.doctor.needles import Haystack

    hay = Haystack(text)
    found = [(match.start(), name) for name, pattern in _PACKAGES for match in (hay.last(pattern, window=64),)
             if match is not None]
    return max(found)[1] if found else None


def without_arch(template: str) -> str:
    return template.replace(" --arch {arch}", "")


def env_torch(env_path: Path) -> str | None:
    """The torch version install put into an environment (its ready marker), e.g. ``2.14.1+cu130``."""
    from resolver.install.environment import ready_record

    marker = ready_record(env_path)
    if marker is None:
        return None
    for item in marker["pypi"] + marker["conda"]:
        if isinstance(item, str) and item.lower().startswith("torch=="):
            return item.split("==", 1)[1]
        match = re.match(r"pytorch-(\d[^-]*)-(\S*)", str(item))
        if match:
            return f"{match.group(1)}+{'cpu' if 'cpu' in match.group(2) else match.group(2)}"
    return None


def env_backend(env_path: Path) -> str | None:
    """``cpu``, ``cuda`` or ``rocm``: what an environment's torch is built for (None when unknown)."""
    version = (env_torch(env_path) or "").lower()
    if not version:
        return None
    local = version.split("+", 1)[1] if "+" in version else "cu"  # PyPI's own linux wheel is a CUDA build
    return "cpu" if "cpu" in local else "rocm" if "rocm" in local else "cuda"


def cuda_of(torch_version: str | None) -> str | None:
    """``2.14.1+cu130`` → ``13.0``; ``+cu126`` → ``12.6``."""
    match = re.search(r"\+cu(\d+)(\d)$", torch_version or "")
    return f"{match.group(1)}.{match.group(2)}" if match else None


def gpu_env(project, preferred: str | None, want: str | None = None) -> tuple[str | None, str | None]:
    """``(environment, why)``: the environment a GPU fix must name. The preferred one (``--env`` or the
    only one installed) unless its torch is a CPU build (or not of ``want``: cuda/rocm, the machine's GPU);
    then another installed environment of that backend; else None with the sentence that says what to
    do first."""
    envs = sorted(p.name for p in project.envs.iterdir() if p.is_dir()) if project.envs.is_dir() else []
    backends = {name: env_backend(project.env(name)) for name in envs}
    fits = (lambda b: b == want) if want else (lambda b: b in ("cuda", "rocm"))
    if preferred and backends.get(preferred) != "cpu" and (want is None or backends.get(preferred) in (want, None)):
        return preferred, None
    others = [n for n in envs if fits(backends.get(n))]
    if others:
        return others[0], None
    if preferred:
        return None, (f"environment '{preferred}' holds a CPU-only torch, which runs no GPU kernels: make a GPU one "
                      "first with `python -m resolver lock --target auto && python -m resolver install`")
    return None, None
