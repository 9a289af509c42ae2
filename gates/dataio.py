"""YAML and JSON read as data, never as code, with the line of every value kept.

YAML is composed by ruamel.yaml's safe loader into nodes and turned into plain data here, so
no constructor ever runs: tags outside YAML's core schema, aliases, merge keys, duplicate keys,
NaN and deep nesting are refused with the line where they stand.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64
Path_ = tuple[object, ...]

_CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_CORE}{name}" for name in ("str", "int", "float", "bool", "null", "timestamp")}


class DataError(Exception):
    """Unparseable or refused data; `line` is 1-based (0 when unknown)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def load_yaml(text: str) -> tuple[Any, dict[Path_, int]]:
    """Plain data (dict, list, str, int, float, bool, None) and the line of every path in it."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        node = YAML(typ="safe", pure=True).compose(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        raise DataError(f"invalid YAML: {exc.problem or exc.context}", line) from None
    except YAMLError as exc:
        raise DataError(f"invalid YAML: {exc}") from None
    except RecursionError:
        raise DataError("invalid YAML: nested too deeply") from None
    lines: dict[Path_, int] = {}
    if node is None:
        return None, lines
    return _Builder(lines).build(node, (), 0), lines


class _Builder:
    def __init__(self, lines: dict[Path_, int]) -> None:
        self.lines = lines
        self.seen: set[int] = set()

    def build(self, node: Any, path: Path_, depth: int) -> Any:
        line = node.start_mark.line + 1
        self.lines[path] = line
        if id(node) in self.seen:
            raise DataError("YAML aliases are not allowed", line)
        self.seen.add(id(node))
        if depth > MAX_DEPTH:
            raise DataError(f"nested deeper than {MAX_DEPTH} levels", line)
        tag = str(node.tag)
        if tag == f"{_CORE}map":
            return self._mapping(node, path, depth)
        if tag == f"{_CORE}seq":
            return [self.build(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        if tag in _SCALAR_TAGS:
            return _scalar(tag.removeprefix(_CORE), node.value, line)
        raise DataError(f"YAML tag {tag.replace(_CORE, '!!')} is not allowed: plain data only", line)

    def _mapping(self, node: Any, path: Path_, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if str(key_node.tag) not in _SCALAR_TAGS or str(key_node.tag).endswith(("merge", "null")):
                raise DataError("mapping keys must be plain scalars (no merge keys)", key_line)
            key = str(key_node.value)
            if key in result:
                raise DataError(f"duplicate key '{key}'", key_line)
            result[key] = self.build(value_node, (*path, key), depth + 1)
            self.lines[(*path, key)] = key_line
        return result


def _scalar(kind: str, raw: str, line: int) -> Any:
    if kind == "null":
        return None
    if kind == "bool":
        return raw.lower() == "true"
    try:
        if kind == "int":
            text = raw.replace("_", "")
            return int(text, 0) if text.lower().lstrip("+-").startswith(("0x", "0o", "0b")) else int(text, 10)
        if kind == "float":
            if raw.lower().lstrip("+-") in (".nan", ".inf"):
                raise DataError(f"'{raw}' is not allowed: numbers must be finite", line)
            return float(raw.replace("_", ""))
    except ValueError:
        raise DataError(f"'{raw}' is not a valid {kind}", line) from None
    return raw  # str, and timestamps kept as the text that was written


def load_json(text: str) -> Any:
    """JSON with duplicate keys, NaN and Infinity refused, and deep nesting a parse error."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in items:
            if key in result:
                raise DataError(f"duplicate key '{key}'")
            result[key] = value
        return result

    def constant(name: str) -> Any:
        raise DataError(f"{name} is not allowed: numbers must be finite")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON: {exc.msg}", exc.lineno) from None
    except RecursionError:
        raise DataError("invalid JSON: nested too deeply") from None
