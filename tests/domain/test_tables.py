"""The table markers, read with string methods (gates/domain/tables.marker), agree with the patterns they were.

A hand-over holding the markers (this repository's own) is checked on every commit: reading them with `re` cost
its import. Lines are made of the characters the patterns turn on (blanks of every kind, the comment's dashes, the
name's characters and others), so a difference at any edge shows as a counterexample.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gates.domain import tables

START = re.compile(r"^\s*<!--\s*gate:table\s+([A-Za-z0-9_-]{1,40})\s*-->\s*$")
END = re.compile(r"^\s*<!--\s*/gate:table\s*-->\s*$")

PIECES = ["<!--", "-->", "-", "--", ">", "<", "!", " ", "\t", "\u00a0", "\u2003", "\x1c", "\r", "\n", "gate:table",
          "/gate:table", "gate:tabl", "decisions", "a", "Z", "9", "_", "é", "x" * 40, "x" * 41, "/", ":"]
LINES = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


def _by_pattern(line: str) -> tuple[bool, str] | None:
    start = START.match(line)
    if start:
        return True, start.group(1)
    return (False, "") if END.match(line) else None


@settings(max_examples=2000, deadline=None)
@given(LINES)
@example("<!-- gate:table decisions -->")
@example("  <!--\tgate:table  x-\u2003--> ")
@example("<!-- gate:table x--->")
@example("<!--gate:table x-->")
@example("<!-- gate:tablex -->")
@example("<!-- /gate:table-->")
@example("<!-->")
@example("<!-- gate:table " + "x" * 41 + " -->")
def test_the_markers_read_as_their_patterns_read_them(line: str) -> None:
    assert tables.marker(line) == _by_pattern(line)


def test_a_marker_loads_no_re() -> None:
    from conftest import imported_by

    code = ("from gates.domain import tables\n"
            "assert tables.regions(['<!-- gate:table decisions -->', '| a |', '<!-- /gate:table -->'])[0].end == 2")
    assert imported_by(code, ("re",)) == []
