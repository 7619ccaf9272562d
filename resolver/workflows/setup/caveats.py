"""What a successful step still leaves wrong, each with its fix: said on the step's line ("!", not
"✓") and again, all together, in setup's closing summary.

The lock's caveats are read from pixi.lock itself, so a second ``setup`` (which skips the lock) says
them as the first did until they are fixed: an environment that fell back to a virtual environment
(pixi cannot install it) and wheels recorded at a path of this machine (a teammate cannot install them).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from resolver.core.errors import ResolverError
from resolver.core.model import Plan
from resolver.project.paths import ProjectPaths
from resolver.workflows.steps import Caveat

RELOCK = "`python -m resolver lock`"


def lock_caveats(project: ProjectPaths, plan: Plan, lock_notes: tuple[str, ...] = ()) -> tuple[Caveat, ...]:
    """The caveats of the lock of ``plan``'s environment, and those of ``lock_notes`` (what the lock
    run said) that pixi.lock cannot show, such as an unreadable previous lock kept aside."""
    from resolver import install as installing

    try:
        locked = installing.locked_environment(project, plan.env_name)
    except ResolverError:
        return tuple(Caveat.from_note(n) for n in lock_notes)
    found: list[Caveat] = []
    if locked.fallback:
        found.append(Caveat(locked.fallback_note,
                            "make a conda channel reachable (a conda-forge mirror: `python -m resolver lock --channel "
                            "DIR`, or conda-channels under [tool.resolver] in pixi.toml), then run `python -m resolver "
                            "setup` again"))
    machine_paths = [a for a in locked.pypi if _outside(a.location, project.root)]
    for art in machine_paths:
        folder = str(Path(unquote(urlsplit(art.location).path)).parent)
        index = art.index or (plan.torch.source.url if art.name == "torch" and plan.torch.source.kind != "pypi" else None)
        fix = (f"add \"{index}\" = \"{folder}\" under [tool.resolver.mirrors] in pixi.toml, then run {RELOCK}" if index
               else f"lock where PyPI (https://pypi.org) answers, or map the file's canonical index to {folder} under "
                    f"[tool.resolver.mirrors] in pixi.toml, then run {RELOCK}")
        found.append(Caveat(f"pixi.lock records {art.file_name} at a path of this machine ({folder}): a teammate "
                            "cannot install it", fix))
    covered = ("is a fallback", "records a path of this machine", "canonical address is unknown")
    found += [Caveat.from_note(n) for n in lock_notes if not any(words in n for words in covered)]
    return tuple(dict.fromkeys(found))


def _outside(location: str, root: Path) -> bool:
    """A locked location on this machine's disk, outside the project (a project-relative file travels
    with the project; a URL is anyone's)."""
    from resolver.core.names import local_path

    path = local_path(location)
    if path is None:
        return False
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except OSError:
        return True


def plan_caveats(plan: Plan) -> tuple[Caveat, ...]:
    """The plan's warnings (a glibc the wheels barely meet, a plan for another machine): no command
    fixes them here, they are said where the user will read them."""
    return tuple(Caveat(w) for w in plan.warnings)
