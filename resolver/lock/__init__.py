"""``lock``: pixi.toml environments → one pixi.lock (v7) that pixi itself calls up to date.

Every environment the manifest declares is locked, for every platform it declares (pixi requires
it): the requested ones are (re)resolved, the others keep their entries as text when the lock still
holds them as pixi.toml asks (:func:`carry_over`: platforms matched by identity as pixi matches them,
environments by name; and no package left that nothing requires, :mod:`.staleness`), and are resolved
again only when the resolver can lock all of them; a workspace it cannot lock is refused before
anything runs. Each (environment, platform) is resolved on its own, side by side. For one
environment on one platform:

1. conda: py-rattler ``solve`` of its ``[dependencies]`` (its own ``python``; for CUDA the toolkit)
   against its channels, mirrors applied, with the platform's virtual packages as the manifest declares
   them (pixi's defaults otherwise), so a laptop can lock for a GPU cluster. When no channel answers,
   the environment falls back, explicitly, to a virtual environment of the host's Python: the lock
   says so in its header and ``setup`` in its summary;
2. PyPI: uv resolves its ``[pypi-dependencies]`` for that Python and platform (:mod:`.pypi`); which
   indexes answer is asked while conda solves;
3. locations are canonical: the channel and index a package canonically comes from, never this
   machine's mirror or wheelhouse (:mod:`.canonical`); install applies the mirrors again.

pixi.toml and pixi.lock are written together, only after every environment resolved: a failed
resolve leaves the previous pair as it was, byte for byte.
"""

from __future__ import annotations

# The package is a facade: what it names is imported on first use, so ``lock --check`` and a ``lock``
# with nothing to do (:mod:`.current`) load neither the resolving half nor py-rattler.
_HOMES = {"EnvLockReport": "summary", "Info": "summary", "LockSummary": "summary", "quiet": "summary"}


def __getattr__(name: str):
    import importlib
    from pathlib import Path

    if name.startswith("__") or (Path(__file__).parent / f"{name}.py").exists():
        raise AttributeError(name)  # a submodule, imported by the import system itself
    module = importlib.import_module(f"resolver.lock.{_HOMES.get(name, 'resolving')}")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'resolver.lock' has no attribute {name!r}") from None
