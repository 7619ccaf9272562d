"""pixi.toml: read an environment's inputs, and add/update the environment for a plan, keeping comments.

One feature per backend family (``cpu``, ``cuda12``, ``cuda13``, ``rocm6`` …) and one environment of
the same name built from it (``no-default-feature``: the default feature is the resolver's own
tooling). ``lock --target T`` writes, in pixi's current form:

* ``[feature.T.dependencies]``: the environment's own ``python`` and, for CUDA, the CUDA toolkit the
  kernels build with, pinned by ``cuda-version`` (the plan's ``conda_packages``);
* ``[feature.T.platforms]``: the platform the plan is for; CUDA gets a named platform declaring the
  driver (``{ name = "linux-64-cuda13", platform = "linux-64", cuda = "13" }`` in the workspace's
  platforms), derived from the subdir's own entry so a declared ``glibc`` carries over, unless an
  environment pixi.lock holds would take the new platform too (then the subdir's own, and a note);
* ``[feature.T.pypi-dependencies] torch``: the plan's exact build, and its index when it is not PyPI.

Every other line of the file (comments, order, the user's own additions) stays, and no environment
or feature of the user's is changed. The file is read as pixi reads it: TOML 1.1 (tomlkit), pixi's
choice of each environment's platforms and channels (:func:`environment_platforms`).

>>> m = Manifest.parse('[workspace]\\nname = "x"\\nchannels = ["conda-forge"]\\nplatforms = ["linux-64"]\\n')
>>> m.environment_names()
['default']
>>> m.environment("default").platforms[0].name
'linux-64'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection

from resolver.core.errors import BadInput
from resolver.core.fs import write_text_atomic
from resolver.core.platforms import TEAM_PLATFORMS
from resolver.project.manifest_shape import check_manifest
from resolver.project.pixi_platforms import PixiPlatform
from resolver.project.pixi_toml import MANIFEST_FIX as _FIX
from resolver.project.pixi_toml import PixiToml, ResolverTables, check_lines, environment_names, read_manifest_text

if TYPE_CHECKING:
    from resolver.core.model import Plan

# What every environment's PyPI part holds besides torch: verify loads a model through transformers,
# the kernel build needs packaging/ninja/einops (mamba-ssm's setup.py imports them).
DEFAULT_PYPI = ("numpy", "transformers", "safetensors", "einops", "packaging", "ninja")


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
    sources: tuple[tuple[str, str], ...] = ()  # (package, "git" | "path" | "url"): built from a source by pixi

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


@dataclass(frozen=True)
class Dependency:
    """One dependency the user declared for an environment, in one of its features: what an upgrade carries
    into the new environment. ``selector``: the ``[target.SELECTOR]`` table it is under (None: none)."""

    kind: str  # "conda" | "pypi"
    name: str  # as written (a PyPI name compares by its canonical form)
    spec: str  # the version as written, for people
    selector: str | None = None

    @property
    def key(self) -> tuple[str, str, str | None]:
        from resolver.core.names import canonical_name

        return self.kind, canonical_name(self.name) if self.kind == "pypi" else self.name, self.selector

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "spec": self.spec, "selector": self.selector}


@dataclass(frozen=True)
class Carry:
    """What a new environment takes from the one it replaces (``upgrade``): every dependency of ``source``'s
    features except ``owned`` (what the resolver writes for a plan: torch, python, the plan's conda packages)
    and those in ``leave_out`` (names that cannot come along)."""

    source: str
    owned: frozenset[str]
    leave_out: frozenset[str] = frozenset()


class Manifest:
    """A pixi.toml held as a tomlkit document (so writing it back keeps comments and layout): the one writer
    of pixi.toml, every edit saved through :meth:`save`. :meth:`view` reads the run's parsed data instead."""

    def __init__(self, doc: Any, path: Path | None = None) -> None:
        self.doc = doc
        self.path = path
        self.added: list[str] = []  # what ensure_environment added, for the user
        self.notes: list[str] = []  # what it chose that the user should know
        self.proposed: set[str] = set()  # the platforms :meth:`new` listed that stay only while an environment serves them
        # (environment, platform's name) added beyond the plan's own platform, for a teammate's machine: left out
        # again (:meth:`leave_out`) when the lock cannot serve it
        self.optional: list[tuple[str, str]] = []

    @classmethod
    def parse(cls, text: str, path: Path | None = None) -> "Manifest":
        from resolver.core.toml import parse_toml_document

        where = path or "pixi.toml"
        check_lines(text, where)
        doc = parse_toml_document(text, what=str(where), fix=f"fix the TOML syntax of {where}")
        check_manifest(doc.unwrap(), str(where))  # types and names, before anything reads it
        manifest = cls(doc, path)
        manifest.check_shape()
        ResolverTables.of(doc, str(where))  # [tool.resolver] bounded before anything reads it
        return manifest

    @classmethod
    def load(cls, path: Path) -> "Manifest":
        """The pixi.toml at ``path``, to edit and save."""
        return cls.parse(read_manifest_text(path), path)

    @classmethod
    def view(cls, pixi: PixiToml) -> "Manifest":
        """The environments of a pixi.toml this run has read (:func:`resolver.project.pixi_toml.read_pixi_toml`),
        to read only: its data is shared with every other reader, so nothing may be changed or saved."""
        manifest = cls(pixi.data, pixi.path)
        manifest.check_shape()
        ResolverTables.of(pixi.data, str(pixi.path))
        return manifest

    @classmethod
    def new(cls, name: str, path: Path | None = None, *, team: bool = True) -> "Manifest":
        """A minimal workspace, for a folder that has no pixi.toml yet. ``team``: it proposes a mixed team's
        platforms (a new CPU environment is locked for each; :meth:`drop_unserved` takes back those no
        environment serves); else it lists linux-64 (a fleet: its nodes' classes add their platforms)."""
        import json

        platforms = TEAM_PLATFORMS if team else ("linux-64",)
        manifest = cls.parse(
            "# Written by mamba-resolver (`python -m resolver lock`); edit freely, comments are kept.\n"
            f'[workspace]\nname = {json.dumps(name)}\nchannels = ["conda-forge"]\n'
            f'platforms = {json.dumps(list(platforms))}\n', path)
        manifest.proposed = set(platforms) if team else set()
        return manifest

    def dumps(self) -> str:
        return self.doc.as_string()

    @property
    def tool(self) -> ResolverTables:
        """``[tool.resolver]``, each table as its own type (as edited so far)."""
        return ResolverTables.of(self.doc, str(self.path or "pixi.toml"))

    def set_tool_table(self, name: str, table: Any, *, last: bool = False) -> None:
        """Replace ``[tool.resolver.NAME]`` with ``table`` (a tomlkit table), in memory; :meth:`save` writes it.
        ``last``: the table moves after the others (else it keeps its place)."""
        import tomlkit

        if "tool" not in self.doc:
            self.doc.add("tool", tomlkit.table(is_super_table=True))
        if "resolver" not in self.doc["tool"]:
            self.doc["tool"].add("resolver", tomlkit.table(is_super_table=True))
        resolver = self.doc["tool"]["resolver"]
        if last and name in resolver:
            del resolver[name]
        resolver[name] = table

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
        return environment_names(self.doc)

    def _layers(self, name: str) -> list[Any]:
        """The tables environment ``name`` is made of, in pixi's order: the environment's own content
        (an ``[environments.NAME]`` table may hold dependencies, channels, platforms ... itself: pixi's
        implicit feature), its features, then the top level (the default feature) unless it opts out."""
        envs = self.doc.get("environments", {})
        if name != "default" and name not in envs:
            from resolver.core.model import Target

            known = ", ".join(self.environment_names())
            raise BadInput(f"pixi.toml has no environment '{name}' (known: {known})",
                           fix=f"run `python -m resolver lock --target {Target.for_environment(name)}` to add it")
        entry = envs.get(name, [])
        if not isinstance(entry, (list, dict)):
            raise BadInput(f"pixi.toml: environment '{name}' must be a list of features or a table", fix=_FIX)
        features = [str(f) for f in (entry if isinstance(entry, list) else entry.get("features", []))]
        no_default = isinstance(entry, dict) and bool(entry.get("no-default-feature", False))
        feature_tables = self.doc.get("feature", {})
        layers = [entry] if isinstance(entry, dict) and set(map(str, entry)) - _ENVIRONMENT_KEYS else []
        for feature in features:
            if feature not in feature_tables:
                raise BadInput(f"environment '{name}' uses feature '{feature}' which pixi.toml does not define",
                               fix=f"add [feature.{feature}] or remove it from [environments]")
            layers.append(feature_tables[feature])
        return layers if no_default else [*layers, self.doc]

    def _restrictions(self, layers: list[Any]) -> list[list[str]]:
        return [[str(p) for p in layer["platforms"]] for layer in layers
                if layer is not self.doc and "platforms" in layer]

    def environment(self, name: str, platform: str | None = None) -> EnvSpec:
        """Environment ``name`` merged over its features; with ``platform`` (a subdir or a platform's
        name), the ``[target.*]`` dependencies that select it are merged in too (the subdir, the
        platform's name, its family ``linux``/``osx``/``win``/``unix``; e.g. torch without ``+cpu`` on macOS)."""
        layers = self._layers(name)
        entry = self.doc.get("environments", {}).get(name, [])
        features = [str(f) for f in (entry if isinstance(entry, list) else entry.get("features", []))]
        ws = self.workspace
        # pixi's prioritized_channels: each layer's channels (the workspace's where it names none), highest
        # priority first, the first of equal priority first, each channel once
        entries = [c for layer in layers for c in (layer["channels"] if "channels" in layer and layer is not self.doc
                                                   else ws.get("channels", []))]
        ranked = sorted(entries, key=lambda c: -int(c.get("priority", 0)) if isinstance(c, dict) else 0)
        channels = [self._channel(c) for c in ranked]
        known = self.platforms()
        names = environment_platforms(self._restrictions(layers), list(known.values()), name)
        chosen = known.get(platform) if isinstance(platform, str) else None
        selectors = _selectors(platform, chosen)
        layers = [layers[-1], *layers[:-1]] if layers and layers[-1] is self.doc else layers  # the default first
        conda: dict[str, str] = {}
        pypi: dict[str, dict[str, Any]] = {}
        sources: dict[str, str] = {}
        index_url = None
        extra: list[str] = []
        links: list[str] = []
        for layer in [ws, *layers]:
            tables = [layer, *(table for selector, table in layer.get("target", {}).items()
                               if str(selector) in selectors and isinstance(table, dict))]
            for table in tables:
                for dep, spec in table.get("dependencies", {}).items():
                    conda[str(dep)] = _conda_spec(spec)
                    sources.update({str(dep): kind for kind in _source_kind(spec)})
                for dep, spec in table.get("pypi-dependencies", {}).items():
                    pypi[str(dep).lower()] = _pypi_spec(spec)
                    sources.update({str(dep).lower(): kind for kind in _source_kind(spec)})
            options = layer.get("pypi-options", {})
            index_url = str(options["index-url"]) if options.get("index-url") else index_url
            extra += [str(u) for u in options.get("extra-index-urls", [])]
            links += [str(fl.get("path") or fl.get("url")) for fl in options.get("find-links", [])]
        return EnvSpec(name=name, features=tuple(features), channels=tuple(dict.fromkeys(channels)),
                       platforms=tuple(known[n] for n in names), conda=tuple(sorted(conda.items())),
                       pypi=tuple(sorted(pypi.items())), index_url=index_url,
                       extra_index_urls=tuple(dict.fromkeys(extra)), find_links=tuple(dict.fromkeys(links)),
                       sources=tuple(sorted(sources.items())))

    def unlockable(self, name: str, platform: PixiPlatform) -> str | None:
        """What of environment ``name`` on ``platform`` the resolver cannot lock itself (a phrase to
        follow "it"), or None: pixi locks it, we keep what pixi locked."""
        from resolver.core.platforms import KNOWN

        if platform.subdir not in KNOWN:
            return f"targets {platform.subdir}"
        spec = self.environment(name, platform.subdir)
        if spec.sources:
            package, kind = spec.sources[0]
            return f"takes {package} from {_SOURCE_WORDS[kind]}"
        entry = self.doc.get("environments", {}).get(name)
        group = entry.get("solve-group") if isinstance(entry, dict) else None
        others = sorted(str(other) for other, e in self.doc.get("environments", {}).items()
                        if other != name and isinstance(e, dict) and e.get("solve-group") == group) if group else []
        if others:
            return f"shares solve-group {group} with {', '.join(others)}"
        return None

    def _channel(self, entry: Any) -> str:
        """A channel as written; a relative folder is taken from the manifest's folder, as pixi does."""
        name = _channel_name(entry)
        if _is_relative_path(name) and self.path is not None:
            return str((self.path.parent / name).resolve())
        return name

    def features_of(self, name: str) -> list[str]:
        """The features environment ``name`` is made of, as pixi names them (``default``: the top-level
        tables, unless the environment opts out)."""
        envs = self.doc.get("environments", {})
        if name == "default" and name not in envs:
            return ["default"]
        self._layers(name)  # an unknown environment or feature: one sentence
        entry = envs.get(name, [])
        features = [str(f) for f in (entry if isinstance(entry, list) else entry.get("features", []))]
        no_default = isinstance(entry, dict) and bool(entry.get("no-default-feature", False))
        return features if no_default else [*features, "default"]

    def environments_with(self, feature: str) -> list[str]:
        """The environments that feature ``feature`` is part of."""
        return [name for name in self.environment_names() if feature in self.features_of(name)]

    def dependencies(self, feature: str, *, pypi: bool) -> dict[str, Any]:
        """Feature ``feature``'s dependency table as written (``pypi``: its PyPI one); empty when it has none."""
        table = self._feature_table(feature).get("pypi-dependencies" if pypi else "dependencies", {})
        return {str(k): v for k, v in table.items()}

    def _feature_table(self, feature: str) -> Any:
        if feature == "default":
            return self.doc
        features = self.doc.get("feature", {})
        if feature not in features:
            known = ", ".join(sorted(["default", *map(str, features)]))
            raise BadInput(f"pixi.toml has no feature '{feature}' (it has: {known})",
                           fix="name one of them with --feature, or an environment with -e")
        return features[feature]

    # -- writing ------------------------------------------------------------------------------
    def set_dependency(self, feature: str, name: str, spec: Any, *, pypi: bool) -> Any:
        """Write ``name = spec`` into feature ``feature``'s dependencies (``pypi``: its PyPI ones), keeping the
        rest of the file; returns what it replaced (None: it was not there)."""
        import tomlkit

        table_name = "pypi-dependencies" if pypi else "dependencies"
        owner = self._feature_table(feature)
        if table_name not in owner:
            owner[table_name] = tomlkit.table()
        table = owner[table_name]
        key = _find_key(table, name, pypi)
        before = table[key] if key is not None else None
        if isinstance(spec, dict):
            inline = tomlkit.inline_table()
            inline.update(spec)
            spec = inline
        table[key or name] = spec
        return before

    def drop_dependency(self, feature: str, name: str, *, pypi: bool) -> bool:
        """Remove ``name`` from feature ``feature``'s dependencies (``pypi``: its PyPI ones); False when it was
        not there."""
        table_name = "pypi-dependencies" if pypi else "dependencies"
        owner = self._feature_table(feature)
        table = owner.get(table_name)
        key = _find_key(table, name, pypi) if table is not None else None
        if key is None:
            return False
        del table[key]
        return True

    def _dependency_tables(self, layer: Any) -> list[tuple[str | None, str, Any]]:
        """(selector, "conda" | "pypi", table) of one layer: its own tables and its ``[target.*]`` ones."""
        out = []
        targets = layer.get("target", {})
        for selector, table in [(None, layer), *((str(k), v) for k, v in targets.items() if isinstance(v, dict))]:
            for key, kind in (("dependencies", "conda"), ("pypi-dependencies", "pypi")):
                if isinstance(table.get(key), dict):
                    out.append((selector, kind, table[key]))
        return out

    def user_dependencies(self, name: str, owned: Collection[str] = ()) -> tuple[Dependency, ...]:
        """What environment ``name``'s features declare besides ``owned`` (names the resolver writes for a plan)
        and the resolver's own default PyPI packages as it writes them (``"*"``): the user's dependencies.

        >>> m = Manifest.parse(EXAMPLE)
        >>> [(d.kind, d.name, d.spec) for d in m.user_dependencies("cpu", {"torch", "python"})]
        [('pypi', 'tomli-w', '*'), ('pypi', 'numpy', '<3')]
        """
        from resolver.core.names import canonical_name

        owned_keys = {canonical_name(n) for n in owned}
        found: dict[tuple, Dependency] = {}
        for layer in self._layers(name):
            if layer is self.doc:
                continue  # the default feature: the resolver's own tooling in this layout
            for selector, kind, table in self._dependency_tables(layer):
                for dep, spec in table.items():
                    text = _conda_spec(spec) if kind == "conda" else _pypi_spec(spec)["version"]
                    if canonical_name(str(dep)) in owned_keys or \
                            (kind == "pypi" and str(dep).lower() in DEFAULT_PYPI and text in ("", "*")):
                        continue
                    dependency = Dependency(kind, str(dep), text or "*", selector)
                    found[dependency.key] = dependency
        return tuple(found.values())

    def carry_dependencies(self, feature: str, carry: Carry) -> tuple[Dependency, ...]:
        """Copy into ``[feature.FEATURE]`` every user dependency of ``carry.source`` but those left out (which are
        taken out of the feature if an earlier run put them there); returns what was copied."""
        import tomlkit

        from resolver.core.names import canonical_name

        target = self.doc["feature"][feature]
        left_out = {canonical_name(n) for n in carry.leave_out}
        for _, _, table in self._dependency_tables(target):
            for dep in [d for d in table if canonical_name(str(d)) in left_out]:
                del table[dep]
        users = {d.key for d in self.user_dependencies(carry.source, carry.owned)}
        copied = []
        for layer in self._layers(carry.source):
            if layer is self.doc:
                continue
            for selector, kind, table in self._dependency_tables(layer):
                key = "dependencies" if kind == "conda" else "pypi-dependencies"
                for dep, spec in table.items():
                    if canonical_name(str(dep)) in left_out or Dependency(kind, str(dep), "", selector).key not in users:
                        continue
                    home = target
                    if selector is not None:
                        if "target" not in home:
                            home["target"] = tomlkit.table(is_super_table=True)
                        if selector not in home["target"]:
                            home["target"][selector] = tomlkit.table(is_super_table=True)
                        home = home["target"][selector]
                    if key not in home:
                        home[key] = tomlkit.table()
                    home[key][str(dep)] = _copied(spec)
                    copied.append(Dependency(kind, str(dep), _conda_spec(spec) if kind == "conda" else
                                             _pypi_spec(spec)["version"], selector))
        return tuple(copied)

    # -- writing ------------------------------------------------------------------------------
    def ensure_environment(self, plan: Plan, keep: Collection[str] = (), carry: Carry | None = None) -> str:
        """Add or update feature + environment ``plan.env_name`` for ``plan``; returns the name.

        ``keep``: environments pixi.lock holds that are not locked now; a platform the plan needs is
        added to the workspace only when none of them would take it too (pixi gives every workspace
        platform to an environment whose features do not name theirs)."""
        import tomlkit

        name = plan.env_name
        self._check_ours(name)
        if "feature" not in self.doc:
            self.doc.add("feature", tomlkit.table(is_super_table=True))
        features = self.doc["feature"]
        created = name not in features
        if created:
            features.add(name, tomlkit.table())
            self.added.append(f"environment {name} (its own feature {name}, no default feature)")
        feature = features[name]
        platform = self._platform_for(plan, keep)
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
        for selector in list(feature.get("target", {})):  # torch's unlabelled pins for macOS follow the plan's
            if "torch" in feature["target"][selector].get("pypi-dependencies", {}):
                self._pin_torch_for(name, str(selector))
        if created and plan.backend == "cpu" and plan.torch.local_version:
            # an upgrade's candidate serves the machines the environment it replaces serves, no others
            among = {p.name for p in self.environment(carry.source).platforms} if carry is not None else None
            self._serve_team(name, platform, among)
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
        if carry is not None and carry.source != name:
            self.carry_dependencies(name, carry)
        return name

    def serve_platform(self, subdir: str, environments: Collection[str]) -> None:
        """Lock ``environments`` (CPU ones: a GPU environment serves the machines its plan is for) for
        ``subdir`` too: declared in [workspace] platforms (a bare subdir, pixi's defaults) unless a platform
        of that subdir is, and named in each environment's own feature's ``platforms``."""
        import tomlkit

        platform = next((p for p in self.platforms().values() if p.subdir == subdir and p.cuda is None), None)
        if platform is None:
            ws = self.workspace
            if "platforms" not in ws:
                ws["platforms"] = tomlkit.array()
            ws["platforms"].append(subdir)
            self.added.append(f"platform {subdir}")
            platform = PixiPlatform.from_entry(subdir)
        for name in environments:
            self._check_ours(name)
            feature = self.doc["feature"][name]
            if "platforms" not in feature:
                continue  # it names none: it has every workspace platform already
            if platform.name not in [str(p) for p in feature["platforms"]]:
                feature["platforms"].append(platform.name)
                self._pin_torch_for(name, subdir)
                self.added.append(f"platform {platform.name} to environment {name}")

    def _serve_team(self, name: str, own: PixiPlatform, among: Collection[str] | None = None) -> None:
        """A new CPU environment serves every machine the workspace lists, not only this one: the first platform
        of each other subdir the resolver locks for that declares no CUDA. (Only a torch pinned from the CPU index,
        with its label, has a counterpart everywhere: PyPI's unlabelled torch of a macOS plan is a CUDA build on
        Linux.)"""
        from resolver.core.platforms import KNOWN

        served = {own.subdir}
        self._pin_torch_for(name, own.subdir)
        for platform in self.platforms().values():
            if platform.subdir in served or platform.subdir not in KNOWN or platform.cuda is not None or (
                    among is not None and platform.name not in among):
                continue
            served.add(platform.subdir)
            self.doc["feature"][name]["platforms"].append(platform.name)
            self._pin_torch_for(name, platform.subdir)
            self.optional.append((name, platform.name))
            self.added.append(f"platform {platform.name} to environment {name}")

    def _pin_torch_for(self, name: str, subdir: str) -> None:
        """On a machine whose torch is PyPI's own unlabelled wheel (macOS), environment ``name`` pins the same
        release from PyPI under ``[feature.NAME.target.SUBDIR.pypi-dependencies]``; elsewhere nothing changes."""
        import tomlkit

        from resolver.core.model import TORCH_FROM_PYPI_ON
        from resolver.core.platforms import PLATFORMS

        feature = self.doc["feature"][name]
        torch = feature.get("pypi-dependencies", {}).get("torch")
        if subdir not in PLATFORMS or PLATFORMS[subdir].os not in TORCH_FROM_PYPI_ON or torch is None:
            return
        version = str(torch.get("version", "") if isinstance(torch, dict) else torch).split("+", 1)[0]
        if "target" not in feature:  # its own [feature.NAME.target.SUBDIR.pypi-dependencies] table
            pins = tomlkit.table()
            pins["torch"] = version
            pins.add(tomlkit.nl())
            table = tomlkit.table()
            table["pypi-dependencies"] = pins
            feature["target"] = tomlkit.table(is_super_table=True)
            feature["target"][subdir] = table
            return
        # into the user's [target] tables, whatever their form (headers, dotted keys, inline): inline values
        # keep each form valid TOML
        targets = feature["target"]
        if subdir not in targets:
            targets[subdir] = _inline({"pypi-dependencies": _inline({"torch": version})})
        elif "pypi-dependencies" not in targets[subdir]:
            targets[subdir]["pypi-dependencies"] = _inline({"torch": version})
        else:
            targets[subdir]["pypi-dependencies"]["torch"] = version

    def leave_out(self, name: str, platform: str) -> None:
        """Environment ``name`` no longer serves ``platform`` (one :meth:`_serve_team` added that the lock cannot
        serve)."""
        feature = self.doc["feature"][name]
        feature["platforms"] = [p for p in feature["platforms"] if str(p) != platform]
        subdir = self.platforms()[platform].subdir
        targets = feature.get("target", {})
        if subdir in targets and "torch" in targets[subdir].get("pypi-dependencies", {}):  # the pin it wrote for it
            del targets[subdir]["pypi-dependencies"]["torch"]
            if not targets[subdir]["pypi-dependencies"]:
                del targets[subdir]["pypi-dependencies"]
            if not targets[subdir]:
                del targets[subdir]
            if not targets:
                del feature["target"]
        self.added = [a for a in self.added if a != f"platform {platform} to environment {name}"]
        self.drop_unserved()

    def drop_unserved(self) -> None:
        """The platforms :meth:`new` proposed leave the workspace again when no feature names a platform of
        their subdir: a workspace of GPU environments only, or one whose CPU environment a platform's
        channels cannot serve, does not list machines nothing is locked for."""
        if not self.proposed:
            return
        known = self.platforms()
        named = {str(p) for f in self.doc.get("feature", {}).values() for p in f.get("platforms", [])}
        served = {known[n].subdir for n in named if n in known}
        ws = self.workspace
        ws["platforms"] = [p for p in ws["platforms"]
                           if not (isinstance(p, str) and p in self.proposed and p not in served)]

    def planned_platform(self, plan: Plan) -> PixiPlatform:
        """The workspace platform a plan's environment runs on: one the workspace has (the subdir's own
        entry; for CUDA one declaring the driver's CUDA major, matched by identity), else the one
        :meth:`_platform_for` adds (for CUDA the subdir's entry also declaring it)."""
        known = self.platforms()
        base = next((p for p in known.values() if p.subdir == plan.platform and p.cuda is None), None)
        wanted = base or PixiPlatform(plan.platform, plan.platform)
        if plan.backend == "cuda":
            wanted = wanted.with_cuda(plan.backend_version.major)
            same = next((p for p in known.values() if p.identity == wanted.identity), None)
            if same is not None:
                return same
        return known.get(wanted.name, wanted)

    def _check_ours(self, name: str) -> None:
        """Environment ``name`` is the resolver's to change: absent, or its own feature without the default one."""
        entry = self.doc.get("environments", {}).get(name)
        ours = isinstance(entry, dict) and [str(f) for f in entry.get("features", [])] == [name] and \
            entry.get("no-default-feature") is True
        if (entry is not None and not ours) or (entry is None and name in self.doc.get("feature", {})):
            raise BadInput(f"pixi.toml already has {'an environment' if entry is not None else 'a feature'} {name!r} "
                           "of its own, which the resolver would have to change: pixi.toml and pixi.lock are left as "
                           "they were", fix=f"rename your {name!r} in pixi.toml, then lock again")

    def _platform_for(self, plan: Plan, keep: Collection[str] = ()) -> PixiPlatform:
        """The workspace platform a plan's environment runs on: one the workspace has (the subdir's own
        entry; for CUDA, one declaring the driver's CUDA major), else one added (for CUDA the subdir's
        entry also declaring it), unless environments in ``keep`` would take it too."""
        import tomlkit

        known = self.platforms()
        wanted = self.planned_platform(plan)
        if wanted.name in known:
            return known[wanted.name]
        base = next((p for p in known.values() if p.subdir == plan.platform and p.cuda is None), None)
        everyone = [*known.values(), wanted]
        gains = [env for env in keep if wanted.name in environment_platforms(
            self._restrictions(self._layers(env)), everyone, env)]
        if gains and plan.backend == "cuda" and base is not None:
            self.notes.append(
                f"environment {plan.env_name} is locked on platform {base.name}: a new platform {wanted.name} "
                f"declaring CUDA {plan.backend_version.major} would also be added to {', '.join(gains)} (their features name no platforms), "
                "which pixi.lock holds as they are; declare it in [workspace] platforms and run `pixi lock` to have "
                "pixi check the driver")
            return base
        if gains:
            raise BadInput(f"environment {plan.env_name} needs platform {wanted.name}, and adding it to [workspace] "
                           f"platforms would add it to {', '.join(gains)} too, which pixi.lock holds: pixi.toml and "
                           "pixi.lock are left as they were",
                           fix=f"add {wanted.name} to [workspace] platforms and run `pixi lock`, then lock again")
        ws = self.workspace
        if "platforms" not in ws:
            ws["platforms"] = tomlkit.array()
        entry = wanted.entry()
        if isinstance(entry, dict):
            table = tomlkit.inline_table()
            table.update(entry)
            entry = table
        ws["platforms"].append(entry)
        self.added.append(f"platform {wanted.name}")
        return wanted


def environment_platforms(restrictions: list[list[str]], platforms: list[PixiPlatform], env: str = "") -> list[str]:
    """The workspace platforms an environment has, as pixi chooses them (``features_ext.rs`` ``platforms``):
    those every feature's ``platforms`` list names, by name or by bare subdir; where a feature names a
    platform exactly, the other platforms of its subdir are left out. ``restrictions``: the lists of
    the environment's features that have one.

    >>> plain, cuda = PixiPlatform.from_entry("linux-64"), PixiPlatform("linux-64-cuda13", "linux-64", (("__cuda", "13", ""),))
    >>> environment_platforms([], [plain, cuda]), environment_platforms([["linux-64"]], [plain, cuda])
    (['linux-64', 'linux-64-cuda13'], ['linux-64'])
    """
    from resolver.core.platforms import PLATFORMS

    known = {p.name for p in platforms}
    for named in restrictions:
        for reference in named:
            if reference not in known and reference not in PLATFORMS:
                raise BadInput(f"environment '{env}' names platform {reference!r}, which [workspace] platforms does "
                               "not declare", fix=f"add {reference!r} to [workspace] platforms")
    exact = {reference for named in restrictions for reference in named}
    exact_subdirs = {p.subdir for p in platforms if p.name in exact}
    return [p.name for p in platforms
            if all(p.name in named or p.subdir in named for named in restrictions)
            and (p.name in exact or p.subdir not in exact_subdirs)]


def _find_key(table: Any, name: str, pypi: bool) -> str | None:
    """The key under which ``table`` holds ``name`` (PyPI names compared as PEP 503 normalises them)."""
    if pypi:
        from resolver.core.names import canonical_name

        wanted = canonical_name(name)
        return next((str(k) for k in table if canonical_name(str(k)) == wanted), None)
    return name if name in table else None


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


_ENVIRONMENT_KEYS = {"features", "solve-group", "no-default-feature"}
_SOURCE_WORDS = {"git": "a git repository", "path": "a folder", "url": "a URL"}


def _selectors(platform: str | None, chosen: PixiPlatform | None) -> set[str]:
    """The ``[target.X]`` keys that apply on ``platform`` (pixi's TargetSelector: subdir, name, family)."""
    from resolver.core.platforms import PLATFORMS

    if platform is None:
        return set()
    subdir = chosen.subdir if chosen is not None else platform
    out = {platform, subdir}
    family = PLATFORMS[subdir].os if subdir in PLATFORMS else ""
    if family in ("linux", "osx", "win"):
        out.add(family)
    if family in ("linux", "osx", "emscripten"):
        out.add("unix")
    if family == "osx":
        out.add("macos")
    return out


def _source_kind(spec: Any) -> list[str]:
    """``["git"]`` for ``{ git = ... }`` (a path, a URL likewise); ``[]`` for a version pin."""
    return [kind for kind in ("git", "path", "url") if isinstance(spec, dict) and kind in spec][:1]


def _copied(spec: Any) -> Any:
    """A dependency's value as a new item (an inline table stays one), to write under another feature."""
    import tomlkit

    value = spec.unwrap() if hasattr(spec, "unwrap") else spec
    if isinstance(value, dict):
        table = tomlkit.inline_table()
        table.update(value)
        return table
    return value


EXAMPLE = """[workspace]
name = "x"
channels = ["conda-forge"]
platforms = ["linux-64"]

[feature.cpu.dependencies]
python = "3.11.*"

[feature.cpu.pypi-dependencies]
torch = { version = "==2.13.0+cpu", index = "https://download.pytorch.org/whl/cpu" }
transformers = "*"
tomli-w = "*"
numpy = "<3"

[environments]
cpu = { features = ["cpu"], solve-group = "cpu", no-default-feature = true }
"""


def _pypi_spec(spec: Any) -> dict[str, Any]:
    if isinstance(spec, str):
        return {"version": spec.strip()}
    if isinstance(spec, dict):
        return {"version": str(spec.get("version", "*")), "index": spec.get("index") and str(spec["index"]),
                "extras": [str(e) for e in spec.get("extras", [])]}
    return {"version": str(spec)}


def _inline(values: dict[str, Any]) -> Any:
    import tomlkit

    table = tomlkit.inline_table()
    table.update(values)
    return table
