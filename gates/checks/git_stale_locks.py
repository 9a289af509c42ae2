"""git-stale-locks: no stale git lock file wedges the repository, and no old live one goes unnoticed.

A stale lock (its holder provably gone) is moved into lost+found when `locks.quarantine` is on,
and reported as a warning (healed) with a `stale-lock-quarantined` flag; when it cannot be
moved, or quarantine is off, it is a violation. A live lock older than the threshold is a
warning with a `lock-held-live` flag. Only the top-level lock locations are looked at unless
`locks.deep` is on.
"""

import os

from gates.checks import Context
from gates.domain import lockscan
from gates.infra.clock import datetime
from gates.infra.findings import WARNING, Finding

ID = "git-stale-locks"


def check(ctx: Context) -> list[Finding]:
    cfg = ctx.config.section("locks")
    found = lockscan.find(ctx.repo, deep=bool(cfg["deep"]))
    if not found:
        return []  # the common case: nothing more is read, nothing is written, and locks.py is not loaded
    from gates.domain import locks

    threshold = locks.judge_configured(ctx.repo, found, ctx.config)
    findings: list[Finding] = []
    for lock in found:
        shown = ctx.repo.relpath(lock.path)
        if lock.verdict == lockscan.STALE:
            findings.append(_stale(ctx, lock, shown, bool(cfg["quarantine"]), threshold, ctx.now))
        elif lock.verdict == lockscan.LIVE and lock.age >= threshold:
            message = f"lock held for {int(lock.age)}s and judged live ({lock.reason}) — if git is wedged, find that process"
            findings.append(Finding(shown, 1, ID, message, WARNING))
            ctx.events.append(("lock-held-live", f"{shown}: {message}"))
        elif lock.verdict == lockscan.INELIGIBLE and not lock.companion and lock.reason != "gone meanwhile":
            findings.append(Finding(shown, 1, ID, f"lock file that the gate will not move ({lock.reason}) — inspect it by hand",
                                    WARNING))
    return findings


def _stale(ctx: Context, lock: lockscan.Lock, shown: str, quarantine: bool, threshold: float, now: datetime) -> Finding:
    from gates.domain import locks

    if not quarantine:
        return Finding(shown, 1, ID, f"stale lock ({int(lock.age)}s old; {lock.reason}) — `gate locks --quarantine` "
                       "moves it into lost+found")
    moved = locks.quarantine(ctx.repo, lock, threshold, now)
    if moved.target is not None and not moved.problem:
        assert moved.evidence_dir is not None
        message = (f"stale lock moved to {moved.target} (it was {int(lock.age)}s old; {lock.reason}); "
                   f"`gate locks --restore {os.path.basename(moved.evidence_dir)}` puts it back")
        ctx.events.append(("stale-lock-quarantined", f"{shown}: {message}"))
        return Finding(shown, 1, ID, message, WARNING)
    if moved.problem.startswith("gone"):
        return Finding(shown, 1, ID, f"stale lock was {moved.problem}", WARNING)
    ctx.events.append(("lock-quarantine-failed", f"{shown}: {moved.problem}"))
    return Finding(shown, 1, ID, f"stale lock not moved: {moved.problem}")
