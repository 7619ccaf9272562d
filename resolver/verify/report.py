"""Turn the in-environment report into the command's JSON document, its human text and exit code.

Exit 0 only when every check that could run here passed; a skipped check (no GPU, no kernels
installed) is reported, never counted as a pass or a failure.

>>> exit_code({"ok": True, "checks": [{"name": "x", "status": "pass"}]})
0
>>> exit_code({"ok": False, "checks": [{"name": "x", "status": "fail"}]})
1
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from resolver.core.errors import ExitCode
from resolver.verify.inenv.answers import EnvironmentFacts, TorchBuild, VerifyReport, to_data


def host_driver() -> dict:
    """The GPU driver as the probe reads it (nvidia-smi/NVML, ROCm); {} when the probe is unavailable."""
    try:
        from resolver.plan.probe import probe_machine

        profile = probe_machine()
    except Exception:  # noqa: BLE001 - the probe is optional here; verify must not fail because of it
        return {}
    out: dict = {}
    if profile.nvidia:
        out["nvidia_driver"] = str(profile.nvidia.driver_version) if profile.nvidia.driver_version else None
        out["cuda_driver_api"] = str(profile.nvidia.cuda_driver_version) if profile.nvidia.cuda_driver_version else None
    if profile.amd:
        out["rocm"] = str(profile.amd.rocm_version) if profile.amd.rocm_version else None
    return out


def exit_code(report: VerifyReport | Mapping) -> int:
    report = VerifyReport.of(report)
    if report.fatal:
        return int(ExitCode.CHECK_FAILED)
    return int(ExitCode.CHECK_FAILED) if report.with_status("fail") or not report.ok else int(ExitCode.OK)


def document(report: VerifyReport | Mapping, *, env_name: str, wall_s: float, driver: dict,
             diagnoses: Sequence[dict] = ()) -> dict:
    """The stable JSON shape of `verify --json` (keys documented in docs/verify-doctor.md); ``diagnoses`` are the
    known causes of its failures, as the caller's diagnosis found them (:mod:`resolver.doctor.verify_diagnoses`)."""
    report = VerifyReport.of(report)
    facts = report.facts or EnvironmentFacts()
    torch = facts.torch or TorchBuild()
    if not driver and facts.device is not None and facts.device.driver_cuda:
        driver = {"cuda_driver_api": facts.device.driver_cuda, "source": "torch"}
    return {
        "ok": exit_code(report) == 0,
        "env": env_name,
        "versions": {"python": facts.python, "torch": torch.version, "cuda": torch.cuda,
                     "hip": torch.hip, "cxx11_abi": torch.cxx11_abi, "driver": driver or None,
                     "packages": dict(facts.packages)},
        "device": to_data(report.device),
        "kernels": {**to_data(report.kernels), "extensions": to_data(facts.extensions)},
        "library": to_data(report.library),
        "model": to_data(report.model),
        "inputs": to_data(report.inputs),
        "checks": to_data(report.checks),
        "results": to_data(report.results),
        "errors": to_data(report.errors) + ([{"where": "in-env", "error": report.fatal}] if report.fatal else []),
        "warnings": to_data(report.warnings),
        "diagnoses": list(diagnoses),
        "timings": {**to_data(report.timings), "wall_s": round(wall_s, 3)},
    }


_MARK = {"pass": "ok  ", "fail": "FAIL", "skip": "skip"}


def human(doc: dict) -> str:
    v = doc["versions"]
    dev = doc.get("device") or {}
    lines = [f"environment {doc['env']}: torch {v.get('torch')} (CUDA {v.get('cuda') or '-'}, HIP {v.get('hip') or '-'}), "
             f"Python {v.get('python')}"]
    if dev.get("kind") in ("cuda", "rocm"):
        names = ", ".join(f"{d.get('name')} ({d.get('arch')})" for d in dev.get("devices", []))
        lines.append(f"device: {names}")
    else:
        lines.append("device: CPU only - the CUDA/HIP kernels cannot run here; the reference path and the "
                     "extensions' loading are checked")
    if doc.get("library"):
        lines.append(f"library: {doc['library']['name']} ({'kernels' if doc['library']['uses_kernels'] else 'torch path'})")
    for check in doc["checks"]:
        lines.append(f"  [{_MARK.get(check['status'], check['status'])}] {check['name']}: {check['detail']}")
    for err in doc["errors"]:
        lines.append(f"  error in {err.get('where')}: {str(err.get('error'))[:300]}")
    for d in doc.get("diagnoses", ()):
        lines.append(f"  known problem: {d['title']}\n    cause: {d['cause']}\n    fix:   {d['fix']}")
    lines.append(f"{'PASSED' if doc['ok'] else 'FAILED'} in {doc['timings']['wall_s']:.1f} s")
    return "\n".join(lines)
