"""The no-change path of `gate check`: when nothing a gate reads has changed, the last result is replayed.

The fingerprint covers everything the gates read: the gate's own code, the repository and its
HEAD, the index (what the commit being made stages), the config, the hand-over and work-package
files, an optional project schema, the records, the claims and whether their worktrees exist,
the list of worktrees, and the arguments. A git lock file anywhere it looks, a deep lock scan or
`--range` always take the full path, and a replayed result expires when a clock-dependent verdict
could flip (a claim's TTL, the hand-over turning stale) and after an hour in any case. The entry
lives in the rebuildable cache: deleting it changes no answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from gates import cache, fsio
from gates.config import Config
from gates.errors import GateError
from gates.findings import CheckResult, Finding
from gates.git import Repo

MAX_AGE = 3600.0
CLOCK_SKEW = 300.0  # handoff-structure's tolerance for an `updated` in the future
_UPDATED = re.compile(rb"^\s*[-*+]\s+updated\s*:\s*`?([0-9T:.+Z-]+)`?\s*$", re.MULTILINE)
MAX_BYTES = 4 << 20
_PACKAGE = Path(__file__).resolve().parent


def _stat(path: Path) -> list[int]:
    try:
        info = os.stat(path)
    except OSError:
        return []
    return [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _bytes(path: Path) -> bytes | str:
    """The content, or a marker for what stands there instead (never blocks on a FIFO)."""
    try:
        data = fsio.read_bytes_capped(path, MAX_BYTES, str(path))
    except GateError as exc:
        return f"unreadable: {exc.message}"
    return f"big: {data}" if isinstance(data, int) else data


def _content(path: Path) -> str:
    data = _bytes(path)
    return hashlib.sha256(data).hexdigest() if isinstance(data, bytes) else data


def _epoch(text: str) -> float | None:
    try:
        from datetime import datetime

        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None
    except ValueError:
        return None


def _flips(path: Path, fresh_days: int) -> float:
    """When the verdict on this hand-over's `updated` could change by the clock alone (now: no replay)."""
    data = _bytes(path)
    match = _UPDATED.search(data) if isinstance(data, bytes) else None
    when = _epoch(match.group(1).decode()) if match else None
    if when is None:
        return 0.0
    now = time.time()
    if when - CLOCK_SKEW > now:
        return when - CLOCK_SKEW  # "in the future" until then
    stale_at = when + (fresh_days + 1) * 86400.0  # `(now - updated).days > fresh_days` from then on
    return stale_at if stale_at > now else float("inf")


def _lock_free(repo: Repo) -> bool:
    folders = [repo.common_dir, repo.git_dir]
    worktrees = repo.common_dir / "worktrees"
    names = sorted(os.listdir(worktrees)) if worktrees.is_dir() else []
    folders += [worktrees / name for name in names]
    for folder in folders:
        try:
            if any(name.endswith(".lock") for name in os.listdir(folder)):
                return False
        except OSError:
            return False
    return True


def _claims(repo: Repo, parts: list[Any]) -> float:
    """Add the claims to the fingerprint; return when the earliest TTL runs out (inf when none does)."""
    folder = repo.common_dir / "gate" / "claims"
    until = float("inf")
    if not folder.is_dir():
        return until
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_bytes())
        except (OSError, ValueError):
            parts.append([path.name, "unreadable"])
            continue
        worktree, git_dir = str(record.get("worktree", "")), str(record.get("git_dir", ""))
        parts.append([path.name, _content(path), os.path.isdir(worktree), os.path.isdir(git_dir)])
        expires = _epoch(str(record.get("expires") or ""))
        if expires is not None:
            until = min(until, expires)
    return until


def fingerprint(repo: Repo, config: Config, args: Any) -> tuple[str, float] | None:
    """A key for this check's inputs and the time until which its result may be replayed; None: run it all."""
    if args.range or args.fix or config.section("locks")["deep"] or not _lock_free(repo):
        return None
    handoff_cfg = config.section("handoff")
    files = [Path(f).absolute() for f in args.files] or [repo.toplevel / handoff_cfg["path"]]
    index = Path(os.environ["GIT_INDEX_FILE"]) if os.environ.get("GIT_INDEX_FILE") else repo.git_dir / "index"
    parts: list[Any] = [
        sorted([str(p), _stat(p)] for pattern in ("*.py", "schemas/*.json", "../schemas/*.json")
               for p in _PACKAGE.glob(pattern)),
        [str(repo.toplevel), str(repo.git_dir), str(repo.common_dir), repo.head],
        _stat(repo.common_dir / "shallow"),
        _stat(index if index.is_absolute() else repo.toplevel / index),
        json.dumps(dict(config), sort_keys=True),
        [args.only, args.skip, [str(f) for f in files]],
        [[str(f), _content(f)] for f in files],
        _content(repo.toplevel / config.section("mailbox")["path"]),
        _content(repo.toplevel / handoff_cfg["schema"]) if handoff_cfg["schema"] else None,
        sorted(os.listdir(repo.common_dir / "worktrees")) if (repo.common_dir / "worktrees").is_dir() else [],
    ]
    records = repo.toplevel / config.section("records")["path"]
    if records.is_dir():
        parts.append([[p.name, _content(p)] for p in sorted(records.glob("*.md"))])
    until = min(_claims(repo, parts), time.time() + MAX_AGE)
    for path in files:
        until = min(until, _flips(path, config.section("fresh")["fresh_days"]))
    key = cache.key(json.dumps(parts, sort_keys=True, default=str).encode())
    return key, until


def _slot(repo: Repo, args: Any) -> str:
    """One cache entry per worktree and arguments, overwritten by each full run: the folder never grows."""
    return "check-" + cache.key(json.dumps([str(repo.toplevel), args.only, args.skip, args.files]).encode())[:32]


def replay(repo: Repo, args: Any, key: str) -> CheckResult | None:
    entry = cache.get(repo, _slot(repo, args))
    if not isinstance(entry, dict) or entry.get("key") != key or time.time() >= float(entry.get("until", 0)):
        return None
    findings = [Finding(*item) for item in entry["findings"]]
    return CheckResult(list(entry["gates"]), list(entry["files"]), findings)


def store(repo: Repo, args: Any, key: str, until: float, result: CheckResult) -> None:
    if result.events:
        return  # a run that moved or flagged something is never replayed
    cache.put(repo, _slot(repo, args), {"key": key, "until": until, "gates": result.gates, "files": result.files,
                                           "findings": [list(f) for f in result.findings]})


