"""Text made safe to show (by Unicode property), shell words and patterns compiled on first use (gates/infra/text.py)."""

from __future__ import annotations

import shlex
import unicodedata

from conftest import imported_by
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gates.infra.text import Pattern, clean, excerpt, shell_join, shell_quote, unsafe


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=12))
@example("")
@example("it's")
@example("a b")
@example("caf\u00e9")
def test_shell_quote_is_shlex_quote(word: str) -> None:
    assert shell_quote(word) == shlex.quote(word)


def test_shell_join_reads_back_as_the_words() -> None:
    words = ["gate", "check", "--only", "a b", "it's", "", "$HOME", "\u00e9"]
    assert shlex.split(shell_join(words)) == words


def test_a_pattern_imports_re_only_when_used() -> None:
    assert imported_by("from gates.infra.text import Pattern\np = Pattern(r'^a+$')", ("re",)) == []
    assert imported_by("from gates.infra.text import Pattern\nPattern(r'^a+$').match('a')", ("re",)) == ["re"]
    assert Pattern(r"^a+$").match("aa") and Pattern(r"^a+$").fullmatch("ab") is None
    assert Pattern("a+").sub("-", "baab") == "b-b" and Pattern(r"x").match("y") is None


# ---- the sanitiser, by Unicode property (issue 25) ---------------------------------------------------------

UNSAFE_CATEGORIES = ("Cc", "Cf", "Zl", "Zp", "Co", "Cs")


def _expected_unsafe(code: int) -> bool:
    """The rule, restated here from its definition: those categories, and the whole tag block."""
    return unicodedata.category(chr(code)) in UNSAFE_CATEGORIES or 0xE0000 <= code <= 0xE007F


def _unescape(shown: str) -> str:
    """The reader's side of the escape: `\\uXXXX` and `\\UXXXXXXXX` (lowercase hex) back to their code points."""
    out, index = [], 0
    while index < len(shown):
        mark = shown[index + 1:index + 2] if shown[index] == "\\" else ""
        digits = {"u": 4, "U": 8}.get(mark, 0)
        code = shown[index + 2:index + 2 + digits]
        if digits and len(code) == digits and set(code) <= set("0123456789abcdef"):
            out.append(chr(int(code, 16)))
            index += 2 + digits
        else:
            out.append(shown[index])
            index += 1
    return "".join(out)


def test_every_code_point_is_judged_by_its_property() -> None:
    """All 1,114,112 code points: each of those categories and the tag block is escaped by clean, excerpt and
    unsafe (U+061C, U+2060, U+FEFF, U+200B, U+2028, a lone surrogate, private use among them); nothing else is."""
    wrong = []
    for code in range(0x110000):
        char, bad = chr(code), _expected_unsafe(code)
        shown = f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
        if (unsafe(char), excerpt(char, 20), clean(char)) != (bad, shown if bad else char,
                                                                shown if bad and char not in "\t\n" else char):
            wrong.append(hex(code))
    assert wrong == []
    assert all(unsafe(chr(c)) for c in (0x061C, 0x2060, 0xFEFF, 0x200B, 0x2028, 0x2029, 0xD800, 0xE000, 0xE0001,
                                        0xE0000, 0xE007F, 0x0D, 0x85, 0xAD, 0xF0000))
    assert not any(unsafe(c) for c in ("a", " ", "\u00a0", "é", "—", "\u0301", "\U0001f600", "\ufe0f"))


_HOSTILE_ALPHABET = st.sampled_from(["a", "u", "U", "0", "e", "f", "\\", "\t", "\n", "\r", "\x1b", "\x00", "\x7f", "\x85",
                                     "\u00ad", "\u061c", "\u200b", "\u200d", "\u202e", "\u2028", "\u2029", "\u2060",
                                     "\ufeff", "\ue000", "\ud800", "\udcff", "\U000e0069", "\U000e0001", "\U0010fffd",
                                     "é", "—", "\u00a0", "\U0001f600"])
_TEXTS = st.one_of(st.text(max_size=40), st.text(_HOSTILE_ALPHABET, max_size=40))


@settings(max_examples=1500, deadline=None)
@given(_TEXTS)
def test_the_escape_is_safe_idempotent_and_reversible(text: str) -> None:
    """What comes out holds no unsafe character (tabs and newlines only where clean keeps them); applying it again
    changes nothing (so the layers never escape twice); and each escape names exactly one code point: reading the
    escapes back gives the text again (for a text that held no backslash of its own, see gates/infra/text.py)."""
    for shown, kept in ((clean(text), "\t\n"), (excerpt(text, 10**6), "")):
        assert not any(_expected_unsafe(ord(c)) and c not in kept for c in shown)
        assert clean(shown) == shown and excerpt(shown, 10**6) == excerpt(shown, 10**6)
        if "\\" not in text:
            assert _unescape(shown) == text
    assert excerpt(clean(text), 10**6) == excerpt(text, 10**6)
    assert unsafe(text) == any(_expected_unsafe(ord(c)) for c in text)


@settings(max_examples=500, deadline=None)
@given(st.text(_HOSTILE_ALPHABET, max_size=60), st.integers(min_value=1, max_value=40))
def test_an_excerpt_is_cut_between_escapes(text: str, limit: int) -> None:
    shown = excerpt(text, limit)
    assert len(shown) <= limit
    if shown != excerpt(text, 10**6):
        assert shown.endswith("…") and excerpt(text, 10**6).startswith(shown[:-1])
        if "\\" not in text:
            assert text.startswith(_unescape(shown[:-1]))  # a prefix of the text: no escape was cut in half


def test_escapes_are_unambiguous() -> None:
    """Beyond the BMP an escape has eight digits: U+E0069 is not U+E006 followed by '9'."""
    assert excerpt("\U000e0069") == "\\U000e0069" and excerpt("\ue006" + "9") == "\\ue0069"
    assert excerpt("\ud800") == "\\ud800" and clean("a\r\nb\tc\u2028") == "a\\u000d\nb\tc\\u2028"


def test_unicodedata_is_imported_only_for_a_non_ascii_character_that_is_not_printable() -> None:
    plain = "from gates.infra.text import clean, excerpt, unsafe\n" \
            "assert clean('caf\\u00e9 \\u2014 tab\\tline\\n') and excerpt('a\\x1b\\r') and not unsafe('\\u00e9')"
    assert imported_by(plain, ("unicodedata",)) == []
    assert imported_by("from gates.infra.text import clean\nclean('\\u202e')", ("unicodedata",)) == ["unicodedata"]
