"""`gate archive`: completed items leave the hand-over file for the archive.

Every checked item, with its nested children, continuation lines and code blocks, moves to the
end of the archive under a heading with the date and the HEAD ref. Crash-safe order: the archive
is written (atomically, fsynced) before the hand-over file is, so a crash between the two leaves
an item in both files, never in neither.
"""

from __future__ import annotations

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


class Move(NamedTuple):
    section: str
    item: handoff.Item

    @property
    def span(self) -> range:
        return range(self.item.line - 1, self.item.end_line)  # 0-based line indexes


def plan(doc: handoff.Document) -> list[Move]:
    """The outermost checked items: a checked item inside a checked one moves with it."""
    moves: list[Move] = []

    def visit(section: str, items: Sequence[handoff.Item]) -> None:
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


def archive(repo: Repo, config: Config, now: datetime) -> list[Move]:
    path, shown, _, source = handoff.read_for_rewrite(repo, config, "archived")
    moves = plan(handoff.parse(source.lines, shown))
    if not moves:
        return []
    archive_path = repo.path(config.section("archive")["path"])
    _append_to_archive(repo, archive_path, _block(source.lines, moves, repo.head, now))
    gone = {index for move in moves for index in move.span}
    fsio.write_atomic(path, source.encode([line for i, line in enumerate(source.lines) if i not in gone]))
    journal.append(repo, "archive", {"from": shown, "to": repo.relpath(archive_path),
                                     "items": [move.item.text[:200] for move in moves]}, now)
    return moves


def _append_to_archive(repo: Repo, path: str, block: list[str]) -> None:
    """Add `block` at the end: the old bytes stay, byte for byte, a prefix of the new ones (append-only)."""
    shown = repo.relpath(path)
    if os.path.lexists(path):
        data = fsio.read_bytes_capped(path, MAX_ARCHIVE_BYTES, shown)
        if isinstance(data, int):
            raise GateError(f"{shown} is {data:,} bytes, over the {MAX_ARCHIVE_BYTES:,}-byte cap: not archived",
                            reason="input-unreadable", path=shown)
        eol = handoff.Source.decode(data, shown).eol
    else:
        data, eol = b"# Archive\n", "\n"
    if data and not data.endswith(b"\n"):
        data += eol.encode()
    fsio.write_atomic(path, data + (eol.join(block) + eol).encode("utf-8", "surrogateescape"), parents=True)
