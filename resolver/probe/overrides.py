"""``CONDA_OVERRIDE_CUDA`` and ``CONDA_OVERRIDE_GLIBC``, honoured the way conda and pixi honour them.

A value replaces what was detected; an empty value means "there is none" (conda then drops the
``__cuda`` / ``__glibc`` virtual package). Applied overrides are recorded in the profile.

>>> cuda_override({"CONDA_OVERRIDE_CUDA": "12.4"}), cuda_override({"CONDA_OVERRIDE_CUDA": ""}), cuda_override({})
(('12.4',), ('',), None)
>>> glibc_override({"CONDA_OVERRIDE_GLIBC": "2.x"})
Traceback (most recent call last):
...
resolver.errors.BadInput: CONDA_OVERRIDE_GLIBC='2.x' is not a version. Fix: set CONDA_OVERRIDE_GLIBC to a version such as 2.28, or to an empty string for none.
"""

from __future__ import annotations

import re
from typing import Mapping

from resolver.errors import BadInput
from resolver.names import printable

CUDA = "CONDA_OVERRIDE_CUDA"
GLIBC = "CONDA_OVERRIDE_GLIBC"
_VERSION = re.compile(r"^\d+(\.\d+)*$")


def _override(environ: Mapping[str, str], name: str) -> tuple[str] | None:
    """``(value,)`` when the variable is set (even to ""), else None. A non-version value is refused."""
    if name not in environ:
        return None
    value = environ[name].strip()
    if value and not _VERSION.match(value):  # the whole value: "2.x" is not read as "2"
        example = "2.28" if name == GLIBC else "12.4"
        raise BadInput(f"{name}={printable(repr(value))} is not a version",
                       fix=f"set {name} to a version such as {example}, or to an empty string for none")
    return (value,)


def cuda_override(environ: Mapping[str, str]) -> tuple[str] | None:
    return _override(environ, CUDA)


def glibc_override(environ: Mapping[str, str]) -> tuple[str] | None:
    return _override(environ, GLIBC)
