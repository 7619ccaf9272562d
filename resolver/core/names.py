"""Names and paths that come from files someone else wrote: one rule each, used everywhere.

A shared ``pixi.lock``, ``pixi.toml`` or captured machine is untrusted input. Whatever of it becomes a
path, a command-line argument or a line on the terminal passes through here first:

* :func:`check_env_name`: environment names are what pixi allows (lowercase letters, digits, ``-``),
  so a name can never be ``..``, ``a/b`` or ``./../../docs``;
* :func:`inside`: a path derived from input, resolved (symlinks followed), stays inside its root;
* :func:`check_file_name` / :func:`download_name`: a download's file name is one plain name, never a
  path; :func:`local_path`: the file behind a ``file://`` URL or a plain path;
* :func:`redact_url`: an index URL's credentials never reach a cache, a log or a message;
* :func:`check_pypi_name` / :func:`check_version_spec`: what reaches pip (or uv) is a PEP 508 name
  and a version specifier, never an option such as ``-e/some/dir``;
* :func:`printable`: control characters (terminal escapes, bidi overrides) are shown escaped.

>>> check_env_name("cuda12")
'cuda12'
>>> check_env_name("./../../docs")
Traceback (most recent call last):
...
resolver.core.errors.BadInput: environment name './../../docs' is not valid: pixi allows only lowercase letters, digits and '-' (at most 64 characters). Fix: rename the environment in pixi.toml (e.g. 'cuda12') and lock again.
>>> inside("/p/.resolver/envs", "/p/.resolver/envs/cpu"), inside("/p/.resolver/envs", "/p/docs")
(True, False)
>>> printable("GPU \\x1b]0;owned\\x07 \\u202eevil")
'GPU \\\\x1b]0;owned\\\\x07 \\\\u202eevil'
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from resolver.core.errors import BadInput

ENV_NAME_MAX = 64
_ENV_NAME = re.compile(r"[a-z0-9-]+")  # pixi's rule for environment (and feature) names (fullmatch: no "cpu\n")


def is_env_name(name: object) -> bool:
    return isinstance(name, str) and len(name) <= ENV_NAME_MAX and bool(_ENV_NAME.fullmatch(name))


def check_env_name(name: object, *, where: str = "", fix: str | None = None) -> str:
    """``name`` when it is a valid environment name; else one :class:`BadInput` naming the rule.

    ``where`` says where the name came from (``"pixi.lock"``); ``fix`` replaces the default fix.
    """
    if is_env_name(name):
        return name  # type: ignore[return-value]
    shown = printable(repr(name) if isinstance(name, str) else f"{name!r} ({type(name).__name__})")
    if isinstance(name, str) and len(name) > ENV_NAME_MAX:
        shown = printable(repr(name[:40] + "…"))
    origin = f" in {where}" if where else ""
    raise BadInput(f"environment name {shown}{origin} is not valid: pixi allows only lowercase letters, digits and "
                   f"'-' (at most {ENV_NAME_MAX} characters)",
                   fix=fix or "rename the environment in pixi.toml (e.g. 'cuda12') and lock again")


def env_name_arg(value: str) -> str:
    """``--env NAME`` (an argparse ``type``): the same rule, as a usage error (exit 2)."""
    from resolver.core.errors import UsageError

    try:
        return check_env_name(value)
    except BadInput as exc:
        raise UsageError(exc.message, fix="pass the name of an environment in pixi.toml, e.g. --env cpu") from None


# -------------------------------------------------------------------------------------------- paths


def inside(root: str | os.PathLike, path: str | os.PathLike, *, strict: bool = False) -> bool:
    """Whether ``path`` lies inside ``root`` once both are resolved (``..`` and symlinks followed).

    ``strict`` excludes ``root`` itself. A path whose last part is a symlink is judged by where the
    link points; call it on ``path.parent`` to judge a link that is itself to be replaced or removed.
    """
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real == real_root:
        return not strict
    return real.startswith(real_root.rstrip(os.sep) + os.sep)


def check_inside(root: str | os.PathLike, path: str | os.PathLike, *, what: str, fix: str) -> Path:
    """``path`` when :func:`inside` ``root`` (and not the root itself); else one :class:`BadInput`."""
    if not inside(root, path, strict=True):
        raise BadInput(f"{what} {printable(str(path))} leads outside {root}", fix=fix)
    return Path(path)


def check_relative(rel: object, *, what: str, fix: str) -> str:
    """A relative path made of plain parts (no absolute path, no ``..``, no empty part, no NUL)."""
    # an absolute path (a leading / or backslash) and "" have an empty part
    if not isinstance(rel, str) or "\0" in rel \
            or any(part in ("", ".", "..") for part in rel.replace("\\", "/").split("/")):
        raise BadInput(f"{what} {printable(repr(rel))} is not a plain relative path", fix=fix)
    return rel


NAME_MAX = 255


def check_file_name(name: object, *, what: str, fix: str) -> str:
    """One plain file name (what a download is saved as): no ``/``, no ``..``, no control characters."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\" in name \
            or len(name.encode("utf-8", "surrogatepass")) > NAME_MAX or printable(name) != name:
        raise BadInput(f"{what} {printable(repr(name))} is not a plain file name", fix=fix)
    return name


