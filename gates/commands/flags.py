"""`gate flags`: list, acknowledge and push the open flags."""

from gates.commands import Invocation
from gates.domain.changes import SITUATIONS
from gates.infra import clock
from gates.infra.console import emit_json
from gates.infra.errors import OK, USAGE, GateError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text for people (default), or one JSON document")
    parser.add_argument("--all", action="store_true", help="also the resolved and acknowledged flags, marked as such")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--ack", action="append", metavar="ID", help="acknowledge a flag (repeatable)")
    group.add_argument("--ack-all", action="store_true", help="acknowledge every flag")
    parser.add_argument("--push", action="store_true", help="publish this clone's open flags to the remote "
                       "(refs/gate/flags/<clone id>), after any --ack")
    parser.add_argument("--remote", metavar="NAME", help="the remote for --push (default: claims.remote)")


def run(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.domain import flags

    if args.ack or args.ack_all:
        moved = flags.acknowledge(run.repo(), None if args.ack_all else args.ack)
        print(f"acknowledged {len(moved)} flag{'s' if len(moved) != 1 else ''}" + "".join(f"\n  {i}" for i in moved))
        if not args.push:
            return OK
    if args.push:  # publish this clone's open flags to refs/gate/flags/<clone id>, after any --ack (issue 18)
        from gates.domain import remote_flags

        name = run.remote_name(args.remote)
        if name is None:
            raise GateError("--push: name a remote (`--remote origin`) or set claims.remote", code=USAGE, reason="usage")
        pushed, ref = remote_flags.push(run.repo(), run.config(), name, clock.now())
        print(f"pushed {pushed} open flag{'s' if pushed != 1 else ''} to {ref} on remote {name}")
        return OK
    listed = flags.every(run.repo()) if args.all else flags.pending(run.repo())
    if args.format == "json":
        emit_json({"version": 1, "flags": listed})
        return OK
    if not listed:
        print("no flags at all" if args.all else "no unacknowledged flags")
    for record in listed:
        count = f" ×{record.get('count')}" if record.get("count", 1) != 1 else ""
        status = ""
        if args.all:
            resolved = record.get("resolved") if record["status"] == "resolved" else None
            status = (f" (resolved {resolved.get('time')} by `{resolved.get('command')}`)" if isinstance(resolved, dict)
                      else f" ({record['status']})")
        scope = record.get("scope")  # what the check that raised it judged (gates/domain/changes.py::situation)
        judged = SITUATIONS.get(str(scope.get("situation"))) if isinstance(scope, dict) else None
        print(f"== flag {record.get('id')} [{record.get('reason')}]{count} first {record.get('first_seen')} "
              f"last {record.get('last_seen')} by `{record.get('command', '?')}`{f' judging {judged}' if judged else ''} "
              f"in {record.get('worktree', '?')}{status}")
        print(record["message"])
    return OK

