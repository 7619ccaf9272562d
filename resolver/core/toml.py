"""TOML: the one reader, for every TOML file the resolver reads (pixi.toml, pyproject.toml, the knowledge
tables, patch.toml, recipes' resolver.toml, doctor's signatures, sysroot files).

pixi reads pixi.toml as TOML 1.1 (inline tables over several lines, trailing commas, ``\\e``), which
Python's parser (TOML 1.0) refuses; tomlkit reads 1.1 but some 14x slower (the knowledge tables: 10 ms
against 140 ms). A text valid under 1.0 means the same under 1.1, so the standard parser reads it first
and tomlkit reads only what it refuses: a 1.1 table is read, never silently dropped, and a 1.0 file costs
what it did. :func:`parse_toml_document` is the form that writes back with comments and layout kept.

Both forms are bounded: a text past :data:`MAX_CHARS`, or tables and arrays nested more than
:data:`MAX_DEPTH` deep (no file the resolver reads nests past 8; Python's own limit is about 1000, and
every reader downstream would meet it), is one :class:`BadInput` (exit 3), never a RecursionError deep in
a command.

>>> parse_toml("a = " + "[" * 65 + "]" * 65, what="t", fix="f")
Traceback (most recent call last):
...
resolver.core.errors.BadInput: t nests tables or arrays more than 64 deep. Fix: f.

>>> parse_toml('a = { x = 1,\\n  y = 2, }\\n', what="t", fix="f")
{'a': {'x': 1, 'y': 2}}
>>> parse_toml("a = ", what="the table", fix="fix it")
Traceback (most recent call last):
...
resolver.core.errors.BadInput: the table is not valid TOML (Invalid value (at end of document)). Fix: fix it.
"""

from __future__ import annotations

from typing import Any

from resolver.core.errors import BadInput
from resolver.core.fs import value_error_text

MAX_DEPTH = 64  # tables and arrays in one another
MAX_CHARS = 16 << 20  # a pixi.toml is a few kB; the largest table the resolver ships, ~100 kB


def parse_toml(text: str, *, what: str, fix: str) -> dict[str, Any]:
    """TOML 1.1 from input as plain dicts and lists: malformed text, a text past :data:`MAX_CHARS`, nesting
    past :data:`MAX_DEPTH` (or too deep for the parser), or an integer too long to convert is one
    :class:`BadInput` naming ``what`` (never a parser's own exception)."""
    _check_size(text, what=what, fix=fix)
    return _check_depth(_parse(text, what=what, fix=fix), what=what, fix=fix)


def _check_size(text: str, *, what: str, fix: str) -> None:
    if len(text) > MAX_CHARS:
        raise BadInput(f"{what} is larger than {MAX_CHARS >> 20} MiB", fix=fix)


def _check_depth(value: Any, *, what: str, fix: str) -> Any:
    """``value`` when no table or array in it is nested more than :data:`MAX_DEPTH` deep (walked with a
    stack, not recursion)."""
    from collections.abc import Mapping

    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            raise BadInput(f"{what} nests tables or arrays more than {MAX_DEPTH} deep", fix=fix)
        stack.extend((child, depth + 1) for child in children)
    return value


def _parse(text: str, *, what: str, fix: str) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: tomli where installed, else tomlkit alone
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:  # pragma: no cover - an install without the declared dependency
            return _document(text, what=what, fix=fix).unwrap()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        refusal = exc
    except RecursionError:
        raise BadInput(f"{what} is nested too deeply to be read", fix=fix) from None
    except ValueError as exc:
        raise BadInput(f"{what} is not valid TOML ({value_error_text(exc)})", fix=fix) from None
    try:
        return _document(text, what=what, fix=fix).unwrap()  # TOML 1.1
    except BadInput as exc:
        # both refuse it: the error found further on is the real one (the standard parser's, where tomlkit
        # stops at the same line, names it better; tomlkit's, where the standard one stopped at 1.1 syntax)
        if _line(exc.message) > _line(str(refusal)):
            raise
        raise BadInput(f"{what} is not valid TOML ({value_error_text(refusal)})", fix=fix) from None


def _line(message: str) -> int:
    """The line a parser's message names (``at line 3``, ``line 3 col 5``; the end of the document is past
    every line), 0 where it names none."""
    import re

    if "end of document" in message:
        return 1 << 62
    found = re.search(r"\bline (\d+)", message)
    return int(found.group(1)) if found else 0


def parse_toml_document(text: str, *, what: str, fix: str) -> Any:
    """TOML 1.1 as a tomlkit document, which writes back as it was read (comments, order, layout); bounded
    as :func:`parse_toml` is."""
    _check_size(text, what=what, fix=fix)
    document = _document(text, what=what, fix=fix)
    try:
        _check_depth(document, what=what, fix=fix)
    except RecursionError:
        raise BadInput(f"{what} is nested too deeply to be read", fix=fix) from None
    return document


def _document(text: str, *, what: str, fix: str) -> Any:
    import tomlkit

    try:
        return tomlkit.parse(text)
    except RecursionError:
        raise BadInput(f"{what} is nested too deeply to be read", fix=fix) from None
    except Exception as exc:  # tomlkit raises several parse error types, and ValueError for a huge integer
        raise BadInput(f"{what} is not valid TOML ({value_error_text(exc)})", fix=fix) from None

