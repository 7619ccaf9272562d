"""The knowledge base's GPU name table (resolver/plan/knowledge/data/gpus.toml), as the probe uses it.

The table is the knowledge base's; the probe only reads it, and only when no output gave the
compute capability (plain nvidia-smi's table, ``-q``, ``-L``, a pre-510 driver, /proc) or the gfx
architecture (plain ``amd-smi``'s table). It is loaded on first use.

nvidia-smi's table cuts long names (``NVIDIA RTX PRO 6000 Blac...``); such a name answers only when
every table entry it could be the start of agrees on the compute capability.

>>> table = NameTable()
>>> table.compute_capability("NVIDIA L4")
('8.9', 'GPU name table (resolver/plan/knowledge/data/gpus.toml)')
>>> table.compute_capability("NVIDIA RTX PRO 6000 Blac...")[0]
'12.0'
>>> table.gfx("AMD Instinct MI300X VF")
('gfx942', 'GPU name table (resolver/plan/knowledge/data/gpus.toml)')
"""

from __future__ import annotations

import re

TABLE = "GPU name table (resolver/plan/knowledge/data/gpus.toml)"
TRUNCATION = "..."


def is_truncated(name: str) -> bool:
    """Whether nvidia-smi cut the name short (its table prints ``...`` where it did).

    >>> is_truncated("NVIDIA GeForce RTX 5070 ..."), is_truncated("NVIDIA H100 80GB HBM3")
    (True, False)
    """
    return name.endswith(TRUNCATION)


def _words(text: str) -> str:
    return " " + re.sub(r"[^a-z0-9]+", " ", text.lower()).strip() + " "


def _could_be(visible: str, candidate: str) -> bool:
    """Whether a name whose printed start is ``visible`` can contain ``candidate`` as whole words.

    ``visible`` ends exactly where nvidia-smi cut the name, so the candidate is either inside it or
    starts inside it at a word and runs past the cut.

    >>> _could_be("NVIDIA GeForce RTX 5070 ", "GeForce RTX 5070 Ti"), _could_be("NVIDIA RTX PRO 6000 Blac", "A10")
    (True, False)
    """
    text = " " + re.sub(r"[^a-z0-9]+", " ", visible.lower()).lstrip()
    needle = _words(candidate)
    if needle in text:
        return True
    return any(needle.startswith(text[i:]) for i, ch in enumerate(text) if ch == " " and text[i:].strip())


class NameTable:
    """Product name → NVIDIA compute capability / AMD gfx target, from the knowledge base."""

    def __init__(self) -> None:
        self._knowledge = None
        self._error: str | None = None

    def _load(self):
        if self._knowledge is None and self._error is None:
            try:
                from resolver.plan.knowledge import Knowledge

                self._knowledge = Knowledge.load()
            except Exception as exc:  # noqa: BLE001 - a broken table must not break the probe
                self._error = f"the GPU name table could not be read ({exc})"
        return self._knowledge

    def compute_capability(self, name: str) -> tuple[str | None, str]:
        """``(capability or None, where it came from / why not)``."""
        knowledge = self._load()
        if knowledge is None:
            return None, self._error or "the GPU name table is not available"
        if is_truncated(name):
            visible = name[: -len(TRUNCATION)]
            found = {str(m.compute_capability) for m in knowledge.nvidia_models
                     for n in m.names if _could_be(visible, n)}
            if len(found) == 1:
                return found.pop(), f"{TABLE}; nvidia-smi cut the name short"
            why = "several entries match" if found else "no entry matches"
            return None, f"nvidia-smi cut the name {name!r} short and {why} in the {TABLE}"
        model = knowledge.nvidia_model(name)
        if model is None:
            found = _pci_by_name("nvidia", name)
            if found is not None and found.arch:
                return found.arch, found.source
            return None, f"{name!r} is not in the {TABLE} nor in the PCI ID table"
        return str(model.compute_capability), TABLE

    def gfx(self, name: str) -> tuple[str | None, str]:
        """``(gfx target or None, where it came from / why not)`` for an AMD product name."""
        knowledge = self._load()
        if knowledge is None:
            return None, self._error or "the GPU name table is not available"
        model = knowledge.amd_model(name)
        if model is None:
            found = _pci_by_name("amd", name)
            if found is not None and found.arch:
                return found.arch, found.source
            return None, f"{name!r} is not in the {TABLE} nor in the PCI ID table"
        return str(model.gfx), TABLE

    def driver_cuda(self, driver: str) -> tuple[str | None, str]:
        """The newest CUDA an NVIDIA driver runs, from the knowledge base's toolkit driver floors."""
        knowledge = self._load()
        if knowledge is None:
            return None, self._error or "the knowledge base is not available"
        from resolver.core.versions import DottedVersion

        try:
            found = knowledge.newest_cuda_for_driver(DottedVersion.parse(driver))
        except ValueError:
            return None, f"{driver!r} is not a driver version"
        return (str(found), "the knowledge base's CUDA toolkit driver floors (cuda.toml)") if found else \
            (None, f"no CUDA toolkit in cuda.toml runs on driver {driver}")


def _pci_by_name(vendor: str, name: str):
    try:
        from resolver.plan.knowledge.pci_ids import by_name

        return by_name(vendor, name)
    except Exception:  # noqa: BLE001 - a broken table must not break the probe
        return None
