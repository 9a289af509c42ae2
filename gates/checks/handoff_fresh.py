"""handoff-fresh: the hand-over describes the world git is in now.

At most `fresh.max_behind` commits of work may follow the Meta `ref` (what counts is
gates/domain/ancestry.py's one definition: the hook counts the commit being made, --range judges every
commit of the range the same way); a ref that is not in HEAD's history (rebased away, another
branch, an unknown object) is a violation. When the commit being made changes the hand-over file, its Meta `ref`
must be HEAD itself (the new commit's parent). An `updated` older than `fresh.fresh_days` is a
warning, or a violation with `fresh.strict`. In a shallow clone a ref that cannot be resolved
is a warning that says how to fetch more history.

While another worktree of this clone, present now, holds the hand-over's claim, a Meta ref too far behind is a
warning in this worktree: only the holder may commit the hand-over (handoff-claim), so refusing this session's work
would wedge it. `--range` (CI) knows no claims and judges it as ever.
"""

from gates.checks import OVER_CAP, Context
from gates.domain import handoff
from gates.domain.ancestry import meta_ref, not_in_shallow_clone, relation
from gates.domain.changes import committing
from gates.domain.handoff import Loaded
from gates.infra import fsio, state
from gates.infra.clock import datetime
from gates.infra.errors import GateError
from gates.infra.findings import WARNING, Finding
from gates.infra.text import shell_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator

    from gates.infra.git import History

ID = "handoff-fresh"


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for loaded in ctx.handoffs:
        findings.extend(_check_one(ctx, loaded))
    if ctx.range_spec:
        findings.extend(_history(ctx))
    return findings


def _history(ctx: Context) -> "Iterator[Finding]":
    """Under --range: every commit that changes the hand-over file names its parent as the Meta ref, and no commit
    has more work after its hand-over than the hook lets through (HEAD's own is judged in the work tree)."""
    path = ctx.config.section("handoff")["path"]
    limit = ctx.config.section("fresh")["max_behind"]
    refs: dict[str, handoff.MetaEntry | None] = {}  # the Meta ref of the hand-over at each commit seen
    for change in ctx.changes:
        assert change.new is not None
        touches = change.touches(path)
        if change.old is not None and change.old in refs and not touches:
            ref = refs[change.old]
        else:
            data = change.after(path, handoff.COMMITTED_CAP)
            try:
                ref = meta_ref(data, ctx.config)
            except GateError:
                ref = None  # unreadable text: handoff-structure's to judge in the work tree
            else:
                if change.old is not None and touches and data is not None and \
                        (ref is None or ctx.repo.resolve_commit(ref.value) != change.old):
                    named = ref.value if ref else "nothing"
                    yield Finding(path, ref.line if ref else 1, ID, f"{change.label} changes {path}, but its Meta ref "
                                  f"is {named}, not the commit's parent {change.old[:12]} — close out with `gate stamp`")
        refs[change.new] = ref
        if ref is None or not ref.value or change.new == ctx.repo.head:
            continue
        found = relation(ctx.repo, ctx.config, ref.value, tip=change.new, exact=False, span=len(ctx.changes),
                         read=_reader(change.history, path))
        if found.kind == "elsewhere":
            yield Finding(path, ref.line, ID, f"{change.label}: its Meta ref {ref.value} is not in its history")
        elif found.kind == "behind" and found.behind > limit:
            yield Finding(path, ref.line, ID, f"{change.label}: its Meta ref {ref.value} is {_commits(found.behind)} "
                          f"behind it, more than fresh.max_behind ({limit}): committed without updating the hand-over")


def _commits(count: int) -> str:
    return f"{count} commit{'s' if count != 1 else ''}"


def _reader(history: "History", path: str) -> "Callable[[str], bytes | None]":
    """`path` as each commit of the history holds it."""
    return lambda commit: history.blob(commit, path, handoff.COMMITTED_CAP)


def _pending(ctx: Context, judged: handoff.MetaEntry | None) -> bool | None:
    """The commit being made, as the hook sees it: None when there is none (--range, changes.committing), else
    whether it is a close-out (it stages the hand-over file, and the staged Meta ref is HEAD). `judged`: the Meta
    ref of the hand-over judged when that is the index's copy (load_handoff), so it is not read and parsed again."""
    if ctx.range_spec or not committing(ctx.changes):
        return None
    path = ctx.config.section("handoff")["path"]
    if not ctx.changes[0].touches(path):
        return False
    try:
        staged = judged or meta_ref(ctx.changes[0].after(path, handoff.COMMITTED_CAP), ctx.config)
    except GateError:
        return False  # unreadable text: handoff-structure's to judge
    return staged is not None and ctx.repo.head is not None and ctx.repo.resolve_commit(staged.value) == ctx.repo.head