# ----------------------------------------------------------------------------- URLs and downloads


def local_path(url: str) -> Path | None:
    """The file behind a ``file://`` URL or a plain path; None for remote URLs.

    >>> local_path("file:///srv/wheels/torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl").name
    'torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl'
    >>> local_path("https://pypi.org/simple/torch/") is None
    True
    """
    if url.startswith("file://"):
        return Path(unquote(urlsplit(url).path))
    if url.startswith("/"):
        return Path(url)
    return None


def file_name_of(url: str) -> str:
    """The last path segment of ``url``, decoded (not checked: for comparing, never for a path)."""
    return unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])


def download_name(url: str) -> str:
    """The file name an artefact is stored as: the URL's last path segment, decoded, which must be one
    plain name (a ``%2F``-encoded ``..`` in a shared lock must not become a path).

    >>> download_name("https://h/whl/torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl")
    'torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl'
    """
    return check_file_name(unquote(urlsplit(url).path.rsplit("/", 1)[-1]), what=f"the file name of {redact_url(url)}",
                           fix="restore pixi.lock from version control or lock again: a locked URL must end in "
                               "the artefact's own file name")


def redact_url(url: str) -> str:
    """``url`` with the password (or token) in it replaced by ``****``, as pip shows index URLs: what
    is written to a cache, a log or a message.

    >>> redact_url("https://user:s3cret@pypi.example.org/simple/")
    'https://user:****@pypi.example.org/simple/'
    >>> redact_url("https://token@pypi.example.org/simple/"), redact_url("/srv/wheels")
    ('https://****@pypi.example.org/simple/', '/srv/wheels')
    """
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    netloc, slash, path = rest.partition("/")
    userinfo, _, host = netloc.rpartition("@")
    user, colon, _password = userinfo.partition(":")
    shown = f"{user}:****" if colon else "****"
    return f"{scheme}://{shown}@{host}{slash}{path}"


def without_credentials(url: str) -> str:
    """``url`` with any user and password removed: what a lock or a cache records of an index's file
    (credentials stay in the configuration they came from).

    >>> without_credentials("https://user:s3cret@pypi.example.org/simple/x-1.whl")
    'https://pypi.example.org/simple/x-1.whl'
    """
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    netloc, slash, path = rest.partition("/")
    return f"{scheme}://{netloc.rpartition('@')[2]}{slash}{path}"


# --------------------------------------------------------------------------------- PyPI (pip / uv)

_PEP508_NAME = re.compile(r"[A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9]", re.IGNORECASE)
_SPECIFIER = r"[ \t]*(?:===|==|~=|!=|<=|>=|<|>)[ \t]*[A-Za-z0-9][A-Za-z0-9.*+!_-]*[ \t]*"  # no line breaks
_SPECIFIER_SET = re.compile(rf"(?:{_SPECIFIER})(?:,(?:{_SPECIFIER}))*")


def is_pypi_name(name: object) -> bool:
    return isinstance(name, str) and bool(_PEP508_NAME.fullmatch(name))


def check_pypi_name(name: object, *, where: str = "pixi.toml") -> str:
    """A PEP 508 project name (letters, digits, ``.``, ``_``, ``-``; starting and ending with a letter
    or digit): never a pip option such as ``-e/some/dir`` or ``--index-url``.

    >>> check_pypi_name("Typing_Extensions")
    'Typing_Extensions'
    """
    if not is_pypi_name(name):
        raise BadInput(f"{printable(repr(name))} in {where} is not a PyPI project name (PEP 508: letters, digits, "
                       "'.', '_' and '-', starting and ending with a letter or digit)",
                       fix=f"correct the name in {where}'s [pypi-dependencies]")
    return name  # type: ignore[return-value]


def check_version_spec(spec: object, *, name: str, where: str = "pixi.toml") -> str:
    """A PEP 440 specifier set (``==2.13.0+cpu``, ``>=1,<2``) or ``*``/empty for any version.

    >>> check_version_spec(">=1.0, <2", name="x")
    '>=1.0, <2'
    """
    if isinstance(spec, str) and (spec.strip(" \t") in ("", "*") or _SPECIFIER_SET.fullmatch(spec)):
        return spec
    raise BadInput(f"the version of {printable(str(name))} in {where}, {printable(repr(spec))}, is not a version "
                   "specifier", fix=f"write it as \"*\", \"==1.2.3\" or \">=1.2,<2\" in {where}")


def check_requirement(text: str, *, where: str = "pixi.toml") -> str:
    """A requirement string as :meth:`EnvSpec.pypi_requirements` builds it (``name[extras]spec``):
    the last check before it goes on a pip or uv command line."""
    match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(\[[A-Za-z0-9._,-]*\])?(.*)", text or "", re.DOTALL)
    check_pypi_name(match.group(1) if match else text, where=where)
    check_version_spec(match.group(3), name=match.group(1), where=where)
    return text


