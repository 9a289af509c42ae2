"""Text made safe to show, shell words and patterns compiled on first use (gates/infra/text.py)."""

from __future__ import annotations

import shlex
import subprocess
import sys

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
    probe = ("import sys\nbefore = set(sys.modules)\nfrom gates.infra.text import Pattern\n"
             "p = Pattern(r'^a+$')\nprint('re' in set(sys.modules) - before)\n"
             "print(bool(p.match('aa')), p.fullmatch('ab') is None, Pattern('a+').sub('-', 'baab'))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "True", "b-b"]
    assert Pattern(r"x").match("y") is None
