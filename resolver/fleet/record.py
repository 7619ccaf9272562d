"""The fleet's classes in pixi.toml, so that every checkout of the project knows them.

``lock --fleet`` writes one table per class under ``[tool.resolver.fleet.classes]`` (pixi ignores
``[tool]``), next to the environment of the same name::

    [tool.resolver.fleet]
    kernel-channel = "https://kernels.example.org/mamba"   # optional: where nodes take prebuilt kernels

    [tool.resolver.fleet.classes.cuda12-sm80-sm90]
    key = "3f2a…"                # what the class's nodes agree on (resolver.fleet.classes.class_key), hashed
    archs = ["8.0", "9.0"]
    node-count = 2
    nodes = ["a100-01", "h100-01"]  # up to NODE_LIST_MAX names; a larger fleet lists every node in NODE_LIST
    torch = "torch==2.14.1+cu126"
    python = "3.12"
    platform = "linux-64"
    toolkit = "nvcc 12.6"
    strategy = "build"

From it come the CI build matrix (:func:`matrix`) and, on a node, its class (:func:`class_for`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from resolver.core.errors import BadInput, Refusal, UsageError
from resolver.core.fs import sha256_text
from resolver.core.model import Plan, Request
from resolver.fleet.classes import FleetPlan, class_key, sort_archs
from resolver.project.manifest import Manifest

NODE_LIST = "fleet-nodes.tsv"  # beside pixi.toml: every node and its class, when pixi.toml would list too many
NODE_LIST_MAX = 16  # a class of more nodes is counted in pixi.toml, its nodes listed in NODE_LIST
VARIANT_SEP = "@"  # causal-conv1d@cuda12-sm80-sm90
RUNNERS = {"linux-64": "ubuntu-latest", "linux-aarch64": "ubuntu-24.04-arm"}


@dataclass(frozen=True)
class StoredClass:
    name: str
    key: str
    archs: tuple[str, ...]
    nodes: tuple[str, ...]  # empty where the fleet lists its nodes in NODE_LIST
    node_count: int
    torch: str
    python: str
    platform: str
    backend: str
    backend_version: str
    toolkit: str
    toolkit_source: str
    strategy: str

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.name, "key": self.key, "archs": list(self.archs), "nodes": list(self.nodes),
                "node_count": self.node_count,
                "torch": self.torch, "python": self.python, "platform": self.platform, "backend": self.backend,
                "backend_version": self.backend_version, "toolkit": self.toolkit,
                "toolkit_source": self.toolkit_source, "strategy": self.strategy}


def key_of(plan: Plan) -> str:
    return sha256_text(class_key(plan))[:16]


def write_fleet(manifest: Manifest, fleet: FleetPlan, kernel_channel: str | None = None,
                request: Request | None = None) -> None:
    """Replace the fleet tables of ``manifest`` with ``fleet``'s classes, each with its environment; environments
    of classes that are gone (a fleet locked before) leave pixi.toml with them. The classes' environments follow
    the others, by name, so pixi.toml does not depend on the order the classes came in (a fleet locked again
    class by class reads as one locked at once)."""
    import tomlkit

    doc = manifest.doc
    old = set(read_classes(manifest))
    new = {c.name for c in fleet.classes}
    for name in sorted(old - new):
        for table in ("environments", "feature"):
            if table in doc and name in doc[table]:
                del doc[table][name]
    for c in fleet.classes:
        manifest.ensure_environment(c.plan)
    for table in ("feature", "environments"):
        for name in sorted(new):  # taken out and put back at the end, by name
            if table in doc and name in doc[table]:
                item = doc[table][name]
                del doc[table][name]
                doc[table][name] = item
    previous_channel = manifest.tool.fleet.kernel_channel
    request = request or Request()
    table = tomlkit.table()
    table["target"] = str(request.target)  # what every node plans with (setup on a node uses it too)
    if request.python is not None:
        table["python"] = str(request.python)
    if kernel_channel or previous_channel:
        table["kernel-channel"] = str(kernel_channel or previous_channel)
    listed = lists_nodes(fleet)
    if not listed:
        table["node-list"] = NODE_LIST
    classes = tomlkit.table(is_super_table=True)
    for c in fleet.classes:
        plan = c.plan
        entry = tomlkit.table()
        entry["key"] = key_of(plan)
        entry["archs"] = list(plan.kernels.arch_list)
        entry["node-count"] = len(c.nodes)
        if listed:
            entry["nodes"] = list(c.nodes)
        entry["torch"] = plan.torch.requirement
        entry["python"] = str(plan.python)
        entry["platform"] = plan.platform
        entry["backend"] = plan.backend
        entry["backend-version"] = str(plan.backend_version) if plan.backend_version is not None else ""
        entry["toolkit"] = plan.kernels.toolkit or ""
        entry["toolkit-source"] = plan.kernels.toolkit_source or ""
        entry["strategy"] = plan.kernels.strategy
        entry.add(tomlkit.nl())  # a blank line after each class, also when the table is written again
        classes[c.name] = entry
    table["classes"] = classes
    manifest.set_tool_table("fleet", table, last=True)
    _tidy(manifest, new)


def _tidy(manifest: Manifest, names: set[str]) -> None:
    """One blank line before each table of the fleet's (tomlkit leaves more where tables were taken out and put
    back), so the text is the same whatever order the classes were locked in."""
    import re

    from resolver.core.toml import parse_toml_document

    text = manifest.dumps()
    classes = "|".join(re.escape(name) for name in sorted(names))
    headers = rf"\[(?:feature\.(?:{classes})[\].]|tool\.resolver\.fleet[\].]|environments\])" if classes else \
        r"\[tool\.resolver\.fleet[\].]"
    tidy = re.sub(rf"\n{{3,}}(?={headers})", "\n\n", text)
    if tidy != text:
        manifest.doc = parse_toml_document(tidy, what="pixi.toml", fix="lock the fleet again")


def lists_nodes(fleet: FleetPlan) -> bool:
    """Whether pixi.toml lists each class's nodes (a small fleet) rather than counting them (NODE_LIST lists them)."""
    return all(len(c.nodes) <= NODE_LIST_MAX for c in fleet.classes)


