"""handoff-claim: a commit that changes the state file is denied while another live worktree holds its claim.

A commit that leaves the state file alone passes when a commit of it would pass as the claims stand now (a
denial's cause is gone), and otherwise judged nothing: its flags stay, since nothing was tried. A check with
nothing staged (of the work tree) judges nothing either, and warns when the state file has uncommitted changes
that a commit would have refused.

With `claims.require: true`, a commit of the state file from a worktree that holds no claim, or
whose own claim's TTL has run out, is denied too. An abandoned claim (its worktree gone, or its
TTL expired) only warns. The claim is looked up by `claims.key()`, the state file's canonical
path, so it is found however this branch's config spells the path.
"""

import posixpath

from gates.checks import Context
from gates.domain.changes import committing
from gates.infra import fsio, state
from gates.infra.clock import datetime
from gates.infra.findings import WARNING, Finding
from gates.infra.text import shell_path

ID = "handoff-claim"


def check(ctx: Context) -> list[Finding]:
    if ctx.range_spec:
        return []  # claims live in this clone's state dir, not in history: nothing to judge per commit
    require = bool(ctx.config.section("claims")["require"])
    if not require and not fsio.listing(state.layout(ctx.repo).claims, ".json"):
        return []  # no claim anywhere in this clone, and none required: nothing to look up
    from gates.domain import claims

    configured = ctx.config.section("handoff")["path"]
    state_rel = claims.key(ctx.repo, configured)
    record = claims.read(state.layout(ctx.repo), state_rel)
    staged = ctx.staged(state_rel) or ctx.staged(posixpath.normpath(configured))  # the file, or the link that names it
    found = _verdict(ctx, state_rel, record, require)
    if staged:
        return found
    denied = [finding for finding in found if finding.severity != WARNING]
    if not denied:
        return []  # a commit of it would pass now: a denial's cause is gone
    if committing(ctx.changes):  # a commit is being made: of other files, or of none
        return ctx.judged_nothing(ID, f"this commit leaves {state_rel} alone")
    ctx.judged_nothing(ID, "nothing is staged")  # a check of the work tree: no commit to deny, but an edit to warn of
    edited = _edited(ctx, state_rel)
    if edited == "":
        return []
    return [Finding(state_rel, 1, ID, f"{state_rel} {edited}, and a commit of them would be refused: "
                    f"{denied[0].message}", WARNING)]


def _edited(ctx: Context, state_rel: str) -> str:
    """'has uncommitted changes' when `git status` lists the state file, '' when it does not, or why it cannot be
    told (never an all-clear). Asked as the brief asks it, Repo.uncommitted, with the repository's own filters off:
    a diff of the work tree would run a clean filter the repository names."""
    from gates.infra.git import StatusFailed

    try:
        listed = ctx.repo.uncommitted("--porcelain=v1", "-z", "--untracked-files=no", "--", state_rel)
    except StatusFailed as exc:
        return f"may have uncommitted changes ({exc.message})"
    return "has uncommitted changes" if listed else ""


def _verdict(ctx: Context, state_rel: str, record: dict[str, object] | None, require: bool) -> list[Finding]:
    """What the gate says of a commit that changes the state file, as the claims stand now."""
    from gates.domain import claims

    if record is None and not require:
        return []
    if record is None:
        return [Finding(state_rel, 1, ID, f"this commit changes {state_rel} but this worktree holds no claim "
                        "(claims.require) — run `gate claim` first")]
    if claims.held_here(record, ctx.repo):
        return _own(ctx, state_rel, record, require)
    return _other_holder(ctx, state_rel, record, require, ctx.now)


def _own(ctx: Context, state_rel: str, record: dict[str, object], require: bool) -> list[Finding]:
    from gates.domain import claims

    expires = claims.expiry(record)
    if not require or expires is None:
        return []
    if ctx.now < expires:
        return []
    return [Finding(state_rel, 1, ID, f"this commit changes {state_rel} but this worktree's claim expired at "
                    f"{record.get('expires')} (claims.require) — run `gate claim` to renew it")]


def _other_holder(ctx: Context, state_rel: str, record: dict[str, object], require: bool, now: datetime) -> list[Finding]:
    from gates.domain import claims

    live, why = claims.liveness(record, now)
    holder = claims.describe(record)
    if live:
        return [Finding(state_rel, 1, ID, f"{state_rel} is claimed by {holder} — leave it to that session: unstage it "
                        f"(`git restore --staged {shell_path(state_rel)}`) and fold your notes into a later session, or, if that "
                        "session is gone, `gate release --force --reason TEXT`")]
    found = [Finding(state_rel, 1, ID, f"the claim on {state_rel} by {holder} is abandoned ({why}): "
                     "`gate claim` takes it over", WARNING)]
    if require:
        found.append(Finding(state_rel, 1, ID, f"this commit changes {state_rel} but this worktree holds no claim "
                             "(claims.require) — run `gate claim` first"))
    return found
