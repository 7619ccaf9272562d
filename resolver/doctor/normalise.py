"""A log as its program printed it, before the signatures read it.

Logs reach doctor through CI consoles, ``docker build``, issue forms and chats, each adding its own
prefix to every line (``#12 0.345``, ``2024-05-01T10:00:00.123Z``, ``[stderr]``, ``ERROR 01-11
13:09:40 engine.py:366]``, ``> `` quotes, markdown's ``**``) and wrapping long lines wherever the window ended. The
signatures describe what the program said, so those are taken off first: one pass over the lines,
each prefix pattern anchored at the line start and bounded, so a 64 MiB log costs linear time.

>>> normalise_log("#13 752.5   error: Remote end closed\\n2024-01-02T03:04:05.678Z [stderr] nvcc fatal")
'  error: Remote end closed\\nnvcc fatal'
>>> normalise_log("x" * 70 + " fatal error C1189: #error:  -- unsupp\\norted Microsoft Visual Studio version!")[-47:]
'-- unsupported Microsoft Visual Studio version!'
"""

from __future__ import annotations

import re

# each prefix a console or a collector puts before every line, with the character it starts with
_KINDS = (
    ("#", r"#\d{1,5} \d{1,7}\.\d{1,4} "),  # docker buildkit: step and seconds
    ("[0123456789", r"\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]? ?"),  # ISO time (CI)
    ("[", r"\[\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\] ?"),  # [12:34:56]
    ("[", r"\[(?:stderr|stdout|err|out)\] ?"),
    ("IWEDC", r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d [\w.]{1,80}:\d{1,6}\] "),  # vLLM's logger
    (">", r"> ?(?=\S)"),  # a markdown quote
)
_PREFIX = re.compile("|".join(pattern for _, pattern in _KINDS))
_WRAP_MIN = 64  # a line shorter than this was not wrapped by a window or a form
# a newline after at least _WRAP_MIN characters of one line, the last inside a word (or the blank a window
# cut after), the next line going on with it; it starts with the newline, so the engine's literal search
# finds its candidates
_CUT_WORD = re.compile(r"\n(?<=[^\n]{%d}(?:[^\W_]| )\n)(?=[a-z0-9])" % (_WRAP_MIN - 1))
_PREFIX_WINDOW = 300  # prefixes sit at the start: never scan further into a line for them
_MAX_PREFIXES = 4
_SAMPLE = 1 << 18  # the prefixes a log carries are read off its first and last lines
_SAMPLE_LINES = 2000


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


def _line_prefixes(text: str) -> re.Pattern | None:
    """One substitution for the prefix kinds the log's first and last lines carry (a console puts its
    prefix on every line); None when they carry none. A log is not tried for kinds it does not use: a
    pattern tried at each of 32 million line starts costs seconds."""
    sample = text[:_SAMPLE].split("\n")[:_SAMPLE_LINES] + text[-_SAMPLE:].split("\n")[-_SAMPLE_LINES:]
    used: list[tuple[str, str]] = []
    for line in sample:
        for _ in range(_MAX_PREFIXES):  # prefixes stack: "2024-...Z [stderr] ..."
            kind = next(((first, pattern) for first, pattern in _KINDS if line[:1] in first
                         and re.match(pattern, line[:_PREFIX_WINDOW])), None)
            if kind is None:
                break
            if kind not in used:
                used.append(kind)
            line = line[re.match(kind[1], line[:_PREFIX_WINDOW]).end():]
    if not used:
        return None
    starts = "".join(sorted({c for first, _ in used for c in first}))
    return _compiled(f"\\n(?=[{re.escape(starts)}])(?:{'|'.join(p for _, p in used)}){{1,{_MAX_PREFIXES}}}")


def _compiled(pattern: str, cache: dict = {}) -> re.Pattern:  # noqa: B006 (a cache of the few kinds' unions)
    if pattern not in cache:
        cache[pattern] = re.compile(pattern)
    return cache[pattern]


def normalise_log(text: str) -> str:
    """``text`` (already decoded, one kind of line end) with console prefixes taken off each line and
    words cut by a wrap joined again."""
    text = text.replace("**", "")  # markdown bold, which issue forms put inside messages
    prefixes = _line_prefixes(text)
    if prefixes is not None:  # each match starts with its newline: the engine's literal search finds them
        text = prefixes.sub("\n", "\n" + text)[1:]
    return _CUT_WORD.sub("", text)
