"""handoff-structure: the hand-over file has its shape.

One level-1 title; the configured sections each exactly once and in order; a Meta block whose
`ref` names a commit of this repository and whose `updated` is a UTC time not in the future; a
Current Target that is not empty; no merge-conflict markers; the whole file and each item within
their size caps; and whatever the project's own schema rejects.
"""

from gates.checks import Context
from gates.domain import handoff
from gates.domain.ancestry import not_in_shallow_clone
from gates.domain.handoff import Document, Loaded
from gates.infra.findings import WARNING, Finding
from gates.infra.text import excerpt, shell_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator

    from gates.infra.errors import GateError

    At = Callable[..., Finding]  # (line, message[, severity]) -> a finding of this gate in this file

ID = "handoff-structure"

_HEX = "0123456789abcdefABCDEF"


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for loaded in ctx.handoffs:
        findings.extend(_check_one(ctx, loaded))
    return findings


def _check_one(ctx: Context, loaded: Loaded) -> "Iterator[Finding]":
    cfg = ctx.config.section("handoff")
    if loaded.unrecorded:
        missing = loaded.unrecorded
        yield Finding(loaded.shown, 1, ID, f"this commit records no {missing} (the index holds none: never added, "
                      "`git add -N` or `git rm --cached`), so CI will not find it; the work tree's copy was judged — "
                      f"`git add {shell_path(missing)}`")
    if loaded.doc is None:
        yield Finding(loaded.shown, 1, ID, f"file is {loaded.size:,} bytes, over handoff.max_bytes ({cfg['max_bytes']:,}): "
                      "not parsed — move history to the archive")
        return
    doc = loaded.doc

    def at(line: int, message: str, severity: str = "error") -> Finding:
        return Finding(doc.path, line, ID, message, severity)

    for line in doc.conflict_markers:
        yield at(line, "merge-conflict marker — resolve the conflict and remove the marker")
    for kind, line in doc.unclosed:
        yield at(line, f"unclosed {kind}: everything after it is hidden from the gates — close it")
    if len(doc.lines) > cfg["max_lines"]:
        yield at(cfg["max_lines"] + 1, f"file has {len(doc.lines):,} lines, over handoff.max_lines ({cfg['max_lines']:,}) — "
                 "move history to the archive")
    for item in doc.items():
        if item.chars > cfg["max_item_chars"]:
            yield at(item.line, f"item is {item.chars:,} characters (lines {item.line}-{item.end_line}), over "
                     f"handoff.max_item_chars ({cfg['max_item_chars']:,}) — split it or move detail to a record")
    yield from _title(doc, cfg, at)
    yield from _sections(doc, cfg, at)
    yield from _meta(ctx, doc, cfg, at)
    yield from _target(doc, cfg, at)
    yield from _placeholders(ctx, doc, at)
    if cfg["schema"]:
        yield from _project_schema(ctx, doc, cfg, at)


def _title(doc: Document, cfg: "dict[str, Any]", at: "At") -> "Iterator[Finding]":
    want = cfg["title"]
    if not doc.titles:
        yield at(1, f"no level-1 title — start the file with '# {want or 'Handoff'}'")
        return
    for _, line in doc.titles[1:]:
        yield at(line, "a second level-1 title — use one '# ' heading; sections are '## '")
    text, line = doc.titles[0]
    if want is not None and text.casefold() != want.casefold():
        yield at(line, f"title is '{excerpt(text)}', expected '{want}' (handoff.title)")


def _sections(doc: Document, cfg: "dict[str, Any]", at: "At") -> "Iterator[Finding]":
    expected = cfg["sections"]
    found_lines: list[int] = []
    for index, name in enumerate(expected):
        matches = doc.section(name)
        if not matches:
            yield _missing(doc, expected, index, at)
            continue
        for extra in matches[1:]:
            yield at(extra.line, f"section '## {name}' appears again (first at line {matches[0].line}) — merge them")
        found_lines.append(matches[0].line)
        if len(found_lines) > 1 and found_lines[-1] < found_lines[-2]:
            previous = next(n for n in reversed(expected[: expected.index(name)]) if doc.section(n))
            yield at(matches[0].line, f"section '## {name}' is out of order: it belongs after '## {previous}'")
            found_lines[-1] = found_lines[-2]


def _missing(doc: Document, expected: list[str], index: int, at: "At") -> Finding:
    """Say where the missing section goes: before the next present one, else after the one it follows in the order.

    Followed in the order reported (the configured order), the advice builds a file in that order.
    """
    name = expected[index]
    for later in expected[index + 1:]:
        if doc.section(later):
            following = doc.section(later)[0]
            return at(following.line, f"missing section '## {name}' — add it before '## {following.name}'")
    where = f"after '## {expected[index - 1]}'" if index else "right after the title"
    return at(len(doc.lines) or 1, f"missing section '## {name}' — add it at the end, {where}")


