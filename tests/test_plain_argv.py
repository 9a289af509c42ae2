"""The plain invocation is parsed without argparse (gates/infra/argspec.py Spec); argparse decides everything else.

The property: whenever the plain parser gives an answer, argparse gives the same one, and where
argparse refuses (or prints help), the plain parser gives none. Checked for every command over
words drawn from its own option names, values and stray words.
"""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gates import cli
from gates.commands import COMMANDS

VALUES = ["text", "json", "claude", "github", "handoff-structure", "handoff-structure,mailbox", "nope", "", "x",
          "origin", "15m", "HANDOFF.md", "a..b", "-", "--", "-1", "-h", "--help", "=", "claude-code"]


def _words(name: str) -> list[str]:
    parser = cli.build_parser(name)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub = commands.choices[name]
    options = [option for action in sub._actions for option in action.option_strings]
    return options + [f"{option}={value}" for option in options for value in ("json", "x", "")] + VALUES + \
        [option[:-1] for option in options if len(option) > 3]  # abbreviations: argparse's to judge


def _argparse(argv: list[str]) -> dict[str, object] | None:
    err, out = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            parsed = cli.build_parser(argv[0]).parse_args(argv)
    except SystemExit:
        return None
    return {k: v for k, v in vars(parsed).items() if k not in ("func", "command")}


@pytest.mark.parametrize("name", sorted(COMMANDS))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_the_plain_parser_agrees_with_argparse(name: str, data: st.DataObject) -> None:
    argv = [name, *data.draw(st.lists(st.sampled_from(_words(name)), max_size=5))]
    plain = cli._plain(argv)
    if plain is None:
        return  # argparse decides: nothing to compare
    expected = _argparse(argv)
    assert expected is not None, f"{argv}: argparse refuses it, the plain parser took it"
    assert {k: v for k, v in vars(plain).items() if k not in ("func", "command")} == expected, argv


def test_the_hook_invocations_are_plain() -> None:
    """What the hooks and harnesses run must not need argparse (the point of the plain parser)."""
    for argv in (["check"], ["check", "--only", "handoff-structure", "HANDOFF.md"], ["check", "--pre-push"],
                 ["brief", "--format", "claude"], ["closeout", "--format", "claude"], ["claim"], ["locks"],
                 ["doctor"]):
        assert cli._plain(argv) is not None, argv


def test_help_and_errors_stay_argparse() -> None:
    for argv in (["check", "-h"], ["check", "--format", "nope"], ["check", "--on", "x"], ["locks", "--quarantine",
                 "--restore", "x"], ["check", "a", "--fix", "b"]):
        assert cli._plain(argv) is None, argv
