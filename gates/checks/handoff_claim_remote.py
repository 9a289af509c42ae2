"""handoff-claim-remote: a push that changes the state file is refused while another clone holds its remote claim.

It runs at push time only (the pre-push hook, `gate check --remote`), and only with
`claims.remote` set: it reads the claim from the remote itself. A push that changes the state
file is refused when another clone holds the remote claim, when the pushed hand-over carries a
Meta `fence` lower than the remote's (it was written under a claim that has since been taken
over: a stale holder's late close-out), or, with `claims.require`, when this clone holds none.
When the remote cannot be read the push is refused (`claims.offline_push: allow` lets it pass
with a `remote-unreachable` flag).
"""

from __future__ import annotations

import os

from gates.checks.context import Context
from gates.domain.push import Update
from gates.infra.errors import GateError
from gates.infra.findings import WARNING, Finding
from gates.infra.git import Repo

ID = "handoff-claim-remote"
SCAN_LIMIT = 2000


def _changes(repo: Repo, update: Update, state_rel: str) -> bool:
    if set(update.local_oid) == {"0"}:
        return False  # a deletion carries no hand-over
    base: str | None
    if set(update.remote_oid) != {"0"} and repo.resolve_commit(update.remote_oid):
        base = update.remote_oid
    else:  # a new branch, or a remote value not here: what no remote-tracking ref has yet
        proc = repo.git("rev-list", f"--max-count={SCAN_LIMIT}", update.local_oid, "--not", "--remotes", "--")
        new = proc.stdout.split()
        if not new:
            return False
        parent = repo.git("rev-parse", "--verify", "--quiet", f"{new[-1]}^")
        base = parent.stdout.strip() or None if parent.returncode == 0 else None
    return bool(repo.changed(base, update.local_oid, [state_rel]))


def fence_at(repo: Repo, commit: str, state_rel: str, meta_section: str) -> int | None:
    """The Meta `fence` of the hand-over as committed in `commit`, or None when it has none."""
    from gates.domain import handoff

    proc = repo.git("cat-file", "blob", f"{commit}:{state_rel}")
    if proc.returncode != 0:
        return None
    data = proc.stdout.encode("utf-8", "surrogateescape")[: 1 << 20]
    try:
        doc = handoff.parse(handoff.Source.decode(data, state_rel).lines, state_rel)
    except GateError:
        return None
    entry = doc.meta_value(meta_section, "fence")
    value = entry.value.strip().strip("`") if entry else ""
    return int(value) if value.isdigit() and len(value) < 19 else None


def check(ctx: Context) -> list[Finding]:
    push = ctx.push
    name = ctx.config.section("claims").get("remote")
    if push is None or not name:
        return []
    from gates.domain import remote

    cfg = ctx.config.section("handoff")
    state_rel = cfg["path"]
    changing = [u for u in push if _changes(ctx.repo, u, state_rel)]
    if not changing:
        return []
    try:
        target = remote.connect(ctx.repo, str(name), remote.timeout_of(ctx.config))
        seen = remote.read(target, remote.key_for(ctx.repo, state_rel))
        who = remote.me(ctx.repo, os.environ.get("GATE_SESSION") or None)
    except GateError as exc:
        message = (f"this push changes {state_rel}, but the claim on remote {name} cannot be read "
                   f"({exc.message})")
        ctx.events.append(("remote-unreachable", message))
        if ctx.config.section("claims").get("offline_push") == "allow":
            return [Finding(state_rel, 1, ID, message + ": let through (claims.offline_push: allow)", WARNING)]
        return [Finding(state_rel, 1, ID, message + ": refused — push when the remote can be reached "
                        "(claims.offline_push: allow lets such pushes through)")]
    found: list[Finding] = []
    record = seen.record
    if record is not None and record.get("clone") != who.clone:
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
        fence = fence_at(ctx.repo, update.local_oid, state_rel, cfg["meta_section"])
        short = update.local_oid[:12]
        if fence is not None and fence < seen.fence:
            found.append(Finding(state_rel, 1, ID, f"{state_rel} as pushed in {short} was written under fence {fence}, "
                                 f"but the claim on remote {name} is at fence {seen.fence}: it was taken over since "
                                 "— this is a stale close-out; claim again, re-read the hand-over and fold your notes in"))
        elif fence is None and seen.fence > 0:
            found.append(Finding(state_rel, 1, ID, f"{state_rel} as pushed in {short} carries no Meta fence (the remote "
                                 f"claim is at fence {seen.fence}): `gate stamp` under a claim writes it", WARNING))
    return found
