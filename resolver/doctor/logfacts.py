"""What a log says about the machine it came from: its torch, torch's CUDA, the CUDA the driver supports,
and which torch CUDA build that driver runs. A fix for a log from another machine is built from these,
never from this project's environments.

>>> facts = log_facts("      torch.__version__  = 2.0.1+cu118\\nThe NVIDIA driver on your system is too old (found version 11040).")
>>> facts["torch"], facts["cuda"], facts["target"], facts["driver_cuda"]
('2.0.1+cu118', '11.8', 'cuda11.8', '11.4')
"""

from __future__ import annotations

import re

_LINE_LIMIT = 2000
# (the literal every match holds, the pattern read on the line that holds it)
_TORCH = ("torch", re.compile(r"torch\.__version__\s{0,20}=\s{0,20}(?P<v>\d{1,3}\.\d{1,3}(?:\.\d{1,3})?\S{0,40})"
                              r"|\btorch==(?P<w>\d{1,3}\.\d{1,3}\.\d{1,3}\+(?:cu\d{2,4}|rocm[\d.]{1,12}|cpu))\b"))
_LOCAL_CUDA = re.compile(r"\+cu(\d{2,3})(\d)\b")
_TORCH_CUDA = ("torch.version.cuda", re.compile(r"torch\.version\.cuda\s{0,20}[=:]\s{0,20}'?(\d{1,2}\.\d{1,2})"))
_FOUND = ("found version", re.compile(r"driver on your system is too old \(found version (\d{4,6})\)"))
_SMI_CUDA = ("CUDA Version:", re.compile(r"CUDA Version:\s{0,5}(\d{1,2}\.\d{1,2})"))
_LINES_TRIED = 10000  # lines holding the literal without the fact, read from the end: then the log does not say


def _scan(text: str, fact: tuple[str, re.Pattern]) -> re.Match | None:
    """The last match in the log of a fact's pattern, read only on lines that hold its literal, each line's
    first characters only (lines are untrusted: bounded)."""
    literal, pattern = fact
    end = len(text)
    for _ in range(_LINES_TRIED):
        at = text.rfind(literal, 0, end)
        if at < 0:
            return None
        start = text.rfind("\n", max(0, at - _LINE_LIMIT), at) + 1
        if start == 0 and at >= _LINE_LIMIT:  # past the first characters of its line (whose start is not looked
            end = at                          # for further back: a log of one line costs no rescans)
            continue
        stop = text.find("\n", at, start + _LINE_LIMIT)
        line = text[start:stop if stop >= 0 else start + _LINE_LIMIT]
        match = pattern.search(line, 0, _LINE_LIMIT)
        if match:
            return match
        end = start
    return None


def driver_cuda_of(found: str) -> str:
    """torch's ``found version 11040`` (the driver's CUDA as ``cudaDriverGetVersion`` returns it) → ``11.4``."""
    number = int(found)
    return f"{number // 1000}.{number % 1000 // 10}"


def log_facts(text: str) -> dict:
    """Facts the log states, as strings (absent when it does not say): ``torch``, ``cuda`` (torch's),
    ``target`` (the lock target of that torch), ``driver_cuda``; with the driver's CUDA known also
    ``driver_target`` and ``driver_builds`` (what that driver runs, from the knowledge tables)."""
    facts: dict = {}
    torch = _scan(text, _TORCH)
    if torch:
        facts["torch"] = torch.group("v") or torch.group("w")
        local = _LOCAL_CUDA.search(facts["torch"])
        if local:
            facts["cuda"] = f"{local.group(1)}.{local.group(2)}"
    cuda = _scan(text, _TORCH_CUDA)
    if cuda and "cuda" not in facts:
        facts["cuda"] = cuda.group(1)
    if "cuda" in facts:
        facts["target"] = "cuda" + facts["cuda"]
    found = _scan(text, _FOUND)
    smi = _scan(text, _SMI_CUDA)
    if found:
        facts["driver_cuda"] = driver_cuda_of(found.group(1))
    elif smi:
        facts["driver_cuda"] = smi.group(1)
    if "driver_cuda" in facts:
        facts["driver_target"], facts["driver_builds"] = builds_for_driver(facts["driver_cuda"])
    return facts


def builds_for_driver(driver_cuda: str, knowledge=None) -> tuple[str, str]:
    """``(target, sentence)``: the newest torch CUDA build a driver supporting CUDA ``driver_cuda`` runs
    (minor-version compatibility: any build of that CUDA major or older), as the tables list them, and
    the Mamba kernels' CUDA floor; ``cpu`` and what to upgrade to when none runs.

    >>> builds_for_driver("11.4")[0], builds_for_driver("6.5")[0]
    ('cuda11.8', 'cpu')
    """
    from resolver.core.versions import DottedVersion, driver_text
    from resolver.plan.knowledge import Knowledge

    k = knowledge or Knowledge.load()
    driver = DottedVersion.parse(driver_cuda)
    floor = k.min_cuda()
    runnable = [v.version for r in k.releases_newest_first() for v in r.variants
                if v.version is not None and v.tag.startswith("cu") and v.version.major <= driver.major
                and v.version >= floor]
    if runnable:
        best = max(runnable).truncate(2)
        return (f"cuda{best}", f"the CUDA {best.major}.x builds of torch and the Mamba kernels (the newest: "
                               f"--target cuda{best})")
    newest_major = max(v.version.major for r in k.releases_newest_first() for v in r.variants
                       if v.version is not None and v.tag.startswith("cu"))
    upgrade = k.mvc_floor(newest_major)
    return ("cpu", f"no CUDA build of the Mamba kernels (they need CUDA {floor} or newer): only --target cpu, "
                   f"or a driver upgrade (CUDA {newest_major}.x needs {driver_text(upgrade) if upgrade else 'a newer one'})")