def node_list(fleet: FleetPlan) -> str | None:
    """NODE_LIST's text: every node and its class's environment, by node, tab-separated; None for a fleet
    small enough for pixi.toml to list its nodes."""
    if lists_nodes(fleet):
        return None
    lines = [f"# every node of the fleet and its environment in pixi.toml ({len(fleet.membership)} nodes); "
             "written by `python -m resolver lock --fleet DIR`"]
    lines += [f"{node}\t{environment}" for node, environment in fleet.membership]
    return "\n".join(lines) + "\n"


def read_classes(manifest: Manifest) -> dict[str, StoredClass]:
    """The classes pixi.toml records (empty when it is no fleet's)."""
    out: dict[str, StoredClass] = {}
    for name, entry in manifest.tool.fleet.classes.items():
        def text(key: str) -> str:
            value = entry.get(key, "")
            if not isinstance(value, str):
                raise BadInput(f"pixi.toml: [tool.resolver.fleet.classes.{name}] {key} must be a string",
                               fix="lock the fleet again (`python -m resolver lock --fleet DIR`)")
            return value
        nodes = tuple(str(n) for n in entry.get("nodes", []))
        count = int(entry.get("node-count", len(nodes)))  # checked with the manifest's shape (manifest_shape)
        out[str(name)] = StoredClass(str(name), text("key"), tuple(str(a) for a in entry.get("archs", [])),
                                     nodes, count, text("torch"), text("python"),
                                     text("platform"), text("backend"), text("backend-version"), text("toolkit"),
                                     text("toolkit-source"), text("strategy"))
    return out


def fleet_request(manifest: Manifest) -> Request:
    """The request every node of the fleet plans with (``lock --fleet --target T --python X.Y``)."""
    from resolver.core.model import Target
    from resolver.core.versions import DottedVersion

    fleet = manifest.tool.fleet
    try:
        return Request(target=Target.parse(fleet.target),
                       python=DottedVersion.parse(fleet.python) if fleet.python else None)
    except (UsageError, ValueError):
        raise BadInput(f"pixi.toml: [tool.resolver.fleet] target {fleet.target!r} or python "
                       f"{fleet.python!r} is not valid",
                       fix="lock the fleet again (`python -m resolver lock --fleet DIR`)") from None


