"""Upstream sdists, fetched once into ``.resolver/cache/sdists`` and checked against the recipe's sha256.

>>> sha256_of(Path(__file__)) == sha256_of(Path(__file__))
True
"""

from __future__ import annotations

from pathlib import Path

from resolver.core.errors import BadInput, IntegrityError, SourceUnreachable
from resolver.core.fs import sha256_of
from resolver.kernels.packages import Sdist
from resolver.tools.net import download

SDIST_LIMIT = 256 << 20  # the kernels' sdists are a few MB


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
    try:
        return download(sdist.url, target, expected_sha256=sdist.sha256, timeout=timeout, limit=SDIST_LIMIT)
    except SourceUnreachable as exc:
        raise SourceUnreachable(f"could not download {sdist.file_name} from PyPI ({exc.message})",
                                fix=f"check the network, or copy the file (sha256 {sdist.sha256}) into {cache}") from None
