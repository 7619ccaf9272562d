"""NVIDIA through NVML (nvidia-ml-py's ``pynvml``), the library nvidia-smi itself is built on.

Only for the live machine: a sysroot never loads a library. ``pynvml`` costs ~60 ms to import,
so the caller asks only when there is a sign of an NVIDIA driver. Without a driver the answer is
None and a note such as ``NVML: cannot initialise (NVML Shared Library Not Found)``.

>>> cuda_version_from_int(13000)
'13.0'
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from resolver.plan.probe.findings import Findings


@dataclass(frozen=True)
class NvmlGpu:
    name: str
    compute_capability: str  # "9.0"
    memory_mib: int | None
    uuid: str | None


@dataclass(frozen=True)
class NvmlReading:
    driver_version: str | None
    cuda_driver_version: str | None  # "12.4": newest CUDA the driver supports
    gpus: tuple[NvmlGpu, ...]


def cuda_version_from_int(value: int) -> str:
    """NVML and the CUDA driver API encode 12.4 as 12040.

    >>> cuda_version_from_int(12040), cuda_version_from_int(11080)
    ('12.4', '11.8')
    """
    return f"{value // 1000}.{(value % 1000) // 10}"


def _str(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def nvml_importable() -> bool:
    return importlib.util.find_spec("pynvml") is not None


def read_nvml(findings: Findings) -> NvmlReading | None:
    """Everything NVML says, or None (with a note saying why) when it cannot be read."""
    if not nvml_importable():
        findings.note("NVML: nvidia-ml-py (pynvml) is not installed")
        return None
    import pynvml

    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - pynvml raises NVMLError subclasses and OSError variants
        findings.note(f"NVML: cannot initialise ({_str(exc) or type(exc).__name__})")
        return None
    try:
        driver = _str(pynvml.nvmlSystemGetDriverVersion())
        cuda = cuda_version_from_int(int(pynvml.nvmlSystemGetCudaDriverVersion()))
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            try:
                memory = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total) // (1024 * 1024)
            except Exception:  # noqa: BLE001 - not supported on some GPUs (e.g. integrated Tegra memory)
                memory = None
            try:
                uuid = _str(pynvml.nvmlDeviceGetUUID(handle))
            except Exception:  # noqa: BLE001
                uuid = None
            gpus.append(NvmlGpu(_str(pynvml.nvmlDeviceGetName(handle)), f"{major}.{minor}", memory, uuid))
    except Exception as exc:  # noqa: BLE001
        findings.note(f"NVML: query failed ({_str(exc) or type(exc).__name__})")
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return NvmlReading(driver, cuda, tuple(gpus))
