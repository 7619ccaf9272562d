"""``CONDA_OVERRIDE_CUDA`` and ``CONDA_OVERRIDE_GLIBC``, honoured the way conda and pixi honour them.

A value replaces what was detected; an empty value means "there is none" (conda then drops the
``__cuda`` / ``__glibc`` virtual package). Applied overrides are recorded in the profile.

>>> cuda_override({"CONDA_OVERRIDE_CUDA": "12.4"}), cuda_override({"CONDA_OVERRIDE_CUDA": ""}), cuda_override({})
(('12.4',), ('',), None)
"""

from __future__ import annotations

from typing import Mapping

from resolver.errors import BadInput
from resolver.versions import DottedVersion

CUDA = "CONDA_OVERRIDE_CUDA"
GLIBC = "CONDA_OVERRIDE_GLIBC"


def _override(environ: Mapping[str, str], name: str) -> tuple[str] | None:
    """``(value,)`` when the variable is set (even to ""), else None. A non-version value is refused."""
    if name not in environ:
        return None
    value = environ[name].strip()
    if value:
        try:
            DottedVersion.parse(value)
        except ValueError:
            raise BadInput(f"{name}={value!r} is not a version",
                           fix=f"set {name} to a version such as 12.4, or to an empty string for none") from None
    return (value,)


def cuda_override(environ: Mapping[str, str]) -> tuple[str] | None:
    return _override(environ, CUDA)


def glibc_override(environ: Mapping[str, str]) -> tuple[str] | None:
    return _override(environ, GLIBC)
