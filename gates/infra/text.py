"""Text from the repository, made safe to show: one definition of the characters that are not.

C0 and C1 controls, and the bidi and zero-width controls that make text read differently than
it is (the "Trojan Source" characters), are never printed raw: a message shows their escape.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

_UNSAFE = [*range(0x00, 0x20), *range(0x7F, 0xA0), *range(0x200B, 0x2010), 0x2028, 0x2029, *range(0x202A, 0x202F),
           *range(0x2066, 0x206A), 0xFEFF]  # U+2028/2029: line and paragraph separators (a forged line break)
_SHOWN = {code: f"\\u{code:04x}" for code in _UNSAFE}
_SHOWN_KEEPING_LINES = {**_SHOWN, ord("\t"): "\t", ord("\n"): "\n"}


def unsafe(text: str) -> bool:
    """Whether `text` holds a control, NUL, bidi or zero-width character."""
    return text != text.translate(_SHOWN)


def clean(text: str) -> str:
    """`text` with every such character shown as its escape (`\\u202e`); tabs and newlines kept."""
    return text.translate(_SHOWN_KEEPING_LINES)


def excerpt(text: str, limit: int = 60) -> str:
    """A short, sanitised quote of input text for a one-line message."""
    shown = text.translate(_SHOWN)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


class Pattern:
    """A regular expression compiled when it is first used: `re` (about 10 ms to import, with what it
    pulls in) stays off every run that never needs the pattern, as a passing commit does not."""

    __slots__ = ("source", "_compiled")

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled: re.Pattern[str] | None = None

    def _pattern(self) -> re.Pattern[str]:
        if self._compiled is None:
            import re

            self._compiled = re.compile(self.source)
        return self._compiled

    def match(self, text: str) -> re.Match[str] | None:
        return self._pattern().match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self._pattern().fullmatch(text)

    def search(self, text: str) -> re.Match[str] | None:
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


def shell_join(words: list[str]) -> str:
    return " ".join(shell_quote(word) for word in words)