def _check_one(ctx: Context, loaded: Loaded) -> "Iterator[Finding]":
    if loaded.doc is None:
        yield Finding(loaded.shown, 1, ID, OVER_CAP)
        return
    cfg, fresh = ctx.config.section("handoff"), ctx.config.section("fresh")
    ref = loaded.doc.meta_value(cfg["meta_section"], "ref")
    if ref is None or not ref.value:
        yield Finding(loaded.shown, 1, ID, "no Meta ref: freshness cannot be judged — add '- ref: <sha of HEAD>'")
    else:
        yield from _ref(ctx, loaded.shown, ref, fresh, loaded.indexed)
    updated = loaded.doc.meta_value(cfg["meta_section"], "updated")
    when = handoff.parse_utc(updated.value) if updated else None
    if updated is not None and when is not None:
        yield from _age(ctx.now, loaded.shown, updated.line, when, fresh)


def _ref(ctx: Context, shown: str, ref: handoff.MetaEntry, fresh: "dict[str, Any]", indexed: bool) -> "Iterator[Finding]":
    pending = _pending(ctx, ref if indexed else None)
    found = relation(ctx.repo, ctx.config, ref.value, pending=pending, exact=False)
    amends = "amends" in ctx.repo.memo  # `git commit --amend`: judged on HEAD's parent (changes.amend_base)
    head, stamp = ("HEAD~1", "`gate stamp --amend`") if amends else ("HEAD", "`gate stamp`")
    if found.kind == "elsewhere":
        yield Finding(shown, ref.line, ID, f"Meta ref {ref.value} is not in {head}'s history (rebased away, another "
                      "branch, or an unknown commit): the hand-over describes another world — re-read git, then "
                      f"{stamp}")
    elif found.kind == "shallow":
        yield Finding(shown, ref.line, ID, not_in_shallow_clone(ref.value), WARNING)
    elif found.kind == "behind" and found.behind > fresh["max_behind"]:
        made = (" once this amend replaces HEAD" if amends else " once this commit is made") if pending is not None else ""
        behind = (f"Meta ref {ref.value} is {_commits(found.behind)} behind {head}{made}, more than fresh.max_behind "
                  f"({fresh['max_behind']})")
        holder, doubt = (None, None) if ctx.range_spec else _claimed_elsewhere(ctx)
        if holder is not None:
            yield Finding(shown, ref.line, ID, f"{behind}: {shown} is claimed by {holder}, so only that session may "
                          "bring it up to date — your commits are for it, or the next writer, to describe (if that "
                          "session is gone: `gate release --force --reason TEXT`)", WARNING)
        else:
            unread = f" (whether another clone holds its claim could not be told: {doubt})" if doubt else ""
            yield Finding(shown, ref.line, ID, f"{behind}: work was committed without updating the hand-over — bring "
                          f"it up to date, then {stamp} and commit it (`git add {shell_path(shown)}`){unread}")
    if found.kind != "unborn" and not ctx.range_spec and ctx.staged(shown) and found.commit != ctx.repo.head:
        assert ctx.repo.head is not None
        yield Finding(shown, ref.line, ID, f"this {'amend' if amends else 'commit'} changes {shown}, so its Meta ref "
                      f"must be {head} ({ctx.repo.head[:12]}), not {ref.value} — run {stamp} and stage the file again")


def _claimed_elsewhere(ctx: Context) -> tuple[str | None, str | None]:
    """(holder, doubt): the claim another worktree of this clone, present now, holds on the hand-over, described;
    else, with claims.remote, another clone's live claim as the remote has it now (read only here, on the way to a
    refusal, within REMOTE_SECONDS). Doubt (a remote that cannot be read, a record there that cannot be) is no
    holder: it is said beside the refusal, never silently. One listdir when no claim is held in this clone and no
    remote is configured."""
    path = ctx.config.section("handoff")["path"]
    if fsio.listing(state.layout(ctx.repo).claims, ".json"):
        from gates.domain import claims

        holder = claims.claimed_elsewhere(ctx.repo, path, ctx.now, proven=True)
        if holder is not None:
            return holder, None
    name = ctx.config.section("claims").get("remote")
    if not name:
        return None, None
    from gates.domain import remote

    found = remote.another_clones(ctx.repo, ctx.config, str(name), path,
                                  min(remote.timeout_of(ctx.config), REMOTE_SECONDS))
    if found.record is not None:
        return f"{remote.describe(found.record)} on remote {name}", None
    doubt = found.unread or (f"its record there cannot be read: {found.problem}" if found.problem else None)
    return None, doubt


REMOTE_SECONDS = 8.0  # a commit about to be refused asks the remote within this


def _age(now: datetime, shown: str, line: int, when: datetime, fresh: "dict[str, Any]") -> "Iterator[Finding]":
    days = (now - when).days
    if days > fresh["fresh_days"]:
        severity = "error" if fresh["strict"] else WARNING
        yield Finding(shown, line, ID, f"the hand-over was last updated {days} days ago, more than fresh.fresh_days "
                      f"({fresh['fresh_days']}): treat it as stale until it is brought up to date", severity)
