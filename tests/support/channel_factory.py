"""A real local conda channel and wheelhouse for the lock/install tests, built with py-rattler-build.

Packages (python-less; the environments take their ``python`` from the toolchain channel,
tests/support/toolchain_channel.py, listed first in the test workspaces):

* ``rt-base`` → ``rt-lib`` → ``rt-tool``: a dependency chain; ``rt-tool`` installs ``bin/rt-tool``
  which sources files of the other two and prints ``rt-tool ok <lib> <base>``.
* ``rt-kernel`` in two linux-64 builds: ``cpu_0`` (build 0) and ``cuda_1`` (build 1, runs only with
  ``__cuda >=12``), each installing ``bin/rt-kernel`` that prints its variant. The CUDA build gets the
  higher build number, as conda-forge does, because the solver otherwise prefers CPU at equal
  version and build number (notes §0.6).
* ``pip``: a stand-in (one text file); the toolchain channel's real pip, first in channel order, wins.
* ``python`` 3.11.7 for **osx-arm64** and 3.12.7 for linux-64: metadata and one text file, so a
  workspace declaring a second platform, or a plan for another machine's Python, can be locked here
  (never installed; the toolchain channel, first in channel order, serves the real 3.11).

The wheelhouse holds tiny pure-Python wheels: a ``torch`` stub for ``2.13.0+cpu`` and ``2.13.0+cu130``
(a module with ``__version__``) and ``rtpy`` (depends on nothing).

>>> # build_channel(tmp / "chan"); build_wheelhouse(tmp / "wheels")
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import shutil
import socketserver
import threading
import zipfile
from pathlib import Path

_RECIPE = """\
package: {{name: {name}, version: "{version}"}}
build:
  number: {number}
  string: {string}
  {noarch}
  script:
{script}
requirements:
  run: [{run}]
