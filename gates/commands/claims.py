"""`gate claim`, `gate release` and `gate claims`: the state file's claim, local and (with a remote) remote."""

import os

from gates.commands import Invocation
from gates.infra import clock
from gates.infra.console import emit_json
from gates.infra.errors import OK, USAGE, GateError
from gates.infra.git import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from gates.domain.claims import Holder
    from gates.infra.clock import datetime


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    if name == 'claim':
        parser.add_argument("--note", help="what this session is doing (shown to anyone denied)")
        parser.add_argument("--ttl", help="how long the claim lives without renewal: 90s, 15m, 2h, 1d (default: claims.ttl)")
        parser.add_argument("--session", help="a session id; default $GATE_SESSION")
        parser.add_argument("--remote", metavar="NAME", help="also claim on this git remote (default: claims.remote)")
        parser.add_argument("--offline", action="store_true", help="with a remote configured: take the local claim only, "
                           "marked unverified (a claim-unverified flag)")
    elif name == 'release':
        parser.add_argument("--force", action="store_true", help="break another worktree's claim")
        parser.add_argument("--reason", help="why the claim is broken (required with --force)")
        parser.add_argument("--session", help="a session id; default $GATE_SESSION")
        parser.add_argument("--remote", metavar="NAME", help="also release on this git remote (default: claims.remote)")
    elif name == 'claims':
        parser.add_argument("--format", choices=("text", "json"), default="text",
                            help="text for people (default), or one JSON document")
        parser.add_argument("--remote", nargs="?", const="", metavar="NAME",
                             help="list the claims on this git remote instead (default: claims.remote)")


def run(args: "argparse.Namespace", run: Invocation) -> int:
    code = {'claim': _claim, 'release': _release, 'claims': _claims}[args.command](args, run)
    if args.command == "release" and code == OK:  # the claim a denial was about is given up: the denial is over
        run.settle("release-denied")
    return code


def _claim(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.domain import claims

    note = claims.check_note(args.note)
    ttl_text = args.ttl if args.ttl is not None else run.config().section("claims")["ttl"]
    from gates.infra.config import parse_duration

    ttl = parse_duration(ttl_text, "--ttl" if args.ttl is not None else "claims.ttl") if ttl_text else None
    repo, state_rel, holder, now = _claim_setup(args, run)
    remote_name = run.remote_name(getattr(args, "remote", None))
    if remote_name is not None or args.offline:  # the local claim and the remote one (issue 18)
        from gates.commands import _remote

        return _remote.claim(args, run, remote_name, state_rel, holder, ttl, note, now)
    outcome = claims.claim(repo, state_rel, holder, ttl, note, now)
    assert outcome.record is not None
    if outcome.kind == "denied":
        message = (f"denied: {state_rel} is claimed by {claims.describe(outcome.record)} — the first mover wins: "
                   "fold your update into a later session")
        run.scoped_as_check()  # the flag resolves once this worktree holds the claim (or handoff-claim passes here)
        return run.deny("claim-denied", message, gate="handoff-claim")
    run.judged_as_check("handoff-claim")  # this worktree holds the claim: its denials (and the gate's) are over
    if outcome.kind == "taken-over":
        assert outcome.previous is not None
        message = (f"took over the claim on {state_rel}: the previous claim by {claims.describe(outcome.previous)} was "
                   f"abandoned ({outcome.why}); its record is kept in {outcome.evidence}")
        run.announce("claim-taken-over", message)
    print(f"{'renewed' if outcome.kind == 'renewed' else 'claimed'} {state_rel} for {claims.describe(outcome.record)}")
    return OK


def _release(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.domain import claims

    if args.force and not args.reason:
        raise GateError("--force needs --reason TEXT: say why the claim is broken", code=USAGE, reason="usage")
    reason = claims.check_note(args.reason) if args.force else None
    repo, state_rel, holder, now = _claim_setup(args, run)
    remote_name = run.remote_name(getattr(args, "remote", None))
    if remote_name is not None:  # this clone's claim and the remote one (issue 18)
        from gates.commands import _remote

        return _remote.release(args, run, remote_name, state_rel, holder, reason, now)
    outcome = claims.release(repo, state_rel, holder, now, force_reason=reason)
    if outcome.kind == "none":  # what was asked for holds already: said, and nothing for the next session to hear
        print(f"nothing to release: nobody holds a claim on {state_rel}")
        return OK
    assert outcome.record is not None
    holder_text = claims.describe(outcome.record)
    denial = claims.release_denial(state_rel, holder, outcome)
    if denial is not None:
        return run.deny("release-denied", denial)
    if outcome.kind == "broken":
        run.announce("claim-broken", f"broke the claim on {state_rel} by {holder_text}: {outcome.why!r}; its record "
                     f"is kept in {outcome.evidence}")
        return OK
    print(f"released {state_rel} (record kept in {outcome.evidence})")
    return OK


def _claims(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.domain import claims

    if args.remote is not None:
        from gates.commands import _remote

        name = _remote.required_name(args, run)
        return _remote.list_remote(args, run, name, clock.now())
    listed = claims.list_all(run.repo(), clock.now())
    configured = run.remote_name(None)  # a claim on claims.remote is a claim too: never "no claims" unasked
    if configured:
        from gates.commands import _remote
    if args.format == "json":
        document: dict[str, object] = {"version": 1, "claims": listed}
        if configured:
            document.update(remote=configured, remote_claims=_remote.remote_claims(run, configured, clock.now()))
        emit_json(document)
        return OK
    if not listed:
        print("no local claims" if configured else "no claims")
    where = "in this clone: " if configured else ""  # beside the remote's lines, each says where it is
    for record in listed:
        state = "live" if record["live"] else "ABANDONED"
        whose = ("held by this worktree: " if claims.held_here(record, run.repo()) else "held by another worktree: "
                 ) if "token" in record else ""
        print(f"{where}{record.get('path')}: {state} ({record['liveness']}); age {record.get('age_seconds')}s; "
              f"{whose}{claims.describe(record) if 'token' in record else record.get('problem')}")
    if configured:  # the local list is printed first, so an unreachable remote still leaves it said
        _remote.print_remote(configured, _remote.remote_claims(run, configured, clock.now()))
    return OK


def _claim_setup(args: "argparse.Namespace", run: Invocation) -> "tuple[Repo, str, Holder, datetime]":
    from gates.domain import claims

    repo = run.repo()
    session = args.session if args.session is not None else os.environ.get("GATE_SESSION") or None
    state_rel = claims.key(repo, run.config().section("handoff")["path"])  # the one name of the file, any spelling
    holder = claims.holder_of(repo, session)
    return repo, state_rel, holder, clock.now()
