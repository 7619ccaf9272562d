"""pixi.toml: read an environment's inputs, and add/update the environment for a plan, keeping comments.

One feature per backend family (``cpu``, ``cuda12``, ``cuda13``, ``rocm6`` …) and one environment of
the same name built from it (``no-default-feature``: the default feature is the resolver's own
tooling). ``lock --target T`` writes, in pixi's current form:

* ``[feature.T.dependencies]``: the environment's own ``python`` and, for CUDA, the CUDA toolkit the
  kernels build with, pinned by ``cuda-version`` (the plan's ``conda_packages``);
* ``[feature.T.platforms]``: the platform the plan is for; CUDA gets a named platform declaring the
  driver (``{ name = "linux-64-cuda13", platform = "linux-64", cuda = "13" }`` in the workspace's
  platforms), derived from the subdir's own entry so a declared ``glibc`` carries over;
* ``[feature.T.pypi-dependencies] torch``: the plan's exact build, and its index when it is not PyPI.

Every other line of the file (comments, order, the user's own additions) stays.

>>> m = Manifest.parse('[workspace]\\nname = "x"\\nchannels = ["conda-forge"]\\nplatforms = ["linux-64"]\\n')
>>> m.environment_names()
['default']
>>> m.environment("default").platforms[0].name
'linux-64'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resolver.decide.model import Plan, Target
from resolver.errors import BadInput
from resolver.fs import read_bytes_bounded, write_text_atomic
from resolver.lock.pixi_platforms import PixiPlatform
from resolver.manifest_shape import check_manifest

# What every environment's PyPI part holds besides torch: verify loads a model through transformers,
# the kernel build needs packaging/ninja/einops (mamba-ssm's setup.py imports them).
DEFAULT_PYPI = ("numpy", "transformers", "safetensors", "einops", "packaging", "ninja")
MANIFEST_LIMIT = 4 << 20  # a pixi.toml larger than 4 MiB is not one a person wrote
_FIX = "fix pixi.toml (its layout is pixi's: https://pixi.sh/latest/reference/pixi_manifest/)"


@dataclass(frozen=True)
class EnvSpec:
    """Everything pixi.toml says about one environment, merged over its features."""

    name: str
    features: tuple[str, ...]
    channels: tuple[str, ...]
    platforms: tuple[PixiPlatform, ...]
    conda: tuple[tuple[str, str], ...]  # (name, spec) sorted
    pypi: tuple[tuple[str, dict[str, Any]], ...]  # (name, {"version":…, "index":…, "extras":…}) sorted
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()

    def conda_specs(self) -> list[str]:
        """MatchSpec strings, e.g. ``python 3.11.*``."""
        return [name if spec in ("", "*") else f"{name} {spec}" for name, spec in self.conda]

    def pypi_requirements(self) -> list[str]:
        """pip requirement strings, e.g. ``torch==2.13.0+cpu``."""
        out = []
        for name, spec in self.pypi:
            extras = f"[{','.join(spec['extras'])}]" if spec.get("extras") else ""
            version = spec.get("version") or ""
            out.append(f"{name}{extras}{'' if version in ('', '*') else version}")
        return out

    def pypi_indexes(self) -> list[str]:
        """The indexes pixi records for this environment: index-url (else PyPI's), then extra-index-urls."""
        return list(dict.fromkeys([self.index_url or PYPI_INDEX, *self.extra_index_urls]))

    def package_index(self, name: str) -> str | None:
        """The ``index`` a PyPI dependency is pinned to (torch's PyTorch index), if any."""
        return dict(self.pypi).get(name, {}).get("index")

    def platform(self, name: str) -> PixiPlatform:
        return next(p for p in self.platforms if p.name == name)


PYPI_INDEX = "https://pypi.org/simple"


class Manifest:
    """A pixi.toml held as a tomlkit document (so writing it back keeps comments and layout)."""

    def __init__(self, doc: Any, path: Path | None = None) -> None:
        self.doc = doc
        self.path = path

    @classmethod
    def parse(cls, text: str, path: Path | None = None) -> "Manifest":
        import tomlkit

        try:
            doc = tomlkit.parse(text)
        except Exception as exc:  # tomlkit raises several parse error types
            where = path or "pixi.toml"
            raise BadInput(f"cannot parse {where}: {exc}", fix=f"fix the TOML syntax of {where}") from None
        check_manifest(doc.unwrap(), str(path or "pixi.toml"))  # types and names, before anything reads it
        manifest = cls(doc, path)
        manifest.check_shape()
        return manifest

    @classmethod
    def load(cls, path: Path) -> "Manifest":
        try:  # bounded: never a FIFO, a device or a file of gigabytes
            text = read_bytes_bounded(path, limit=MANIFEST_LIMIT, what="the manifest").decode("utf-8")
        except BadInput as exc:
            if "does not exist" in exc.message:
                raise BadInput(f"{path} does not exist",
                               fix="run the command in the project folder (the one holding pixi.toml)") from None
            raise
        except UnicodeDecodeError as exc:
            raise BadInput(f"cannot read {path}: {exc}", fix="check the file's permissions and encoding") from None
        return cls.parse(text, path)

    @classmethod
    def new(cls, name: str, path: Path | None = None) -> "Manifest":
        """A minimal workspace, for a folder that has no pixi.toml yet."""
        import json

        return cls.parse(
            "# Written by mamba-resolver (`python -m resolver lock`); edit freely, comments are kept.\n"
            f'[workspace]\nname = {json.dumps(name)}\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n', path)

    def dumps(self) -> str:
        return self.doc.as_string()

    def save(self, path: Path | None = None) -> Path:
        target = path or self.path
        if target is None:
            raise ValueError("no path to save the manifest to")
        write_text_atomic(target, self.dumps(), label="manifest")
        return target

    # -- reading ------------------------------------------------------------------------------
    def check_shape(self) -> None:
        """The tables we read must have the types pixi gives them: one sentence otherwise, never a crash."""
        ws = self.workspace
        for key, kind in (("channels", list), ("platforms", list)):
            if key in ws and not isinstance(ws[key], kind):
                raise BadInput(f"pixi.toml: [workspace] {key} must be a list", fix=_FIX)
        for key in ("feature", "environments", "dependencies", "pypi-dependencies"):
            if key in self.doc and not isinstance(self.doc[key], dict):
                raise BadInput(f"pixi.toml: [{key}] must be a table", fix=_FIX)
        for name, feature in self.doc.get("feature", {}).items():
            if not isinstance(feature, dict):
                raise BadInput(f"pixi.toml: [feature.{name}] must be a table", fix=_FIX)
            for key in ("dependencies", "pypi-dependencies", "pypi-options", "target"):
                if key in feature and not isinstance(feature[key], dict):
                    raise BadInput(f"pixi.toml: [feature.{name}.{key}] must be a table", fix=_FIX)
            if "platforms" in feature and not isinstance(feature["platforms"], list):
                raise BadInput(f"pixi.toml: [feature.{name}] platforms must be a list", fix=_FIX)
        self.platforms()  # every platform entry parses

    @property
    def workspace(self) -> Any:
        ws = self.doc.get("workspace", self.doc.get("project"))
        if not isinstance(ws, dict):
            raise BadInput("pixi.toml has no [workspace] table", fix="add [workspace] with name, channels, platforms")
        return ws

    def platforms(self) -> dict[str, PixiPlatform]:
        """The workspace's platforms by name (a bare subdir is its own name)."""
        out: dict[str, PixiPlatform] = {}
        for entry in self.workspace.get("platforms", []):
            platform = PixiPlatform.from_entry(entry)
            out.setdefault(platform.name, platform)
        return out

    def environment_names(self) -> list[str]:
        """Every environment pixi sees: the declared ones and ``default`` (always there)."""
        return sorted({"default", *(str(k) for k in self.doc.get("environments", {}).keys())})

    def environment(self, name: str, platform: str | None = None) -> EnvSpec:
        """Environment ``name`` merged over its features; with ``platform`` (a subdir), the features'
        ``[target.<platform>]`` dependencies are merged in too (e.g. torch without ``+cpu`` on macOS)."""
        envs = self.doc.get("environments", {})
        if name != "default" and name not in envs:
            known = ", ".join(self.environment_names())
            raise BadInput(f"pixi.toml has no environment '{name}' (known: {known})",
                           fix=f"run `python -m resolver lock --target {Target.for_environment(name)}` to add it")
        entry = envs.get(name, [])
        if not isinstance(entry, (list, dict)):
            raise BadInput(f"pixi.toml: environment '{name}' must be a list of features or a table", fix=_FIX)
        features = [str(f) for f in (entry if isinstance(entry, list) else entry.get("features", []))]
        no_default = isinstance(entry, dict) and bool(entry.get("no-default-feature", False))
        feature_tables = self.doc.get("feature", {})
        layers = [] if no_default else [self.doc]
        for feature in features:
            if feature not in feature_tables:
                raise BadInput(f"environment '{name}' uses feature '{feature}' which pixi.toml does not define",
                               fix=f"add [feature.{feature}] or remove it from [environments]")
            layers.append(feature_tables[feature])
        ws = self.workspace
        channels: list[str] = []
        for layer in layers:
            if layer is not self.doc:
                channels += [self._channel(c) for c in layer.get("channels", [])]
        channels += [self._channel(c) for c in ws.get("channels", [])]
        known = self.platforms()
        chosen: list[str] | None = None  # the features' platforms, intersected; none named: the workspace's
        for layer in layers:
            if layer is not self.doc and layer.get("platforms"):
                named = [str(p) for p in layer["platforms"]]
                chosen = named if chosen is None else [n for n in chosen if n in named]
        names = list(known) if chosen is None else chosen
        for platform_name in names:
            if platform_name not in known:
                raise BadInput(f"environment '{name}' names platform {platform_name!r}, which [workspace] platforms "
                               "does not declare", fix=f"add {platform_name!r} to [workspace] platforms")
        conda: dict[str, str] = {}
        pypi: dict[str, dict[str, Any]] = {}
        index_url = None
        extra: list[str] = []
        links: list[str] = []
        for layer in [ws, *layers]:
            tables = [layer]
            if platform is not None:
                tables.append(layer.get("target", {}).get(platform, {}))
            for table in tables:
                for dep, spec in table.get("dependencies", {}).items():
                    conda[str(dep)] = _conda_spec(spec)
                for dep, spec in table.get("pypi-dependencies", {}).items():
                    pypi[str(dep).lower()] = _pypi_spec(spec)
            options = layer.get("pypi-options", {})
            index_url = str(options["index-url"]) if options.get("index-url") else index_url
            extra += [str(u) for u in options.get("extra-index-urls", [])]
            links += [str(fl.get("path") or fl.get("url")) for fl in options.get("find-links", [])]
        return EnvSpec(name=name, features=tuple(features), channels=tuple(dict.fromkeys(channels)),
                       platforms=tuple(known[n] for n in names), conda=tuple(sorted(conda.items())),
                       pypi=tuple(sorted(pypi.items())), index_url=index_url,
                       extra_index_urls=tuple(dict.fromkeys(extra)), find_links=tuple(dict.fromkeys(links)))

    def _channel(self, entry: Any) -> str:
        """A channel as written; a relative folder is taken from the manifest's folder, as pixi does."""
        name = _channel_name(entry)
        if _is_relative_path(name) and self.path is not None:
            return str((self.path.parent / name).resolve())
        return name

    # -- writing ------------------------------------------------------------------------------
    def ensure_environment(self, plan: Plan) -> str:
        """Add or update feature + environment ``plan.env_name`` for ``plan``; returns the name."""
        import tomlkit

        name = plan.env_name
        if "feature" not in self.doc:
            self.doc.add("feature", tomlkit.table(is_super_table=True))
        features = self.doc["feature"]
        created = name not in features
        if created:
            features.add(name, tomlkit.table())
        feature = features[name]
        platform = self._platform_for(plan)
        if "system-requirements" in feature:  # the deprecated form cannot be mixed with named platforms
            del feature["system-requirements"]
        if "platforms" not in feature:
            feature["platforms"] = tomlkit.array()
        if platform.name not in [str(p) for p in feature["platforms"]]:
            feature["platforms"].append(platform.name)
        if "dependencies" not in feature:
            feature["dependencies"] = tomlkit.table()
        for package, spec in plan.conda_packages:
            feature["dependencies"][package] = spec
        index = plan.torch.source.url if plan.torch.source.kind == "pypi-index" else None
        if plan.backend == "rocm" and index:
            options = feature.setdefault("pypi-options", tomlkit.table())
            options["index-url"] = index
            if "extra-index-urls" not in options:
                options["extra-index-urls"] = [PYPI_INDEX]
            options["index-strategy"] = "unsafe-best-match"
        if "pypi-dependencies" not in feature:
            feature["pypi-dependencies"] = tomlkit.table()
        deps = feature["pypi-dependencies"]
        version = "==" + plan.torch.requirement.split("==", 1)[1]
        current = deps.get("torch")
        if isinstance(current, dict):  # update in place: keeps the user's formatting and other keys
            current["version"] = version
            if index:
                current["index"] = index
            elif "index" in current:
                del current["index"]
        else:
            pin = tomlkit.inline_table()
            pin["version"] = version
            if index:
                pin["index"] = index
            deps["torch"] = pin
        if created:
            for dep in DEFAULT_PYPI:
                deps[dep] = "*"
        if "environments" not in self.doc:
            self.doc.add("environments", tomlkit.table())
        envs = self.doc["environments"]
        if name not in envs:
            entry = tomlkit.inline_table()
            entry["features"] = [name]
            entry["solve-group"] = name
            # the default feature holds the resolver's own tooling (python + its libraries), not the target's
            entry["no-default-feature"] = True
            envs[name] = entry
        return name

    def _platform_for(self, plan: Plan) -> PixiPlatform:
        """The workspace platform a plan's environment runs on, added when missing: the subdir's own
        entry, or for CUDA that entry also declaring the driver's CUDA major."""
        import tomlkit

        known = self.platforms()
        base = next((p for p in known.values() if p.subdir == plan.platform and p.cuda is None), None)
        wanted = base or PixiPlatform(plan.platform, plan.platform)
        if plan.backend == "cuda":
            wanted = wanted.with_cuda(int(str(plan.backend_version).split(".")[0]))
        ws = self.workspace
        if "platforms" not in ws:
            ws["platforms"] = tomlkit.array()
        if wanted.name not in known:
            entry = wanted.entry()
            if isinstance(entry, dict):
                table = tomlkit.inline_table()
                table.update(entry)
                entry = table
            ws["platforms"].append(entry)
        return wanted


def _channel_name(channel: Any) -> str:
    return str(channel["channel"]) if isinstance(channel, dict) else str(channel)


def _is_relative_path(text: str) -> bool:
    return text.startswith(("./", "../")) or text in (".", "..")


def _conda_spec(spec: Any) -> str:
    if isinstance(spec, str):
        return spec.strip()
    if isinstance(spec, dict):
        version = str(spec.get("version", "*"))
        build = spec.get("build")
        return f"{version} {build}" if build else version
    return str(spec)


def _pypi_spec(spec: Any) -> dict[str, Any]:
    if isinstance(spec, str):
        return {"version": spec.strip()}
    if isinstance(spec, dict):
        return {"version": str(spec.get("version", "*")), "index": spec.get("index") and str(spec["index"]),
                "extras": [str(e) for e in spec.get("extras", [])]}
    return {"version": str(spec)}
