"""Versions just below and just above a floor, for boundary tests."""

from __future__ import annotations

from resolver.core.versions import DottedVersion


def below(version: DottedVersion) -> DottedVersion:
    """The version just below ``version`` (``525.60.13`` → ``525.60.12``, ``6.0`` → ``5.99``, ``580`` → ``579``)."""
    parts = list(version.parts)
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] > 0:
            parts[i] -= 1
            return DottedVersion(tuple(parts[:i + 1]) + (99,) * (len(parts) - i - 1))
    raise ValueError(f"nothing below {version}")


def above(version: DottedVersion) -> DottedVersion:
    return DottedVersion(version.parts[:-1] + (version.parts[-1] + 1,))
