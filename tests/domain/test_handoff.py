"""The HANDOFF.md model: sections, nested items, Meta, line numbers; and a bounded fuzz of the parser."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gates.domain import handoff
from gates.infra import schemas, validation

DOC = """# Handoff

## Meta
- ref: `abc1234`
- updated: 2026-11-30T08:00:00Z

## Current Target
One sentence.

## Open Threads
- [ ] parent — next: a
  - [x] child
    1. [ ] grandchild
  continuation of parent
- [ ] sibling
"""


def test_sections_items_and_meta_carry_their_lines() -> None:
    doc = handoff.parse(DOC.splitlines(), "HANDOFF.md")
    assert doc.titles == [("Handoff", 1)]
    assert [(s.name, s.line, s.end_line) for s in doc.sections] == [
        ("Meta", 3, 5), ("Current Target", 7, 8), ("Open Threads", 10, 15)]
    assert [(e.key, e.value, e.line) for e in doc.meta("meta")] == [
        ("ref", "abc1234", 4), ("updated", "2026-11-30T08:00:00Z", 5)]
    threads = doc.section("Open Threads")[0]
    parent, sibling = threads.items
    assert (parent.line, parent.end_line, parent.checked) == (11, 14, False)
    assert [(c.line, c.checked, c.text) for c in parent.children] == [(12, True, "child")]
    assert [(g.line, g.marker, g.text) for g in parent.children[0].children] == [(13, "1.", "grandchild")]
    assert sibling.line == 15 and not sibling.children
    assert [i.line for i in threads.walk()] == [11, 12, 13, 15]


def test_the_model_as_json_follows_the_shipped_schema() -> None:
    doc = handoff.parse(DOC.splitlines(), "HANDOFF.md")
    model, lines = doc.to_json("Meta")
    assert validation.validate(schemas.load("handoff"), model, lines) == []
    assert model["meta"] == {"ref": "abc1234", "updated": "2026-11-30T08:00:00Z"}
    assert model["sections"][2]["items"][0]["children"][0]["checked"] is True
    assert lines[("sections", 2, "items", 0, "children", 0)] == 12


def test_schemas_are_valid_against_their_metaschema() -> None:
    for name in schemas.NAMES:
        assert validation.check_schema(schemas.load(name)) is None, name


LINE = st.one_of(
    st.sampled_from(["# Handoff", "## Meta", "- ref: abc1234", "- [x] a", "  - [ ] b", "```", "~~~", "<!--", "-->",
                     "<<<<<<< x", "=======", ">>>>>>> y", "1. [X] c", "", "    text", "---", "## Open Threads"]),
    st.text(max_size=40),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=40))
def test_the_parser_takes_any_text(lines: list[str]) -> None:
    doc = handoff.parse(lines, "F.md")
    for item in doc.items():
        assert 1 <= item.line <= item.end_line <= len(lines)
    model, lines_of = doc.to_json("Meta")
    # Only the Meta values are free text the schema constrains; the rest of the model always fits.
    problems = validation.validate(schemas.load("handoff"), model, lines_of)
    assert all(message.startswith("meta.") for _, message in problems), problems
