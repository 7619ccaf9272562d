"""What an upgrade changes, and the risks the knowledge base knows for the step, each with its source.

Both are read off the two plans and the tables behind them (torch.toml's releases and wheel variants,
cuda.toml's driver floors and architectures, mamba.toml's kernel releases, build fixes, API changes and
known-bad combinations): nothing here decides, it only compares.

>>> from resolver.plan.knowledge import Knowledge
>>> from resolver.core.model import KernelChoice, Plan, TorchChoice, TorchSource
>>> def cpu(version, variant="cpu"):
...     torch = TorchChoice(version, variant, TorchSource("pypi", "https://pypi.org/simple"))
...     return Plan("cpu", None, "3.11", "linux-64", torch, KernelChoice("none"))
>>> [r.kind for r in risks(cpu("2.3.1"), cpu("2.6.0"), None, Knowledge.load())]
['api-change', 'api-change', 'glibc']
>>> [c.what for c in changes(cpu("2.13.0"), cpu("2.14.1", "cu130"), Knowledge.load()) if c.changed]
['torch', 'torch wheel architectures']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from resolver.core.model import Plan
from resolver.core.versions import ComputeCapability, DottedVersion, driver_text
from resolver.plan.knowledge import Knowledge, TorchRelease, TorchVariant
from resolver.plan.probe.profile import HardwareProfile


@dataclass(frozen=True)
class Change:
    what: str
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "before": self.before, "after": self.after, "changed": self.changed}


@dataclass(frozen=True)
class Risk:
    kind: str  # torch-archs, nvcc-archs, driver, build-fix, api-change, known-bad, python, glibc, unconfirmed, plan
    level: str  # "warning" (can stop something that works today) | "note"
    text: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "level": self.level, "text": self.text, "source": self.source}


def rows_of(plan: Plan, knowledge: Knowledge) -> tuple[TorchRelease | None, TorchVariant | None]:
    """The torch.toml release and wheel variant behind ``plan`` (None where the tables do not hold them)."""
    release = knowledge.release(plan.torch.version)
    if release is None:
        return None, None
    variant = next((v for v in release.variants if v.tag == plan.torch.variant and plan.platform in v.platforms), None)
    return release, variant


def _backend(plan: Plan) -> str:
    return {"cpu": "CPU", "cuda": f"CUDA {plan.backend_version}", "rocm": f"ROCm {plan.backend_version}"}.get(
        plan.backend, plan.backend)


def _torch(plan: Plan) -> str:
    where = "PyPI" if plan.torch.source.kind == "pypi" else plan.torch.source.url
    return f"{plan.torch.requirement.split('==', 1)[1]} ({plan.torch.variant}, from {where})"


def _kernels(plan: Plan) -> str:
    if plan.kernels.strategy == "none":
        return "none (the reference path)"
    packages = ", ".join(f"{n} {v}" for n, v in plan.kernels.packages)
    return f"{packages} ({plan.kernels.strategy})"


def _floor(plan: Plan, knowledge: Knowledge) -> str:
    if plan.backend != "cuda":
        return "none"
    floor = knowledge.mvc_floor(plan.backend_version.major)
    return f">= {driver_text(floor)}" if floor else "unknown"


def changes(current: Plan, new: Plan, knowledge: Knowledge) -> tuple[Change, ...]:
    """Every property of the environment a person checks, before and after (``changed`` says which moved)."""
    def archs(plan: Plan) -> str:
        _, variant = rows_of(plan, knowledge)
        return ", ".join(variant.archs) if variant is not None and variant.archs else "none (CPU code only)"

    def abi(plan: Plan) -> str:
        release, _ = rows_of(plan, knowledge)
        if release is None:
            return "unknown"
        return f"C++{release.cxx_standard}, {'cxx11' if release.cxx11_abi else 'pre-cxx11'} ABI"

    def glibc(plan: Plan) -> str:
        release, _ = rows_of(plan, knowledge)
        return f">= {release.glibc_min}" if release is not None else "unknown"

    rows = [("environment", current.env_name, new.env_name), ("torch", _torch(current), _torch(new)),
            ("backend", _backend(current), _backend(new)), ("python", str(current.python), str(new.python)),
            ("torch wheel architectures", archs(current), archs(new)),
            ("NVIDIA driver floor", _floor(current, knowledge), _floor(new, knowledge)),
            ("glibc floor", glibc(current), glibc(new)), ("C++ standard and ABI", abi(current), abi(new)),
            ("kernels", _kernels(current), _kernels(new)),
            ("kernel architectures", ", ".join(current.kernels.arch_list) or "none",
             ", ".join(new.kernels.arch_list) or "none"),
            ("toolkit", _toolkit(current), _toolkit(new)),
            ("conda packages", _conda(current), _conda(new))]
    return tuple(Change(what, before, after) for what, before, after in rows)


def _toolkit(plan: Plan) -> str:
    if not plan.kernels.toolkit:
        return "none"
    return f"{plan.kernels.toolkit} ({plan.kernels.toolkit_source or 'unknown'})"


def _conda(plan: Plan) -> str:
    return ", ".join(f"{n} {s}" for n, s in plan.conda_packages) or "none"


def risks(current: Plan, new: Plan, profile: HardwareProfile | None, knowledge: Knowledge) -> tuple[Risk, ...]:
    """The risks of going from ``current`` to ``new`` the tables know of, each with its source."""
    found: list[Risk] = []
    old_release, old_variant = rows_of(current, knowledge)
    new_release, new_variant = rows_of(new, knowledge)
    old_torch, new_torch = current.torch.version, new.torch.version
    kernels = current.kernels.strategy != "none" or new.kernels.strategy != "none"

    if old_variant is not None and new_variant is not None and old_variant.backend == new_variant.backend != "cpu":
        dropped = [a for a in old_variant.archs if a not in new_variant.archs and a not in new_variant.ptx]
        if dropped:
            here = _gpus_here(profile)
            hit = [a for a in dropped if a in here]
            found.append(Risk("torch-archs", "warning",
                              f"torch {new_release.name} {new_variant.tag} wheels have no code for {_archs(dropped)}, "
                              f"which {old_variant.tag} had: "
                              + (f"this machine's {_archs(hit)} GPU(s) cannot run it" if hit else
                                 "a machine with such a GPU (a teammate's, a node of the fleet) cannot run it"),
                              new_variant.source))
    old_nvcc, new_nvcc = _nvcc(current), _nvcc(new)
    if new_nvcc is not None and current.kernels.arch_list and current.backend == "cuda":
        lost = [a for a in current.kernels.arch_list if _is_cc(a) and not knowledge.nvcc_can_build(
            new_nvcc, ComputeCapability.parse(a))]
        for arch in lost:
            support = knowledge.arch_support(ComputeCapability.parse(arch))
            found.append(Risk("nvcc-archs", "warning",
                              f"nvcc {new_nvcc} cannot build kernels for {_archs([arch])} (the current environment's "
                              f"kernels are built for it)" + (f": CUDA {support.last.major + 1} dropped it"
                                                                if support and support.last else ""),
                              support.source if support else "cuda.toml [[arch]]"))
    if new.backend == "cuda":
        new_cuda = new.backend_version
        floor = knowledge.mvc_floor(new_cuda.major)
        row = next((f for f in knowledge.mvc_floors if f.cuda_major == new_cuda.major), None)
        old_floor = knowledge.mvc_floor(current.backend_version.major) \
            if current.backend == "cuda" else None
        if floor is not None and row is not None and floor != old_floor:
            driver = profile.nvidia.driver_version if profile is not None and profile.nvidia else None
            here = (f"; this machine has {driver_text(driver)}" if driver is not None else
                    "; this machine's driver is not known here")
            was = f" (was >= {driver_text(old_floor)})" if old_floor else ""
            found.append(Risk("driver", "warning" if driver is None or driver < floor else "note",
                              f"CUDA {new_cuda} needs NVIDIA driver >= {driver_text(floor)} on every machine that runs "
                              f"the new environment{was}{here}", row.source))
    for fix in knowledge.build_fixes:
        crossed = _torch_floor(fix.applies)
        if crossed is not None and old_torch.truncate(2) < crossed <= new_torch.truncate(2) and kernels:
            found.append(Risk("build-fix", "note", f"from torch {crossed}: {fix.what} (build fix '{fix.id}', applied by "
                                                   "the kernel build)", fix.source))
        if fix.nvcc_min is not None and new_nvcc is not None and fix.holds_for_nvcc(new_nvcc) and \
                (old_nvcc is None or not fix.holds_for_nvcc(old_nvcc)) and kernels:
            found.append(Risk("build-fix", "note", f"with nvcc {new_nvcc}: {fix.what} (build fix '{fix.id}')",
                              fix.source))
    for change in knowledge.api_changes:
        if change.crossed_by(old_torch, new_torch):
            found.append(Risk("api-change", "warning",
                              f"torch {change.torch}: {change.what}; in {change.package}: {change.effect}", change.source))
    for bad in knowledge.known_bad:
        if (bad.when == "torch-release" and old_torch.truncate(2) != new_torch.truncate(2) and kernels) or \
                (bad.when == "cuda-major" and old_nvcc is not None and new_nvcc is not None
                 and old_nvcc.major != new_nvcc.major) or \
                (bad.when == "cxx11-abi" and old_release is not None and new_release is not None
                 and old_release.cxx11_abi != new_release.cxx11_abi and kernels):
            found.append(Risk("known-bad", "note", f"{bad.what}. Avoided: {bad.fix}", bad.source))
    if current.python != new.python and new_release is not None:
        found.append(Risk("python", "note", f"the environment's Python moves from {current.python} to {new.python} "
                                            f"(torch {new_release.name} has wheels for {', '.join(new_release.python)}): "
                                            "code that pins the interpreter, and compiled packages, change with it",
                          new_release.source))
    if old_release is not None and new_release is not None and new_release.glibc_min > old_release.glibc_min:
        found.append(Risk("glibc", "warning", f"torch {new_release.name} wheels need glibc >= {new_release.glibc_min} "
                                              f"(torch {old_release.name}: >= {old_release.glibc_min}): older Linux "
                                              "systems cannot run the new environment", new_release.source))
    if new_release is not None and (not new_release.confirmed or (new_variant is not None and not new_variant.confirmed)):
        row = new_variant if new_variant is not None and not new_variant.confirmed else new_release
        found.append(Risk("unconfirmed", "warning", f"torch {new_release.name} {new.torch.variant} rests on one source "
                                                    "(the tables mark it unconfirmed)", row.source))
    for warning in new.warnings:
        if warning not in current.warnings:
            found.append(Risk("plan", "warning", warning,
                              new_release.pypi_default_source if new_release is not None and "PyPI" in warning
                              else "the plan's trace (`python -m resolver plan`)"))
    return tuple(found)


def _nvcc(plan: Plan) -> DottedVersion | None:
    if plan.backend != "cuda" or plan.kernels.strategy == "none":
        return None
    try:
        return DottedVersion.parse(plan.kernels.toolkit.split(" ", 1)[1]) if plan.kernels.toolkit else \
            plan.backend_version.truncate(2)
    except (ValueError, IndexError):
        return None


def _torch_floor(applies: str) -> DottedVersion | None:
    """``torch >= 2.13`` → 2.13 (None for any other condition)."""
    text = applies.replace(" ", "")
    if text.startswith("torch>="):
        try:
            return DottedVersion.parse(text[len("torch>="):]).truncate(2)
        except ValueError:
            return None
    return None


def _is_cc(arch: str) -> bool:
    return arch[:1].isdigit()


def _archs(archs: list[str]) -> str:
    return ", ".join(ComputeCapability.parse(a).sm if _is_cc(a) else a for a in archs)


def _gpus_here(profile: HardwareProfile | None) -> set[str]:
    if profile is None:
        return set()
    here = {str(g.compute_capability) for g in (profile.nvidia.gpus if profile.nvidia else ())}
    here |= {str(g.gfx_arch) for g in (profile.amd.gpus if profile.amd else ())}
    return here
