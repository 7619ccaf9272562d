"""Reading a package index's project page: the files it lists, whatever form it is served in.

A page is untrusted text: PEP 691's JSON (``application/vnd.pypi.simple.v1+json``) or PEP 503's
HTML (an ``<a href>`` per file, the sha256 in the link's fragment). Both become the same values;
nothing on the page is followed here, and a malformed entry is left out rather than trusted.

>>> page = '<a href="../../f/tiny-1.0-py3-none-any.whl#sha256=ab12">tiny</a>'
>>> index_files(page, "https://example.org/simple/tiny/")
[IndexFile(file_name='tiny-1.0-py3-none-any.whl', url='https://example.org/f/tiny-1.0-py3-none-any.whl', sha256='ab12')]
>>> index_files('{"files": [{"filename": "a-1.whl", "url": "a-1.whl", "hashes": {"sha256": "cd"}}]}',
...             "https://example.org/simple/a/")
[IndexFile(file_name='a-1.whl', url='https://example.org/simple/a/a-1.whl', sha256='cd')]
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urljoin

PEP691 = "application/vnd.pypi.simple.v1+json"

_HREF = re.compile(r'href="([^"]*)"')


@dataclass(frozen=True)
class IndexFile:
    file_name: str
    url: str  # absolute, without the fragment
    sha256: str  # "" where the page does not state it


def index_files(text: str, page_url: str) -> list[IndexFile]:
    """The files a project page lists, in the page's order (JSON when the text is a JSON object)."""
    if text.lstrip().startswith("{"):
        try:
            document = json.loads(text)
        except ValueError:
            return []
        return json_index_files(document, page_url)
    out = []
    for href in _HREF.findall(text):
        url, _, fragment = html.unescape(href).partition("#")
        if not url:
            continue
        sha = fragment[len("sha256="):] if fragment.startswith("sha256=") else ""
        out.append(IndexFile(unquote(url.rsplit("/", 1)[-1]), urljoin(page_url, url), sha))
    return out


def json_index_files(document: Any, page_url: str) -> list[IndexFile]:
    """The files of a PEP 691 document already parsed; anything not of its shape lists nothing."""
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, list):
        return []
    out = []
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("filename"), str) or not entry["filename"]:
            continue
        hashes = entry.get("hashes") if isinstance(entry.get("hashes"), dict) else {}
        sha = hashes.get("sha256") if isinstance(hashes.get("sha256"), str) else ""
        url = urljoin(page_url, str(entry.get("url", ""))).partition("#")[0]
        out.append(IndexFile(entry["filename"], url, sha))
    return out

