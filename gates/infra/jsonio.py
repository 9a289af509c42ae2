"""JSON in and out, through the C scanner and encoder that the `json` package itself drives.

`json` imports `re` (its whitespace and number patterns) and builds its decoder and encoder
classes at import: about 4 ms, and `re` with it, on every commit. The interpreter's `_json`
accelerator does the work either way; here it is called directly, so a hook that reads a cache,
a flag or a manifest pays for neither. The answers are `json`'s own: the same scanner, the same
encoder, the same hooks. Anything this door does not do itself (an indented document, an input
that does not parse, an interpreter without `_json`) is handed to `json`, which then gives its
exact result or error.

`load_json` is the strict reader of every JSON file the gate reads (a claim, a flag, a manifest, a harness's
input): duplicate keys, NaN, Infinity and numbers beyond 2**63 are refused as a DataError, in our own words.
`load_toml` reads TOML (a harness's config) the same way, and `guard` is what both readers and the YAML reader
(gates/infra/dataio.py) run their parser under: nesting that overflows the stack, or a document that exhausts
memory, is a DataError like any other malformed input, never a RecursionError. `loads` is for the gate's own
documents only (shipped schemas, its own caches and envelopes): tests/infra/test_jsonio_guarded.py holds that.
"""

from gates.infra.plain import Namespace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

try:
    from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner
    ACCELERATED = True
except ImportError:  # pragma: no cover - an interpreter without the accelerator
    ACCELERATED = False

_SPACE = " \t\n\r"  # JSON's whitespace, and all that `json` skips around a document


def _constant(name: str) -> float:
    return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


def loads(text: str, *, object_pairs_hook: "Callable[..., Any] | None" = None,
          parse_float: "Callable[[str], Any]" = float, parse_int: "Callable[[str], Any]" = int,
          parse_constant: "Callable[[str], Any]" = _constant) -> "Any":
    """`json.loads(text, ...)` for a str, with the same hooks; errors are `json`'s own."""
    if ACCELERATED:
        start = len(text) - len(text.lstrip(_SPACE))
        # The fields the C scanner reads, as json.JSONDecoder hands them to it
        context: Any = Namespace(strict=True, object_hook=None, object_pairs_hook=object_pairs_hook,
                                 parse_float=parse_float, parse_int=parse_int, parse_constant=parse_constant)
        try:
            value, end = make_scanner(context)(text, start)
        except (StopIteration, ValueError, SystemError):
            pass  # `json` says why, with the line (before 3.12 the scanner can name its error only once
            #       json.decoder is loaded: without it the call fails as a SystemError)
        else:
            if len(text.rstrip(_SPACE)) == end:
                return value
    import json

    return json.loads(text, object_pairs_hook=object_pairs_hook, parse_float=parse_float, parse_int=parse_int,
                      parse_constant=parse_constant)


def _unencodable(value: object) -> "Any":
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: "Any", *, indent: int | str | None = None, sort_keys: bool = False, ensure_ascii: bool = True,
          separators: tuple[str, str] | None = None) -> str:
    """`json.dumps(value, ...)`: the C encoder for a document on one line (what a passing commit writes: its caches);
    an indented one (flags, manifests, claim records, printed documents: failure and print paths) is `json`'s."""
    if not ACCELERATED or indent is not None:
        import json

        return json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, separators=separators)
    item, key = separators or (", ", ": ")
    quote = encode_basestring_ascii if ensure_ascii else encode_basestring
    if isinstance(value, str):
        return str(quote(value))
    return "".join(make_encoder({}, _unencodable, quote, None, key, item, sort_keys, False, True)(value, 0))


class DataError(Exception):
    """Unparseable or refused data (JSON here, YAML in gates/infra/dataio.py); `line` is 1-based (0 when unknown)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


MAX_INT = 1 << 63  # beyond any count, size or time the gate reads; Python cannot even print an int of 4,300 digits


def bounded(value: int, line: int = 0) -> int:
    if abs(value) >= MAX_INT:
        raise DataError("a number beyond 2**63 is not allowed", line)
    return value


def guard(kind: str, parse: "Callable[[], T]") -> "T":
    """`parse()`, with a parser's overflow turned into the DataError of any malformed input: `kind` names the format
    (JSON, TOML, YAML). The one guard of every reader of hostile or external input."""
    try:
        return parse()
    except RecursionError:
        raise DataError(f"invalid {kind}: nested too deeply") from None
    except MemoryError:
        raise DataError(f"invalid {kind}: too large to parse") from None


NO_TOML = "cannot be read: this Python has no TOML reader (3.11 or newer has one)"


def load_toml(text: str) -> "dict[str, Any]":
    """TOML as data (a harness's config file), any failure of its parser a DataError."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        raise DataError(NO_TOML) from None

    def parse() -> "dict[str, Any]":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            raise DataError("invalid TOML") from None

    return guard("TOML", parse)


INVALID_JSON = "invalid JSON: a comma, colon, quote or bracket is missing or out of place"


def load_json(text: str) -> "Any":
    """JSON with duplicate keys, NaN and Infinity refused, and deep nesting a parse error."""
    from gates.infra.text import excerpt

    def pairs(items: "list[tuple[str, Any]]") -> "dict[str, Any]":
        result: dict[str, Any] = {}
        for key, value in items:
            if key in result:
                raise DataError(f"duplicate key '{excerpt(key)}'")
            result[key] = value
        return result

    def constant(name: str) -> "Any":
        raise DataError(f"{name} is not allowed: numbers must be finite")

    def number(raw: str) -> float:
        value = float(raw)
        if value in (float("inf"), float("-inf")):
            raise DataError(f"'{excerpt(raw)}' is not allowed: numbers must be finite")
        return value

    def integer(raw: str) -> int:
        if len(raw.lstrip("-")) > 19:
            raise DataError("a number beyond 2**63 is not allowed")
        return bounded(int(raw))

    def parse() -> "Any":
        data = loads(text, object_pairs_hook=pairs, parse_constant=constant, parse_float=number, parse_int=integer)
        if "\\ud" in text or "\\uD" in text:  # a lone surrogate escape (`"\ud800"`) decodes to no character
            dumps(data, ensure_ascii=False).encode("utf-8")
        return data

    try:
        data = guard("JSON", parse)
    except ValueError as exc:  # json.JSONDecodeError: named by its fields, so `json` is imported only on this path
        # Our own words, not the stdlib's (they change between Python versions: 3.13 says "Illegal trailing comma"
        # where 3.12 says "Expecting property name"); the line is where the parser stopped.
        raise DataError(INVALID_JSON, getattr(exc, "lineno", 0)) from None
    except UnicodeEncodeError:
        raise DataError("invalid JSON: a string holds a lone surrogate (an escape like \\ud800 that is no character)") from None
    return data
