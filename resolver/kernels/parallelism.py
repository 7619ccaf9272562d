"""How many compilers to run at once: from cores *and* free memory.

One nvcc process on mamba-ssm/causal-conv1d peaked at 3.4 GB here (causal-conv1d 1.7.0, measured),
and ``nvcc --threads N`` runs up to N device compilations (one per architecture) inside it. A
build is killed for memory when jobs × threads × 3.4 GB exceeds RAM, so both come from one
budget of compiler "slots": ``min(cores, free memory / 3.5 GB)``.

>>> fit_parallelism(cores=2, free_bytes=24 * GiB, units=4, archs=1)
Parallelism(jobs=2, nvcc_threads=1, slots=2, reason='2 cores, 24.0 GiB free → 2 compiler slots of 3.5 GiB')
>>> fit_parallelism(cores=64, free_bytes=8 * GiB, units=10, archs=9).jobs
2
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from resolver.core.errors import BadInput

GiB = 1024 ** 3
PER_COMPILER_BYTES = int(3.5 * GiB)


@dataclass(frozen=True)
class Parallelism:
    jobs: int  # ninja jobs (MAX_JOBS)
    nvcc_threads: int  # nvcc --threads inside each job
    slots: int  # compilers the machine can afford at once
    reason: str

    def to_json(self) -> dict:
        return {"jobs": self.jobs, "nvcc_threads": self.nvcc_threads, "slots": self.slots, "reason": self.reason}


def fit_parallelism(*, cores: int, free_bytes: int, units: int, archs: int,
                    per_compiler: int = PER_COMPILER_BYTES, max_jobs: int | None = None) -> Parallelism:
    """Jobs across translation units first (they scale best), spare slots become nvcc threads.

    ``max_jobs`` (the user's ``--jobs`` / ``MAX_JOBS``) caps the jobs, never raises them past memory.

    >>> fit_parallelism(cores=16, free_bytes=64 * GiB, units=4, archs=3)
    Parallelism(jobs=4, nvcc_threads=3, slots=16, reason='16 cores, 64.0 GiB free → 16 compiler slots of 3.5 GiB')
    >>> fit_parallelism(cores=8, free_bytes=2 * GiB, units=4, archs=1).jobs
    1
    """
    cores = max(1, int(cores))
    by_memory = max(1, int(free_bytes // per_compiler))
    slots = max(1, min(cores, by_memory))
    jobs = max(1, min(slots, max(1, units)))
    if max_jobs:
        jobs = max(1, min(jobs, int(max_jobs)))
    threads = max(1, min(max(1, archs), slots // jobs))
    reason = (f"{cores} cores, {free_bytes / GiB:.1f} GiB free → {slots} compiler slot{'s' if slots != 1 else ''} "
              f"of {per_compiler / GiB:.1f} GiB")
    return Parallelism(jobs, threads, slots, reason)


def machine_resources() -> tuple[int, int]:
    """(usable cores, available memory in bytes) of this machine, cgroup limits included."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    cores = min(cores, _cgroup_cpus() or cores)
    available = _meminfo_available()
    limit = _cgroup_memory_left()
    if limit is not None:
        available = min(available, limit)
    return cores, available


def _meminfo_available() -> int:
    try:
        for line in _system_file("/proc/meminfo").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, BadInput, ValueError, IndexError):
        pass
    return 4 * GiB  # unknown: assume a small machine


def _cgroup_cpus() -> int | None:
    try:
        quota, period = _system_file("/sys/fs/cgroup/cpu.max").split()
        if quota != "max":
            return max(1, int(int(quota) / int(period)))
    except (OSError, BadInput, ValueError):
        pass
    return None


def _cgroup_memory_left() -> int | None:
    try:
        limit = _system_file("/sys/fs/cgroup/memory.max").strip()
        if limit == "max":
            return None
        used = int(_system_file("/sys/fs/cgroup/memory.current").strip())
        return max(0, int(limit) - used)
    except (OSError, BadInput, ValueError):
        return None


def _system_file(path: str) -> str:
    """A small file of the kernel's (/proc, /sys): bounded, a regular file."""
    from resolver.core.fs import read_text_bounded

    return read_text_bounded(path, limit=1 << 20, what="the system file")
