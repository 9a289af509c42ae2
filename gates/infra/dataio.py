"""YAML read as data, never as code, with the line of every value kept (JSON's strict reader is jsonio.load_json).

YAML is read as ruamel.yaml's parser events and turned into plain data here, so no
constructor ever runs: tags outside YAML's core schema, aliases, merge keys, duplicate keys,
NaN, deep nesting and lone surrogate escapes (`"\\ud800"`: no character, as jsonio refuses them) are
refused with the line where they stand, and every error of the parser is one line naming its line.
"""

from gates.infra.jsonio import DataError as DataError  # the one error of both readers: YAML's callers catch it here
from gates.infra.jsonio import bounded, guard
from gates.infra.text import escape_of, excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 64
Path_ = tuple[object, ...]

_CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_CORE}{name}" for name in ("str", "int", "float", "bool", "null", "timestamp")}


def load_yaml(text: str) -> "tuple[Any, dict[Path_, int]]":
    """Plain data (dict, list, str, int, float, bool, None) and the line of every path in it.

    Built from the parser's events without recursion, so no depth of nesting can overflow.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.reader import ReaderError

    yaml = YAML(typ="safe", pure=True)
    builder = _Builder(yaml.resolver)

    def parse() -> None:
        for event in yaml.parse(text):
            builder.feed(event)

    try:
        guard("YAML", parse)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # the end of the stream past a last newline is a line the file does not have: its last line is named
        line = min(mark.line + 1, text.count("\n") + (not text.endswith("\n"))) if mark is not None else 0
        raise DataError(f"invalid YAML: {_one_line(exc.problem or exc.context)}", line) from None
    except ReaderError as exc:  # a character YAML allows nowhere in a stream: its position is in characters
        position = exc.position if isinstance(exc.position, int) else 0
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        raise DataError(f"invalid YAML: the character {escape_of(code)} is not allowed in YAML (write it "
                        "as an escape in a double-quoted string)", text.count("\n", 0, position) + 1) from None
    except YAMLError as exc:
        raise DataError(f"invalid YAML: {_one_line(exc)}") from None
    return builder.root, builder.lines


def _one_line(message: object) -> str:
    """A parser's message on one line (its own words can span several)."""
    return " ".join(str(message).split())


def _surrogate(value: str) -> bool:
    """Whether `value` holds a lone surrogate, which only an escape (`\\ud800`) can put there."""
    if value.isascii():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class _Frame:
    def __init__(self, container: "dict[str, Any] | list[Any]", path: Path_) -> None:
        self.container = container
        self.path = path
        self.key: str | None = None
        self.key_line = 0


class _Builder:
    def __init__(self, resolver: "Any") -> None:
        self.resolver = resolver
        self.lines: dict[Path_, int] = {}
        self.stack: list[_Frame] = []
        self.root: Any = None
        self.documents = 0

    def feed(self, event: "Any") -> None:
        from ruamel.yaml import events
        from ruamel.yaml.nodes import ScalarNode

        line = event.start_mark.line + 1
        if isinstance(event, events.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise DataError("more than one YAML document: expected one", line)
        elif isinstance(event, events.AliasEvent):
            raise DataError("YAML aliases are not allowed", line)
        elif isinstance(event, events.ScalarEvent):
            tag = str(event.tag) if event.tag else str(self.resolver.resolve(ScalarNode, event.value, event.implicit))
            if tag not in _SCALAR_TAGS:
                raise DataError(_tag_message(tag), line)
            if _surrogate(event.value):
                raise DataError("a string holds a lone surrogate (an escape like \\ud800 that is no character)", line)
            self._add(_scalar(tag.removeprefix(_CORE), event.value, line), event.value, tag, line)
        elif isinstance(event, (events.MappingStartEvent, events.SequenceStartEvent)):
            mapping = isinstance(event, events.MappingStartEvent)
            if event.tag and str(event.tag) != f"{_CORE}{'map' if mapping else 'seq'}":
                raise DataError(_tag_message(str(event.tag)), line)
            if len(self.stack) >= MAX_DEPTH:
                raise DataError(f"nested deeper than {MAX_DEPTH} levels", line)
            container: dict[str, Any] | list[Any] = {} if mapping else []
            path = self._add(container, None, "", line)
            self.stack.append(_Frame(container, path))
        elif isinstance(event, events.CollectionEndEvent):
            self.stack.pop()

    def _add(self, value: "Any", raw: str | None, tag: str, line: int) -> Path_:
        if not self.stack:
            self.root = value
            self.lines[()] = line
            return ()
        frame = self.stack[-1]
        if isinstance(frame.container, list):
            path = (*frame.path, len(frame.container))
            frame.container.append(value)
            self.lines[path] = line
            return path
        if frame.key is None:
            if raw is None or tag.endswith("null"):
                raise DataError("mapping keys must be plain scalars", line)
            if raw in frame.container:
                raise DataError(f"duplicate key '{raw}'", line)
            frame.key, frame.key_line = raw, line
            return frame.path
        path = (*frame.path, frame.key)
        frame.container[frame.key] = value
        self.lines[path] = frame.key_line
        frame.key = None
        return path


def _tag_message(tag: str) -> str:
    if tag == f"{_CORE}merge":
        return "YAML merge keys (<<) are not allowed: plain data only"
    return f"YAML tag {tag.replace(_CORE, '!!')} is not allowed: plain data only"


def _scalar(kind: str, raw: str, line: int) -> "Any":
    if kind == "null":
        return None
    if kind == "bool":
        return raw.lower() == "true"
    try:
        if kind == "int":
            text = raw.replace("_", "")
            value = int(text, 0) if text.lower().lstrip("+-").startswith(("0x", "0o", "0b")) else int(text, 10)
            return bounded(value, line)
        if kind == "float":
            if raw.lower().lstrip("+-") in (".nan", ".inf"):
                raise DataError(f"'{raw}' is not allowed: numbers must be finite", line)
            return float(raw.replace("_", ""))
    except ValueError:
        raise DataError(f"'{excerpt(raw)}' is not a valid {kind}", line) from None
    return raw  # str, and timestamps kept as the text that was written
