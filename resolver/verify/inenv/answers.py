"""The answers the in-environment programs hand back, as frozen typed values for the resolver side.

``resolver.verify.inenv.facts`` and ``resolver.verify.inenv.verify`` run INSIDE an environment and stay plain
dict/JSON producers (they emit through :mod:`resolver.core.inenv_protocol`). The resolver reads their
documents through the types here: :class:`EnvironmentFacts` (``python -m resolver.verify.inenv.facts``)
and :class:`VerifyReport` (``python -m resolver.verify.inenv.verify``).

Why this home: the shapes are defined by the producers next door, so a change to a key is made and
reviewed beside the code that writes it; and like ``protocol.py`` this module is standard library
only, so nothing here pulls the resolver (or torch) into either side.

Reading is tolerant: an older environment, or one whose torch does not import, gives a partial
document, and every missing key reads as its default (None, an empty tuple or mapping).
``to_json`` gives back exactly the document that was read, keys in their order, unknown keys
included, because the JSON the commands print is a contract.

>>> doc = {"python": "3.11.7", "torch": {"version": "2.14.1+cpu", "arch_list": []}, "extensions": {}}
>>> facts = EnvironmentFacts.from_json(doc)
>>> facts.torch.version, facts.torch.arch_list, facts.device, facts.torch.cuda
('2.14.1+cpu', (), None, None)
>>> facts.to_json() == doc
True
>>> EnvironmentFacts.from_json({"run_error": "no python"}).run_error
'no python'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

T = TypeVar("T", bound="Answer")


def to_data(value: Any) -> Any:
    """A typed value back to JSON data: answers to their documents, tuples to lists, mappings to dicts."""
    if isinstance(value, Answer):
        return value.to_json()
    if isinstance(value, (tuple, list)):
        return [to_data(v) for v in value]
    if isinstance(value, Mapping):
        return {k: to_data(v) for k, v in value.items()}
    return value


def _strings(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _mapping(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value


def _one(kind: type[Answer]) -> Callable[[Any], Any]:
    return lambda value: kind.from_json(value) if isinstance(value, Mapping) else value


def _many(kind: type[Answer]) -> Callable[[Any], Any]:
    return lambda value: tuple(kind.from_json(v) if isinstance(v, Mapping) else v for v in value) \
        if isinstance(value, list) else value


def _by_name(kind: type[Answer]) -> Callable[[Any], Any]:
    return lambda value: {k: kind.from_json(v) if isinstance(v, Mapping) else v for k, v in value.items()} \
        if isinstance(value, Mapping) else value


def _lists_by_name(value: Any) -> Any:
    return {k: _strings(v) for k, v in value.items()} if isinstance(value, Mapping) else value


@dataclass(frozen=True, kw_only=True)
class Answer:
    """A JSON object read into fields. ``keys`` are the document's keys in their order (None when the
    value was built in code: then every field is written); ``extra`` holds the keys no field models."""

    _DECODE: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}

    keys: tuple[str, ...] | None = field(default=None, repr=False, compare=False)
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls: type[T], document: Mapping[str, Any] | None) -> T:
        """Read a document; missing keys take their defaults, unknown keys are kept in ``extra``."""
        document = document if isinstance(document, Mapping) else {}
        names = {f.name for f in dataclasses.fields(cls)} - {"keys", "extra"}
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in document.items():
            if key in names:
                decode = cls._DECODE.get(key)
                values[key] = decode(value) if decode else value
            else:
                extra[key] = value
        return cls(keys=tuple(document), extra=extra, **values)

    @classmethod
    def of(cls: type[T], value: T | Mapping[str, Any] | None) -> T:
        """``value`` itself when it is already typed, else read as a document (None reads as {})."""
        return value if isinstance(value, cls) else cls.from_json(value)

    def to_json(self) -> dict[str, Any]:
        """The document this value was read from (or, built in code, every field and the extras)."""
        names = [f.name for f in dataclasses.fields(self) if f.name not in ("keys", "extra")]
        order = self.keys if self.keys is not None else (*names, *self.extra)
        return {key: to_data(getattr(self, key) if key in names else self.extra[key]) for key in order}

    @property
    def empty(self) -> bool:
        """True when the document had no keys at all (``{}``)."""
        return not self.to_json()

    def get(self, key: str, default: Any = None) -> Any:
        """A key no field models (``extra``), as the document has it."""
        return self.extra.get(key, default)


@dataclass(frozen=True, kw_only=True)
class TorchBuild(Answer):
    """``facts["torch"]``: the torch importable in the environment and what it was compiled for."""

    _DECODE = {"arch_list": _strings}

    version: str | None = None
    cuda: str | None = None
    hip: str | None = None
    cxx11_abi: bool | None = None
    file: str | None = None
    arch_list: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Device(Answer):
    """One accelerator torch sees: ``capability`` ("9.0") only on CUDA; ``arch`` is sm_90 or gfx90a."""

    index: int | None = None
    name: str | None = None
    arch: str | None = None
    capability: str | None = None
    memory_gib: float | None = None


@dataclass(frozen=True, kw_only=True)
class DeviceView(Answer):
    """``facts["device"]``: kind cpu, cuda or rocm; verify's report adds ``used`` (kept in extra)."""

    _DECODE = {"devices": _many(Device)}

    kind: str | None = None
    count: int | None = None
    devices: tuple[Device, ...] = ()
    driver_cuda: str | None = None
    error: str | None = None

    @property
    def gpu(self) -> bool:
        return self.kind in ("cuda", "rocm")


