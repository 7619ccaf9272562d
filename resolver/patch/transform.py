"""The structural fix: give named function definitions internal linkage (``static inline``).

A C/C++ header that *defines* a non-inline function breaks the one-definition rule as soon as two
translation units that include it are linked together ("multiple definition of `__float2bfloat16`").
The fix inserts ``static inline`` after the leading attribute macros of each named definition, so

    __HOST_DEVICE__ float __low2float(const __hip_bfloat162 a) { ... }

becomes

    __HOST_DEVICE__ static inline float __low2float(const __hip_bfloat162 a) { ... }

Definitions are found by signature (name followed by a parameter list and a body), never by line
number, and a definition that already has internal linkage or is inline is left alone: directly
(``static``, ``inline``, ``__forceinline__``, ``constexpr``) or through an object-like macro whose
every ``#define`` expands to one of those (ROCm 6.1 made ``__HOST_DEVICE__`` itself expand to
``__host__ __device__ static inline``; adding the fix there again would double it).

>>> text = "#define __HD__\\n__HD__ float f(int a) { return a; }\\n__HD__ float g(int a) { return f(a); }\\n"
>>> result = add_static_inline(text, ["f"])
>>> result.text.splitlines()[1]
'__HD__ static inline float f(int a) { return a; }'
>>> [(c.function, c.line) for c in result.changes]
[('f', 2)]
>>> add_static_inline(result.text, ["f"]).changes, add_static_inline(result.text, ["f"]).already_inline
((), ('f',))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

LINKAGE_WORDS = frozenset({"static", "inline", "__inline__", "__forceinline__", "constexpr"})
# Words that begin a statement, never a declaration: a line "return f(x);" calls f, it does not define it.
_STATEMENT_WORDS = frozenset({"return", "if", "else", "while", "for", "do", "switch", "case", "goto", "throw",
                              "delete", "new", "sizeof", "typedef", "using", "namespace", "define"})
_ATTRIBUTE = re.compile(r"^__\w+__$")  # __HOST_DEVICE__, __device__, __host__, __BF16_HOST_DEVICE__
_OBJECT_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?![\w(])[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Change:
    """One definition the fix rewrote: the function, its 1-based line, the line before and after."""

    function: str
    line: int
    before: str
    after: str

    def to_json(self) -> dict[str, object]:
        return {"function": self.function, "line": self.line, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class TransformResult:
    text: str
    changes: tuple[Change, ...]
    already_inline: tuple[str, ...]  # functions whose every definition already has internal linkage
    missing: tuple[str, ...]  # functions with no definition in the text

    @property
    def changed_functions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.function for c in self.changes))


@dataclass(frozen=True)
class _Definition:
    function: str
    start: int  # offset of the line start
    specs_start: int
    specs: tuple[tuple[str, int, int], ...]  # (word, start, end) of each word before the name


def add_static_inline(text: str, functions: Sequence[str], insert: str = "static inline") -> TransformResult:
    """Insert ``insert`` into every definition of ``functions`` that lacks internal linkage."""
    macros = _object_macros(text)
    edits: list[tuple[int, str, _Definition]] = []
    already: list[str] = []
    missing: list[str] = []
    for name in functions:
        definitions = list(_definitions(text, name))
        if not definitions:
            missing.append(name)
            continue
        todo = [d for d in definitions if not _has_linkage(d, macros)]
        if not todo:
            already.append(name)
        for definition in todo:
            attrs = [w for w in definition.specs if _ATTRIBUTE.match(w[0]) and w[0] not in LINKAGE_WORDS]
            leading = []
            for word in definition.specs:  # only the attribute words that come first
                if word in attrs:
                    leading.append(word)
                else:
                    break
            if leading:
                edits.append((leading[-1][2], " " + insert, definition))
            else:
                edits.append((definition.specs_start, insert + " ", definition))
    new_text = text
    for offset, piece, _ in sorted(edits, key=lambda e: e[0], reverse=True):
        new_text = new_text[:offset] + piece + new_text[offset:]
    changes = []
    shift = 0
    for _offset, piece, definition in sorted(edits, key=lambda e: e[0]):
        line_no = text.count("\n", 0, definition.start) + 1
        end = text.find("\n", definition.start)
        before = text[definition.start:end if end >= 0 else len(text)]
        new_start = definition.start + shift
        new_end = new_text.find("\n", new_start)
        after = new_text[new_start:new_end if new_end >= 0 else len(new_text)]
        changes.append(Change(definition.function, line_no, before, after))
        shift += len(piece)
    return TransformResult(new_text, tuple(changes), tuple(already), tuple(missing))


def _definitions(text: str, name: str):
    pattern = re.compile(r"^([ \t]*)((?:[A-Za-z_]\w*[ \t]+)+?)" + re.escape(name) + r"[ \t]*\(", re.MULTILINE)
    for match in pattern.finditer(text):
        words = tuple((m.group(0), match.start(2) + m.start(), match.start(2) + m.end())
                      for m in _WORD.finditer(match.group(2)))
        if not words or any(w[0] in _STATEMENT_WORDS for w in words):
            continue
        if _is_inside_comment(text, match.start()):
            continue
        body = _after_parameters(text, match.end() - 1)
        if body != "{":
            continue  # a declaration or something else, not a definition
        yield _Definition(name, match.start(), match.start(2), words)


def _after_parameters(text: str, open_paren: int) -> str:
    """The first significant character after the balanced parameter list starting at ``open_paren``."""
    depth = 0
    i = open_paren
    while i < len(text):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                break
        i += 1
    rest = text[i + 1:]
    rest = re.sub(r"^(?:\s|//[^\n]*|/\*.*?\*/)*", "", rest, flags=re.DOTALL)
    return rest[:1]


def _is_inside_comment(text: str, offset: int) -> bool:
    opened = text.rfind("/*", 0, offset)
    return opened >= 0 and text.rfind("*/", opened, offset) < 0


def _object_macros(text: str) -> dict[str, list[str]]:
    macros: dict[str, list[str]] = {}
    for match in _OBJECT_MACRO.finditer(text):
        expansion = re.sub(r"//.*$", "", match.group(2)).strip()
        macros.setdefault(match.group(1), []).append(expansion)
    return macros


def _gives_linkage(word: str, macros: dict[str, list[str]], seen: frozenset[str] = frozenset()) -> bool:
    if word in LINKAGE_WORDS:
        return True
    if word not in macros or word in seen:
        return False
    return all(any(_gives_linkage(w, macros, seen | {word}) for w in _WORD.findall(expansion))
               for expansion in macros[word])


def _has_linkage(definition: _Definition, macros: dict[str, list[str]]) -> bool:
    return any(_gives_linkage(word, macros) for word, _, _ in definition.specs)
