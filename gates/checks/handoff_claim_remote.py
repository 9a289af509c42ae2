"""handoff-claim-remote: a push that changes the state file is refused while another clone holds its remote claim.

It runs at push time only (the pre-push hook, `gate check --remote`), and only with
`claims.remote` set: it reads the claim from the remote itself. A push that changes the state
file is refused when another clone holds the remote claim, when the pushed hand-over carries a
Meta `fence` lower than the remote's and would replace a hand-over written under a later fence
(or one this clone cannot read: a new branch) — a stale holder's late close-out —, or, with
`claims.require`, when this clone holds none. A lower fence whose push replaces only what was
written under it or earlier (the file was claimed and released since, and nothing written)
passes with a warning.
When the remote cannot be read the push is refused (`claims.offline_push: allow` lets it pass
with a `remote-unreachable` flag).
"""

import os

from gates.checks import Context
from gates.domain.push import Update
from gates.infra.errors import GateError
from gates.infra.findings import WARNING, Finding
from gates.infra.git import Repo

ID = "handoff-claim-remote"
MAX_HEADS = 500  # the claims remote's branches a new branch is compared with (one rev-list argument each)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from gates.domain import remote


def _changes(repo: Repo, update: Update, state_rel: str, remote_heads: "Callable[[], list[str]]") -> bool:
    """Whether this pushed ref brings the remote a change of the state file.

    Against the remote ref's old value when git names one this clone has; else (a new branch, or an old
    value not fetched) against what the claims remote's branches hold, as its own ls-remote says: never
    against remote-tracking refs, which another remote (a fork pushed first) or a stale fetch fills."""
    if set(update.local_oid) == {"0"}:
        return False  # a deletion carries no hand-over
    if set(update.remote_oid) != {"0"} and repo.resolve_commit(update.remote_oid):
        return bool(repo.changed(update.remote_oid, update.local_oid, [state_rel]))
    have = remote_heads()[:MAX_HEADS]  # beyond it, fewer commits count as the remote's: more is judged, not less
    proc = repo.git("rev-list", "--max-count=1", "--ignore-missing", update.local_oid, "--not", *have, "--",
                    state_rel)
    return proc.returncode != 0 or bool(proc.stdout.strip())


def fence_at(repo: Repo, commit: str, state_rel: str, meta_section: str) -> int | None:
    """The Meta `fence` of the hand-over as committed in `commit`, or None when it has none."""
    from gates.domain import handoff

    value = handoff.committed_meta(repo, commit, state_rel, meta_section, "fence") or ""
    if not value or value.strip("0123456789") or len(value) > 19:  # ASCII digits only ('²'.isdigit() is true)
        return None
    from gates.domain.remote import MAX_FENCE

    return int(value) if int(value) <= MAX_FENCE else None


def _named(repo: Repo, update: Update, target: "remote.Remote") -> Update:
    """A manual `gate check --remote` pushes HEAD nowhere in particular: it is judged as a push of the checked-out
    branch to its namesake on the claims remote, whose value there (one ls-remote) is what the push replaces."""
    from gates.infra import gitnet

    branch = repo.branch()
    if update.local_ref != "HEAD" or update.remote_ref or not branch:
        return update
    ref = f"refs/heads/{branch}"
    there = gitnet.ls_remote(target.work, target.url, [ref]).get(ref)
    return Update(update.local_ref, update.local_oid, ref, there) if there else update


def _fence_replaced(ctx: Context, update: Update, state_rel: str) -> int | None:
    """The fence of the hand-over the pushed ref holds now (its old value, when this clone has that commit): 0 when it
    has no hand-over or no fence line; None when it cannot be told (a new branch, an old value not fetched)."""
    if set(update.remote_oid) == {"0"} or not ctx.repo.resolve_commit(update.remote_oid):
        return None
    try:
        fence = fence_at(ctx.repo, update.remote_oid, state_rel, ctx.config.section("handoff")["meta_section"])
    except GateError:
        return None
    return 0 if fence is None else fence


