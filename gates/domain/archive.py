"""`gate archive`: completed items leave the hand-over file for the archive.

Every checked item, with its nested children, continuation lines and code blocks, moves to the
end of the archive under a heading with the date and the HEAD ref. Crash-safe order: the archive
is written (atomically, fsynced) before the hand-over file is, so a crash between the two leaves
an item in both files, never in neither. Both writes are compare-and-swaps (fsio.rewrite): a line
written to either file while the archive runs is never lost. When the hand-over changed meanwhile,
the archive's append is taken back (if the archive still holds exactly what was written), and
nothing is archived: run it again.
"""

import os

from gates.domain import handoff, journal
from gates.infra import clock, fsio
from gates.infra.clock import datetime
from gates.infra.config import Config
from gates.infra.errors import GateError
from gates.infra.git import Repo
from gates.infra.plain import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence

MAX_ARCHIVE_BYTES = 64 << 20
NEW_ARCHIVE = b"# Archive\n"


class Move(NamedTuple):
    section: str
    item: handoff.Item

    @property
    def span(self) -> range:
        return range(self.item.line - 1, self.item.end_line)  # 0-based line indexes


def plan(doc: handoff.Document) -> list[Move]:
    """The outermost checked items: a checked item inside a checked one moves with it."""
    moves: list[Move] = []

    def visit(section: str, items: "Sequence[handoff.Item]") -> None:
        for item in items:
            if item.checked:
                moves.append(Move(section, item))
            else:
                visit(section, item.children)

    for section in (doc.preamble, *doc.sections):
        visit(section.name or "(before the first section)", section.items)
    return moves


def _block(source_lines: list[str], moves: list[Move], head: str | None, now: datetime) -> list[str]:
    block = ["", f"## Archived {clock.date_text(now)} (HEAD {head[:12] if head else 'none: no commit yet'})"]
    current = None
    for move in moves:
        if move.section != current:
            block += ["", f"### {move.section}"]
            current = move.section
        lines = [source_lines[i] for i in move.span]
        indent = len(lines[0]) - len(lines[0].lstrip())
        block += [line[indent:] if line[:indent].strip() == "" else line.lstrip() for line in lines]
    return block


def archive(repo: Repo, config: Config, now: datetime, who: str = "gate archive") -> list[Move]:
    path, shown, data, source = handoff.read_for_rewrite(repo, config, "archived")
    moves = plan(handoff.parse(source.lines, shown))
    if not moves:
        return []
    archive_path = repo.path(config.section("archive")["path"])
    archive_shown = repo.relpath(archive_path)
    before, after = _appended(archive_path, archive_shown, _block(source.lines, moves, repo.head, now))
    fsio.rewrite(archive_path, before, after, shown=archive_shown, who=who, parents=True)
    gone = {index for move in moves for index in move.span}
    try:
        fsio.rewrite(path, data, source.encode([line for i, line in enumerate(source.lines) if i not in gone]),
                     shown=shown, who=who)
    except fsio.Changed as exc:
        raise _take_back(archive_path, archive_shown, before, after, exc, who) from None
    journal.append(repo, "archive", {"from": shown, "to": archive_shown,
                                     "items": [move.item.text[:200] for move in moves]}, now)
    return moves


def _take_back(path: str, shown: str, before: bytes | None, after: bytes, exc: fsio.Changed, who: str) -> GateError:
    """The hand-over changed after the archive got its block: take the block back out of the archive (a new archive
    keeps only its heading: nothing the gate made is deleted), unless the archive changed too."""
    try:
        fsio.rewrite(path, after, NEW_ARCHIVE if before is None else before, shown=shown, who=who)
        return exc
    except GateError:
        return fsio.Changed(f"{exc.message.split(';')[0]}; the items stay in it, and {shown} also holds a copy of "
                            f"them ({shown} changed too) — run it again, then remove the second copy from {shown}",
                            code=exc.code, reason=exc.reason)


def _appended(path: str, shown: str, block: list[str]) -> tuple[bytes | None, bytes]:
    """The archive as read (None: there is none yet) and with `block` at its end: the old bytes stay, byte for
    byte, a prefix of the new ones (append-only)."""
    if not os.path.lexists(path):
        return None, NEW_ARCHIVE + ("\n".join(block) + "\n").encode("utf-8", "surrogateescape")
    before = fsio.read_bytes_capped(path, MAX_ARCHIVE_BYTES, shown)
    if isinstance(before, int):
        raise GateError(f"{shown} is {before:,} bytes, over the {MAX_ARCHIVE_BYTES:,}-byte cap: not archived",
                        reason="input-unreadable", path=shown)
    eol = handoff.Source.decode(before, shown).eol
    data = before if not before or before.endswith(b"\n") else before + eol.encode()
    return before, data + (eol.join(block) + eol).encode("utf-8", "surrogateescape")
