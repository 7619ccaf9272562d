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

import functools
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


CANDIDATES = 20_000  # places one pattern is tried at: past them the log repeats a near-miss, not an error


@functools.lru_cache(maxsize=1024)
def _needles_of(compiled: re.Pattern) -> tuple[tuple[str, ...], bool]:
    """:func:`needles` of a compiled pattern, case-insensitive by its flags too (``re.I`` or ``(?i)``)."""
    literals, ignore_case = needles(compiled.pattern)
    if compiled.flags & re.IGNORECASE:
        return tuple(literal.lower() for literal in literals), True
    return literals, ignore_case


def lowered(text: str) -> str:
    """``text`` in lower case with every offset kept: ``str.lower`` where that keeps the length (it does
    for all but a few letters, such as the dotted capital I), else ASCII letters only lowered. Made once
    per text (the last one asked for is remembered), for every case-insensitive search of it."""
    if _LOWERED and _LOWERED[0] is text:
        return _LOWERED[1]
    low = text.lower()
    if len(low) != len(text):  # the dotted capital I lowers to two characters: the one letter that does
        low = text.replace("\u0130", "i").lower()
    if len(low) != len(text):
        low = text.translate(_ASCII_LOWER)
    _LOWERED[:] = [text, low]
    return low


_LOWERED: list = []
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


class Haystack:
    """A log searched by the literals its patterns start with: each pattern is tried only where one of
    them stands (found by ``str.find``, in the lower-case copy for a case-insensitive pattern), anchored
    there, and at no more than :data:`CANDIDATES` places, so a 64 MiB log costs one substring search per
    literal, never a regular expression crawling the whole text."""

    def __init__(self, text: str):
        self.text = text
        self._found: dict[tuple[str, bool], tuple[int, int]] = {}  # (literal, case) -> (from, first place or -1)

    def lower(self) -> str:
        return lowered(self.text)

    def first(self, compiled: re.Pattern, after: int = 0) -> int | None:
        """The first offset at or after ``after`` where ``compiled`` can start (one of its literals stands
        there); ``after`` for a pattern without one; None when it cannot match."""
        literals, ignore_case = _needles_of(compiled)
        if not literals:
            return after
        text = self.lower() if ignore_case else self.text
        places = [at for at in (self._find(text, n, after, ignore_case) for n in literals) if at >= 0]
        return min(places) if places else None

    def search(self, compiled: re.Pattern, after: int = 0) -> re.Match | None:
        """The first match of ``compiled`` at or after ``after``, or None."""
        literals, ignore_case = _needles_of(compiled)
        if not literals:
            return compiled.search(self.text, after)
        text = self.lower() if ignore_case else self.text
        places = {n: self._find(text, n, after, ignore_case) for n in literals}
        for _ in range(CANDIDATES):
            live = [at for at in places.values() if at >= 0]
            if not live:
                return None
            at = min(live)
            match = compiled.match(self.text, at)
            if match is not None:
                return match
            for n, where in places.items():
                if where == at:
                    places[n] = self._find(text, n, at + 1, ignore_case)
        return None

    def _find(self, text: str, literal: str, after: int, ignore_case: bool) -> int:
        """``text.find(literal, after)``, remembered: many patterns share a literal, and a literal absent
        from a 64 MiB log costs a whole scan each time it is looked for."""
        key = (literal, ignore_case)
        known = self._found.get(key)
        if known is not None and known[0] <= after and (known[1] >= after or known[1] < 0):
            return known[1]
        at = text.find(literal, after)
        self._found[key] = (after, at)
        return at

    def finditer(self, compiled: re.Pattern, after: int = 0):
        match = self.search(compiled, after)
        return iter(()) if match is None else iter((match,))

    def last(self, compiled: re.Pattern, *, window: int = 4000) -> re.Match | None:
        """The last match of ``compiled`` that starts where one of its literals stands, each tried on the
        ``window`` characters from there (read from the end: the end of a log holds its error)."""
        literals, ignore_case = _needles_of(compiled)
        if not literals:
            raise ValueError(f"{compiled.pattern!r} starts with no literal text")
        text = self.lower() if ignore_case else self.text
        places = {n: text.rfind(n) for n in literals}
        for _ in range(CANDIDATES):
            at = max(places.values())
            if at < 0:
                return None
            match = compiled.match(self.text, at, at + window)
            if match is not None:
                return match
            for n, where in places.items():
                if where == at:
                    places[n] = text.rfind(n, 0, at)
        return None
