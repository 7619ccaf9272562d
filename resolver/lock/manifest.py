"""pixi.toml: read an environment's inputs, and add/update the environment for a plan, keeping comments.

One feature per backend family (``cpu``, ``cuda12``, ``cuda13``, ``rocm6`` …) and one environment
of the same name built from it. ``lock --target T`` pins torch in that feature to the plan's exact
build and index; every other line of the file (comments, order, the user's own additions) stays.

>>> m = Manifest.parse('[workspace]\\nname = "x"\\nchannels = ["conda-forge"]\\nplatforms = ["linux-64"]\\n')
>>> m.environment_names()
[]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resolver.decide.model import Plan
from resolver.errors import BadInput
from resolver.fs import read_bytes_bounded, write_text_atomic
from resolver.manifest_shape import check_manifest

MANIFEST_LIMIT = 16 << 20

# What every environment's PyPI part holds besides torch: verify loads a model through transformers,
# the kernel build needs packaging/ninja/einops (mamba-ssm's setup.py imports them).
DEFAULT_PYPI = ("numpy", "transformers", "safetensors", "einops", "packaging", "ninja")


@dataclass(frozen=True)
class EnvSpec:
    """Everything pixi.toml says about one environment, merged over its features."""

    name: str
    features: tuple[str, ...]
    channels: tuple[str, ...]
    platforms: tuple[str, ...]
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
        """Per-dependency ``index`` values (torch's PyTorch index) plus the feature index-url."""
        found = [spec["index"] for _, spec in self.pypi if spec.get("index")]
        if self.index_url:
            found.append(self.index_url)
        return list(dict.fromkeys(found))


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
        return cls(doc, path)

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
        return cls.parse(
            "# Written by mamba-resolver (`python -m resolver lock`); edit freely, comments are kept.\n"
            f'[workspace]\nname = "{name}"\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n', path)

    def dumps(self) -> str:
        return self.doc.as_string()

    def save(self, path: Path | None = None) -> Path:
        target = path or self.path
        if target is None:
            raise ValueError("no path to save the manifest to")
        write_text_atomic(target, self.dumps(), label="manifest")
        return target

    # -- reading ------------------------------------------------------------------------------
    @property
    def workspace(self) -> Any:
        ws = self.doc.get("workspace", self.doc.get("project"))
        if ws is None:
            raise BadInput("pixi.toml has no [workspace] table", fix="add [workspace] with name, channels, platforms")
        return ws

    def environment_names(self) -> list[str]:
        return sorted(str(k) for k in self.doc.get("environments", {}).keys())

    def environment(self, name: str, platform: str | None = None) -> EnvSpec:
        """Environment ``name`` merged over its features; with ``platform``, the features'
        ``[target.<platform>]`` dependencies are merged in too (e.g. torch without ``+cpu`` on macOS)."""
        envs = self.doc.get("environments", {})
        if name not in envs:
            known = ", ".join(self.environment_names()) or "none"
            raise BadInput(f"pixi.toml has no environment '{name}' (known: {known})",
                           fix=f"run `python -m resolver lock --target <target for {name}>` to add it")
        entry = envs[name]
        features = list(entry if isinstance(entry, list) else entry.get("features", []))
        no_default = (not isinstance(entry, list)) and bool(entry.get("no-default-feature", False))
        feature_tables = self.doc.get("feature", {})
        layers = [] if no_default else [self.doc]
        for feature in features:
            if feature not in feature_tables:
                raise BadInput(f"environment '{name}' uses feature '{feature}' which pixi.toml does not define",
                               fix=f"add [feature.{feature}] or remove it from [environments]")
            layers.append(feature_tables[feature])
        ws = self.workspace
        channels: list[str] = []
        for layer in layers[1 if not no_default else 0:]:
            channels += [str(c) if not isinstance(c, dict) else str(c["channel"]) for c in layer.get("channels", [])]
        channels += [str(c) if not isinstance(c, dict) else str(c["channel"]) for c in ws.get("channels", [])]
        platforms: list[str] = []
        for layer in layers:
            if layer is not self.doc and layer.get("platforms"):
                platforms = [str(p) for p in layer["platforms"]] if not platforms else \
                    [p for p in platforms if p in [str(q) for q in layer["platforms"]]]
        if not platforms:
            platforms = [str(p if not isinstance(p, dict) else p.get("name", p.get("platform")))
                         for p in ws.get("platforms", [])]
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
                       platforms=tuple(platforms), conda=tuple(sorted(conda.items())),
                       pypi=tuple(sorted(pypi.items())), index_url=index_url,
                       extra_index_urls=tuple(dict.fromkeys(extra)), find_links=tuple(dict.fromkeys(links)))

    # -- writing ------------------------------------------------------------------------------
    def ensure_environment(self, plan: Plan) -> str:
        """Add or update feature + environment ``plan.env_name`` for ``plan``; returns the name.

        Pins torch to the plan's exact build and index; adds the default PyPI set only to a new
        feature; adds the plan's platform; for CUDA a ``system-requirements.cuda`` floor, for ROCm
        the feature-level PyTorch index (pixi has no ROCm virtual package).
        """
        import tomlkit

        name = plan.env_name
        if "feature" not in self.doc:
            self.doc.add("feature", tomlkit.table(is_super_table=True))
        features = self.doc["feature"]
        created = name not in features
        if created:
            features.add(name, tomlkit.table())
        feature = features[name]
        ws_platforms = [str(p) for p in self.workspace.get("platforms", [])]
        if plan.platform not in ws_platforms:
            self.workspace.setdefault("platforms", tomlkit.array()).append(plan.platform)
        if "platforms" in feature and plan.platform not in [str(p) for p in feature["platforms"]]:
            feature["platforms"].append(plan.platform)
        elif created:  # an existing feature without platforms inherits the workspace's: leave it so
            feature["platforms"] = [plan.platform]
        if plan.backend == "cuda" and "system-requirements" not in feature:
            sysreq = tomlkit.table()
            sysreq["cuda"] = str(plan.backend_version).split(".")[0]
            feature["system-requirements"] = sysreq
        index = plan.torch.source.url if plan.torch.source.kind == "pypi-index" else None
        if plan.backend == "rocm" and index:
            options = feature.setdefault("pypi-options", tomlkit.table())
            options["index-url"] = index
            if "extra-index-urls" not in options:
                options["extra-index-urls"] = ["https://pypi.org/simple"]
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
            # the default feature holds the resolver's own tooling (python + mamba-resolver), not the target's
            entry["no-default-feature"] = True
            envs[name] = entry
        return name


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

