"""The paste corpus (``data/pastes``): each paste, the facts a person reads from it, and how the report
reader's answer is compared with them."""

from __future__ import annotations

import json

from resolver.plan.probe.report import profile_from_report
from support import DATA

PASTES = DATA / "pastes"
NAMES = sorted(p.stem for p in PASTES.glob("*.txt"))


def expected(name: str) -> dict:
    return json.loads((PASTES / f"{name}.json").read_text())


def facts(text: str) -> dict:
    """The facts of a paste as the corpus states them, from the profile the report reader builds."""
    profile = profile_from_report(text)
    nv, amd = profile.nvidia, profile.amd
    return {
        "nvidia": None if nv is None else {
            "driver": str(nv.driver_version) if nv.driver_version else None,
            "cuda": str(nv.cuda_driver_version) if nv.cuda_driver_version else None,
            "cuda_derived": nv.cuda_driver_version_derived,
            "gpus": [(g.name, str(g.compute_capability)) for g in nv.gpus],
            "unidentified": len(nv.unidentified_gpus),
        },
        "amd": None if amd is None else {
            "rocm": str(amd.rocm_version) if amd.rocm_version else None,
            "gpus": [(g.name, str(g.gfx_arch)) for g in amd.gpus],
        },
        "cuda_toolkit": str(profile.cuda_toolkit) if profile.cuda_toolkit else None,
        "platform": profile.platform,
    }


def mismatches(name: str, got: dict) -> list[str]:
    """What the reader got wrong against the corpus, in words (empty: read fully right)."""
    want, wrong = expected(name), []
    for vendor in ("nvidia", "amd"):
        if want[vendor] is None:
            if got[vendor] is not None and got[vendor]["gpus"]:
                wrong.append(f"{vendor}: GPUs read where the paste has none: {got[vendor]['gpus']}")
            continue
        if got[vendor] is None:
            wrong.append(f"{vendor}: nothing read")
            continue
        w, g = want[vendor], got[vendor]
        archs = [arch for _, arch in g["gpus"]]
        if archs != [arch for _, arch in w["gpus"]]:
            wrong.append(f"{vendor} GPUs: {g['gpus']} (expected {w['gpus']})")
        else:
            for (want_name, _), (got_name, _) in zip(w["gpus"], g["gpus"]):
                if want_name and want_name.lower() not in got_name.lower():
                    wrong.append(f"{vendor} GPU name {got_name!r} lacks {want_name!r}")
        if vendor == "nvidia":
            if g["driver"] != w["driver"]:
                wrong.append(f"driver {g['driver']} (expected {w['driver']})")
            if w["cuda"] is not None and g["cuda"] != w["cuda"]:
                wrong.append(f"driver CUDA {g['cuda']} (expected {w['cuda']})")
            if w["cuda"] is None and g["cuda"] is not None and (want.get("tegra") or not g["cuda_derived"]):
                wrong.append(f"driver CUDA {g['cuda']} read where the paste states none")
            if g["unidentified"] != w.get("unidentified", 0):
                wrong.append(f"{g['unidentified']} unidentified GPUs (expected {w.get('unidentified', 0)})")
        elif w["rocm"] is None:
            pass  # a ROCm version the paste does not state may only be the one PyTorch names (assumed, and said)
        elif g["rocm"] is None or not (g["rocm"] + ".").startswith(w["rocm"] + "."):
            wrong.append(f"ROCm {g['rocm']} (expected {w['rocm']})")
    if want.get("platform") and got["platform"] != want["platform"]:
        wrong.append(f"platform {got['platform']} (expected {want['platform']})")
    if want.get("cuda_toolkit") and got["cuda_toolkit"] != want["cuda_toolkit"]:
        wrong.append(f"nvcc {got['cuda_toolkit']} (expected {want['cuda_toolkit']})")
    return wrong
