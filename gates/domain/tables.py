"""Generated tables: regions of the hand-over file that are rendered from the records, never kept by hand.

A region is `<!-- gate:table NAME -->` … `<!-- /gate:table -->`, each marker on its own line.
NAME `decisions` lists the open records; `decisions-closed` the closed and superseded ones;
`decisions-all` every record.
"""

from gates.domain import handoff, records
from gates.infra import fsio
from gates.infra.config import Config
from gates.infra.git import Repo
from gates.infra.plain import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

_NAME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
SELECT: "dict[str, Callable[[records.Record], bool]]" = {
    "decisions": lambda r: r.status == "open",
    "decisions-closed": lambda r: r.status in records.FINAL,
    "decisions-all": lambda r: True,
}


class Region(NamedTuple):
    name: str
    start: int  # 0-based index of the start marker
    end: int | None  # 0-based index of the end marker; None when it is missing


def marker(line: str) -> tuple[bool, str] | None:
    """What a marker line is: (True, NAME) for `<!-- gate:table NAME -->`, (False, "") for `<!-- /gate:table -->`,
    each alone on its line with any blanks around its words; None for any other line. String methods, not a pattern:
    a hand-over whose comments include these markers (this repository's own) loads no `re` on a commit."""
    body = line.strip()
    if "gate:table" not in body or not body.startswith("<!--") or not body.endswith("-->"):
        return None
    inner = body[4:-3].strip()
    if inner == "/gate:table":
        return False, ""
    rest = inner[10:] if inner.startswith("gate:table") else ""
    name = rest.strip()
    if rest[:1].isspace() and 1 <= len(name) <= 40 and _NAME.issuperset(name):
        return True, name
    return None


def regions(lines: list[str], comments: list[int] | None = None) -> list[Region]:
    """The table regions of `lines`. Both markers are HTML comments: with `comments` (a parsed Document's
    comment_lines, 1-based) no other line is even visited."""
    found: list[Region] = []
    open_at: tuple[str, int] | None = None
    numbered = ((n - 1, lines[n - 1]) for n in comments) if comments is not None else enumerate(lines)
    for index, line in numbered:
        shape = marker(line)
        if shape is None:
            continue
        if shape[0]:
            if open_at is not None:
                found.append(Region(open_at[0], open_at[1], None))
            open_at = (shape[1], index)
        elif open_at is not None:
            found.append(Region(open_at[0], open_at[1], index))
            open_at = None
    if open_at is not None:
        found.append(Region(open_at[0], open_at[1], None))
    return found


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(name: str, found: list[records.Record]) -> list[str] | None:
    """The rendered lines of table `name`, or None when there is no such table."""
    if name not in SELECT:
        return None
    chosen = sorted((r for r in found if SELECT[name](r)), key=lambda r: (str(r.meta.get("date")), str(r.meta.get("id"))))
    if not chosen:
        return ["_(none)_"]
    rows = ["| ID | Title | Status | Date |", "| --- | --- | --- | --- |"]
    rows += [f"| {_cell(r.meta.get('id'))} | {_cell(r.meta.get('title'))} | {_cell(r.status)} | {_cell(r.meta.get('date'))} |"
             for r in chosen]
    return rows


def render(lines: list[str], found: list[records.Record]) -> list[str]:
    """`lines` with every well-formed region of a known table filled in anew."""
    out = list(lines)
    for region in reversed(regions(lines)):
        body = table(region.name, found)
        if region.end is not None and body is not None:
            out[region.start + 1:region.end] = body
    return out


def render_file(repo: Repo, config: Config, write: bool, who: str = "gate render") -> tuple[list[str], list[str]]:
    """The names of the out-of-date tables of the hand-over file and a unified diff; `write` renders them (a
    compare-and-swap: a hand-over changed since it was read is left as it is, and `who` is told to run again)."""
    import difflib

    path, shown, data, source = handoff.read_for_rewrite(repo, config, "rendered")
    found = records.load_all(repo, config)[0]
    stale = [r.name for r in regions(source.lines) if r.end is not None and table(r.name, found) is not None
             and source.lines[r.start + 1:r.end] != table(r.name, found)]
    if not stale:
        return [], []
    new_lines = render(source.lines, found)
    if write:
        fsio.rewrite(path, data, source.encode(new_lines), shown=shown, who=who)
        from gates.domain import journal  # only a render writes; a check never loads it

        journal.append(repo, "tables-rendered", {"path": shown, "tables": stale})
    diff = list(difflib.unified_diff(source.lines, new_lines, f"a/{shown}", f"b/{shown}", lineterm=""))
    return stale, diff
