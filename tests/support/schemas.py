"""Validating a command's --json document against its schema (resolver/schemas/, one per command,
referring to each other by ``$id``)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

SCHEMAS = Path(__file__).resolve().parents[2] / "resolver" / "schemas"


@lru_cache(maxsize=1)
def registry():
    from referencing import Registry, Resource

    resources = []
    for path in sorted(SCHEMAS.glob("*.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


def schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))


def validate(name: str, document) -> None:
    """Raise jsonschema's ValidationError (with the path of the first wrong key) unless ``document``
    fits schema ``name`` (a command's, or ``error``)."""
    import jsonschema

    jsonschema.Draft202012Validator(schema(name), registry=registry()).validate(document)


def validate_output(command: str, stdout: str, returncode: int) -> dict:
    """The document a command printed: its own schema when it succeeded (or, for doctor and verify,
    reported problems), error.json otherwise."""
    document = json.loads(stdout)
    failed = returncode != 0 and "error" in document and not (command == "patch" and "patches" in document)
    validate("error" if failed else command, document)
    return document
