"""`gate claim/release/claims` with a remote: the local claim and the remote one, composed.

A claim is granted only when both are: a denial of either is a denial naming its holder. An unreachable
remote is a denial (exit 3, `remote-unreachable`), never "nobody holds it"; `--offline` takes
the local claim only, marked unverified (`claim-unverified`).
"""

from gates.domain import claims, journal, remote
from gates.infra import gitnet
from gates.infra.clock import datetime, timedelta
from gates.infra.errors import OK, USAGE, GateError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from gates.commands import Invocation


def required_name(args: "argparse.Namespace", run: "Invocation") -> str:
    """`--remote NAME`, or claims.remote for a bare `--remote`; a usage error when neither names one."""
    name = args.remote or run.remote_name(None)
    if not name:
        raise GateError("--remote: name a remote (`--remote origin`) or set claims.remote", code=USAGE,
                        reason="usage")
    return name


def _connect(run: "Invocation", name: str) -> remote.Remote:
    return remote.connect(run.repo(), name, remote.timeout_of(run.config()))


def _journal(run: "Invocation", action: str, record: "dict[str, Any]", now: datetime, **extra: "Any") -> None:
    details = {key: record.get(key) for key in ("path", "clone", "worktree", "session", "fence", "token")}
    journal.append(run.repo(), action, {**details, **extra}, now)


def claim(args: "argparse.Namespace", run: "Invocation", name: str | None, state_rel: str, holder: claims.Holder,
          ttl: timedelta | None, note: str | None, now: datetime) -> int:
    """The remote claim first, then the local one, never a local claim the remote does not hold (issue 25:
    docs/security.md, "No half-taken claim")."""
    repo = run.repo()
    who = remote.me(repo, holder.session)
    key = remote.key_for(repo, state_rel)
    if args.offline or name is None:
        local = claims.claim(repo, state_rel, holder, ttl, note, now)
        assert local.record is not None
        if local.kind == "denied":
            return _denied_here(run, state_rel, local.record)
        remote.remember(repo, key, name or "", who, {"fence": None, "expires": local.record.get("expires")}, None,
                        unverified=True)
        run.announce("claim-unverified", f"claimed {state_rel} for {claims.describe(local.record)} OFFLINE: the "
                     f"remote claim was not checked, so another clone may hold it — run `gate claim` again when "
                     "the remote can be reached")
        return OK
    blocking = claims.blocking(repo, state_rel, holder, now)  # read only: a local denial touches no remote
    if blocking is not None:
        return _denied_here(run, state_rel, blocking[0])
    try:
        target = _connect(run, name)
        outcome = remote.acquire(target, state_rel, who, ttl, note, now)
    except gitnet.Unwritten as exc:  # read, but not written: no lost race, and nothing was taken or renewed
        raise GateError(f"{exc.message} — nothing was taken or renewed, there or in this clone; "
                        "a remote that cannot be written is a denial, as an unreachable one is; `gate claim "
                        "--offline` takes a local claim marked unverified", reason="remote-unreachable") from None
    except gitnet.Unreachable as exc:
        raise GateError(f"remote {name!r} cannot be reached ({exc.message}): the claim on {state_rel} was not "
                        "taken — an unreachable remote is a denial; `gate claim --offline` takes a local claim "
                        "marked unverified", reason="remote-unreachable") from None
    assert outcome.record is not None
    if outcome.kind == "denied":
        return run.deny("claim-denied", f"denied: {state_rel} is claimed on remote {name} by "
                        f"{remote.describe(outcome.record)} ({outcome.why}) — the first mover wins: fold your "
                        "update into a later session")
    remote.remember(repo, key, name, who, outcome.record, outcome.oid)
    _journal(run, f"remote-claim-{outcome.kind}", outcome.record, now, remote=name, oid=outcome.oid)  # granted|renewed|taken-over
    if outcome.kind == "taken-over":
        assert outcome.previous is not None
        kept = remote.keep_in_lost_found(repo, outcome.previous, None, "claim-taken-over", outcome.why, who, now)
        run.announce("claim-taken-over", f"took over the remote claim on {state_rel}: the previous claim by "
                     f"{remote.describe(outcome.previous)} was abandoned ({outcome.why}); its record is kept in {kept}")
    try:
        local = claims.claim(repo, state_rel, holder, ttl, note, now)
    except BaseException:
        if not _held_here(run, state_rel, holder):  # a failure after the local claim was written keeps both
            _give_back(run, target, outcome, state_rel, who, key, now)
        raise
    assert local.record is not None
    if local.kind == "denied":  # another worktree of this clone claimed it between the look and the claim
        _give_back(run, target, outcome, state_rel, who, key, now)
        return _denied_here(run, state_rel, local.record)
    if local.kind == "taken-over":
        assert local.previous is not None
        run.announce("claim-taken-over", f"took over the claim on {state_rel}: the previous claim by "
                     f"{claims.describe(local.previous)} was abandoned ({local.why}); its record is kept in "
                     f"{local.evidence}")
    verb = "renewed" if outcome.kind == "renewed" else "claimed"
    print(f"{verb} {state_rel} for {claims.describe(local.record)}; on remote {name}: fence {outcome.record['fence']}")
    # This worktree holds the claim here and there: an earlier denial (untagged, as a remote's is) is over.
    run.settle("claim-denied")
    return OK


