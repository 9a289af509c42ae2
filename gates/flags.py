"""Sentinel flags: a file per failure reason under `<git-common-dir>/gate/flags/`.

A flag's file name is made only of a UTC time, a reason tag from a closed set and a random
token, never from input text. Identical repeats (same reason, message and worktree) coalesce
into one flag with a count. Acknowledging moves a flag to `flags/acked/`; nothing is deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gates import dataio, fsio, journal, state
from gates.errors import USAGE, GateError
from gates.git import Repo
from gates.registry import GATES

# Reasons that are not gate ids. A gate's violations are flagged under its FLAG_REASON, or its id.
EVENT_REASONS = frozenset({
    "config-invalid",
    "input-unreadable",
    "io-error",
    "state-unsafe",
    "internal-error",
    "claim-denied",
    "release-denied",
    "claim-broken",
    "claim-taken-over",
    "stale-lock-quarantined",
    "lock-held-live",
    "lock-quarantine-failed",
    "lock-restore-denied",
    "journal-broken",
    "stamp-denied",
    "autofix-applied",
    "doctor",
})
REASONS = frozenset(GATES) | EVENT_REASONS
ID_PATTERN = re.compile(r"^\d{8}T\d{6}Z-[a-z][a-z+-]{0,63}-[0-9a-f]{8}$")
MAX_FLAG_BYTES = 1 << 20
MAX_MESSAGE_CHARS = 64 * 1024


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _key(reason: str, message: str, worktree: str) -> str:
    return hashlib.sha256("\0".join((reason, message, worktree)).encode("utf-8", "surrogatepass")).hexdigest()


def raise_flag(repo: Repo, reason: str, message: str, *, command: str, exit_code: int, now: datetime | None = None) -> str:
    """Write (or count again) the flag for `reason`; returns its id."""
    if reason not in REASONS:
        raise ValueError(f"unknown flag reason {reason!r}")
    lay = state.layout(repo)
    directory = state.ensure_dir(lay, lay.flags)
    now = now or utc_now()
    message = message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS] + "\n… (cut)"
    key = _key(reason, message, str(repo.toplevel))
    with fsio.locked(directory):
        for path in sorted(directory.glob(f"*-{reason}-*.json")):
            record = _read(path)
            if record is not None and record.get("key") == key and record.get("reason") == reason:
                record["count"] = int(record.get("count", 1)) + 1
                record["last_seen"] = stamp(now)
                record["head"] = repo.head
                _write(repo, path, record)
                return str(record["id"])
        flag_id = f"{now:%Y%m%dT%H%M%SZ}-{reason}-{os.urandom(4).hex()}"
        record = {
            "version": 1,
            "id": flag_id,
            "reason": reason,
            "message": message,
            "first_seen": stamp(now),
            "created_ns": time.time_ns(),  # orders flags raised within one second
            "last_seen": stamp(now),
            "count": 1,
            "worktree": str(repo.toplevel),
            "head": repo.head,
            "command": command,
            "exit_code": exit_code,
            "key": key,
        }
        _write(repo, directory / f"{flag_id}.json", record)
    journal.append(repo, "flag-raised", {"id": flag_id, "reason": reason, "command": command}, now)
    return flag_id


def _write(repo: Repo, path: Path, record: dict[str, Any]) -> None:
    state.write(repo, path, (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape"))


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = fsio.read_state_file(path, MAX_FLAG_BYTES)
        if data is None:
            return None
        record = dataio.load_json(fsio.decode_text(data, path.name))
    except (GateError, dataio.DataError):
        return None
    return record if isinstance(record, dict) else None


def _flag_files(folder: Path) -> list[Path]:
    """The flag files of a folder; a writer's temp files (dot names) are not flags."""
    return sorted(p for p in folder.glob("*.json") if not p.name.startswith("."))


def pending(repo: Repo) -> list[dict[str, Any]]:
    """Every unacknowledged flag, oldest first. A flag that cannot be read is shown as one, never dropped."""
    lay = state.layout(repo)
    if not lay.flags.is_dir():
        return []
    out = []
    for path in _flag_files(lay.flags):
        record = _read(path)
        if record is None or not isinstance(record.get("message"), str):
            record = {
                "id": path.stem, "reason": "unreadable-flag", "count": 1,
                "first_seen": "", "last_seen": "",
                "message": f"flag file {path} cannot be read as a flag: inspect it, then `gate flags --ack {path.stem}`",
            }
        out.append(record)
    return sorted(out, key=lambda r: (str(r.get("first_seen", "")), int(r.get("created_ns") or 0), str(r.get("id", ""))))


def acknowledge(repo: Repo, ids: list[str] | None) -> list[str]:
    """Move the named flags (all when `ids` is None) to flags/acked/; returns the ids moved."""
    lay = state.layout(repo)
    if not lay.flags.is_dir():
        if ids:
            raise GateError(f"no such flag: {ids[0]}", code=USAGE, reason="usage")
        return []
    for flag_id in ids or []:
        if not ID_PATTERN.match(flag_id) or not (lay.flags / f"{flag_id}.json").is_file():
            raise GateError(f"no such flag: {flag_id[:80]!r} (see `gate flags`)", code=USAGE, reason="usage")
    acked_dir = state.ensure_dir(lay, lay.flags_acked)
    moved = []
    with fsio.locked(lay.flags):
        names = [f"{i}.json" for i in ids] if ids else [p.name for p in _flag_files(lay.flags)]
        for name in names:
            try:
                os.rename(lay.flags / name, acked_dir / name)
            except FileNotFoundError:
                continue  # acknowledged by someone else meanwhile
            moved.append(name.removesuffix(".json"))
        fsio.fsync_dir(lay.flags)
        fsio.fsync_dir(acked_dir)
    if moved:
        journal.append(repo, "flags-acknowledged", {"ids": moved})
    return moved
