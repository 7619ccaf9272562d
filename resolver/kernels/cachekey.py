"""The cache key of one kernel build: everything that changes the binary, and nothing else.

Parallelism, log paths and timing are left out on purpose (they change nothing in the .so).

>>> key = BuildKey("causal-conv1d", "1.7.0", "32027584", "cuda", "13.0.88", "2.14.1+cu130", True,
...                "3.11", ("9.0",), "c++20", "f1x", "")
>>> key.digest()[:7] == key.digest()[:7], len(key.digest())
(True, 64)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class BuildKey:
    package: str
    version: str
    sdist_sha256: str
    backend: str  # "cuda" | "rocm" | "cpu"
    toolkit: str  # nvcc / HIP version as reported ("13.0.88"), "" without one
    torch: str  # full torch version, local part included ("2.14.1+cu130")
    cxx11_abi: bool
    python: str  # "3.11"
    archs: tuple[str, ...]
    cxx_std: str  # "" = as shipped
    fixes: str  # sha256 of the recipe folder + recipes/common
    overlay: str  # sha256 of the ROCm include overlay, "" when none
    prebuilt_wheel: str = ""  # sha256 of a prebuilt wheel used instead of compiling

    def to_json(self) -> dict:
        data = asdict(self)
        data["archs"] = list(self.archs)
        return data

    def digest(self) -> str:
        from resolver.core.fingerprint import fingerprint

        return fingerprint(self.to_json())
