"""Text from the repository, made safe to show: one definition of the characters that are not.

C0 and C1 controls, and the bidi and zero-width controls that make text read differently than
it is (the "Trojan Source" characters), are never printed raw: a message shows their escape.
"""

from __future__ import annotations

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