def check(ctx: Context) -> list[Finding]:
    push = ctx.push
    name = ctx.config.section("claims").get("remote")
    if push is None or not name:
        return []
    from gates.domain import remote
    from gates.infra import gitnet

    state_rel = ctx.config.section("handoff")["path"]
    changing: list[Update] | None = None
    try:
        target = remote.connect(ctx.repo, str(name), remote.timeout_of(ctx.config))
        heads: list[list[str]] = []

        def remote_heads() -> list[str]:  # asked once, and only for a ref whose old value is not here
            if not heads:
                heads.append(sorted(set(gitnet.ls_remote(target.work, target.url, ["refs/heads/*"]).values())))
            return heads[0]

        push = [_named(ctx.repo, u, target) for u in push]
        changing = [u for u in push if _changes(ctx.repo, u, state_rel, remote_heads)]
        if not changing:
            return []
        seen = remote.read(target, remote.key_for(ctx.repo, state_rel))
        who = remote.me(ctx.repo, os.environ.get("GATE_SESSION") or None)
    except GateError as exc:
        what = "changes" if changing else "may change"  # (a new branch: the remote's branches could not be read)
        message = f"this push {what} {state_rel}, but the claim on remote {name} cannot be read ({exc.message})"
        ctx.events.append((exc.reason, message))
        if isinstance(exc, gitnet.Unreachable) and ctx.config.section("claims").get("offline_push") == "allow":
            return [Finding(state_rel, 1, ID, message + ": let through (claims.offline_push: allow)", WARNING)]
        return [Finding(state_rel, 1, ID, message + ": refused — " + (
            "push when the remote can be reached (claims.offline_push: allow lets such pushes through)"
            if isinstance(exc, gitnet.Unreachable) else "an unknown claim is never taken as free"))]
    assert changing
    return _judge(ctx, str(name), state_rel, changing, seen, who)


def _judge(ctx: Context, name: str, state_rel: str, changing: list[Update], seen: "remote.Seen",
           who: "remote.Me") -> list[Finding]:
    from gates.domain import remote

    found: list[Finding] = []
    record = seen.record
    if seen.problem:
        found.append(Finding(state_rel, 1, ID, f"this push changes {state_rel}, but the claim on remote {name} cannot "
                             f"be read ({seen.problem}): refused — an unreadable claim is never taken as free; "
                             "`gate release --force --reason TEXT` removes a broken claim ref"))
    elif record is not None and record.get("clone") != who.clone:
        live, why = remote.liveness(record, ctx.now, who)
        if live:
            found.append(Finding(state_rel, 1, ID, f"this push changes {state_rel}, which is claimed on remote {name} by "
                                 f"{remote.describe(record)} — leave it to that session; fold your notes into a "
                                 "later session"))
        else:
            found.append(Finding(state_rel, 1, ID, f"the remote claim on {state_rel} by {remote.describe(record)} is "
                                 f"abandoned ({why}): `gate claim` takes it over", WARNING))
    elif record is None and ctx.config.section("claims")["require"]:
        found.append(Finding(state_rel, 1, ID, f"this push changes {state_rel} but this clone holds no claim on "
                             f"remote {name} (claims.require) — run `gate claim` first"))
    for update in changing:
        fence = fence_at(ctx.repo, update.local_oid, state_rel, ctx.config.section("handoff")["meta_section"])
        short = update.local_oid[:12]
        overwritten = _fence_replaced(ctx, update, state_rel) if fence is not None and fence < seen.fence else None
        if fence is not None and fence < seen.fence and overwritten is not None and overwritten <= fence:
            found.append(Finding(state_rel, 1, ID, f"{state_rel} as pushed in {short} was written under fence {fence}; "
                                 f"the claim on remote {name} has been taken since (fence {seen.fence}) but what this "
                                 f"push replaces was written under fence {overwritten}, so no later holder's hand-over "
                                 "is overwritten: let through", WARNING))
        elif fence is not None and fence < seen.fence:
            since = (f"the hand-over this push replaces was written under fence {overwritten}, a later claim"
                     if overwritten is not None else "it was claimed again since (taken over, or claimed after your "
                     "release), and what this push replaces is not in this clone to tell whether that claim wrote it")
            found.append(Finding(state_rel, 1, ID, f"{state_rel} as pushed in {short} was written under fence {fence}, "
                                 f"but the claim on remote {name} is at fence {seen.fence}: {since} — this is a stale "
                                 "close-out; claim again, re-read the hand-over and fold your notes in"))
        elif fence is not None and fence > seen.fence and not seen.problem:
            found.append(Finding(state_rel, 1, ID, f"{state_rel} as pushed in {short} was written under fence {fence}, "
                                 f"but remote {name} shows fence {seen.fence} for it: the remote lost or hides its "
                                 f"refs/gate/ refs, so its claim is unknown — refused; `gate doctor --remote` checks the "
                                 "remote, and `gate claim` then `gate stamp` records a fence it has"))
        elif fence is None and record is not None and not seen.problem and record.get("clone") == who.clone:
            found.append(Finding(state_rel, 1, ID, f"{state_rel} as pushed in {short} carries no Meta fence, though "
                                 f"this clone holds the claim on remote {name} (fence {seen.fence}): `gate stamp` "
                                 "under the claim writes it", WARNING))
    return found
