"""`gate locks`: git lock files with a verdict; quarantine the stale, restore one."""

import os

from gates.commands import Invocation
from gates.infra import clock
from gates.infra.console import emit_json
from gates.infra.errors import OK, VIOLATION

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from gates.domain.locks import Moved


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text for people (default), or one JSON document")
    lock_actions = parser.add_mutually_exclusive_group()
    lock_actions.add_argument("--quarantine", action="store_true", help="move every stale lock into lost+found")
    lock_actions.add_argument("--restore", metavar="ID", help="put a quarantined lock back when its place is free")


def run(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.domain import locks, lockscan

    repo = run.repo()
    if args.restore:
        for path in locks.restore(repo, args.restore):
            print(f"restored {path}")
        return OK
    found = lockscan.find(repo, deep=True)
    threshold = locks.judge_configured(repo, found, run.config()) if found else 0.0
    moves = [locks.quarantine(repo, lock, threshold, clock.now()) for lock in found
             if args.quarantine and lock.verdict == lockscan.STALE]
    if args.format == "json":
        emit_json({"version": 1, "locks": [lock.to_json() for lock in found],
                   "moved": [{"path": m.lock.path, "to": m.target, "problem": m.problem} for m in moves]})
    else:
        if not found:
            print("no lock files")
        for lock in found:
            print(f"{lock.verdict:10} {lock.shown}  {lock.size} bytes, {int(lock.age)}s old — {lock.reason}")
    return _report_moves(moves, run, quiet=args.format == "json")


def _report_moves(moves: "list[Moved]", run: Invocation, quiet: bool) -> int:
    code = OK
    for moved in moves:
        if moved.evidence_dir is not None and not moved.problem:  # then its target is set too
            message = (f"moved {moved.lock.path} to {moved.target}; "
                       f"`gate locks --restore {os.path.basename(moved.evidence_dir)}` puts it back")
            run.notice("stale-lock-quarantined", message)
        elif moved.problem.startswith("gone"):
            message = f"{moved.lock.path}: {moved.problem}"
        else:
            message = f"not moved: {moved.lock.path}: {moved.problem}"
            run.fail("lock-quarantine-failed", message)
            code = VIOLATION
        if not quiet:
            print(message)
    return code
