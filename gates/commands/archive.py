"""`gate archive`, `gate render` and `gate record`: the archive, the generated tables and the records."""

from __future__ import annotations

import sys

from gates.commands import invocation
from gates.commands.invocation import Invocation
from gates.infra.errors import OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    if name == 'render':
        parser.add_argument("--diff", action="store_true", help="show what would change; write nothing")
    elif name == 'record':
        parser.add_argument("action", choices=("new",), help="new: write a new open record in records.path (default decisions/)")
        parser.add_argument("title", nargs="+", help="the record's title (the words are joined by spaces)")


def run(args: argparse.Namespace, run: Invocation) -> int:
    return {'archive': _archive, 'render': _render, 'record': _record}[args.command](args, run)


def _archive(args: argparse.Namespace, run: Invocation) -> int:
    from gates.domain import archive

    config = run.config()
    source, target = config.section("handoff")["path"], config.section("archive")["path"]
    moves = archive.archive(run.repo(), config, invocation.now())
    for move in moves:
        print(f"moved {source}:{move.item.line}-{move.item.end_line} ({move.section}) to {target}: {move.item.text[:80]}")
    if not moves:
        print("nothing to archive: no checked items")
    return OK


def _render(args: argparse.Namespace, run: Invocation) -> int:
    from gates.domain import tables

    stale, diff = tables.render_file(run.repo(), run.config(), write=not args.diff)
    if args.diff:
        sys.stdout.writelines(line + "\n" for line in diff)
    elif stale:
        print(f"rendered {len(stale)} table(s): {', '.join(stale)}")
    else:
        print("every table is up to date")
    return OK


def _record(args: argparse.Namespace, run: Invocation) -> int:
    from gates.domain import records

    path = records.new(run.repo(), run.config(), " ".join(args.title), invocation.now())
    print(run.repo().relpath(path))
    return OK