def kernel_channel(manifest: Manifest) -> str | None:
    return manifest.tool.fleet.kernel_channel


# ------------------------------------------------------------------------------------------ matrix
def variant_key(package: str, environment: str) -> str:
    return f"{package}{VARIANT_SEP}{environment}"


def matrix(manifest: Manifest, packages: list[str]) -> list[dict[str, Any]]:
    """The GitHub Actions ``strategy.matrix.include`` list: one entry per kernel package per class with kernels."""
    entries = []
    for name, stored in sorted(read_classes(manifest).items()):
        if stored.strategy == "none" or not stored.archs:
            continue
        for package in packages:
            key = variant_key(package, name)
            entries.append({
                "package": package, "variant": key, "environment": name, "archs": ",".join(stored.archs),
                "platform": stored.platform, "runs-on": _runner(stored), "toolkit": stored.toolkit,
                "requires": _requires(stored), "command": f"python -m resolver build --variant {key}"})
    return entries


def _runner(stored: StoredClass) -> str:
    if stored.backend == "rocm" or stored.toolkit_source == "system":
        # the kernels build with the system's compiler: a runner that has it (a self-hosted label)
        compiler = stored.toolkit.replace(" ", "-") or stored.backend
        return f"self-hosted-{stored.platform}-{compiler}"
    return RUNNERS.get(stored.platform, f"self-hosted-{stored.platform}")


def _requires(stored: StoredClass) -> str:
    where = "from the environment's conda packages" if stored.toolkit_source == "environment" else "installed on the runner"
    return f"{stored.platform}, {stored.toolkit or 'no compiler'} ({where}); no GPU"


def parse_variant(text: str, manifest: Manifest) -> tuple[str, StoredClass]:
    """``package@environment`` → (package, its class); a key the lock does not hold is a usage error."""
    package, sep, env = text.partition(VARIANT_SEP)
    classes = read_classes(manifest)
    if not sep or env not in classes:
        known = ", ".join(sorted(classes)) or "none: pixi.toml holds no fleet"
        raise UsageError(f"--variant {text!r} names no class of the fleet in pixi.toml (classes: {known})",
                         fix="copy a key from `python -m resolver build --matrix` (PACKAGE@ENVIRONMENT)")
    return package, classes[env]


# ------------------------------------------------------------------------------------------ a node
def class_for(plan: Plan, manifest: Manifest) -> StoredClass:
    """The class whose environment serves a node planned as ``plan``; a Refusal saying how to add it otherwise."""
    classes = read_classes(manifest)
    key = key_of(plan)
    same = [c for c in classes.values() if c.key == key]
    wanted = set(plan.kernels.arch_list)
    for stored in sorted(same, key=lambda c: (len(c.archs), c.name)):
        if wanted <= set(stored.archs):
            return stored
    gpus = ", ".join(plan.kernels.arch_list) or "no GPU"
    fix = ("add this node's profile to the fleet folder (`python -m resolver probe --json > FLEET/NODE.json`) and run "
           "`python -m resolver lock --fleet FLEET`, then build and publish the new variants; or set this machine "
           "up outside the fleet with an explicit --target (e.g. --target cpu)")
    if same:
        raise Refusal(f"class {same[0].name} of the fleet has this node's torch build but no kernels for "
                      f"{', '.join(sorted(wanted - set(same[0].archs)))}", fix=fix)
    raise Refusal(f"this node (torch {plan.torch.requirement.split('==', 1)[1]} for Python {plan.python} on "
                  f"{plan.platform}, kernels for {gpus}) matches no class of the fleet in pixi.toml "
                  f"({', '.join(sorted(classes))})", fix=fix)


def class_plan(plan: Plan, stored: StoredClass) -> Plan:
    """A node's plan as its class's: the class's environment and architectures."""
    return replace(plan, environment=stored.name,
                   kernels=replace(plan.kernels, arch_list=sort_archs(stored.archs), strategy=stored.strategy))
