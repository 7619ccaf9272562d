"""What the tests share: where things are, the factories, the doubles and the harness.

``tests/`` is on ``sys.path`` (conftest.py puts it there), so every test imports ``support.NAME``.
"""

import functools
import subprocess
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
DATA = TESTS / "data"


@functools.lru_cache(maxsize=None)
def shipped(name: str) -> str:
    """The text of the checkout's file ``name`` as it ships: as the last commit holds it. The README's
    first command (setup) writes environments into this checkout's pixi.toml and pixi.lock, so the working
    copy is what a user made of it, never what the suite may assert about. Outside a git checkout (an
    unpacked source archive) the file as it lies is the shipped one."""
    try:
        done = subprocess.run(["git", "-C", str(REPO), "show", f"HEAD:{name}"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is not None and done.returncode == 0:
        return done.stdout.decode("utf-8")
    if done is not None and (REPO / ".git").exists():
        raise RuntimeError(f"git cannot show the shipped {name}: {done.stderr.decode(errors='replace').strip()}")
    return (REPO / name).read_text(encoding="utf-8")


def shipped_manifest() -> str:
    """The shipped pixi.toml's text (:func:`shipped`)."""
    return shipped("pixi.toml")
