"""`gate archive`, `gate render` and `gate record`: the archive, the generated tables and the records."""

import os
import sys

from gates.commands import Invocation
from gates.infra import clock
from gates.infra.errors import OK, USAGE, GateError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from gates.infra.clock import datetime
    from gates.infra.config import Config
    from gates.infra.git import Repo


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    if name == 'render':
        parser.add_argument("--diff", action="store_true", help="show what would change; write nothing")
    elif name == 'record':
        parser.add_argument("action", choices=("new",), help="new: write a new open record in records.path (default decisions/)")
        parser.add_argument("title", nargs="+", help="the record's title (the words are joined by spaces)")


def run(args: "argparse.Namespace", run: Invocation) -> int:
    return {'archive': _archive, 'render': _render, 'record': _record}[args.command](args, run)


def _archive(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.domain import archive

    config = run.config()
    source, target = config.section("handoff")["path"], config.section("archive")["path"]
    moves = archive.archive(run.repo(), config, clock.now())
    for move in moves:
        print(f"moved {source}:{move.item.line}-{move.item.end_line} ({move.section}) to {target}: {move.item.text[:80]}")
    if not moves:
        print("nothing to archive: no checked items")
    return OK


def _render(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.domain import tables

    stale, diff = tables.render_file(run.repo(), run.config(), write=not args.diff)
    if args.diff:
        sys.stdout.writelines(line + "\n" for line in diff)
    elif stale:
        print(f"rendered {len(stale)} table(s): {', '.join(stale)}")
    else:
        print("every table is up to date")
    return OK


def _record(args: "argparse.Namespace", run: Invocation) -> int:
    path = new_record(run.repo(), run.config(), " ".join(args.title), clock.now())
    print(run.repo().relpath(path))
    return OK


def new_record(repo: "Repo", config: "Config", title: str, now: "datetime") -> str:
    """`gate record new TITLE`: an open record in records.path, made with an exclusive create (ids never collide)."""
    from gates.domain import journal, records
    from gates.infra import fsio
    from gates.infra.text import not_plain

    title = " ".join(title.split())
    if not title or len(title) > 200 or not_plain(title):
        raise GateError("a record title is 1-200 characters of plain text (no control, NUL, bidi or noncharacter "
                        "code points)", code=USAGE, reason="usage")
    directory, _ = records.folder(repo, config)
    prefix = config.section("records")["prefix"]
    for _ in range(10):
        record_id = f"{prefix}-{clock.name_text(now)}-{os.urandom(6).hex()}"
        path = os.path.join(directory, f"{record_id}-{_slug(title)}.md")
        body = (f"---\nid: {record_id}\ntitle: {_quote(title)}\nstatus: open\ndate: {clock.date_text(now)}\n---\n\n"
                f"# {title}\n\n## Context\n\n## Decision\n\n## Consequences\n")
        if fsio.write_atomic(path, body.encode("utf-8"), exclusive=True, parents=True):
            journal.append(repo, "record-created", {"id": record_id, "path": repo.relpath(path)}, now)
            return path
    raise GateError(f"could not find a free record id in {directory}", reason="io-error")


def _slug(title: str) -> str:
    from gates.infra.text import Pattern

    return Pattern(r"[^a-z0-9]+").sub("-", title.lower()).strip("-")[:50] or "record"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
