"""Known error signatures (resolver/doctor/signatures.toml) and matching them against a log.

>>> sigs = load_signatures()
>>> [m.signature.id for m in match_log("ImportError: x.so: undefined symbol: _ZN3c104cuda9SetDeviceEi", sigs)]
['undefined-c10-symbol']
>>> decode_log(b"caf\\xe9 no kernel image is available for execution on the device")[:4]
'caf\\ufffd'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from resolver.core.toml import parse_toml
from resolver.doctor.needles import CANDIDATES, Haystack, lowered

DATA_FILE = Path(__file__).resolve().parent / "signatures.toml"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_TAIL_LINES = 5


@dataclass(frozen=True)
class Signature:
    id: str
    title: str
    patterns: tuple[re.Pattern, ...]
    cause: str
    fix: str
    sources: tuple[str, ...]
    logs: tuple[str, ...] = ()
    requires: tuple[re.Pattern, ...] = ()
    at_end: bool = False
    fix_detail: str = ""
    category: str = ""
    specificity: int = 50
    unless_same: tuple[str, ...] = ()
    rocm: tuple[str, ...] = ()  # applies only on these ROCm releases (prefixes, "6.0"), or when the ROCm is unknown
    rocm_not: tuple[str, ...] = ()  # applies only when the ROCm is known and none of these


@dataclass(frozen=True)
class Match:
    signature: Signature
    line: int  # 1-based line of the first matching pattern
    excerpt: str  # that line, trimmed
    groups: dict = field(default_factory=dict)


def _compile(items, where: str) -> tuple[re.Pattern, ...]:
    try:
        return tuple(re.compile(p, re.MULTILINE) for p in items)
    except re.error as exc:
        raise ValueError(f"{where}: bad regular expression ({exc})") from exc


def load_signatures(path: Path | None = None) -> tuple[Signature, ...]:
    path = path or DATA_FILE
    from resolver.core.fs import read_text_bounded

    data = parse_toml(read_text_bounded(path, limit=16 << 20, what="the signature table"), what=str(path),
                      fix="restore it from the repository (git checkout resolver/doctor/signatures.toml)")
    out = []
    for row in data.get("signature", []):
        where = f"{path.name}: {row.get('id', '?')}"
        for key in ("id", "title", "patterns", "cause", "fix", "sources"):
            if not row.get(key):
                raise ValueError(f"{where}: missing '{key}'")
        out.append(Signature(id=row["id"], title=row["title"], patterns=_compile(row["patterns"], where),
                             requires=_compile(row.get("requires", ()), where), cause=row["cause"], fix=row["fix"],
                             fix_detail=row.get("fix_detail", ""), sources=tuple(row["sources"]),
                             logs=tuple(row.get("logs", ())), at_end=bool(row.get("at_end", False)),
                             category=row.get("category", ""), specificity=int(row.get("specificity", 50)),
                             unless_same=tuple(row.get("unless_same", ())), rocm=tuple(row.get("rocm", ())),
                             rocm_not=tuple(row.get("rocm_not", ()))))
    ids = [s.id for s in out]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{path.name}: duplicate signature ids")
    return tuple(out)


def decode_log(data: bytes) -> str:
    """Logs come in any encoding (a cp936 console, a truncated UTF-8 sequence): never fail on them."""
    text = data.decode("utf-8", errors="replace")
    return _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")


def _tail_start(text: str) -> int:
    """Offset where the last few non-empty lines begin (read from the end: a huge log costs its tail, and
    a run of blank lines is stepped over 64 KiB at a time, not line by line).

    >>> text = "a\\nb\\n" + "\\n" * 100_000 + "c\\n \\nd\\ne\\nf\\n\\n"
    >>> text[_tail_start(text):].split()
    ['b', 'c', 'd', 'e', 'f']
    """
    seen, end = 0, len(text)
    while True:
        end = _last_visible(text, end)
        if end == 0:
            return 0
        start = text.rfind("\n", 0, end) + 1
        seen += 1
        if seen == _TAIL_LINES:
            return start
        end = start


def last_lines(text: str, count: int) -> list[str]:
    """The last ``count`` lines of ``text`` that are not blank, first to last, read from its end.

    >>> last_lines("a\\n\\n b \\n" + "\\n" * 100_000 + "c\\n  \\n", 2)
    [' b ', 'c']
    """
    found: list[str] = []
    end = len(text)
    while len(found) < count:
        end = _last_visible(text, end)
        if end == 0:
            break
        start = text.rfind("\n", 0, end) + 1
        stop = text.find("\n", start)
        found.append(text[start:stop if stop >= 0 else len(text)])
        end = start
    return found[::-1]


def _last_visible(text: str, end: int) -> int:
    """One past the last character before ``end`` that is not white space; 0 when there is none."""
    while end > 0:
        start = max(0, end - (1 << 16))
        kept = text[start:end].rstrip()
        if kept:
            return start + len(kept)
        end = start
    return 0


def _line_at(text: str, offset: int) -> tuple[int, str]:
    """The 1-based number and the text of the line holding ``offset``."""
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return text.count("\n", 0, offset) + 1, text[start:end if end >= 0 else len(text)]


def match_log(text: str, signatures: tuple[Signature, ...]) -> list[Match]:
    """Every signature that matches ``text``, most specific first, then by position in the log. Each
    pattern runs from the first place its leading literal stands (resolver/doctor/needles.py), so a log
    costs one substring search per pattern wherever the pattern cannot match."""
    found: list[Match] = []
    hay = Haystack(text)
    tail = _tail_start(text)
    for sig in signatures:
        required = [hay.search(r) for r in sig.requires]
        if not all(required):
            continue
        hit = None
        for pattern in sig.patterns:
            hit = hay.search(pattern, tail if sig.at_end else 0)
            if hit:
                break
        if hit is None:
            continue
        groups = {k: v for k, v in hit.groupdict().items() if v}
        for m in required:
            groups.update({k: v for k, v in m.groupdict().items() if v})
        line_no, line = _line_at(text, hit.start())
        found.append(Match(sig, line_no, line.strip()[:400], groups))
    found.sort(key=lambda m: (-m.signature.specificity, m.line))
    return found


_ROCM_IN_LOG = re.compile(r"/opt/rocm-(\d+\.\d+(?:\.\d+)?)|\bROCm[ -](?:version:?\s*)?(\d+\.\d+(?:\.\d+)?)|\brocm-(\d+\.\d+\.\d+)",
                          re.IGNORECASE)


def rocm_in_log(text: str) -> str | None:
    """The ROCm release a log names (an install path, "ROCm 7.0.1", "rocm-6.4.3"), the last one said.

    >>> rocm_in_log("-L/opt/rocm-6.0.0/lib -lamdhip64"), rocm_in_log("* ROCm 7.0.1.70001-42~24.04"), rocm_in_log("x")
    ('6.0.0', '7.0.1', None)
    """
    low = lowered(text)
    end = len(text)
    for _ in range(CANDIDATES):  # each "rocm" from the end: every form names it, at most 5 characters in
        at = low.rfind("rocm", 0, end)
        if at < 0:
            return None
        line_end = text.rfind("\n", 0, at) + 1 + 4000  # a line is read to its 4000th character, no further
        for start in (at - 5, at):
            match = _ROCM_IN_LOG.match(text, start, min(at + 64, line_end)) if start >= 0 else None
            if match is not None:
                return next(g for g in match.groups() if g)
        end = at
    return None


_WORD = re.compile(r"[a-z][a-z0-9_+]{3,}")
_COMMON = frozenset("this that with from when than there their then were your have does into only other same what "
                    "which error file line python the found version module".split())
_CLOSEST_WINDOW = 1 << 16  # the end of a log holds its error: the words of its last 64 KiB are compared


def closest_families(text: str, signatures: tuple[Signature, ...], limit: int = 3) -> tuple[Signature, ...]:
    """The signatures whose titles share the most words with the end of a log none of them matched
    (two words at least): what a reader should compare the log with.

    >>> [s.id for s in closest_families("nvcc warning: gpu architecture sm_35 deprecated", load_signatures())][:1]
    ['nvcc-unsupported-arch']
    """
    words = set(_WORD.findall(text[-_CLOSEST_WINDOW:].lower())) - _COMMON
    scored = []
    for sig in signatures:
        shared = set(_WORD.findall(sig.title.lower())) - _COMMON
        score = len(shared & words)
        if score >= 2:
            scored.append((-score, sig.id, sig))
    return tuple(sig for _, _, sig in sorted(scored)[:limit])
