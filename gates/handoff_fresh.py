"""handoff-fresh: the hand-over describes the world git is in now.

The Meta `ref` must be HEAD or an ancestor of HEAD at most `fresh.max_behind` first-parent
commits behind; a ref that is not in HEAD's history (rebased away, another branch, an unknown
object) is a violation. When the commit being made changes the hand-over file, its Meta `ref`
must be HEAD itself (the new commit's parent). An `updated` older than `fresh.fresh_days` is a
warning, or a violation with `fresh.strict`. In a shallow clone a ref that cannot be resolved
is a warning that says how to fetch more history.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Iterator, NamedTuple

from gates import handoff
from gates.context import Context, Loaded
from gates.errors import GateError
from gates.findings import WARNING, Finding
from gates.git import Repo
from gates.handoff_structure import SHALLOW_ADVICE

ID = "handoff-fresh"
SUMMARY = "the Meta ref is HEAD or a recent ancestor, and the hand-over is not stale"


class Relation(NamedTuple):
    """Where a Meta ref stands against HEAD: current, N behind, not in this history, or unknown here."""

    kind: str  # current | behind | elsewhere | shallow | unborn
    behind: int = 0
    commit: str | None = None

    def verdict(self) -> str:
        return {
            "current": "current (the Meta ref is HEAD)",
            "behind": f"{self.behind} commit{'s' if self.behind != 1 else ''} behind HEAD",
            "elsewhere": "NOT IN THIS HISTORY (rebased away, another branch, or an unknown commit)",
            "shallow": f"unknown: not in this shallow clone — {SHALLOW_ADVICE}",
            "unborn": "unknown: this branch has no commit yet",
        }[self.kind]


def relation(repo: Repo, ref: str, limit: int) -> Relation:
    if repo.head is None:
        return Relation("unborn")
    commit = repo.resolve_commit(ref)
    if commit is None:
        return Relation("shallow" if repo.is_shallow() else "elsewhere")
    near = repo.first_parent_distance(commit, limit)
    if near is not None:
        return Relation("current" if near == 0 else "behind", near, commit)
    far = repo.commits_between(commit)
    return Relation("elsewhere", 0, commit) if far is None else Relation("behind", far, commit)


def check(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for loaded in ctx.handoffs:
        findings.extend(_check_one(ctx, loaded))
    if ctx.range_spec:
        findings.extend(_history(ctx))
    return findings


def _history(ctx: Context) -> Iterator[Finding]:
    """Under --range: every commit that changes the hand-over file names its parent as the Meta ref."""
    cfg = ctx.config.section("handoff")
    for change in ctx.changes:
        if change.old is None or not change.touches(cfg["path"]):
            continue
        data = change.after(cfg["path"])
        if data is None:
            continue
        try:
            doc = handoff.parse(handoff.Source.decode(data, cfg["path"]).lines, cfg["path"])
        except GateError:
            continue  # unreadable text: handoff-structure's to judge in the work tree
        ref = doc.meta_value(cfg["meta_section"], "ref")
        if ref is None or ctx.repo.resolve_commit(ref.value) != change.old:
            named = ref.value if ref else "nothing"
            yield Finding(cfg["path"], ref.line if ref else 1, ID, f"{change.label} changes {cfg['path']}, but its Meta "
                          f"ref is {named}, not the commit's parent {change.old[:12]} — close out with `gate stamp`")


def _check_one(ctx: Context, loaded: Loaded) -> Iterator[Finding]:
    if loaded.doc is None:
        yield Finding(loaded.shown, 1, ID, "not checked: the file is over its size cap (see handoff-structure)")
        return
    cfg, fresh = ctx.config.section("handoff"), ctx.config.section("fresh")
    ref = loaded.doc.meta_value(cfg["meta_section"], "ref")
    if ref is None or not ref.value:
        yield Finding(loaded.shown, 1, ID, "no Meta ref: freshness cannot be judged — add '- ref: <sha of HEAD>'")
    else:
        yield from _ref(ctx, loaded.shown, ref, fresh)
    updated = loaded.doc.meta_value(cfg["meta_section"], "updated")
    when = handoff.parse_utc(updated.value) if updated else None
    if updated is not None and when is not None:
        ctx.holds_until(when + timedelta(days=fresh["fresh_days"] + 1))  # stale from then on (see _age)
        yield from _age(ctx.now, loaded.shown, updated.line, when, fresh)


def _ref(ctx: Context, shown: str, ref: handoff.MetaEntry, fresh: dict[str, Any]) -> Iterator[Finding]:
    found = relation(ctx.repo, ref.value, fresh["max_behind"])
    if found.kind == "elsewhere":
        yield Finding(shown, ref.line, ID, f"Meta ref {ref.value} is not in HEAD's history (rebased away, another "
                      "branch, or an unknown commit): the hand-over describes another world — re-read git, then "
                      "`gate stamp`")
    elif found.kind == "shallow":
        yield Finding(shown, ref.line, ID, f"Meta ref {ref.value} is not in this shallow clone: {SHALLOW_ADVICE}", WARNING)
    elif found.kind == "behind" and found.behind > fresh["max_behind"]:
        yield Finding(shown, ref.line, ID, f"Meta ref {ref.value} is {found.behind} commits behind HEAD, more than "
                      f"fresh.max_behind ({fresh['max_behind']}): sessions committed without updating the hand-over — "
                      "bring it up to date, then `gate stamp`")
    if found.kind != "unborn" and not ctx.range_spec and ctx.staged(shown) and found.commit != ctx.repo.head:
        assert ctx.repo.head is not None
        yield Finding(shown, ref.line, ID, f"this commit changes {shown}, so its Meta ref must be HEAD "
                      f"({ctx.repo.head[:12]}), not {ref.value} — run `gate stamp` and stage the file again")


def _age(now: datetime, shown: str, line: int, when: datetime, fresh: dict[str, Any]) -> Iterator[Finding]:
    days = (now - when).days
    if days > fresh["fresh_days"]:
        severity = "error" if fresh["strict"] else WARNING
        yield Finding(shown, line, ID, f"the hand-over was last updated {days} days ago, more than fresh.fresh_days "
                      f"({fresh['fresh_days']}): treat it as stale until it is brought up to date", severity)