# ------------------------------------------------------------------- values that reach generated files
# ``build --matrix`` writes pixi.toml's fleet into CI YAML and a shell script: what it reads there is checked
# where pixi.toml is read (resolver.project.manifest_shape), so that no value can be code in any of them.

ARCH_RULE = "a compute capability X.Y (e.g. 9.0) or a gfx name (e.g. gfx90a)"
_ARCH = re.compile(r"[0-9]{1,2}\.[0-9]{1,2}|gfx[0-9a-f]{3,4}")  # the forms `lock --fleet` writes
CHANNEL_SCHEMES = ("http", "https", "file")
# characters a channel's URL or folder never needs and a shell or a YAML reader would take for syntax
_CHANNEL_SYNTAX = frozenset("$`\"'\\;|&<>(){}[]*?!#^")
CHANNEL_MAX = 2048


def is_arch_name(text: object) -> bool:
    """Whether ``text`` is one GPU architecture as a fleet records it (fullmatch: no ``"9.0\\n"``).

    >>> is_arch_name("9.0"), is_arch_name("gfx90a"), is_arch_name("9.0\\n"), is_arch_name("$(id)")
    (True, True, False, False)
    """
    return isinstance(text, str) and bool(_ARCH.fullmatch(text))


def control_characters(text: str) -> list[str]:
    """The characters of ``text`` that are not shown as themselves on one line (escaped, as a message shows
    them): C0 and C1 controls (tab and newline among them), DEL, line and paragraph separators, formats
    (bidirectional overrides, zero-width characters) and lone surrogates.

    >>> control_characters("a\\tb\\u2028c"), control_characters("é/ok")
    (['\\\\x09', '\\\\u2028'], [])
    """
    import unicodedata

    return [_escape(c) for c in text if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]


def channel_problem(text: object) -> str | None:
    """What makes ``text`` unfit as a channel location (a URL or a folder) that generated files carry, or None.

    A location is an ``http(s)://`` or ``file://`` URL or a path, of printable characters with no blank at
    either end, not starting with ``-``, and without shell or YAML syntax (``$`` `` ` `` quotes ``\\``
    ``;|&<>(){}[]*?!#^``) that no channel's URL or folder needs.

    >>> channel_problem("https://kernels.example.org/mamba/"), channel_problem("/shared/kernels")
    (None, None)
    >>> channel_problem("/shared/$(touch x)")
    "holds '$', '(', ')': shell or YAML syntax, which no channel's URL or folder needs"
    >>> channel_problem("ftp://h/c")
    'is a URL of scheme ftp; a channel is an http(s):// or file:// URL or a folder'
    """
    if not isinstance(text, str) or not text:
        return "is empty"
    if len(text) > CHANNEL_MAX:
        return f"is longer than {CHANNEL_MAX} characters"
    controls = control_characters(text)
    if controls:
        return f"holds control characters ({', '.join(dict.fromkeys(controls))})"
    if text != text.strip():
        return "starts or ends with a blank"
    if text.startswith("-"):
        return "starts with '-' (it would read as an option)"
    syntax = [c for c in dict.fromkeys(text) if c in _CHANNEL_SYNTAX]
    if syntax:
        return f"holds {', '.join(repr(c) for c in syntax)}: shell or YAML syntax, which no channel's URL or folder needs"
    scheme, sep, rest = text.partition("://")
    if sep:
        if scheme.lower() not in CHANNEL_SCHEMES:
            return f"is a URL of scheme {printable(scheme)}; a channel is an http(s):// or file:// URL or a folder"
        if scheme.lower() != "file" and not rest.split("/", 1)[0]:
            return "is a URL without a host"
    return None


# ------------------------------------------------------------------------------------------ printing

_BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` with control characters shown as escapes (``\\x1b``, ``\\u202e``): terminal escape
    sequences (ESC, OSC, CSI), other C0/C1 controls, DEL and bidirectional overrides from input
    can then neither rewrite the screen nor reorder what is read. Tabs stay; newlines stay only
    with ``keep_newlines`` (our own multi-line text)."""
    text = str(text)
    keep = "\t\n" if keep_newlines else "\t"
    if text.isprintable():  # tabs, newlines, controls and bidi overrides are not printable: the usual case
        return text
    return "".join(c if c in keep or (c.isprintable() and ord(c) not in _BIDI) or _harmless(c) else _escape(c)
                   for c in text)


def _harmless(char: str) -> bool:
    """Non-printable by Python's definition but safe on a terminal: separators and formats other than
    the bidi controls, private use (C0/C1 controls and DEL are category Cc, never harmless)."""
    import unicodedata

    return ord(char) not in _BIDI and unicodedata.category(char) in ("Zs", "Cf", "Co")


def canonical_name(name: str) -> str:
    """A PyPI project's normalised name (PEP 503), as every comparison of names uses it.

    >>> canonical_name("Typing_Extensions"), canonical_name("zope.interface")
    ('typing-extensions', 'zope-interface')
    """
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))
