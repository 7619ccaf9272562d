"""Where a signature's regular expression can start to match, found with plain substring search.

Scanning a 64 MiB log with each of ~100 patterns costs seconds per pattern when the pattern starts
with an alternation or a character class (the engine tries it at every position). Every pattern here
starts with literal text on each of its top-level alternatives, and a match can only begin where one of
those literals stands: ``str.find`` (fast substring search) finds that place, and the pattern is run from
there, or not at all when no literal occurs.

>>> needles(r"The NVIDIA driver on your system is too old(?: \\(found\\))?")
(('The NVIDIA driver on your system is too old',), False)
>>> needles(r"(?i)Segmentation fault|SIGSEGV")
(('segmentation fault', 'sigsegv'), True)
>>> needles(r"signal 9|Killed\\s*$"), needles(r"[a-z]+ failed")
((('signal 9', 'Killed'), False), ((), False))
"""

from __future__ import annotations

import re

_META = set(".^$*+?{}[]|()\\")
_ESCAPED = set(".^$*+?{}[]|()\\/-'\"` :=<>,#@!%&~")
_MIN = 3  # a shorter literal occurs everywhere: no gain


def _top_level_alternatives(source: str) -> list[str] | None:
    """``source`` split at its top-level ``|``; None when brackets do not balance (then no shortcut)."""
    parts, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(source[start:i])
            start = i + 1
        i += 1
    if depth != 0 or in_class:
        return None
    return parts + [source[start:]]


def _leading_literal(alternative: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(alternative):
        ch = alternative[i]
        if ch == "\\" and i + 1 < len(alternative) and alternative[i + 1] in _ESCAPED:
            literal, step = alternative[i + 1], 2
        elif ch in _META:
            break
        else:
            literal, step = ch, 1
        follower = alternative[i + step:i + step + 1]
        if follower and follower in "*?{":
            break  # this character may be absent or repeated: the literal ends before it
        out.append(literal)
        i += step
    return "".join(out)


def needles(pattern: str) -> tuple[tuple[str, ...], bool]:
    """``(literals, ignore_case)``: one literal per top-level alternative that every match of that
    alternative starts with; ``()`` when some alternative has none long enough."""
    ignore_case = pattern.startswith("(?i)")
    source = pattern[4:] if ignore_case else pattern
    if source.startswith("(?"):
        return (), False
    parts = _top_level_alternatives(source)
    if not parts:
        return (), False
    found = []
    for part in parts:
        literal = _leading_literal(part)
        if len(literal) < _MIN:
            return (), False
        found.append(literal.lower() if ignore_case else literal)
    return tuple(found), ignore_case


class Haystack:
    """A log and, made once when a case-insensitive pattern asks, its lower-case copy."""

    def __init__(self, text: str):
        self.text = text
        self._lower: str | None = None

    def lower(self) -> str:
        if self._lower is None:
            self._lower = self.text.lower()
        return self._lower

    def first(self, compiled: re.Pattern, after: int = 0) -> int | None:
        """The first offset at or after ``after`` where ``compiled`` can start; None when it cannot match."""
        literals, ignore_case = needles(compiled.pattern)
        if not literals:
            return after
        text = self.lower() if ignore_case else self.text
        if len(text) != len(self.text):  # a lower-case copy of another length: offsets do not carry over
            return after if any(n in text for n in literals) else None
        places = [at for at in (text.find(n, after) for n in literals) if at >= 0]
        return min(places) if places else None

    def finditer(self, compiled: re.Pattern, after: int = 0):
        start = self.first(compiled, after)
        return iter(()) if start is None else compiled.finditer(self.text, start)

    def search(self, compiled: re.Pattern) -> re.Match | None:
        return next(self.finditer(compiled), None)
