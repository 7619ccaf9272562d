"""pixi's rules for pixi.toml and pixi.lock, checked the way pixi reads them (no pixi binary can be had
here). Each rule is one function returning the problems it finds, with its place in pixi's source
(pixi 0.77, rattler_lock 0.32):

* ``every_environment``: every environment of the manifest is in the lock, for exactly the platforms it
  declares (``lock_file/outdated.rs`` ~270-285, ``satisfiability/environment.rs`` AdditionalPlatformsInLockFile);
* ``channels``: each environment's channels equal the manifest's, in order (``environment.rs`` ~36-67);
* ``virtual_packages``: a lock platform carries the virtual packages the manifest declares, not the host's
  (``pixi_manifest/src/platform.rs`` ~758-807);
* ``indexes``: an environment with PyPI packages records ``indexes`` = index-url (PyPI's by default) then
  the extra-index-urls (``environment.rs`` ~180-191, ~454-485);
* ``conda_python``: where there are PyPI packages there is a conda python (``platform.rs`` ~1146);
* ``index_pins``: a requirement with ``index = …`` is locked with that ``index:`` (``satisfiability/pypi.rs``);
* ``requires_python``: each PyPI record admits the locked Python;
* ``requires_dist``: every PyPI record is reachable from the manifest through ``requires_dist`` and every
  requirement reached is locked;
* ``wheel_tags``: wheels fit the conda python and the declared platform (glibc 2.28 unless declared);
* ``hashes``: every artefact has a sha256;
* ``purls``: an environment with PyPI dependencies, no PyPI records and no purls is outdated (MissingPurls);
* ``shareable``: no location of one machine (``file://``, absolute paths); relative ones stay in the project;
* ``manifest_form``: python in every environment that has PyPI dependencies, no ``system-requirements``
  (deprecated since 0.71 and not mixable with named platforms), platform names unique and not a
  subdir's name for a platform that declares virtual packages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from packaging.markers import Marker, UndefinedEnvironmentName
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename

from resolver.core.toml import parse_toml
from resolver.project.manifest import Manifest
from resolver.project.pixi_platforms import PixiPlatform, lock_identity, lock_names
from resolver.project.sources import channel_url

PYPI = "https://pypi.org/simple"


@dataclass(frozen=True)
class Workspace:
    manifest: Manifest
    raw_manifest: dict[str, Any]
    lock: dict[str, Any]
    root: Path

    @classmethod
    def read(cls, manifest_text: str, lock_text: str, root: Path) -> "Workspace":
        return cls(Manifest.parse(manifest_text, root / "pixi.toml"), parse_toml(manifest_text, what="pixi.toml", fix=""),
                   yaml.safe_load(lock_text), root)

    def lock_env(self, name: str) -> dict[str, Any]:
        return (self.lock.get("environments") or {}).get(name) or {}

    def lock_platforms(self) -> dict[str, dict[str, Any]]:
        return {p["name"]: p for p in self.lock.get("platforms") or []}

    def lock_name(self, platform: str) -> str:
        """The name pixi gives manifest platform ``platform`` in pixi.lock (``p1`` for a named one)."""
        return lock_names(self.manifest.platforms().values()).get(platform, platform)

    def records(self) -> dict[str, dict[str, Any]]:
        """Package entries by location (``conda:`` or ``pypi:``)."""
        out = {}
        for entry in self.lock.get("packages") or []:
            location = entry.get("conda") or entry.get("pypi")
            out[location] = entry
        return out

    def env_records(self, name: str, platform: str) -> list[dict[str, Any]]:
        records = self.records()
        refs = (self.lock_env(name).get("packages") or {}).get(self.lock_name(platform)) or []
        return [dict(records.get(ref.get("conda") or ref.get("pypi")) or {}, _kind="conda" if "conda" in ref else "pypi")
                for ref in refs]


def _python_of(records: list[dict[str, Any]]) -> str | None:
    for record in records:
        if record["_kind"] == "conda" and re.search(r"/python-\d", record.get("conda", "")):
            return re.search(r"/python-(\d+\.\d+\.\d+)", record["conda"]).group(1)
    return None


def _declared(ws: Workspace, platform: str) -> PixiPlatform:
    return ws.manifest.platforms()[platform]


# ---------------------------------------------------------------------------------------------- rules
def every_environment(ws: Workspace) -> list[str]:
    problems = []
    locked = set(ws.lock.get("environments") or {})
    for name in ws.manifest.environment_names():
        spec = ws.manifest.environment(name)
        if name not in locked:
            problems.append(f"environment {name} is not in the lock")
            continue
        has_any = bool(spec.conda or spec.pypi)
        wanted = {ws.lock_name(p.name) for p in spec.platforms}
        there = set((ws.lock_env(name).get("packages") or {}))
        if has_any and wanted - there:
            problems.append(f"environment {name} lacks platform(s) {sorted(wanted - there)}")
        if there - wanted:
            problems.append(f"environment {name} has platform(s) the manifest does not declare: {sorted(there - wanted)}")
    for name in locked - set(ws.manifest.environment_names()):
        problems.append(f"the lock has environment {name}, which the manifest does not")
    return problems


def channels(ws: Workspace) -> list[str]:
    problems = []
    for name in ws.manifest.environment_names():
        spec = ws.manifest.environment(name)
        wanted = [channel_url(c) for c in spec.channels]
        got = [str(c.get("url", c)) if isinstance(c, dict) else str(c) for c in ws.lock_env(name).get("channels") or []]
        got = [channel_url(str(ws.root / g[2:])) if g.startswith("./") else g for g in got]
        if got != wanted:
            problems.append(f"environment {name}: channels {got} are not the manifest's {wanted}")
    return problems


def virtual_packages(ws: Workspace) -> list[str]:
    """Each lock platform is one manifest platform by identity (subdir + the virtual packages that differ
    from pixi's defaults: what pixi's align_platform_names and satisfiability compare), under the name
    pixi writes for it, carrying the declared virtual packages."""
    problems = []
    declared = list(ws.manifest.platforms().values())
    for name, entry in ws.lock_platforms().items():
        subdir = entry.get("subdir") or name
        identity = lock_identity(subdir, entry.get("virtual-packages") or [])
        matching = [p for p in declared if p.identity == identity]
        if len(matching) != 1:
            problems.append(f"lock platform {name} ({subdir}, {entry.get('virtual-packages')}) is not one platform of "
                            "the manifest")
            continue
        if ws.lock_name(matching[0].name) != name:
            problems.append(f"lock platform {name} is the manifest's {matching[0].name}, which pixi writes as "
                            f"{ws.lock_name(matching[0].name)}")
    return problems


def indexes(ws: Workspace) -> list[str]:
    problems = []
    for name in ws.manifest.environment_names():
        spec = ws.manifest.environment(name)
        has_pypi = any(r["_kind"] == "pypi" for p in spec.platforms for r in ws.env_records(name, p.name))
        if not has_pypi:
            continue
        wanted = list(dict.fromkeys([spec.index_url or PYPI, *spec.extra_index_urls]))
        got = ws.lock_env(name).get("indexes")
        if got != wanted:
            problems.append(f"environment {name}: indexes {got} are not {wanted}")
    return problems


def conda_python(ws: Workspace) -> list[str]:
    problems = []
    for name in ws.manifest.environment_names():
        for platform in ws.manifest.environment(name).platforms:
            records = ws.env_records(name, platform.name)
            if any(r["_kind"] == "pypi" for r in records) and _python_of(records) is None:
                problems.append(f"environment {name} ({platform.name}) has PyPI packages and no conda python")
    return problems


def index_pins(ws: Workspace) -> list[str]:
    problems = []
    for name in ws.manifest.environment_names():
        spec = ws.manifest.environment(name)
        for platform in spec.platforms:
            pins = {canonicalize_name(n): d.get("index") for n, d in ws.manifest.environment(name, platform.subdir).pypi
                    if d.get("index")}
            for record in ws.env_records(name, platform.name):
                want = pins.get(canonicalize_name(record.get("name", "")))
                if record["_kind"] == "pypi" and want and record.get("index") != want:
                    problems.append(f"environment {name}: {record.get('name')} is pinned to {want} and locked with "
                                    f"index {record.get('index')}")
    return problems


def requires_python(ws: Workspace) -> list[str]:
    problems = []
    for name in ws.manifest.environment_names():
        for platform in ws.manifest.environment(name).platforms:
            records = ws.env_records(name, platform.name)
            python = _python_of(records)
            for record in records:
                spec = record.get("requires_python")
                if record["_kind"] == "pypi" and python and spec and python not in SpecifierSet(spec):
                    problems.append(f"environment {name}: {record.get('name')} requires Python {spec}, "
                                    f"the environment's is {python}")
    return problems


def _marker_env(python: str, subdir: str) -> dict[str, str]:
    system, machine = {"linux-64": ("Linux", "x86_64"), "linux-aarch64": ("Linux", "aarch64"),
                       "osx-arm64": ("Darwin", "arm64"), "osx-64": ("Darwin", "x86_64"),
                       "win-64": ("Windows", "AMD64")}[subdir]
    return {"python_version": ".".join(python.split(".")[:2]), "python_full_version": python,
            "sys_platform": {"Linux": "linux", "Darwin": "darwin", "Windows": "win32"}[system],
            "platform_system": system, "platform_machine": machine, "os_name": "nt" if system == "Windows" else "posix",
            "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


def _applies(marker: Marker | None, env: dict[str, str], extras: set[str]) -> bool:
    if marker is None:
        return True
    try:
        return any(marker.evaluate(dict(env, extra=e)) for e in (extras or {""}))
    except UndefinedEnvironmentName:
        return False


def requires_dist(ws: Workspace) -> list[str]:
    problems = []
    for name in ws.manifest.environment_names():
        for platform in ws.manifest.environment(name).platforms:
            spec = ws.manifest.environment(name, platform.subdir)
            records = ws.env_records(name, platform.name)
            python = _python_of(records)
            pypi = {canonicalize_name(r.get("name", "")): r for r in records if r["_kind"] == "pypi"}
            if not pypi or python is None:
                continue
            env = _marker_env(python, platform.subdir)
            todo = [(canonicalize_name(n), set(d.get("extras") or [])) for n, d in spec.pypi]
            seen: dict[str, set[str]] = {}
            while todo:
                package, extras = todo.pop()
                if package in seen and extras <= seen[package]:
                    continue
                seen[package] = seen.get(package, set()) | extras
                record = pypi.get(package)
                if record is None:
                    problems.append(f"environment {name} ({platform.name}): {package} is required and not locked")
                    continue
                for text in record.get("requires_dist") or []:
                    req = Requirement(text)
                    if _applies(req.marker, env, seen[package]):
                        todo.append((canonicalize_name(req.name), set(req.extras)))
            for stray in sorted(set(pypi) - set(seen)):
                problems.append(f"environment {name} ({platform.name}): {stray} is locked and nothing requires it")
    return problems


def _glibc(ws: Workspace, platform: str) -> tuple[int, int]:
    value = _declared(ws, platform).glibc or "2.28"
    major, minor = value.split(".")[:2]
    return int(major), int(minor)


def _platform_fits(tag: str, subdir: str, glibc: tuple[int, int], macos: tuple[int, int]) -> bool:
    if tag == "any":
        return True
    if subdir.startswith("linux"):
        arch = {"linux-64": "x86_64", "linux-aarch64": "aarch64"}[subdir]
        legacy = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
        match = re.fullmatch(rf"manylinux_(\d+)_(\d+)_{arch}", tag)
        if match:
            return (int(match.group(1)), int(match.group(2))) <= glibc
        base = tag.removesuffix(f"_{arch}")
        return base in legacy and legacy[base] <= glibc
    if subdir.startswith("osx"):
        arch = {"osx-arm64": "arm64", "osx-64": "x86_64"}[subdir]
        match = re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", tag)
        return bool(match) and (int(match.group(1)), int(match.group(2))) <= macos and \
            match.group(3) in (arch, "universal2")
    return tag.startswith("win")


def wheel_tags(ws: Workspace) -> list[str]:
    problems = []
    for name in ws.manifest.environment_names():
        for platform in ws.manifest.environment(name).platforms:
            records = ws.env_records(name, platform.name)
            python = _python_of(records)
            if python is None:
                continue
            major, minor = (int(x) for x in python.split(".")[:2])
            osx = next((v for n, v, _ in _declared(ws, platform.name)._merged() if n == "__osx"), "13.0")
            macos = tuple(int(x) for x in osx.split(".")[:2])
            for record in records:
                location = record.get("pypi", "")
                if record["_kind"] != "pypi" or not location.endswith(".whl"):
                    continue
                file_name = location.rsplit("/", 1)[-1].replace("%2B", "+")
                _, _, _, tags = parse_wheel_filename(file_name)
                fits = False
                for tag in tags:
                    interpreter_ok = tag.interpreter in (f"cp{major}{minor}", f"py{major}", f"py{major}{minor}") or (
                        tag.abi == "abi3" and tag.interpreter.startswith("cp3") and int(tag.interpreter[3:]) <= minor)
                    abi_ok = tag.abi in ("none", "abi3", f"cp{major}{minor}")
                    if interpreter_ok and abi_ok and _platform_fits(tag.platform, platform.subdir, _glibc(ws, platform.name),
                                                                    macos):
                        fits = True
                if not fits:
                    problems.append(f"environment {name} ({platform.name}): {file_name} does not fit Python {python} "
                                    f"on {platform.subdir} (glibc {'.'.join(map(str, _glibc(ws, platform.name)))})")
    return problems


def hashes(ws: Workspace) -> list[str]:
    return [f"{location.rsplit('/', 1)[-1]} has no sha256" for location, record in ws.records().items()
            if not re.fullmatch(r"[0-9a-f]{64}", str(record.get("sha256", "")))]


def purls(ws: Workspace) -> list[str]:
    problems = []
    for name in ws.manifest.environment_names():
        spec = ws.manifest.environment(name)
        for platform in spec.platforms:
            records = ws.env_records(name, platform.name)
            conda = [r for r in records if r["_kind"] == "conda"]
            if spec.pypi and not any(r["_kind"] == "pypi" for r in records) and conda and \
                    all(r.get("purls") is None for r in conda):
                problems.append(f"environment {name} ({platform.name}): PyPI dependencies, no PyPI records and no "
                                "purls (pixi: MissingPurls)")
    return problems


def shareable(ws: Workspace) -> list[str]:
    problems = []
    locations = list(ws.records())
    for env in (ws.lock.get("environments") or {}).values():
        locations += [str(c.get("url", c)) if isinstance(c, dict) else str(c) for c in env.get("channels") or []]
    for location in locations:
        if location.startswith("file:") or location.startswith("/"):
            problems.append(f"{location} is a location of one machine")
        elif location.startswith("./") and not (ws.root / location[2:].split("%")[0]).resolve().is_relative_to(
                ws.root.resolve()):
            problems.append(f"{location} leads out of the project")
    return problems


def manifest_form(ws: Workspace) -> list[str]:
    problems = []
    features = ws.raw_manifest.get("feature") or {}
    if "system-requirements" in ws.raw_manifest or any("system-requirements" in f for f in features.values()):
        problems.append("the manifest uses [system-requirements] (deprecated; use a named CUDA platform)")
    names = [PixiPlatform.from_entry(e).name for e in (ws.raw_manifest.get("workspace") or {}).get("platforms", [])]
    if len(names) != len(set(names)):
        problems.append(f"platform names repeat: {names}")
    for entry in (ws.raw_manifest.get("workspace") or {}).get("platforms", []):
        platform = PixiPlatform.from_entry(entry)
        if platform.declared and platform.name == platform.subdir:
            problems.append(f"platform {platform.name} declares virtual packages under its subdir's own name")
    for name in ws.manifest.environment_names():
        spec = ws.manifest.environment(name)
        if spec.pypi and "python" not in dict(spec.conda):
            problems.append(f"environment {name} has PyPI dependencies and no python")
    return problems


RULES = {rule.__name__: rule for rule in (every_environment, channels, virtual_packages, indexes, conda_python,
                                          index_pins, requires_python, requires_dist, wheel_tags, hashes, purls,
                                          shareable, manifest_form)}


def check(ws: Workspace) -> dict[str, list[str]]:
    """Every rule's problems (empty lists where the rule holds)."""
    return {name: rule(ws) for name, rule in RULES.items()}
