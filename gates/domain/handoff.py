"""HANDOFF.md as a line-numbered model: title, sections, list items (nested) and the Meta block.

Markdown is read line by line, never rendered. Fenced code blocks and HTML comments are
skipped; a line's visible text is what is left outside comments.
"""

from gates.infra.clock import datetime, timedelta
from gates.infra.plain import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

    from gates.domain.changes import Change
    from gates.infra.config import Config
    from gates.infra.git import Repo

# The line shapes below are read with string methods, not regular expressions: `re` costs a commit
# about 10 ms to import. tests/domain/test_handoff_lines.py holds each shape as the regular expression
# it was first written as and checks that the two agree on every line it generates.
_BLANK = " \t"
_BOXES = ("[ ]", "[x]", "[X]")  # a task item's box: then nothing, or blanks before its text
_CONFLICT_FIRST = ("<", ">", "|")
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_KEY_CHARS = _LETTERS + "0123456789_-"


def heading_line(visible: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading: up to 3 spaces, 1 to 6 `#`, then nothing or blanks and the text,
    less a closing run of `#` that follows a blank; None when the line is no heading."""
    spaces = len(visible) - len(visible.lstrip(" "))
    body = visible[spaces:]
    level = len(body) - len(body.lstrip("#"))
    rest = body[level:]
    if spaces > 3 or not 1 <= level <= 6 or rest[:1] not in ("", " ", "\t"):
        return None
    text = rest.strip(_BLANK)
    opening = text.rstrip("#")
    if opening[-1:] in (" ", "\t"):  # `## Title ##`: the closing run goes
        text = opening.rstrip(_BLANK)
    return level, text.strip()


def item_line(visible: str) -> tuple[str, str, str | None] | None:
    """(indent, marker, rest) of a list item: blanks, then `-`, `*`, `+` or 1 to 9 digits and `.` or `)`,
    then the end of the line or blanks and the rest (None when nothing follows the marker)."""
    body = visible.lstrip(_BLANK)
    if body[:1] in ("-", "*", "+"):
        marker = body[0]
    else:
        digits = 0
        while digits < 10 and body[digits:digits + 1].isdecimal():
            digits += 1
        if not 1 <= digits <= 9 or body[digits:digits + 1] not in (".", ")"):
            return None
        marker = body[:digits + 1]
    after = body[len(marker):]
    if after and after[0] not in _BLANK:
        return None
    return visible[: len(visible) - len(body)], marker, after.lstrip(_BLANK) if after else None


def thematic_line(visible: str) -> bool:
    """A thematic break: up to 3 spaces, then three or more of one of `-`, `*`, `_`, with blanks between."""
    spaces = len(visible) - len(visible.lstrip(" "))
    body = visible[spaces:]
    char = body[:1]
    return spaces <= 3 and char in ("-", "*", "_") and body.count(char) >= 3 \
        and not body.replace(char, "").replace(" ", "").replace("\t", "")


def conflict_line(raw: str) -> bool:
    """A merge conflict marker: seven `<`, `>` or `|` that start the line, then a space or its end."""
    char = raw[:1]
    return char in _CONFLICT_FIRST and raw[:7] == char * 7 and raw[7:8] in ("", " ")


def meta_line(text: str) -> tuple[str, str] | None:
    """(key, value) of a Meta item `key: value`: the key an ASCII letter and then letters, digits, `_`, `-`."""
    if text[:1] not in _LETTERS or len(text[:1]) != 1:
        return None
    key = text[: len(text) - len(text.lstrip(_KEY_CHARS))]
    rest = text[len(key):].lstrip(_BLANK)
    return (key, rest[1:].lstrip(_BLANK)) if rest[:1] == ":" else None


def utc_shape(value: str) -> bool:
    """`YYYY-MM-DDTHH:MM`, then optionally `:SS` and a fraction of 1 to 9 digits, then `Z` or `+00:00`."""
    zone = "Z" if value.endswith("Z") else "+00:00" if value.endswith("+00:00") else ""
    stamp, dot, fraction = value[: len(value) - len(zone)].partition(".")
    if not zone or dot and (len(stamp) != 19 or not 1 <= len(fraction) <= 9 or not fraction.isdecimal()):
        return False
    shape = "dddd-dd-ddTdd:dd:dd"[: len(stamp)]
    return len(stamp) in (16, 19) and all(c.isdecimal() if s == "d" else c == s for c, s in zip(stamp, shape, strict=True))


# What `gate init` writes where a person must write: recognised by this marker, never by guessing at wording.
PLACEHOLDER = "<!-- gate:placeholder -->"


def parse_utc(value: str) -> datetime | None:
    """An ISO-8601 UTC time as the Meta block writes it (`Z` or `+00:00`), or None."""
    if not utc_shape(value):
        return None
    from gates.infra import clock

    return clock.parse_utc(value)


CLOCK_SKEW = timedelta(minutes=5)


def updated_problem(value: str, now: datetime) -> str | None:
    """What is wrong with a Meta `updated` value at `now`: not a UTC time, or in the future (beyond CLOCK_SKEW);
    None when it is neither. The one judgement: `gate check` (handoff-structure) refuses what it names, and the
    brief drops such a hand-over's target and threads as stale."""
    when = parse_utc(value)
    if when is None:
        from gates.infra.text import excerpt

        return f"Meta updated '{excerpt(value)}' is not a UTC time like 2026-11-30T08:00:00Z"
    if when > now + CLOCK_SKEW:
        from gates.infra import clock

        return f"Meta updated {value} is in the future (now {clock.utc_text(now)})"
    return None


class Item:
    """A list item with its continuation lines; its nested items are its children."""

    __slots__ = ("line", "indent", "marker", "checked", "text", "end_line", "chars", "children")

    def __init__(self, line: int, indent: int, marker: str, checked: bool | None, text: str, end_line: int,
                 chars: int) -> None:
        self.line = line
        self.indent = indent
        self.marker = marker
        self.checked = checked  # None: not a task item
        self.text = text  # on its first line, its box (if any) left out, without blanks around it
        self.end_line = end_line
        self.chars = chars  # length of the whole item: its line and its continuation lines
        self.children: Sequence[Item] = ()  # a list once it has one (most items of a long hand-over have none)

    def to_json(self) -> "dict[str, Any]":
        return {
            "line": self.line,
            "text": self.text,
            "checked": self.checked,
            "children": [child.to_json() for child in self.children],
        }


class Section:
    def __init__(self, name: str, line: int, end_line: int) -> None:
        self.name = name
        self.line = line
        self.end_line = end_line
        self.items: list[Item] = []  # top-level items; children nest
        self.text_lines: list[int] = []  # lines with visible text

    def walk(self) -> list[Item]:
        out: list[Item] = []
        add = out.append
        for top in self.items:
            add(top)
            if top.children:  # most items of a long hand-over have none
                stack = list(reversed(top.children))
                while stack:
                    item = stack.pop()
                    add(item)
                    stack.extend(reversed(item.children))
        return out


class MetaEntry(NamedTuple):
    key: str
    value: str
    line: int


class Document:
    def __init__(self, path: str, lines: list[str]) -> None:
        self.path = path
        self.lines = lines
        self.titles: list[tuple[str, int]] = []
        self.preamble = Section("", 1, 1)
        self.sections: list[Section] = []
        self.conflict_markers: list[int] = []
        self.comment_lines: list[int] = []  # every line holding `<!--`, fenced or not: where the gate's markers can be
        self.unclosed: list[tuple[str, int]] = []  # ("fence" | "comment", line)
        self._items: list[Item] | None = None

    def section(self, name: str) -> list[Section]:
        return [s for s in self.sections if s.name.casefold() == name.casefold()]

    def items(self) -> list[Item]:
        """Every item of the document, in order, children after their parent (walked once: a parsed model stays)."""
        if self._items is None:
            self._items = [item for s in (self.preamble, *self.sections) for item in s.walk()]
        return list(self._items)

    def meta(self, section_name: str) -> list[MetaEntry]:
        entries = []
        for section in self.section(section_name)[:1]:
            for item in section.items:
                pair = meta_line(item.text)
                if pair and item.checked is None:
                    entries.append(MetaEntry(pair[0], _unquote(pair[1]), item.line))
        return entries

    def meta_value(self, section_name: str, key: str) -> MetaEntry | None:
        """The first `- key: value` of the Meta section (duplicates are handoff-structure's to report)."""
        return next((entry for entry in self.meta(section_name) if entry.key == key), None)

    def to_json(self, meta_section: str) -> "tuple[dict[str, Any], dict[tuple[object, ...], int]]":
        """The model as JSON data for a schema, and the line of each path in it."""
        lines: dict[tuple[object, ...], int] = {}
        meta: dict[str, str] = {}
        for section in self.section(meta_section)[:1]:
            lines[("meta",)] = section.line
        for entry in self.meta(meta_section):
            meta.setdefault(entry.key, entry.value)
            lines.setdefault(("meta", entry.key), entry.line)
        sections = []
        for index, section in enumerate(self.sections):
            lines[("sections", index)] = section.line
            _item_lines(section.items, ("sections", index, "items"), lines)
            sections.append({
                "name": section.name,
                "line": section.line,
                "text": "\n".join(self.lines[n - 1] for n in section.text_lines),
                "items": [item.to_json() for item in section.items],
            })
        title = self.titles[0][0] if self.titles else None
        if self.titles:
            lines[("title",)] = self.titles[0][1]
        return {"title": title, "meta": meta, "sections": sections}, lines


def _item_lines(items: "Sequence[Item]", prefix: tuple[object, ...], lines: dict[tuple[object, ...], int]) -> None:
    for index, item in enumerate(items):
        lines[prefix + (index,)] = item.line  # not `(*prefix, index)`: mypy on Python 3.10 takes it for PEP 646
        _item_lines(item.children, prefix + (index, "children"), lines)


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "`'\"":
        return value[1:-1].strip()
    return value


def _indent(prefix: str) -> int:
    return len(prefix.expandtabs(4)) if "\t" in prefix else len(prefix)


def _item_line(first: str, visible: str) -> tuple[str, str, str | None] | None:
    """The list item a visible line is, given its first non-blank character; None when it is none (or a
    thematic break, which looks like one). The shapes are read only where that character allows one."""
    if not first or not (first in "-*+" or first.isdecimal()):
        return None
    item = item_line(visible)
    return None if item is None or first in "-*" and thematic_line(visible) else item


class _Parser:
    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.section = doc.preamble
        self.fence: tuple[str, int, int] | None = None  # (char, length, line)
        self.fence_in_item = False
        self.comment_line = 0  # line where an open HTML comment began
        self.open_items: list[Item] = []  # the current chain of nested items
        self.last_item_line = 0
        self.in_conflict = False

    # Each shape is tried only on a line whose first visible character it needs: almost every line fails
    # almost all of them.
    def feed(self, number: int, raw: str) -> None:
        if "<!--" in raw:  # (run sends every such line here)
            self.doc.comment_lines.append(number)
        # Conflict markers first: a merge leaves them wherever it likes, fences included.
        if conflict_line(raw) or (self.in_conflict and raw.rstrip() == "======="):
            self.doc.conflict_markers.append(number)
            self.in_conflict = not raw.startswith(">")
            return
        if self.fence is not None:
            self._in_fence(number, raw)
            return
        visible = raw if not self.comment_line and "<!--" not in raw else self._strip_comments(number, raw)
        lead = visible.lstrip(" \t")
        if not lead.strip():
            return
        first = lead[:1]
        run = len(lead) - len(lead.lstrip(first)) if lead[:3] in ("```", "~~~") else 0
        if run and not (first == "`" and "`" in lead[run:]):  # a backtick fence's info string holds no backtick
            self.fence = (first, run, number)
            self.fence_in_item = self._continue(number, visible, blocks=True)
            self._touch(number)
            return
        heading = heading_line(visible) if first == "#" else None
        if heading:
            self._heading(number, *heading)
        elif item := _item_line(first, visible):
            self._item(number, *item, visible)
        elif not self._continue(number, visible, blocks=False):
            self.open_items.clear()
            self.section.text_lines.append(number)
        self._touch(number)

    def run(self, lines: list[str]) -> None:
        """Feed every line. An item line outside a fence, a comment and a conflict (most of a long hand-over)
        goes straight to _item, decided by its first characters, and so does a line of text under no item that
        starts with a letter or `|` (a generated table's row): no other shape starts so; every other line goes
        to feed."""
        slow, add = self.feed, self._item
        plain = True  # no fence, comment or conflict is open: only feed opens or closes one
        for number, raw in enumerate(lines, start=1):
            if plain and "<!--" not in raw:
                body = raw.lstrip(" \t")  # `raw` itself when it starts with its marker
                first = body[:1]
                if (first == "-" or first == "*" or first == "+") and body[1:2] in (" ", "\t"):
                    rest = body[1:].lstrip(" \t")
                    # A thematic break is made of its marker and blanks: a line whose text starts otherwise is no
                    # break; one that starts with its marker again is left to feed.
                    if rest and rest[0] != first:
                        add(number, "" if body is raw else raw[: len(raw) - len(body)], first, rest, raw)
                        continue
                elif first.isdecimal() and raw[:1] not in _CONFLICT_FIRST:
                    shape = item_line(raw)
                    if shape:
                        add(number, *shape, raw)
                        continue
                elif (first.isalpha() or (first == "|" and not conflict_line(raw))) and not self.open_items:
                    self.section.text_lines.append(number)
                    self.section.end_line = number
                    continue
            slow(number, raw)
            plain = self.fence is None and not self.comment_line and not self.in_conflict

    def _in_fence(self, number: int, raw: str) -> None:
        assert self.fence is not None
        char, length, _ = self.fence
        stripped = raw.strip()
        if stripped.startswith(char * length) and not stripped.strip(char):
            self.fence = None
        if self.fence_in_item:
            for item in self.open_items:
                item.end_line = number  # a code block inside an item belongs to it
        self._touch(number)

    def _strip_comments(self, number: int, raw: str) -> str:
        out: list[str] = []
        pos = 0
        while pos < len(raw):
            if self.comment_line:
                end = raw.find("-->", pos)
                if end < 0:
                    return "".join(out)
                pos, self.comment_line = end + 3, 0
            else:
                start = raw.find("<!--", pos)
                if start < 0:
                    out.append(raw[pos:])
                    break
                out.append(raw[pos:start])
                pos, self.comment_line = start + 4, number
        return "".join(out)

    def _heading(self, number: int, level: int, text: str) -> None:
        self.open_items.clear()
        if level == 1:
            self.doc.titles.append((text, number))
        elif level == 2:
            self.section = Section(text, number, number)
            self.doc.sections.append(self.section)
        else:
            self.section.text_lines.append(number)
        self._touch(number)

    def _item(self, number: int, lead: str, marker: str, rest: str | None, visible: str) -> None:
        indent = 0 if not lead else len(lead) if "\t" not in lead else _indent(lead)
        body = rest.rstrip() if rest else ""
        checked: bool | None = None
        if body[:3] in _BOXES and body[3:4] in ("", " ", "\t"):
            checked = body[1] != " "  # `[ ]`, `[x]`, `[X]`, then nothing or blanks before the text
            body = body[3:].lstrip(" \t")
        item = Item(number, indent, marker, checked, body, number, len(visible.strip()))
        chain = self.open_items
        while chain and chain[-1].indent >= indent:
            chain.pop()
        if chain:
            parent = chain[-1]
            if parent.children:
                parent.children.append(item)  # type: ignore[attr-defined]  # (a list, once it has one)
            else:
                parent.children = [item]
            for ancestor in chain:
                ancestor.end_line = number  # a child is part of its parent's span
        else:
            self.section.items.append(item)
        chain.append(item)
        self.last_item_line = number
        self.section.end_line = number

    def _continue(self, number: int, visible: str, *, blocks: bool) -> bool:
        """Attach a line to the item it is indented under, or to the item it lazily follows."""
        lazy = bool(self.open_items) and self.last_item_line == number - 1 and not blocks
        if not lazy:
            indent = _indent(visible[: len(visible) - len(visible.lstrip())])
            while self.open_items and indent <= self.open_items[-1].indent:
                self.open_items.pop()  # the line belongs to an outer item, or to none
        if not self.open_items:
            if blocks:
                self.section.text_lines.append(number)
            return False
        for open_item in self.open_items:
            open_item.end_line = number
        self.open_items[-1].chars += 1 + len(visible.strip())
        self.last_item_line = number
        self._touch(number)
        return True

    def _touch(self, number: int) -> None:
        self.section.end_line = number

    def finish(self) -> None:
        if self.fence is not None:
            self.doc.unclosed.append(("code fence", self.fence[2]))
        if self.comment_line:
            self.doc.unclosed.append(("HTML comment", self.comment_line))


class Source(NamedTuple):
    """A text file's lines and the conventions to write them back with: its line end, BOM and last newline."""

    lines: list[str]
    eol: str
    bom: bool
    final_newline: bool

    @classmethod
    def decode(cls, data: bytes, shown: str) -> "Source":
        from gates.infra import fsio

        lines = fsio.split_lines(fsio.decode_text(data, shown))
        return cls(lines, "\r\n" if b"\r\n" in data else "\n", data.startswith(fsio.BOM), data.endswith(b"\n") or not data)

    def encode(self, lines: list[str] | None = None) -> bytes:
        from gates.infra import fsio

        body = self.eol.join(self.lines if lines is None else lines)
        if self.final_newline and (self.lines if lines is None else lines):
            body += self.eol
        return (fsio.BOM if self.bom else b"") + body.encode("utf-8", "surrogateescape")


def parse(lines: list[str], path: str) -> Document:
    import gc

    doc = Document(path=path, lines=lines)
    parser = _Parser(doc)
    collecting = gc.isenabled()
    gc.disable()  # the model holds no cycle; without this, collections over its growing heap took half the time
    try:
        parser.run(lines)
    finally:
        if collecting:
            gc.enable()
    parser.finish()
    return doc


def read(repo: "Repo", config: "Config", path: str | None = None) -> tuple[str, str, bytes | int]:
    """The hand-over file (the configured one unless `path`) as (path, shown, bytes), or its size in place of
    the bytes when it is over handoff.max_bytes: it is then never read. A missing file is refused."""
    import os

    from gates.infra import fsio, paths
    from gates.infra.errors import GateError

    path = path if path is not None else repo.path(config.section("handoff")["path"])
    shown = repo.relpath(path)
    if not os.path.lexists(path):
        raise GateError("file not found — create it with `gate init`", reason="input-unreadable", path=shown)
    real = paths.confined(repo, path, shown)  # a hand-over that leads outside the work tree is never read
    return real, shown, fsio.read_bytes_capped(real, config.section("handoff")["max_bytes"], shown)


def read_for_rewrite(repo: "Repo", config: "Config", verb: str) -> tuple[str, str, bytes, Source]:
    """The configured hand-over file for a command that rewrites it; one over its size cap is refused."""
    from gates.infra.errors import GateError

    path, shown, data = read(repo, config)
    if isinstance(data, int):
        raise GateError(f"{data:,} bytes, over handoff.max_bytes ({config.section('handoff')['max_bytes']:,}): "
                        f"not {verb}", reason="input-unreadable", path=shown)
    return path, shown, data, Source.decode(data, shown)


class Loaded(NamedTuple):
    """A hand-over file as read: its document, or only its size when it was over the cap; `indexed`: it is the
    index's copy (a commit is being made); `unstaged`: the work-tree copy differs from it; `unrecorded`: the path
    at which the commit being made records no hand-over (the index holds none there; the work tree's was read)."""

    shown: str
    size: int
    doc: Document | None
    indexed: bool = False
    unstaged: bool = False
    unrecorded: str = ""


def load_handoff(repo: "Repo", config: "Config", path: str, staged: "list[Change] | None" = None) -> Loaded:
    """The hand-over as the gates judge it: when a commit is being made (`staged` holds it: changes.committing;
    `path` is then the configured hand-over), what that commit will record, as CI will later see it: the
    index's copy, staged now or before, whatever the work tree holds; otherwise, or when the index has none, the
    work-tree file."""
    import os

    from gates.domain.changes import committing
    from gates.infra.paths import below

    change = staged[0] if staged and committing(staged) else None
    cap = config.section("handoff")["max_bytes"]
    # the configured name as a checkout meets it: its folders resolved, the name itself not (a link stays a link)
    named = repo.relpath(repo.path(config.handoff_named)) if change is not None else ""
    if change is not None and not os.path.lexists(path):  # a sparse checkout leaves it out of the work tree
        recorded, _ = _recorded(repo, change, named, named, cap)
        if recorded is not None:
            return _loaded(named, _held(repo, recorded, cap), indexed=True)
    real, shown, data = read(repo, config, path)
    indexed = unstaged = False
    unrecorded = ""
    if change is not None:
        recorded, unrecorded = _recorded(repo, change, named, below(real, repo.toplevel), cap)
        if recorded is not None:
            held = _held(repo, recorded, cap)
            indexed, unstaged = True, _differ(held, data)
            data = held
    return _loaded(shown, data, indexed, unstaged, unrecorded)


def _held(repo: "Repo", recorded: tuple[bytes, str], cap: int) -> bytes | int:
    """The index's copy as judged: its bytes, or its size when it is over the cap (never read past it)."""
    blob, where = recorded
    return blob if len(blob) <= cap else repo.index_size(where)


def _loaded(shown: str, data: bytes | int, indexed: bool = False, unstaged: bool = False,
            unrecorded: str = "") -> Loaded:
    """The Loaded of `data` (its size alone: over the cap, not parsed)."""
    if isinstance(data, int):
        return Loaded(shown, data, None, indexed, unstaged, unrecorded)
    return Loaded(shown, len(data), parse(Source.decode(data, shown).lines, shown), indexed, unstaged, unrecorded)


def _recorded(repo: "Repo", change: "Change", named: str, target: str, cap: int) -> tuple[tuple[bytes, str] | None, str]:
    """What the commit being made records of the hand-over at `named` (`target`: the file it is, where `named` is a
    link in the work tree): (the index's copy and its path, or None: the work tree's is judged; the path at which
    the commit records no hand-over, so CI's checkout would find none there, or ""). A conflict (stages 1-3, no
    stage 0) records nothing yet: its markers are the work tree's to judge; a file of a submodule (or any
    repository nested in this one) is that repository's to record."""
    from gates.infra.paths import nested

    listed = {status for status, _ in change.changed(named, target)}
    if "U" in listed:
        return None, ""
    where = target
    if named != target:  # a link here: CI checks out what the index holds at `named`, a link (to `target`) or a file
        mode = repo.index_mode(named)
        if mode is None:
            return None, "" if nested(repo, named) else named
        where = target if mode == "120000" else named
    blob = repo.index_blob(where, cap)
    if blob == b"" and _intended(repo, listed, where):
        blob = None  # `git add -N`: an entry no commit records
    if blob is not None:
        return (blob, where), ""
    return None, "" if nested(repo, where) else where


def _intended(repo: "Repo", listed: set[str], relative: str) -> bool:
    """Whether the index's empty entry for `relative` is one `git add -N` made (intent to add, which no commit
    records and `git diff --cached` does not list): not staged as added or changed (`listed`: the status letters
    the staged diff gives it), and not HEAD's (unchanged)."""
    if listed & {"A", "M", "T"}:
        return False
    return "D" in listed or repo.head is None or repo.blob_at(repo.head, relative, limit=0) is None


def _differ(indexed: bytes | int, worktree: bytes | int) -> bool:
    """Whether the work-tree copy differs from the index's: contents (a size over the cap) compared alike, line
    ends aside (a checkout with CRLF, `eol=crlf` or core.autocrlf, is not a change: `git status` says none)."""
    if isinstance(indexed, int) or isinstance(worktree, int):
        return indexed != worktree  # one over the cap (then they differ), or both: their sizes
    from gates.infra.fsio import same_text

    return not same_text(indexed, worktree)


COMMITTED_CAP = 1 << 20  # what of a committed hand-over is read for one Meta value


def head(data: bytes) -> bytes:
    """What of a committed hand-over's bytes is parsed for a Meta value (the Meta block stands at its top): the first
    COMMITTED_CAP bytes, cut at a line's end (a UTF-8 character is never split). Read them with that limit."""
    return data if len(data) <= COMMITTED_CAP else data[: data.rfind(b"\n", 0, COMMITTED_CAP) + 1]


def committed_meta(repo: "Repo", commit: str, path: str, section: str, key: str) -> str | None:
    """The Meta `key` of the hand-over as `commit` holds it (its first COMMITTED_CAP bytes), stripped of
    backticks; None when the commit has no such file, it is no hand-over, or it has no such line. A blob the
    repository lacks is an error (GateError), never "no such value"."""
    from gates.infra.errors import GateError

    data = repo.blob_at(commit, path, limit=COMMITTED_CAP)
    if data is None:
        return None
    try:
        doc = parse(Source.decode(head(data), path).lines, path)
    except GateError:
        return None
    entry = doc.meta_value(section, key)
    return entry.value.strip().strip("`") if entry else None
