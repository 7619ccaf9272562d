"""How code running inside an environment hands its answer back: one JSON document on the last
``RESOLVER-JSON`` line of stdout, so libraries that print to stdout cannot corrupt it.

Both sides use this module: :func:`emit` inside the environment (standard library only),
:func:`parse` in the resolver (``resolver.install.environment.Environment.call``).

>>> parse("noise\\nRESOLVER-JSON {\\"ok\\": true}\\n")
{'ok': True}
>>> parse("RESOLVER-JSON [1, 2]") is None
True
"""

from __future__ import annotations

import json
import sys

MARKER = "RESOLVER-JSON "


def emit(document: dict) -> None:
    """Print ``document`` as the answer (after flushing whatever else went to stdout)."""
    sys.stdout.flush()
    print(MARKER + json.dumps(document, default=str), flush=True)


def parse(stdout: str) -> dict | None:
    """The answer in a child's stdout: the last marked line holding a JSON object, else None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                document = json.loads(line[len(MARKER):])
            except ValueError:
                return None
            return document if isinstance(document, dict) else None
    return None