def _denied_here(run: "Invocation", state_rel: str, record: "dict[str, Any]") -> int:
    return run.deny("claim-denied", f"denied: {state_rel} is claimed by {claims.describe(record)} (in this clone) — "
                    "the first mover wins: fold your update into a later session")


def _held_here(run: "Invocation", state_rel: str, holder: claims.Holder) -> bool:
    try:
        return claims.holds(run.repo(), state_rel, holder)
    except (GateError, OSError):
        return True  # doubt: the remote claim stays (it runs out at its TTL), never a local one without it


def _give_back(run: "Invocation", target: remote.Remote, outcome: remote.Outcome, state_rel: str, who: remote.Me, key: str,
               now: datetime) -> None:
    """Release the remote claim this run took (a renewed one was held before: it stays)."""
    if outcome.kind not in ("granted", "taken-over"):
        return
    try:
        released = remote.release(target, state_rel, who)
    except GateError as exc:
        run.announce("claim-unverified", f"the remote claim on {state_rel} this run took could not be given back "
                     f"({exc.message}): it stays until its TTL runs out, or `gate release`")
        return
    if released.kind == "released":
        remote.remember(run.repo(), key, target.name, who, None, None)
        assert released.record is not None
        _journal(run, "remote-claim-released", released.record, now, remote=target.name, oid=released.oid)


def release(args: "argparse.Namespace", run: "Invocation", name: str, state_rel: str, holder: claims.Holder,
            reason: str | None, now: datetime) -> int:
    repo = run.repo()
    who = remote.me(repo, holder.session)
    key = remote.key_for(repo, state_rel)
    target = _connect(run, name)  # before anything changes: a bad remote name changes nothing
    local = claims.release(repo, state_rel, holder, now, force_reason=reason)
    said = []
    if local.kind == "released":
        said.append(f"released {state_rel} in this clone (record kept in {local.evidence})")
    elif local.kind == "broken":
        assert local.record is not None
        run.announce("claim-broken", f"broke the claim on {state_rel} by {claims.describe(local.record)}: "
                     f"{reason!r}; its record is kept in {local.evidence}")
    try:
        outcome = remote.release(target, state_rel, who, force_reason=reason)
    except gitnet.Unreachable as exc:
        for line in said:
            print(line)
        what = exc.message if isinstance(exc, gitnet.Unwritten) else f"remote {name!r} cannot be reached ({exc.message})"
        raise GateError(f"{what} — its claim on {state_rel} is still there (until its TTL runs out, if it has one): run "
                        "`gate release` again once it can be written", reason="remote-unreachable") from None
    if outcome.kind == "released":
        assert outcome.record is not None
        remote.remember(repo, key, name, who, None, None)
        _journal(run, "remote-claim-released", outcome.record, now, remote=name, oid=outcome.oid)
        said.append(f"released {state_rel} on remote {name} (fence {outcome.record.get('fence')})")
    elif outcome.kind == "broken":
        assert outcome.record is not None
        kept = remote.keep_in_lost_found(repo, outcome.record, outcome.oid, "claim-broken", reason or "", who, now)
        _journal(run, "remote-claim-broken", outcome.record, now, remote=name, oid=outcome.oid, why=reason,
                 evidence=str(kept))
        run.announce("claim-broken", f"broke the remote claim on {state_rel} on {name} by "
                     f"{remote.describe(outcome.record)}: {reason!r}; its record is kept in {kept}")
    for line in said:
        print(line)
    denial = claims.release_denial(state_rel, holder, local)  # this clone's claim: another session's, or worktree's
    if denial is not None and outcome.kind != "not-holder":
        return run.deny("release-denied", denial)
    if outcome.kind == "not-holder":
        assert outcome.record is not None
        if (outcome.record.get("clone"), outcome.record.get("worktree")) == (who.clone, who.worktree):
            return run.deny("release-denied", claims.session_denial(f"not released on remote {name}", state_rel,
                                                                    outcome.record.get("session"), holder.session))
        return run.deny("release-denied", f"not released on remote {name}: this worktree does not hold the claim on "
                        f"{state_rel}; {remote.describe(outcome.record)} does — `gate release --force --reason TEXT` "
                        "breaks it if that session is gone")
    if outcome.kind == "none" and local.kind == "none":
        print(f"nothing to release: nobody holds a claim on {state_rel} here or on remote {name}")
    elif outcome.kind == "none" and local.kind == "released":  # said: this worktree believed it held both
        print(f"remote {name} held no claim on {state_rel}: this worktree's was released or broken there from another "
              "clone (or taken offline)")
    return OK


def remote_claims(run: "Invocation", name: str, now: datetime) -> "list[dict[str, Any]]":
    """Every claim record on the remote `name`, with its liveness (GateError when it cannot be asked)."""
    return remote.list_claims(_connect(run, name), now)


def list_remote(args: "argparse.Namespace", run: "Invocation", name: str, now: datetime) -> int:
    listed = remote_claims(run, name, now)
    if args.format == "json":
        from gates.infra.console import emit_json

        emit_json({"version": 1, "remote": name, "claims": listed})
    else:
        print_remote(name, listed)
    return OK


def print_remote(name: str, listed: "list[dict[str, Any]]") -> None:
    if not listed:
        print(f"no claims on remote {name}")
    for record in listed:
        status = "live" if record["live"] else "ABANDONED"
        print(f"on remote {name}: {record.get('path')}: {status} ({record['liveness']}); age "
              f"{record.get('age_seconds')}s; {remote.describe(record)} [{record['ref']}]")
