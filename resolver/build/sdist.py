"""Upstream sdists, fetched once into ``.resolver/cache/sdists`` and checked against the recipe's sha256.

>>> sha256_of(Path(__file__)) == sha256_of(Path(__file__))
True
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

from resolver.build.packages import Sdist
from resolver.checksums import sha256_of
from resolver.errors import BadInput, IntegrityError


def ensure_sdist(sdist: Sdist, cache: Path, *, timeout: float = 60.0) -> Path:
    """The verified sdist in ``cache`` (downloaded from PyPI if absent); IntegrityError on a wrong hash."""
    target = cache / sdist.file_name
    if target.is_file():
        actual = sha256_of(target)
        if actual == sdist.sha256:
            return target
        raise IntegrityError(f"{target} has sha256 {actual[:12]}…, the recipe pins {sdist.sha256[:12]}…",
                             fix=f"delete {target} and run the build again to download it afresh")
    if not sdist.url:
        raise BadInput(f"{sdist.file_name} is not in {cache} and the recipe names no URL",
                       fix=f"copy {sdist.file_name} into {cache}")
    cache.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(target.suffix + ".part")
    try:
        with urllib.request.urlopen(sdist.url, timeout=timeout) as response, open(partial, "wb") as sink:
            while block := response.read(1 << 20):
                sink.write(block)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        partial.unlink(missing_ok=True)
        raise BadInput(f"could not download {sdist.file_name} from PyPI ({exc})",
                       fix=f"check the network, or copy the file (sha256 {sdist.sha256}) into {cache}") from None
    actual = sha256_of(partial)
    if actual != sdist.sha256:
        partial.unlink(missing_ok=True)
        raise IntegrityError(f"the download of {sdist.file_name} has sha256 {actual[:12]}…, the recipe pins "
                             f"{sdist.sha256[:12]}…", fix="retry; if it persists the index serves a different file")
    os.replace(partial, target)
    return target
