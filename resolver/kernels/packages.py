"""The kernel packages the resolver knows how to build: ``recipes/<name>/`` read into values.

``recipe.yaml`` pins the version and the sdist's sha256 (its ``context``); ``resolver.toml`` beside it
holds what the resolver needs beyond that (sdist URL, upstream switches, modules to import, wheel
naming, our fixes' rules). The content hash of the recipe folder and ``recipes/common/`` is part of
every build's cache key, so editing a fix rebuilds.

>>> pkg = KernelRecipe.load(RECIPES / "causal-conv1d")
>>> pkg.name, pkg.version, pkg.imports[0]
('causal-conv1d', '1.7.0', 'causal_conv1d_cuda')
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from resolver.core.errors import BadInput
from resolver.core.fs import read_text_bounded
from resolver.core.resources import shipped
from resolver.core.toml import parse_toml
from resolver.plan.knowledge import BuildFix

RECIPES = shipped("recipes")
COMMON = RECIPES / "common"
BUILD_EXT = COMMON / "build_ext.py"
# Recipe folders built instead of the knowledge base's kernel packages (separated by commas, whitespace or os.pathsep): a fork's own
# kernels, or the tests' tiny extension going through the whole GPU journey.
RECIPES_VAR = "RESOLVER_KERNEL_RECIPES"


def configured_recipe_dirs(environ: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The recipe folders ``RESOLVER_KERNEL_RECIPES`` names (resolved), or () when it is unset.

    >>> configured_recipe_dirs({RECIPES_VAR: f"{RECIPES}/causal-conv1d, {RECIPES}/mamba-ssm"})[1].name
    'mamba-ssm'
    >>> configured_recipe_dirs({})
    ()
    """
    text = (os.environ if environ is None else environ).get(RECIPES_VAR, "")
    folders = tuple(Path(part).expanduser().resolve() for part in re.split(rf"[,\s{re.escape(os.pathsep)}]+", text)
                    if part)
    for folder in folders:
        if not (folder / "recipe.yaml").is_file():
            raise BadInput(f"{RECIPES_VAR} names {folder}, which holds no recipe.yaml",
                           fix=f"point {RECIPES_VAR} at recipe folders (recipe.yaml + resolver.toml), or unset it")
    return folders


def known_packages() -> tuple[str, ...]:
    """The kernel packages, in build order: the knowledge base's list (mamba.toml [[package]])."""
    from resolver.plan.knowledge import Knowledge

    return Knowledge.load().kernel_package_names()


def kernel_module_args() -> list[str]:
    """``--kernel DIST:MODULE,...`` for each kernel package a build makes: what the in-environment
    checks (verify, doctor, bench) look for."""
    return [arg for package in selected_packages() for arg in ("--kernel", f"{package.name}:{','.join(package.imports)}")]


def selected_packages(names: tuple[str, ...] | None = None, recipe_dirs: tuple[Path, ...] = ()) -> list["KernelRecipe"]:
    """The packages a build makes: explicit recipe folders, else RESOLVER_KERNEL_RECIPES, else ``names``
    (default: every known package)."""
    folders = recipe_dirs or configured_recipe_dirs()
    if folders:
        return [KernelRecipe.load(folder) for folder in folders]
    return [KernelRecipe.named(name) for name in (names or known_packages())]


@dataclass(frozen=True)
class Sdist:
    file_name: str
    sha256: str
    url: str | None  # None: a local source folder (the test fixture)


@dataclass(frozen=True)
class KernelRecipe:
    name: str
    version: str
    recipe_dir: Path
    sdist: Sdist | None
    source_dir: Path | None  # a folder source instead of an sdist
    env_prefix: str
    imports: tuple[str, ...]
    translation_units: int
    factory: str
    cxx_std: str | None
    cxx_std_torch_min: str | None
    never_archs: tuple[BuildFix, ...]  # the knowledge base's avoid_arch fixes for this package
    wheel_name: str | None
    wheel_url: str | None
    needs_torch: bool = True  # False: a plain CUDA extension (the pipeline test's tiny-ext)

    @property
    def recipe(self) -> Path:
        return self.recipe_dir / "recipe.yaml"

    @classmethod
    def load(cls, recipe_dir: Path) -> "KernelRecipe":
        from rattler_build import Stage0Recipe

        recipe_dir = Path(recipe_dir)
        try:
            context = dict(Stage0Recipe.from_file(str(recipe_dir / "recipe.yaml")).context or {})
            meta_text = read_text_bounded(recipe_dir / "resolver.toml", limit=1 << 20, what="the recipe's resolver.toml")
        except Exception as exc:  # noqa: BLE001 - OSError, UnicodeDecodeError, rattler-build's RecipeParseError
            raise BadInput(f"recipe folder {recipe_dir} is unreadable ({str(exc).strip()[:200]})",
                           fix="restore it from git (`git checkout -- recipes/`)") from None
        meta = parse_toml(meta_text, what=str(recipe_dir / "resolver.toml"),
                          fix="restore it from git (`git checkout -- recipes/`)")
        sdist = None
        source_dir = None
        if "sdist" in context:
            sdist = Sdist(context["sdist"], context["sha256"], meta.get("sdist_url"))
        else:
            source_dir = (recipe_dir / meta["source_dir"]).resolve()
        cxx = meta.get("cxx_std", {})
        from resolver.plan.knowledge import Knowledge

        name = str(context["name"])
        rules = tuple(f for f in Knowledge.load().fixes_for(name) if f.avoid_arch)
        return cls(name=name, version=str(context["version"]), recipe_dir=recipe_dir,
                   sdist=sdist, source_dir=source_dir, env_prefix=meta.get("env_prefix", ""),
                   imports=tuple(meta.get("imports", ())), translation_units=int(meta.get("translation_units", 1)),
                   factory=meta.get("factory", "torch.utils.cpp_extension:CUDAExtension"),
                   cxx_std=cxx.get("std"), cxx_std_torch_min=cxx.get("torch_min"), never_archs=rules,
                   wheel_name=meta.get("wheel_name"), wheel_url=meta.get("wheel_url"),
                   needs_torch=bool(meta.get("needs_torch", True)))

    @classmethod
    def named(cls, name: str) -> "KernelRecipe":
        known = known_packages()
        if name not in known:
            raise BadInput(f"unknown kernel package {name!r}", fix=f"use one of {', '.join(known)} or all")
        return cls.load(RECIPES / name)

    def fixes_hash(self) -> str:
        """sha256 over this recipe folder and recipes/common (what our fixes are made of)."""
        from resolver.core.fs import tree_digest

        return tree_digest(self.recipe_dir, COMMON)
