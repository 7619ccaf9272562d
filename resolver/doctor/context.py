"""What doctor knows about THIS environment, used to fill the fix commands of the signatures.

>>> ctx = FixContext(env="cuda13", arch="9.0", torch="2.14.1+cu130", cuda="13.0", target="cuda13.0")
>>> ctx.render("python -m resolver build --env {env} --arch {arch} # {unknown}")
'python -m resolver build --env cuda13 --arch 9.0 # {unknown}'
>>> FixContext().render("lock --target {target} && install --env {env} # torch's CUDA[[ ({cuda})]]")
"lock --target auto && install # torch's CUDA"
>>> target_of({"cuda": "12.8", "hip": None})
'cuda12.8'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from resolver.core.versions import major_minor
from resolver.verify.inenv.answers import EnvironmentFacts, TorchBuild


class _Keep(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


# what FixContext holds when a fact is not known; the text then leaves it out rather than print a hole
UNKNOWN = {"env": "NAME", "arch": "ARCH", "cuda": "X.Y"}
_DEFAULTS = {"driver_target": "auto"}  # the plan reads the driver where it runs
_OPTIONAL = re.compile(r"\[\[(.*?)\]\]")
_KEY = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class FixContext:
    env: str = "NAME"
    arch: str = "ARCH"  # compute capability "9.0" or gfx target "gfx90a"
    torch: str = "the installed torch"
    cuda: str = "X.Y"
    target: str = "auto"
    rocm: str | None = None  # the machine's ROCm (from the probe)
    package: str | None = None  # the kernel package a log's failure is in

    @property
    def arch_known(self) -> bool:
        return self.arch not in ("", "ARCH")

    def render(self, template: str, groups: dict | None = None) -> str:
        """The template filled in; ``--arch {arch}`` is left out when the architecture is unknown (build then
        targets the GPUs the probe finds), and ``{package_flag}`` names the package when one is known."""
        from resolver.doctor.fixes import without_arch

        values = _Keep(asdict(self))
        values["package_flag"] = f" --package {self.package}" if self.package else ""
        values["rocm"] = self.rocm or "the installed ROCm"
        values.update(_DEFAULTS)
        values.update({k: v for k, v in (groups or {}).items() if v})
        unknown = {k for k, v in UNKNOWN.items() if values.get(k) == v}

        def optional(segment: re.Match) -> str:
            keys = _KEY.findall(segment.group(1))
            return segment.group(1) if all(k in values and k not in unknown for k in keys) else ""

        text = _OPTIONAL.sub(optional, template)
        if "env" in unknown:
            text = text.replace(" --env {env}", "")
        return (text if self.arch_known else without_arch(text)).format_map(values)


def target_of(torch_facts: TorchBuild | Mapping | None) -> str:
    """The `lock --target` naming this torch's backend: cpu, cudaX.Y or rocmX.Y."""
    t = TorchBuild.of(torch_facts)
    if t.hip:
        return "rocm" + major_minor(t.hip)
    if t.cuda:
        return "cuda" + major_minor(t.cuda)
    return "cpu" if t.version else "auto"


def arch_of(facts: EnvironmentFacts | Mapping | None, profile) -> str | None:
    """The first GPU's architecture as `build --arch` takes it: from the environment's torch, else the probe."""
    for dev in EnvironmentFacts.of(facts).devices:
        if dev.capability:
            return dev.capability
        if dev.arch:
            return dev.arch
    if profile is not None:
        if profile.nvidia and profile.nvidia.gpus:
            return str(profile.nvidia.gpus[0].compute_capability)
        if profile.amd and profile.amd.gpus:
            return str(profile.amd.gpus[0].gfx_arch)
    return None


def build_context(env_name: str | None, facts: EnvironmentFacts | Mapping | None, profile) -> FixContext:
    facts = EnvironmentFacts.of(facts)
    t = facts.torch if facts.torch is not None and not facts.torch.empty else None
    rocm = str(profile.amd.rocm_version) if profile is not None and profile.amd and profile.amd.rocm_version else None
    return FixContext(env=env_name or "NAME", arch=arch_of(facts, profile) or "ARCH",
                      torch=(t.version if t else None) or "the installed torch",
                      cuda=major_minor(t.cuda) if t and t.cuda else "X.Y",
                      target=target_of(t) if t else "auto", rocm=rocm)


def _release(version: str) -> str:
    return str(version).split("+", 1)[0].strip()


def applies(match, ctx: FixContext) -> bool:
    r"""False when a signature's ``unless_same`` pair names the same release (then it is not this problem).

    >>> from resolver.doctor.signatures import load_signatures, match_log
    >>> log = "The build backend returned an error\n  torch.__version__  = 2.14.1+cu130\n"
    >>> m = match_log(log, load_signatures())[0]
    >>> applies(m, FixContext(torch="2.14.1+cu130")), applies(m, FixContext(torch="2.13.0+cpu"))
    (False, True)
    """
    sig = match.signature
    if sig.rocm or sig.rocm_not:
        rocm = match.groups.get("log_rocm") or ctx.rocm
        if sig.rocm and rocm and not any(rocm == v or rocm.startswith(v + ".") for v in sig.rocm):
            return False
        if sig.rocm_not and (not rocm or any(rocm == v or rocm.startswith(v + ".") for v in sig.rocm_not)):
            return False
    if len(match.signature.unless_same) != 2:
        return True
    group, key = match.signature.unless_same
    left, right = match.groups.get(group), getattr(ctx, key, None)
    return not (left and right and right[:1].isdigit() and _release(left) == _release(right))
