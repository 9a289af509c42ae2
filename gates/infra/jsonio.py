"""JSON in and out, through the C scanner and encoder that the `json` package itself drives.

`json` imports `re` (its whitespace and number patterns) and builds its decoder and encoder
classes at import: about 4 ms, and `re` with it, on every commit. The interpreter's `_json`
accelerator does the work either way; here it is called directly, so a hook that reads a cache,
a flag or a manifest pays for neither. The answers are `json`'s own: the same scanner, the same
encoder, the same hooks. Anything this door does not do itself (an indented document, an input
that does not parse, an interpreter without `_json`) is handed to `json`, which then gives its
exact result or error.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

try:
    from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner
    ACCELERATED = True
except ImportError:  # pragma: no cover - an interpreter without the accelerator
    ACCELERATED = False

_SPACE = " \t\n\r"  # JSON's whitespace, and all that `json` skips around a document


class _Context:
    """What the C scanner reads off its context (as `json.JSONDecoder` hands it itself)."""

    strict = True
    object_hook = None

    def __init__(self, pairs: Callable[..., Any] | None, parse_float: Callable[[str], Any],
                 parse_int: Callable[[str], Any], parse_constant: Callable[[str], Any]) -> None:
        self.object_pairs_hook = pairs
        self.parse_float = parse_float
        self.parse_int = parse_int
        self.parse_constant = parse_constant


def _constant(name: str) -> float:
    return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


def loads(text: str, *, object_pairs_hook: Callable[..., Any] | None = None,
          parse_float: Callable[[str], Any] = float, parse_int: Callable[[str], Any] = int,
          parse_constant: Callable[[str], Any] = _constant) -> Any:
    """`json.loads(text, ...)` for a str, with the same hooks; errors are `json`'s own."""
    if ACCELERATED:
        start = len(text) - len(text.lstrip(_SPACE))
        context: Any = _Context(object_pairs_hook, parse_float, parse_int, parse_constant)  # a JSONDecoder's fields
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


def _unencodable(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any, *, indent: int | str | None = None, sort_keys: bool = False, ensure_ascii: bool = True,
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