@dataclass(frozen=True, kw_only=True)
class Owner(Answer):
    """The distribution that installed an extension (python metadata or conda-meta); {} when unknown."""

    name: str | None = None
    version: str | None = None
    build: str | None = None
    via: str | None = None


@dataclass(frozen=True, kw_only=True)
class AbiMismatch(Answer):
    """An ``undefined symbol`` at import: the extension was compiled against another torch."""

    undefined_symbol: str | None = None
    demangled: str | None = None
    namespace: str | None = None


@dataclass(frozen=True, kw_only=True)
class ExtensionState(Answer):
    """What :func:`resolver.verify.inenv.facts.load_extension` found for one compiled module."""

    _DECODE = {"owner": _one(Owner), "abi": _one(AbiMismatch), "fatbin_archs": _strings,
               "built_for_archs": _strings}

    module: str | None = None
    installed: bool = False
    loaded: bool = False
    file: str | None = None
    owner: Owner | None = None
    built_for_torch: str | None = None
    fatbin_archs: tuple[str, ...] = ()
    built_for_archs: tuple[str, ...] = ()
    error: str | None = None
    abi: AbiMismatch | None = None
    missing_version: str | None = None
    seconds: float | None = None


@dataclass(frozen=True, kw_only=True)
class Bytecode(Answer):
    """Whether torch's bytecode is cached, and if not, whether it can be written."""

    torch_cached: bool | None = None
    dont_write_bytecode: bool | None = None
    writable: bool | None = None
    site_packages: str | None = None


@dataclass(frozen=True, kw_only=True)
class EnvironmentFacts(Answer):
    """``python -m resolver.verify.inenv.facts``: torch, the device, the packages and the kernel extensions.

    Partial documents are normal: ``{"run_error": ...}`` when the Python does not start (written by
    the resolver), ``{"torch_import_error": ..., "python", "packages", "prefix"}`` without torch."""

    _DECODE = {"torch": _one(TorchBuild), "device": _one(DeviceView), "packages": _mapping,
               "kernels": _lists_by_name, "extensions": _by_name(ExtensionState), "tools": _mapping,
               "bytecode": _one(Bytecode)}

    python: str | None = None
    executable: str | None = None
    prefix: str | None = None
    torch: TorchBuild | None = None
    device: DeviceView | None = None
    packages: Mapping[str, str | None] = field(default_factory=dict)
    kernels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    extensions: Mapping[str, ExtensionState] = field(default_factory=dict)
    tools: Mapping[str, str | None] = field(default_factory=dict)
    bytecode: Bytecode | None = None
    seconds: float | None = None
    torch_import_seconds: float | None = None
    run_error: str | None = None
    torch_import_error: str | None = None

    @property
    def devices(self) -> tuple[Device, ...]:
        return self.device.devices if self.device is not None else ()


@dataclass(frozen=True, kw_only=True)
class Check(Answer):
    """One verify check: status pass, fail or skip; numbers and details it carries stay in ``extra``."""

    name: str | None = None
    status: str | None = None
    detail: str | None = None


@dataclass(frozen=True, kw_only=True)
class VerifyReport(Answer):
    """``python -m resolver.verify.inenv.verify``: the checks, what failed on the way and the facts it saw.

    The same reader serves the ``verify --json`` document that ``setup`` keeps (its ``summary``;
    its other keys, ``env``, ``versions``, ``diagnoses``, stay in ``extra``)."""

    _DECODE = {"checks": _many(Check), "errors": lambda v: tuple(v) if isinstance(v, list) else v,
               "facts": _one(EnvironmentFacts), "device": _one(DeviceView), "kernels": _mapping,
               "timings": _mapping, "results": _mapping,
               "warnings": lambda v: tuple(v) if isinstance(v, list) else v}

    schema: int | None = None
    mode: str | None = None
    ok: bool = False
    summary: str | None = None
    checks: tuple[Check, ...] = ()
    errors: tuple[Mapping[str, Any], ...] = ()
    fatal: str | None = None
    traceback: str | None = None
    facts: EnvironmentFacts | None = None
    device: DeviceView | None = None
    kernels: Mapping[str, Any] = field(default_factory=dict)
    library: Mapping[str, Any] | None = None
    model: Mapping[str, Any] | None = None
    inputs: Mapping[str, Any] | None = None
    results: Mapping[str, Any] = field(default_factory=dict)
    timings: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[Mapping[str, Any], ...] = ()  # the distinct warnings raised during the run, with counts

    def with_status(self, status: str) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == status)