def _meta(ctx: Context, doc: Document, cfg: "dict[str, Any]", at: "At") -> "Iterator[Finding]":
    name = cfg["meta_section"]
    sections = doc.section(name)
    if not sections:
        return  # reported as a missing section
    entries = doc.meta(name)
    seen: dict[str, int] = {}
    for entry in entries:
        if entry.key in seen:
            yield at(entry.line, f"Meta key '{excerpt(entry.key)}' appears again (first at line {seen[entry.key]})")
        seen.setdefault(entry.key, entry.line)
    by_key = {e.key: e for e in reversed(entries)}
    anchor = sections[0].line
    ref = by_key.get("ref")
    if ref is None:
        yield at(anchor, "Meta has no '- ref: <sha of HEAD>' — add the commit this hand-over was written against")
    else:
        yield from _ref(ctx, ref.value, ref.line, at)
    updated = by_key.get("updated")
    if updated is None:
        yield at(anchor, "Meta has no '- updated: <UTC time>' — add e.g. '- updated: 2026-11-30T08:00:00Z'")
    else:
        yield from _updated(ctx, updated.value, updated.line, at)


def _ref(ctx: Context, value: str, line: int, at: "At") -> "Iterator[Finding]":
    longest = ctx.repo.id_length()  # 40 in a SHA-1 repository, 64 in a SHA-256 one
    if not 7 <= len(value) <= longest or value.strip(_HEX):
        yield at(line, f"Meta ref '{excerpt(value)}' is not a commit id (7-{longest} hex digits)")
        return
    if ctx.repo.head is None:
        yield at(line, "this branch has no commit yet: Meta ref cannot be checked until the first commit", WARNING)
        return
    if ctx.repo.resolve_commit(value) is None:
        if ctx.repo.is_shallow():
            yield at(line, not_in_shallow_clone(value), WARNING)
            return
        yield at(line, f"Meta ref {value} does not name a commit in this repository — set it to HEAD "
                 f"({ctx.repo.head[:12]}) when you write the hand-over")


def _updated(ctx: Context, value: str, line: int, at: "At") -> "Iterator[Finding]":
    problem = handoff.updated_problem(value, ctx.now)  # the brief's judgement too
    if problem is not None:
        yield at(line, problem)


def _target(doc: Document, cfg: "dict[str, Any]", at: "At") -> "Iterator[Finding]":
    for section in doc.section(cfg["target_section"])[:1]:
        if not section.text_lines and not section.items:
            yield at(section.line, f"'## {section.name}' is empty — say in one sentence what is being worked on")


def _placeholders(ctx: Context, doc: Document, at: "At") -> "Iterator[Finding]":
    """`gate init`'s placeholder is not a hand-over: a warning while it stands, a violation in a commit that carries it."""
    lines = [number for number in doc.comment_lines if handoff.PLACEHOLDER in doc.lines[number - 1]]  # a comment
    if not lines:
        return
    relative = ctx.config.section("handoff")["path"]
    carried = [change for change in ctx.changes if change.touches(relative)
               and handoff.PLACEHOLDER.encode() in (change.after(relative) or b"")]
    for number in lines:
        if carried:
            yield at(number, f"{carried[0].label} carries the placeholder `gate init` wrote — write the real text "
                     "in its place (and drop the marker) before committing the hand-over")
        else:
            yield at(number, "placeholder text from `gate init` — replace it with the real text (and drop the marker)",
                     WARNING)


def _project_schema(ctx: Context, doc: Document, cfg: "dict[str, Any]", at: "At") -> "Iterator[Finding]":
    from gates.infra import validation

    schema = load_project_schema(ctx, cfg["schema"])
    model, lines = doc.to_json(cfg["meta_section"])
    try:
        problems = validation.bounded(schema, model, lines)  # checked too: a committed schema is hostile input
    except validation.Unusable as exc:
        raise schema_error(cfg["schema"], exc.message) from None
    for line, message in problems:
        yield at(line, f"schema {cfg['schema']}: {message}")


def schema_error(relative: str, problem: str) -> "GateError":
    """The one error of a project schema that cannot be used: exit 3, `config-invalid`, naming the key and the file."""
    from gates.infra.errors import GateError

    return GateError(f"handoff.schema: {problem}", reason="config-invalid", path=relative)


def load_project_schema(ctx: Context, relative: str) -> "dict[str, Any]":
    from gates.infra import fsio, jsonio
    from gates.infra.errors import GateError

    data = fsio.read_bytes_capped(ctx.repo.path(relative), 1 << 20, relative)
    if isinstance(data, int):
        raise GateError(f"schema is {data:,} bytes, over the 1 MiB cap", reason="config-invalid", path=relative)
    try:
        schema = jsonio.load_json(fsio.decode_text(data, relative))
    except jsonio.DataError as exc:
        raise GateError(exc.message, reason="config-invalid", path=relative, line=exc.line or None) from None
    if not isinstance(schema, dict):
        raise schema_error(relative, "a schema must be a JSON object")
    return schema
