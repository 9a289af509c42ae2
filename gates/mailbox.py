"""mailbox: the work-package file is either exactly its sentinel line or a work package with its sections.

A work package carries an execution plan from one session to the next; `gate mailbox take`
prints it and clears the file to the sentinel line, atomically. A missing file is an empty
mailbox.
"""

from __future__ import annotations

from datetime import datetime

from gates import fsio, handoff, journal, state
from gates.config import Config
from gates.context import Context
from gates.errors import GateError
from gates.findings import Finding
from gates.git import Repo

ID = "mailbox"
SUMMARY = "the work-package file is its sentinel line or a complete work package"
MAX_BYTES = 1 << 20


def _read(repo: Repo, config: Config) -> tuple[str, bytes | None]:
    relative = config.section("mailbox")["path"]
    path = repo.toplevel / relative
    if not path.exists() and not path.is_symlink():
        return relative, None
    data = fsio.read_bytes_capped(path, MAX_BYTES, relative)
    if isinstance(data, int):
        raise GateError(f"{data:,} bytes, over the {MAX_BYTES:,}-byte cap", reason="input-unreadable", path=relative)
    return relative, data


def is_empty(data: bytes | None, sentinel: str, shown: str) -> bool:
    return data is None or handoff.Source.decode(data, shown).lines == [sentinel]


def check(ctx: Context) -> list[Finding]:
    cfg = ctx.config.section("mailbox")
    shown, data = _read(ctx.repo, ctx.config)
    if is_empty(data, cfg["sentinel"], shown):
        return []
    assert data is not None
    doc = handoff.parse(handoff.Source.decode(data, shown).lines, shown)
    return [Finding(shown, 1, ID, f"neither the sentinel line ({cfg['sentinel']!r}) nor a work package: it has no "
                    f"'## {name}' section — add it, or clear the file with `gate mailbox take`")
            for name in cfg["sections"] if not doc.section(name)]


def take(repo: Repo, config: Config, now: datetime) -> str | None:
    """The work package, with the file cleared to the sentinel line; None when the mailbox is empty."""
    cfg = config.section("mailbox")
    lay = state.layout(repo)
    with fsio.locked(state.ensure_dir(lay, lay.root)):
        shown, data = _read(repo, config)
        if is_empty(data, cfg["sentinel"], shown):
            return None
        assert data is not None
        text = fsio.decode_text(data, shown)
        fsio.write_atomic(repo.toplevel / cfg["path"], (cfg["sentinel"] + "\n").encode("utf-8"))
    journal.append(repo, "mailbox-taken", {"path": shown, "bytes": len(data)}, now)
    return text
