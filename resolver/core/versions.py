"""Small immutable version-like values: toolkit versions, driver versions, GPU architectures.

Modelled on pypa/packaging: parse from the strings users and tools print, compare, print back.

>>> DottedVersion.parse("12.6") < DottedVersion.parse("12.10")
True
>>> ComputeCapability.parse("sm_86"), ComputeCapability.parse("8.6").sm
(ComputeCapability(major=8, minor=6), 'sm_86')
>>> GfxArch.from_target_version(90010).name
'gfx90a'
>>> CudaVariant.parse("cu126").version
DottedVersion(parts=(12, 6))
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import total_ordering

_DOTTED = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")


@total_ordering
@dataclass(frozen=True)
class DottedVersion:
    """A purely numeric dotted version ("550.54.15", "12.6", "6.0.2"); compares numerically.

    Missing trailing parts compare as zero, so "12" == "12.0". ``str()`` keeps the spelling it was
    parsed from, so NVIDIA's zero-padded driver versions survive: ``str(parse("575.51.03"))`` is
    ``"575.51.03"``, not ``"575.51.3"``.
    """

    parts: tuple[int, ...]
    text: str | None = field(default=None, compare=False, hash=False, repr=False)

    @classmethod
    def parse(cls, text: str | int | float) -> "DottedVersion":
        match = _DOTTED.match(str(text))
        if not match:
            raise ValueError(f"not a version: {text!r}")
        return cls(tuple(int(p) for p in match.group(1).split(".")), match.group(1))

    def _key(self) -> tuple[int, ...]:
        parts = list(self.parts)
        while len(parts) > 1 and parts[-1] == 0:
            parts.pop()
        return tuple(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DottedVersion) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: "DottedVersion") -> bool:
        width = max(len(self.parts), len(other.parts))
        pad = lambda p: p + (0,) * (width - len(p))  # noqa: E731
        return pad(self.parts) < pad(other.parts)

    @property
    def major(self) -> int:
        return self.parts[0]

    @property
    def minor(self) -> int:
        return self.parts[1] if len(self.parts) > 1 else 0

    @property
    def micro(self) -> int:
        return self.parts[2] if len(self.parts) > 2 else 0

    def truncate(self, n: int) -> "DottedVersion":
        return DottedVersion((self.parts + (0,) * n)[:n])

    def __str__(self) -> str:
        return self.text or ".".join(str(p) for p in self.parts)


_CC = re.compile(r"^\s*(?:sm_|compute_)?(\d+)(?:\.(\d+))?([af])?\s*$")


@total_ordering
@dataclass(frozen=True)
class ComputeCapability:
    """An NVIDIA compute capability. Parses "8.6", "sm_86", "86", "compute_90a" ("a"/"f" suffixes
    name arch-specific feature sets; they are dropped for compatibility checks)."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> "ComputeCapability":
        match = _CC.match(str(text))
        if not match:
            raise ValueError(f"not a compute capability: {text!r}")
        if match.group(2) is not None:
            return cls(int(match.group(1)), int(match.group(2)))
        digits = match.group(1)
        if len(digits) < 2:
            raise ValueError(f"not a compute capability: {text!r}")
        return cls(int(digits[:-1]), int(digits[-1]))

    def __lt__(self, other: "ComputeCapability") -> bool:
        return (self.major, self.minor) < (other.major, other.minor)

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}"

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


