"""The JSON Schemas shipped inside the package, and validation that reports the nearest line.

jsonschema is imported only when something is validated: it is the slowest import we have.
"""

from __future__ import annotations

import os

from gates.infra import jsonio
from gates.infra.text import excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable

NAMES = ("config", "handoff", "flag", "check-result", "record", "remote-claim")


def schema_dir() -> str:
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    shipped = os.path.join(package, "schemas")  # gates/schemas/ in an installed package
    if os.path.isdir(shipped):
        return shipped
    # A source checkout (editable install or tests run in place): the top-level folder.
    return os.path.join(os.path.dirname(package), "schemas")


def schema_path(name: str) -> str:
    """The file of a shipped schema: one of NAMES, or `harness/NAME` (a harness document's, schemas/harness/)."""
    folder, _, base = name.rpartition("/")
    if not (name in NAMES or folder == "harness" and base.replace("-", "").isalnum() and base.isascii()):
        raise KeyError(name)
    return os.path.join(schema_dir(), f"{name}.schema.json")


_READ: dict[str, bytes] = {}
_LOADED: dict[str, dict[str, Any]] = {}


def schema_bytes(name: str) -> bytes:
    """The shipped schema's bytes (read once a run): a part of every cache key that depends on it."""
    if name not in _READ:
        with open(schema_path(name), "rb") as handle:
            _READ[name] = handle.read()
    return _READ[name]


def load(name: str) -> dict[str, Any]:
    if name not in _LOADED:
        _LOADED[name] = jsonio.loads(schema_bytes(name).decode("utf-8"))
    return _LOADED[name]


def check_schema(schema: dict[str, Any]) -> str | None:
    """None when `schema` is a valid JSON Schema, else why not."""
    from jsonschema import exceptions, validators

    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as exc:
        return str(exc.message)
    return None


def validate(schema: dict[str, Any], instance: Any, lines: dict[tuple[object, ...], int]) -> list[tuple[int, str]]:
    """Every way `instance` breaks `schema`, as (line, message), in line order."""
    from jsonschema import validators

    cls = validators.validator_for(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    problems: list[tuple[int, str]] = []
    for error in validator.iter_errors(instance):
        problems.extend(_describe(error, lines))
    return sorted(set(problems))


def _describe(error: Any, lines: dict[tuple[object, ...], int]) -> Iterable[tuple[int, str]]:
    if error.validator in ("oneOf", "anyOf") and error.context:
        # "not valid under any of the given schemas" helps nobody: say what the closest branch wanted.
        specific = [e for e in error.context if e.validator != "type"] or list(error.context)
        yield from _describe(specific[0], lines)
        return
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        for key in error.instance:
            if key not in allowed:
                where = excerpt(_dotted((*path, key)), 120)
                yield _nearest((*path, key), lines), f"unknown key '{where}'{_suggest(key, allowed)}"
        return
    where = excerpt(_dotted(path) or "(top level)", 120)
    message = excerpt(error.message, 160)  # jsonschema quotes the value: a short, sanitised excerpt only
    if error.validator == "pattern" and "description" in error.schema:
        message = f"'{excerpt(str(error.instance))}' is not {error.schema['description']}"
    yield _nearest(path, lines), f"{where}: {message}"


def _dotted(path: tuple[object, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _nearest(path: tuple[object, ...], lines: dict[tuple[object, ...], int]) -> int:
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 1


def _suggest(key: str, allowed: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(allowed), n=1)
    return f" (did you mean '{close[0]}'?)" if close else f" (allowed: {', '.join(sorted(allowed))})"
