"""The hand-over's line shapes, read with string methods, agree with the regular expressions they were.

Each shape of gates/domain/handoff.py was first written as the pattern kept here; the parser reads
them without `re` (its import costs every commit). Lines are generated from the characters each
shape turns on (blanks, markers, digits of other scripts, `\\r`, the characters around them), so a
difference at any edge shows as a counterexample.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gates.domain import handoff

HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
ITEM = re.compile(r"^([ \t]*)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$")
THEMATIC = re.compile(r"^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$")
CONFLICT = re.compile(r"^(<{7}|>{7}|\|{7})(?: |$)")
META = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)[ \t]*:[ \t]*(.*)$")
UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|\+00:00)$")

LINE = st.text(alphabet=" \t#-*+_.)1234567890\u0663\u00b2ax:\r\u00a0\u2003<>|=`~", max_size=24)
KEYS = st.text(alphabet="aZ09_-: \t\u00e9x.", max_size=12)
TIMES = st.text(alphabet="0123456789\u0663-T:.Z+", max_size=32)
RUNS = 400


@settings(max_examples=RUNS, deadline=None)
@given(LINE)
@example("# #")
@example("## Title ##")
@example("#\tx\t#\t")
@example("####### seven")
@example("    # four spaces")
def test_headings(line: str) -> None:
    match = HEADING.match(line)
    expected = (len(match.group(1)), (match.group(2) or "").strip()) if match else None
    assert handoff.heading_line(line) == expected


@settings(max_examples=RUNS, deadline=None)
@given(LINE)
@example("1234567890. ten digits")
@example("\u0663) an Arabic-Indic digit")
@example("\u00b2. a superscript is no decimal")
@example("-")
@example("-\t \tx")
@example("+x")
def test_items(line: str) -> None:
    match = ITEM.match(line)
    assert handoff.item_line(line) == (match.groups() if match else None)


@settings(max_examples=RUNS, deadline=None)
@given(LINE)
@example("   - - -")
@example("    ***")
@example("_ _")
@example("\t---")
def test_thematic_breaks(line: str) -> None:
    assert handoff.thematic_line(line) == bool(THEMATIC.match(line))


@settings(max_examples=RUNS, deadline=None)
@given(LINE)
@example("<<<<<<<")
@example("<<<<<<<< eight")
@example("||||||| base")
@example(">>>>>>>\tx")
def test_conflict_markers(line: str) -> None:
    assert handoff.conflict_line(line) == bool(CONFLICT.match(line))


@settings(max_examples=RUNS, deadline=None)
@given(KEYS)
@example("\u00e9t\u00e9: no")
@example("ref :  abc ")
@example("a-b_c9:x")
def test_meta_entries(text: str) -> None:
    match = META.match(text)
    assert handoff.meta_line(text) == (match.groups() if match else None)


@settings(max_examples=RUNS, deadline=None)
@given(TIMES)
@example("2026-12-01T13:53Z")
@example("2026-12-01T13:53:46.123456789+00:00")
@example("2026-12-01T13:53.5Z")
@example("\u0663026-12-01T13:53:46Z")
@example("2026-12-01T13:53:46.1234567890Z")
def test_utc_times(value: str) -> None:
    assert handoff.utc_shape(value) == bool(UTC.match(value))


PIECES = ["# T", "## Meta", "## Open Threads", "### sub", "- ref: abc", "- [ ] a", "- [x] b", "  - [X] c", "* x", "+ y",
          "1. z", "12) w", "```", "~~~", "``` `x`", "<!--", "-->", "x <!-- y -->", "<<<<<<< HEAD", "=======",
          ">>>>>>> o", "---", "- - -", "* * *", "- -", "+ +", "text", "   more", "\tindented", "", "-", "- ", "-\t",
          "\u0663. ar", "- [ ]", "- [x]x", "    - four", "-\r", "--- x",
          # the margin's shortest way (Handoff._Parser.run) and where it hands over to _item
          "- [ ]\u3000", "- [ ]\u3000x", "- [ ]  x", "- [ ]\tx", "- [X] \u3000", "- \tx", "-  x", "- [x]\r", "* [ ] y",
          "+\tz", "- [ ] x\r", "-\t[x] w", "- [x]", "- [ ] [x] v", "- \u3000y", "* *x", "- -x",
          # and the text lines it takes past feed (a letter or a `|` first, under no item)
          "| a | b |", "  | c |", "|x", "|||||||", "||||||| base", "|||||||x", "\u00e9t\u00e9", "Text", "  text"]


def _model(doc: handoff.Document) -> object:
    return (doc.to_json("Meta"), [(i.line, i.indent, i.marker, i.checked, i.text, i.end_line, i.chars)
                                  for i in doc.items()],
            doc.conflict_markers, doc.comment_lines, doc.unclosed, doc.titles,
            [(s.name, s.line, s.end_line, s.text_lines) for s in doc.sections], doc.preamble.text_lines)


@settings(max_examples=RUNS, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30))
def test_the_short_way_through_item_lines_models_as_feeding_each_line_does(lines: list[str]) -> None:
    """parse() takes most bullet lines past feed(); the model must be the one feed() alone builds."""
    fed = handoff.Document("H", lines)
    parser = handoff._Parser(fed)
    for number, raw in enumerate(lines, start=1):
        parser.feed(number, raw)
    parser.finish()
    assert _model(handoff.parse(lines, "H")) == _model(fed)


MARKED = [*PIECES, handoff.PLACEHOLDER, "<!-- gate:table decisions-all -->", "<!-- /gate:table -->",
          "  <!-- gate:table x -->", "<!-- gate:table", "- item <!-- gate:placeholder -->"]


@settings(max_examples=RUNS, deadline=None)
@given(st.lists(st.sampled_from(MARKED), max_size=30))
def test_the_comment_lines_are_every_line_that_holds_a_comment(lines: list[str]) -> None:
    """The gates look for their markers (the placeholder, the table regions) only on the lines the parser saw
    `<!--` on: those must be every such line, fenced or not, so no marker is missed."""
    from gates.domain import tables

    doc = handoff.parse(lines, "H")
    assert doc.comment_lines == [n for n, line in enumerate(lines, start=1) if "<!--" in line]
    assert tables.regions(lines, doc.comment_lines) == tables.regions(lines)
