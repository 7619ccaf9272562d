"""What the tests share: where things are, the factories, the doubles and the harness.

``tests/`` is on ``sys.path`` (conftest.py puts it there), so every test imports ``support.NAME``.
"""

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
DATA = TESTS / "data"
