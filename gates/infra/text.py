"""Text from the repository, made safe to show: one definition of the characters that are not, by Unicode property.

A character is unsafe when its general category is Cc (C0 and C1 controls, DEL), Cf (format: the
bidi and zero-width controls of "Trojan Source", U+061C, U+2060, U+FEFF, the soft hyphen), Zl or Zp
(the line and paragraph separators, which forge line breaks), Co (private use) or Cs (a lone
surrogate, as `surrogateescape` makes of undecodable bytes), or when it lies in the tag block
(U+E0000..U+E007F, invisible text). Such a character is never shown raw: it is shown as its one
escape, `\\u` and four hex digits in the Basic Multilingual Plane, `\\U` and eight beyond it
(`\\u202e`, `\\U000e0069`), so every escape names exactly one code point.

Two ways to show text, one table: `clean` for whole texts (tabs and newlines kept), as every writer of
stdout, stderr, flags, the journal, the brief and a harness's context applies it to what it writes,
and `excerpt` for one value quoted in a one-line message (tabs and newlines escaped too, cut to a
length). An escape is made of safe characters only, so escaping is idempotent: the layers (a message
quoting a value, the writer printing the message) can each apply it and nothing is escaped twice.
The price, chosen knowingly: a backslash is not escaped, so a literal `\\u202e` typed into the
repository reads like an escaped U+202E; both are inert text.

Judging a character costs nothing on the common path: text that `str.isprintable` passes holds none
(every unsafe category is one of Unicode's "Other" or "Separator" ones, which it refuses), and an
ASCII control is known by its code; `unicodedata` is imported only when a non-ASCII character that
is not printable is met, and each code point is judged once.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs"})
TAGS = range(0xE0000, 0xE0080)
_MEMO = 1 << 13  # code points remembered per table: the common ones, not every one a hostile text holds


def is_unsafe(code: int) -> bool:
    """Whether the code point `code` is never shown raw (see the module's docstring)."""
    if code < 0x80:
        return code < 0x20 or code == 0x7F
    char = chr(code)
    if char.isprintable():
        return False
    if code in TAGS:
        return True
    import unicodedata  # only for a non-ASCII character that is not printable: off every plain run

    return unicodedata.category(char) in UNSAFE_CATEGORIES


def escape_of(code: int) -> str:
    """The one escape of a code point: `\\u` and four hex digits, or `\\U` and eight beyond U+FFFF."""
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


class _Table(dict[int, str]):
    """A `str.translate` table that judges each code point the first time it is met: its escape when unsafe (and
    not one of `kept`), else the character itself."""

    def __init__(self, kept: str) -> None:
        super().__init__()
        self.kept = frozenset(map(ord, kept))

    def __missing__(self, code: int) -> str:
        shown = escape_of(code) if code not in self.kept and is_unsafe(code) else chr(code)
        if len(self) < _MEMO:
            self[code] = shown
        return shown


_LINES = _Table("\t\n")  # clean: whole texts, their tabs and newlines kept (a CR is escaped)
_ONE_LINE = _Table("")  # excerpt: one value, every unsafe character escaped


def unsafe(text: str) -> bool:
    """Whether `text` holds an unsafe character (a control, NUL, CR, bidi, zero-width, separator, tag...)."""
    return not text.isprintable() and text.translate(_ONE_LINE) != text


def not_plain(text: str) -> str | None:
    """The first character of `text` that a name or title the gate writes into YAML may not hold, or None: an unsafe
    one (`unsafe`), or one of Unicode's 66 noncharacters (U+FDD0-U+FDEF and the last two of each plane), which YAML
    refuses in a file (U+FFFE, U+FFFF) or which are no text to anyone."""
    if text.isprintable() and text.isascii():
        return None
    for char in text:
        code = ord(char)
        if 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE or unsafe(char):
            return char
    return None


def clean(text: str) -> str:
    """`text` with every unsafe character shown as its escape; tabs and newlines kept. Applied twice, the same."""
    return text if text.isprintable() else text.translate(_LINES)


def excerpt(text: str, limit: int = 60) -> str:
    """A short, sanitised quote of input text for a one-line message: every unsafe character escaped (tabs and
    newlines too), cut to `limit` characters with `…`, never inside an escape."""
    shown = text if text.isprintable() else text.translate(_ONE_LINE)
    if len(shown) <= limit:
        return shown
    head = shown[: max(0, limit - 1)]
    start = head.rfind("\\", max(0, len(head) - 9))
    if start >= 0 and start + {"u": 6, "U": 10}.get(shown[start + 1: start + 2], 1) > len(head):
        head = head[:start]  # the escape that would be cut goes whole
    return head + "…"


def clean_tree(value: object) -> object:
    """A JSON-shaped document with `clean` applied to every string in it (keys too): what a JSON writer hands on."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(k) if isinstance(k, str) else k: clean_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_tree(item) for item in value]
    return value


class Pattern:
    """A regular expression compiled when it is first used: `re` (about 10 ms to import, with what it
    pulls in) stays off every run that never needs the pattern, as a passing commit does not."""

    __slots__ = ("source", "_compiled")

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled: re.Pattern[str] | None = None

    def _pattern(self) -> "re.Pattern[str]":
        if self._compiled is None:
            import re

            self._compiled = re.compile(self.source)
        return self._compiled

    def match(self, text: str) -> "re.Match[str] | None":
        return self._pattern().match(text)

    def fullmatch(self, text: str) -> "re.Match[str] | None":
        return self._pattern().fullmatch(text)

    def search(self, text: str) -> "re.Match[str] | None":
        return self._pattern().search(text)

    def sub(self, replacement: str, text: str) -> str:
        return self._pattern().sub(replacement, text)


_SHELL_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-")


def shell_quote(word: str) -> str:
    """`word` as a POSIX shell reads it back: as it is when every character is safe, else in single quotes
    (`shlex.quote`'s answer, without the `re` that `shlex` imports)."""
    if word and not set(word) - _SHELL_SAFE:
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def shell_path(path: str) -> str:
    """`path` as the one path argument of a git command a message advises, which a person or an agent runs as it
    is: quoted for the shell (a committed configuration may name `HANDOFF.md;curl …|sh`), after `--` when it
    begins with `-` (else git would read it as an option)."""
    return ("-- " if path.startswith("-") else "") + shell_quote(path)


def shell_join(words: list[str]) -> str:
    return " ".join(shell_quote(word) for word in words)
