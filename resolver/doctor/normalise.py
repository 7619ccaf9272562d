"""A log as its program printed it, before the signatures read it.

Logs reach doctor through CI consoles, ``docker build``, issue forms and chats, each adding its own
prefix to every line (``#12 0.345``, ``2024-05-01T10:00:00.123Z``, ``[stderr]``, ``ERROR 01-11
13:09:40 engine.py:366]``, ``> `` quotes) and wrapping long lines wherever the window ended. The
signatures describe what the program said, so those are taken off first: one pass over the lines,
each prefix pattern anchored at the line start and bounded, so a 64 MiB log costs linear time.

>>> normalise_log("#13 752.5   error: Remote end closed\\n2024-01-02T03:04:05.678Z [stderr] nvcc fatal")
'  error: Remote end closed\\nnvcc fatal'
>>> normalise_log("x" * 70 + " fatal error C1189: #error:  -- unsupp\\norted Microsoft Visual Studio version!")[-47:]
'-- unsupported Microsoft Visual Studio version!'
"""

from __future__ import annotations

import re

# one prefix a console or a collector puts before each line; tried again after each hit (they stack)
_PREFIX = re.compile(
    r"(?:"
    r"#\d{1,5} \d{1,7}\.\d{1,4} "  # docker buildkit: step and seconds
    r"|\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]? ?"  # ISO time (CI runners)
    r"|\[\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\] ?"  # [12:34:56]
    r"|\[(?:stderr|stdout|err|out)\] ?"
    r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d [\w.]{1,80}:\d{1,6}\] "  # vLLM's logger
    r"|[\w.-]{1,100}@[\w.-]{1,100} {1,40}\| "  # docker swarm service.1.id@node    |
    r"|> ?(?=\S)"  # a markdown quote
    r")")
_PREFIX_WINDOW = 300  # prefixes sit at the start: never scan further into a line for them
_MAX_PREFIXES = 4
_WRAP_MIN = 64  # a line shorter than this was not wrapped by a window or a form


def strip_prefixes(line: str) -> str:
    """``line`` without the console prefixes before what the program printed.

    >>> strip_prefixes("ERROR 01-11 13:09:40 engine.py:366] RuntimeError: FlashAttention only supports Ampere")
    'RuntimeError: FlashAttention only supports Ampere'
    """
    for _ in range(_MAX_PREFIXES):
        match = _PREFIX.match(line, 0, min(len(line), _PREFIX_WINDOW))
        if match is None or match.end() == 0:
            return line
        line = line[match.end():]
    return line


def _continues(line: str, following: str) -> bool:
    """Whether ``following`` is the rest of ``line`` cut by a wrap: a long line ending inside a word and a
    next line that goes on with that word (a lower-case letter or a digit, no indentation)."""
    return (len(line) >= _WRAP_MIN and line[-1:].isalnum() and following[:1].isalnum()
            and (following[:1].islower() or following[:1].isdigit()))


def normalise_log(text: str) -> str:
    """``text`` (already decoded, one kind of line end) with console prefixes taken off each line and
    words cut by a wrap joined again."""
    out: list[str] = []
    for raw in text.split("\n"):
        line = strip_prefixes(raw)
        if out and _continues(out[-1], line):
            out[-1] += line
        else:
            out.append(line)
    return "\n".join(out)