about: {{summary: "resolver test package {name}", license: MIT}}
"""


def _recipe(name: str, version: str, lines: list[str], *, run: list[str] = (), number: int = 0,
            string: str | None = None, noarch: bool = True) -> str:
    script = "\n".join(f"    - {_quote(line)}" for line in lines)
    return _RECIPE.format(name=name, version=version, number=number, string=string or f"h0_{number}",
                          noarch="noarch: generic" if noarch else "", script=script,
                          run=", ".join(_quote(r) for r in run))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def recipes() -> list[tuple[str, str]]:
    tool = ('printf \'#!/bin/sh\\nd=$(dirname "$0")/..\\necho "rt-tool ok $(cat $d/share/rt/lib.txt) '
            '$(cat $d/share/rt/base.txt)"\\n\' > $PREFIX/bin/rt-tool')
    kernel = 'printf \'#!/bin/sh\\necho "rt-kernel {v}"\\n\' > $PREFIX/bin/rt-kernel'
    return [
        ("rt-base", _recipe("rt-base", "1.0.0", ["mkdir -p $PREFIX/share/rt", "echo base-1.0.0 > $PREFIX/share/rt/base.txt"])),
        ("rt-lib", _recipe("rt-lib", "2.1.0", ["mkdir -p $PREFIX/share/rt", "echo lib-2.1.0 > $PREFIX/share/rt/lib.txt"],
                           run=["rt-base >=1"])),
        ("rt-tool", _recipe("rt-tool", "0.3.0", ["mkdir -p $PREFIX/bin", tool, "chmod +x $PREFIX/bin/rt-tool"],
                            run=["rt-lib >=2,<3"])),
        ("rt-kernel-cpu", _recipe("rt-kernel", "1.2.0", ["mkdir -p $PREFIX/bin", kernel.format(v="cpu"),
                                                         "chmod +x $PREFIX/bin/rt-kernel"],
                                  number=0, string="cpu_0", noarch=False)),
        ("rt-kernel-cuda", _recipe("rt-kernel", "1.2.0", ["mkdir -p $PREFIX/bin", kernel.format(v="cuda"),
                                                          "chmod +x $PREFIX/bin/rt-kernel"],
                                   run=["__cuda >=12"], number=1, string="cuda_1", noarch=False)),
        ("pip", _recipe("pip", "24.0", ["mkdir -p $PREFIX/share/rt",
                                        "echo 'stand-in: pip comes from the virtual environment' > $PREFIX/share/rt/pip.txt"])),
        ("python-osx-arm64", _recipe("python", "3.11.7", ["mkdir -p $PREFIX/share/rt",
                                                         "echo stand-in > $PREFIX/share/rt/python-osx.txt"],
                                     string="h0_0_cpython", noarch=False)),
        ("python-3.12-linux-64", _recipe("python", "3.12.7", ["mkdir -p $PREFIX/share/rt",
                                                              "echo stand-in > $PREFIX/share/rt/python-3.12.txt"],
                                         string="h0_0_cpython", noarch=False)),
    ]


TARGETS = {"python-osx-arm64": "osx-arm64"}  # recipes built for another platform than this one


def build_channel(out: Path) -> Path:
    """Build every recipe into ``out`` (an indexed channel: noarch/ + linux-64/). ~1-2 s."""
    from rattler_build import PlatformConfig, RenderConfig, Stage0Recipe, ToolConfiguration

    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = out.parent / f"{out.name}-recipes"
    for key, text in recipes():
        folder = work / key
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "recipe.yaml").write_text(text)
        recipe = Stage0Recipe.from_yaml(text, recipe_dir=folder)
        render = RenderConfig(platform=PlatformConfig(target_platform=TARGETS[key])) if key in TARGETS else None
        recipe.run_build(output_dir=out, channels=[], tool_config=ToolConfiguration(test_strategy="skip"),
                         no_build_id=True, render_config=render)
    for leftover in ("bld", "src_cache", ".tmp"):
        shutil.rmtree(out / leftover, ignore_errors=True)
    reindex(out)
    return out


def reindex(channel: Path) -> None:
    import asyncio

    from resolver.tools.conda import rattler

    rattler()
    from rattler.index import index_fs

    asyncio.run(index_fs(channel, write_zst=False, write_shards=False, force=True))


def package_file(channel: Path, name: str, build_prefix: str = "") -> Path:
    """The built file of package ``name`` (optionally whose build string starts with ``build_prefix``)."""
    found = sorted(p for p in channel.glob(f"*/{name}-[0-9]*.conda")
                   if p.name.rsplit("-", 1)[1].startswith(build_prefix))
    assert found, f"no {name} ({build_prefix}) in {channel}"
    return found[0]


# -- wheels ---------------------------------------------------------------------------------------
def write_wheel(folder: Path, name: str, version: str, files: dict[str, str], requires: list[str] = (),
                requires_python: str | None = None) -> Path:
    """A minimal valid pure-Python wheel (METADATA, WHEEL, RECORD), deterministic bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{dist}-py3-none-any.whl"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + \
        "".join(f"Requires-Dist: {r}\n" for r in requires) + \
        (f"Requires-Python: {requires_python}\n" if requires_python else "")
    entries = dict(files)
    entries[f"{dist}.dist-info/METADATA"] = meta
    entries[f"{dist}.dist-info/WHEEL"] = "Wheel-Version: 1.0\nGenerator: resolver-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for arc, text in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    entries[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(path, "w") as zf:
        for arc, text in entries.items():
            info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, text)
    return path


def build_wheelhouse(out: Path) -> Path:
    for local in ("cpu", "cu130"):
        write_wheel(out, "torch", f"2.13.0+{local}",
                    {"torch/__init__.py": f'__version__ = "2.13.0+{local}"\nSTUB = True\n'})
    write_wheel(out, "rtpy", "1.0.0", {"rtpy/__init__.py": 'VALUE = "rtpy ok"\n'})
    return out


# -- serving --------------------------------------------------------------------------------------
class ChannelServer:
    """Serve a folder over HTTP on 127.0.0.1 (a thread; ``close()`` stops it); ``requests`` lists the
    paths asked for, in order."""

    def __init__(self, folder: Path) -> None:
        self.requests: list[str] = []
        handler = functools.partial(_QuietHandler, directory=str(folder))
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.request_log = self.requests
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_request(self, code="-", size="-") -> None:  # noqa: ANN001 - stdlib signature
        self.server.request_log.append(f"{self.command} {self.path}")

    def log_message(self, format, *args) -> None:  # noqa: A002 - stdlib signature
        pass
