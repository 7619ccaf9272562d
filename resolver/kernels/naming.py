"""Build strings that name the variant: backend+toolkit, torch, ABI, Python, architectures, key.

Conda match specs accept only letters, digits and underscores in a build string, so versions lose
their dots (torch 2.14 → ``torch214``, sm_86 + sm_90 → ``sm86sm90``) and the fields are joined by ``_``.

>>> build_string(backend="cuda", toolkit="13.0.88", torch="2.14.1+cu130", cxx11_abi=True, python="3.11",
...              archs=("9.0",), key_digest="1a2b3c4d5e", number=0)
'cu130_torch214_cxx11_py311_sm90_h1a2b3c4_0'
>>> build_string(backend="rocm", toolkit="6.0.2", torch="2.4.1+rocm6.0", cxx11_abi=False, python="3.10",
...              archs=("gfx90a", "gfx942"), key_digest="ffffffffff", number=0)
'rocm60_torch24_precxx11_py310_gfx90agfx942_hfffffff_0'
"""

from __future__ import annotations

import re

from resolver.core.versions import major_minor

_MAX_ARCH_PART = 40  # conda build strings stay readable; a long list is abbreviated, the hash keeps it unique


def backend_tag(backend: str, toolkit: str) -> str:
    """``cu130`` / ``rocm60`` / ``cpu``."""
    if backend == "cpu" or not toolkit:
        return "cpu"
    major, minor = major_minor(toolkit).split(".")
    minor_digits = re.match(r"\d+", minor)
    prefix = "cu" if backend == "cuda" else "rocm"
    return f"{prefix}{int(major)}{int(minor_digits.group()) if minor_digits else 0}"


def arch_tag(archs: tuple[str, ...]) -> str:
    """``sm90`` / ``sm80sm86sm90`` / ``gfx90agfx942``."""
    if not archs:
        return "noarch"
    if archs[0].startswith("gfx"):
        text = "".join(archs)
    else:
        text = "".join("sm" + a.replace(".", "") for a in archs)
    if len(text) > _MAX_ARCH_PART:
        text = f"{text[:_MAX_ARCH_PART - 8]}{len(archs)}archs"
    return text


def torch_tag(torch: str) -> str:
    if not torch:
        return "notorch"
    return "torch" + major_minor(torch).replace(".", "")


def build_string(*, backend: str, toolkit: str, torch: str, cxx11_abi: bool, python: str, archs: tuple[str, ...],
                 key_digest: str, number: int = 0) -> str:
    parts = [backend_tag(backend, toolkit), torch_tag(torch), "cxx11" if cxx11_abi else "precxx11",
             "py" + python.replace(".", ""), arch_tag(archs), "h" + key_digest[:7], str(number)]
    return "_".join(parts)
