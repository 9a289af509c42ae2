"""Text made safe to show, shell words and patterns compiled on first use (gates/infra/text.py)."""

from __future__ import annotations

import shlex

from conftest import imported_by
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gates.infra.text import Pattern, shell_join, shell_quote


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