_GFX = re.compile(r"^\s*(gfx[0-9a-f]{3,4})\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class GfxArch:
    """An AMD GPU ISA name such as ``gfx90a`` or ``gfx1100``.

    The kernel's KFD topology reports ``gfx_target_version`` as major*10000 + minor*100 + stepping,
    with minor and stepping printed in hex in the name (90010 → gfx90a, 110000 → gfx1100). rocm-smi
    prints them in decimal (``gfx9010``); that spelling is read as the ISA it names.

    >>> GfxArch.parse("gfx9010"), GfxArch.parse("gfx9012").name, GfxArch.parse("gfx1100").name
    (GfxArch(name='gfx90a'), 'gfx90c', 'gfx1100')
    """

    name: str

    @classmethod
    def parse(cls, text: str) -> "GfxArch":
        # rocminfo prints feature suffixes such as "gfx90a:sramecc+:xnack-"; keep the ISA only.
        base = str(text).split(":", 1)[0]
        match = _GFX.match(base)
        if not match:
            raise ValueError(f"not a gfx architecture: {text!r}")
        name = match.group(1).lower()
        # rocm-smi writes the stepping in decimal: gfx9010 is 9.0.10 (gfx90a), gfx9012 is gfx90c
        if len(name) == 7 and name[3] == "9" and name[4:].isdigit():
            return cls(f"gfx9{int(name[4]):x}{int(name[5:]):x}")
        return cls(name)

    @classmethod
    def from_target_version(cls, value: int | str) -> "GfxArch":
        number = int(value)
        if number <= 0:
            raise ValueError(f"not a gfx_target_version: {value!r}")
        major, rest = divmod(number, 10000)
        minor, stepping = divmod(rest, 100)
        return cls(f"gfx{major}{minor:x}{stepping:x}")

    @property
    def isa_version(self) -> str:
        """The ``major.minor.stepping`` form rattler's ``__amdgpu_arch`` uses (gfx90a → 9.0.10)."""
        digits = self.name[3:]
        major, minor, stepping = digits[:-2], digits[-2], digits[-1]
        return f"{int(major)}.{int(minor, 16)}.{int(stepping, 16)}"

    def __str__(self) -> str:
        return self.name


_VARIANT = re.compile(r"^(cpu|cu(\d+)|rocm(\d+(?:\.\d+)*))$")


@dataclass(frozen=True)
class CudaVariant:
    """A PyTorch wheel variant tag: ``cpu``, ``cu126``, ``rocm6.2``, ``rocm6.2.4``."""

    backend: str  # "cpu" | "cuda" | "rocm"
    version: DottedVersion | None

    @classmethod
    def parse(cls, text: str) -> "CudaVariant":
        match = _VARIANT.match(str(text).strip())
        if not match:
            raise ValueError(f"not a torch variant: {text!r}")
        if match.group(1) == "cpu":
            return cls("cpu", None)
        if match.group(2):
            digits = match.group(2)
            return cls("cuda", DottedVersion((int(digits[:-1]), int(digits[-1]))))
        return cls("rocm", DottedVersion.parse(match.group(3)))

    @classmethod
    def for_cuda(cls, version: DottedVersion) -> "CudaVariant":
        return cls("cuda", version.truncate(2))

    def __str__(self) -> str:
        if self.backend == "cpu":
            return "cpu"
        if self.backend == "cuda":
            return f"cu{self.version.major}{self.version.minor}"
        return f"rocm{self.version}"


def driver_text(version: DottedVersion) -> str:
    """NVIDIA's spelling of a driver version, two-digit middle parts: 450.80.2 -> ``450.80.02``.

    >>> driver_text(DottedVersion.parse("580.65.06"))
    '580.65.06'
    """
    head, *rest = version.parts
    return ".".join([str(head)] + [f"{p:02d}" for p in rest])


def major_minor(version: object) -> str:
    """A release named by its first two numbers (``X.Y``), its local label (``+cu130``) left out: how a
    Python, a CUDA or ROCm toolkit and a torch series are named. A bare major reads as ``X.0``.

    >>> major_minor("2.14.1+cu130"), major_minor("12.8"), major_minor("6"), major_minor(DottedVersion.parse("3.11.7"))
    ('2.14', '12.8', '6.0', '3.11')
    """
    parts = str(version).split("+", 1)[0].split(".")
    return f"{parts[0]}.{parts[1] if len(parts) > 1 else '0'}"


def python_release(text: str) -> DottedVersion:
    """``--python`` as typed: a CPython ``3.Y`` (a patch release is cut to ``3.Y``); anything else is
    one usage sentence (exit 2), whichever command was given it.

    >>> python_release("3.11.7")
    DottedVersion(parts=(3, 11))
    """
    from resolver.core.errors import UsageError

    try:
        version = DottedVersion.parse(text)
    except ValueError:
        version = None
    if version is None or len(version.parts) < 2 or version.major != 3:
        raise UsageError(f"--python {text!r} is not a Python version", fix="write it as X.Y, e.g. --python 3.11")
    return version.truncate(2)


_RELEASE = re.compile(r"^(\d+(?:\.\d+)*)((?:a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$")


@dataclass(frozen=True)
class ReleaseVersion:
    """A package release in PEP 440's normal form (``2.3.1``, ``2.3.2.post1``, ``1.0rc1``): its numbers as a
    :class:`DottedVersion` and the pre-, post- or dev-release suffix; ``str()`` gives back the text parsed.

    >>> ReleaseVersion.parse("2.3.2.post1").release.truncate(2), str(ReleaseVersion.parse("2.3.2.post1"))
    (DottedVersion(parts=(2, 3)), '2.3.2.post1')
    """

    release: DottedVersion
    suffix: str = ""

    @classmethod
    def parse(cls, text: str) -> "ReleaseVersion":
        match = _RELEASE.match(str(text))
        if not match:
            raise ValueError(f"not a release version: {text!r}")
        return cls(DottedVersion.parse(match.group(1)), str(text)[len(match.group(1)):])

    def __str__(self) -> str:
        return f"{self.release}{self.suffix}"


def same_version(a: str, b: str) -> bool:
    """Whether two PyPI versions are the same release (PEP 440 normal forms; text that is no version:
    the same text).

    >>> same_version("2.13.0+cpu", "2.13.0+CPU"), same_version("1.0", "1.0.0"), same_version("1.0", "1.1")
    (True, True, False)
    """
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a.strip() == b.strip()
