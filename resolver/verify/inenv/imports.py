"""Import the top-level modules of named distributions. Runs INSIDE the environment.

``python -m resolver.verify.inenv.imports NAME ...`` answers (protocol.emit) with, per distribution name, whether
it is installed, its version, its top-level modules (``top_level.txt``, else the top of the files its RECORD
lists) and, per module, None when it imported or the error in one line. Standard library only, apart from the
modules it imports: the upgrade's proof runs it in both environments to show that the user's own dependencies
still import with the new torch.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import sys

from resolver.core.inenv_protocol import emit

_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def top_level(dist: importlib.metadata.Distribution) -> list[str]:
    """The modules a distribution puts at the top of site-packages: top_level.txt, else its RECORD's files."""
    text = dist.read_text("top_level.txt")
    names = [line.strip() for line in text.splitlines()] if text else []
    if not names:
        for entry in dist.files or ():
            parts = entry.parts
            if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith((".dist-info", ".data", ".pth")):
                continue
            head = parts[0]
            if len(parts) == 1:
                if not head.endswith((".py", ".so", ".pyd")):
                    continue
                head = head.split(".", 1)[0]
            names.append(head)
    return [n for n in dict.fromkeys(n.replace("/", ".") for n in names)
            if _MODULE.fullmatch(n) and not n.startswith("__")]


def check(names: list[str]) -> dict:
    out: dict = {}
    for name in names:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = {"installed": False, "version": None, "modules": {}}
            continue
        modules: dict = {}
        for module in top_level(dist):
            try:
                importlib.import_module(module)
                modules[module] = None
            except BaseException as exc:  # noqa: BLE001 - any failure (SystemExit included) is the answer
                modules[module] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        out[name] = {"installed": True, "version": dist.version, "modules": modules}
    return out


if __name__ == "__main__":
    emit({"python": "%d.%d" % sys.version_info[:2], "distributions": check(sys.argv[1:])})
