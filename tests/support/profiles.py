"""Hardware profiles of well-known machines, built in code: what the decision tests plan for."""

from __future__ import annotations


def nvidia(*gpus: tuple[str, str], driver: str | None = "580.82.07", cuda: str | None = None, python: str = "3.11.7",
           glibc: str | None = "2.35", platform: str = "linux-64", **extra) -> dict:
    return {"platform": platform, "glibc": glibc, "python": python, "amd": None, "cuda_toolkit": None,
            "nvidia": {"driver_version": driver, "cuda_driver_version": cuda,
                       "gpus": [{"name": n, "compute_capability": c} for n, c in gpus]}, **extra}


def amd(*gpus: tuple[str, str], rocm: str | None, python: str = "3.11.7", glibc: str = "2.35") -> dict:
    return {"platform": "linux-64", "glibc": glibc, "python": python, "nvidia": None, "cuda_toolkit": None,
            "amd": {"rocm_version": rocm, "gpus": [{"name": n, "gfx_arch": g} for n, g in gpus]}}


def cpu(python: str = "3.11.7", glibc: str | None = "2.36", platform: str = "linux-64") -> dict:
    return {"platform": platform, "glibc": glibc, "python": python, "nvidia": None, "amd": None, "cuda_toolkit": None}


V100 = ("Tesla V100-PCIE-16GB", "7.0")


GTX1080TI = ("NVIDIA GeForce GTX 1080 Ti", "6.1")


H100 = ("NVIDIA H100 80GB HBM3", "9.0")


A100 = ("NVIDIA A100-SXM4-80GB", "8.0")


T4 = ("Tesla T4", "7.5")


RTX5090 = ("NVIDIA GeForce RTX 5090", "12.0")
RTX4090 = ("NVIDIA GeForce RTX 4090", "8.9")
B300 = ("NVIDIA B300", "10.3")


MI250X = ("AMD Instinct MI250X", "gfx90a")


MI300X = ("AMD Instinct MI300X", "gfx942")
