"""Exclusive claims on the state file: first mover wins, the same claim from every worktree.

A claim is a JSON record at `<git-common-dir>/gate/claims/<key>.json`, where the key is a hash of
the state file's path relative to the repository root, so every worktree of a clone names the
same claim. A record is written to a private temp file, fsynced, then published with `link()`:
readers see a complete record or none, and EEXIST means someone else holds it. Every
read-decide-write step (claim, renew, take over, release, break) runs under an flock on the
claims folder, so a decision is never made on a record that changes underneath it. Records are
never deleted: a released one moves to `claims/released/`, a broken or taken-over one to
`lost+found/` with a manifest.

The holder is the worktree (and the session id, when one is given): the `gate claim` process
exits at once, so its pid says nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from gates import dataio, fsio, journal, state
from gates.errors import USAGE, GateError
from gates.git import Repo

MAX_RECORD_BYTES = 64 * 1024
MAX_NOTE_CHARS = 500
_SESSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$")


def _usage(message: str) -> GateError:
    return GateError(message, code=USAGE, reason="usage")


def check_session(session: str | None) -> str | None:
    if session is None:
        return None
    if not _SESSION.match(session) or ".." in session:
        raise _usage(f"session id {session[:40]!r} refused: use 1-128 of A-Z a-z 0-9 . _ : @ + - (no '..', no '/')")
    return session


def check_note(note: str | None) -> str | None:
    if note is None:
        return None
    if dataio.unsafe_text(note):
        raise _usage("note refused: it holds control, NUL or bidi characters")
    if len(note) > MAX_NOTE_CHARS:
        raise _usage(f"note refused: {len(note)} characters, at most {MAX_NOTE_CHARS}")
    return note


class Holder(NamedTuple):
    """Who asks: this worktree, and the session when one is named."""

    worktree: str
    git_dir: str
    branch: str | None
    session: str | None
    host: str


def _hostname() -> str:
    return os.uname().nodename


def holder_of(repo: Repo, session: str | None) -> Holder:
    return Holder(
        worktree=str(repo.toplevel),
        git_dir=str(repo.git_dir),
        branch=repo.branch(),
        session=check_session(session),
        host=_hostname(),
    )


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_stamp(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def claim_path(lay: state.Layout, state_rel: str) -> Path:
    key = hashlib.sha256(state_rel.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return lay.claims / f"{key}.json"


def read(lay: state.Layout, state_rel: str) -> dict[str, Any] | None:
    """The published record for `state_rel`, or None. A record that is not one is refused, never guessed at."""
    if not lay.claims.is_dir():
        return None
    return _load(claim_path(lay, state_rel))


def _load(path: Path) -> dict[str, Any] | None:
    data = fsio.read_state_file(path, MAX_RECORD_BYTES)
    if data is None:
        return None
    try:
        record = dataio.load_json(fsio.decode_text(data, str(path)))
    except (dataio.DataError, GateError) as exc:
        raise GateError(f"claim record {path} is unreadable ({exc}): inspect it, then move it aside with "
                        "`gate release --force --reason TEXT`", reason="state-unsafe") from None
    if not isinstance(record, dict) or not isinstance(record.get("token"), str):
        raise GateError(f"claim record {path} is not a claim record", reason="state-unsafe")
    return record


def is_holder(record: dict[str, Any], holder: Holder) -> bool:
    return (
        record.get("git_dir") == holder.git_dir
        and record.get("worktree") == holder.worktree
        and record.get("session") == holder.session
    )


def same_worktree(record: dict[str, Any], holder: Holder) -> bool:
    return record.get("git_dir") == holder.git_dir and record.get("worktree") == holder.worktree


def expiry(record: dict[str, Any]) -> datetime | None:
    """When the claim's TTL runs out (None: it has none, or none readable as a UTC time: doubt, so no expiry)."""
    expires = _parse_stamp(record.get("expires")) if record.get("expires") else None
    return expires if expires is not None and expires.tzinfo is not None else None


def liveness(record: dict[str, Any], now: datetime, host: str | None = None) -> tuple[bool, str]:
    """(live, why). Doubt counts as live: a worktree on another host cannot be looked at from here."""
    expires = expiry(record)
    if expires is not None and now >= expires:
        return False, f"its TTL expired at {record['expires']}"
    if record.get("host") != (host or _hostname()):
        return True, f"held from host {record.get('host')}: its worktree cannot be checked from here"
    git_dir, worktree = str(record.get("git_dir", "")), str(record.get("worktree", ""))
    if not os.path.isdir(git_dir):
        return False, "its worktree was removed (its git directory is gone)"
    if not os.path.isdir(worktree):
        return False, "its worktree folder no longer exists"
    return True, "its worktree is present" + ("" if expires else "; no TTL")


def describe(record: dict[str, Any]) -> str:
    parts = [f"branch {record.get('branch') or '(detached)'}"]
    if record.get("session"):
        parts.append(f"session {record['session']}")
    parts.append(f"host {record.get('host')}")
    ttl = f"TTL {_human(int(record['ttl_seconds']))}, expires {record['expires']}" if record.get("ttl_seconds") else "no TTL"
    note = f", note: {record['note']!r}" if record.get("note") else ""
    return f"worktree {record.get('worktree')} ({', '.join(parts)}), since {record.get('since')}, {ttl}{note}"


def _human(seconds: int) -> str:
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts) or "0s"


class Outcome(NamedTuple):
    kind: str  # granted | renewed | taken-over | denied | released | broken | not-holder | none
    record: dict[str, Any] | None = None
    previous: dict[str, Any] | None = None
    why: str = ""
    evidence: Path | None = None


def _new_record(state_rel: str, holder: Holder, ttl: timedelta | None, note: str | None, now: datetime) -> dict[str, Any]:
    return {
        "version": 1,
        "token": os.urandom(16).hex(),
        "path": state_rel,
        "worktree": holder.worktree,
        "git_dir": holder.git_dir,
        "branch": holder.branch,
        "session": holder.session,
        "host": holder.host,
        "since": stamp(now),
        "renewed": stamp(now),
        "ttl_seconds": int(ttl.total_seconds()) if ttl else None,
        "expires": stamp(now + ttl) if ttl else None,
        "note": note,
    }


def _encode(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def claim(repo: Repo, state_rel: str, holder: Holder, ttl: timedelta | None, note: str | None, now: datetime) -> Outcome:
    outcome = _claim(repo, state_rel, holder, ttl, note, now)
    _journal(repo, outcome, now)
    return outcome


def release(repo: Repo, state_rel: str, holder: Holder, now: datetime, force_reason: str | None = None) -> Outcome:
    outcome = _release(repo, state_rel, holder, now, force_reason)
    _journal(repo, outcome, now)
    return outcome


def _journal(repo: Repo, outcome: Outcome, now: datetime) -> None:
    actions = {"granted": "claim-granted", "renewed": "claim-renewed", "taken-over": "claim-taken-over",
               "released": "claim-released", "broken": "claim-broken"}
    if outcome.kind in actions and outcome.record is not None:
        details = {key: outcome.record.get(key) for key in ("path", "worktree", "session", "token")}
        if outcome.why:
            details["why"] = outcome.why
        if outcome.evidence is not None:
            details["evidence"] = str(outcome.evidence)
        journal.append(repo, actions[outcome.kind], details, now)


def _claim(repo: Repo, state_rel: str, holder: Holder, ttl: timedelta | None, note: str | None, now: datetime) -> Outcome:
    lay = state.layout(repo)
    folder = state.ensure_dir(lay, lay.claims)
    path = claim_path(lay, state_rel)
    with fsio.locked(folder):
        current = read(lay, state_rel)
        if current is not None and is_holder(current, holder):
            if ttl is None and current.get("ttl_seconds"):
                ttl = timedelta(seconds=int(current["ttl_seconds"]))
            keep_note = note if note is not None else current.get("note")
            renewed = {**_new_record(state_rel, holder, ttl, keep_note, now),
                       "token": current["token"], "since": current.get("since")}
            state.write(repo, path, _encode(renewed))
            return Outcome("renewed", renewed)
        evidence = None
        why = ""
        if current is not None:
            live, why = liveness(current, now, holder.host)
            if live:
                return Outcome("denied", current, why=why)
            evidence = _set_aside(lay, path, current, "claim-taken-over", why, holder, now)
        record = _new_record(state_rel, holder, ttl, note, now)
        if not state.write(repo, path, _encode(record), exclusive=True):
            # Published by something that does not take our lock: it is there first, so it wins.
            return Outcome("denied", read(lay, state_rel), why="published meanwhile")
        return Outcome("taken-over" if current else "granted", record, previous=current, why=why, evidence=evidence)


def _release(repo: Repo, state_rel: str, holder: Holder, now: datetime, force_reason: str | None) -> Outcome:
    lay = state.layout(repo)
    folder = state.ensure_dir(lay, lay.claims)
    path = claim_path(lay, state_rel)
    with fsio.locked(folder):
        current = read(lay, state_rel)
        if current is None:
            return Outcome("none")
        if is_holder(current, holder):
            released = state.ensure_dir(lay, lay.claims_released)
            target = released / f"{now:%Y%m%dT%H%M%SZ}-{current['token'][:16]}.json"
            _move(path, target, current["token"])
            return Outcome("released", current, evidence=target)
        if force_reason is None:
            return Outcome("not-holder", current)
        evidence = _set_aside(lay, path, current, "claim-broken", force_reason, holder, now)
        return Outcome("broken", current, why=force_reason, evidence=evidence)


def _move(source: Path, target: Path, token: str) -> None:
    """Rename a record aside (never over anything) and check it is the record we judged."""
    if os.path.lexists(target):
        raise GateError(f"refusing to move {source} over {target}", reason="state-unsafe")
    try:
        os.rename(source, target)
        fsio.fsync_dir(source.parent)
        fsio.fsync_dir(target.parent)
    except OSError as exc:
        raise GateError(f"cannot move {source} to {target}: {exc.strerror}", reason="io-error") from None
    moved = _load(target)
    if moved is None or moved.get("token") != token:
        raise GateError(f"the record moved to {target} is not the one judged: inspect it", reason="state-unsafe")


def _set_aside(lay: state.Layout, path: Path, record: dict[str, Any], action: str, why: str, by: Holder,
               now: datetime) -> Path:
    evidence = state.new_evidence_dir(lay, now)
    _move(path, evidence / path.name, str(record["token"]))
    manifest = {
        "version": 1,
        "kind": "claim",
        "action": action,
        "reason": why,
        "when": stamp(now),
        "by": {"worktree": by.worktree, "branch": by.branch, "session": by.session, "host": by.host},
        "items": [{"original": str(path), "moved_to": path.name, "record": record}],
    }
    assert lay.repo is not None
    state.write(lay.repo, evidence / "manifest.json", _encode(manifest))
    return evidence


def list_all(repo: Repo, now: datetime) -> list[dict[str, Any]]:
    """Every published claim, with its age and liveness."""
    lay = state.layout(repo)
    if not lay.claims.is_dir():
        return []
    out = []
    for path in sorted(lay.claims.glob("*.json")):
        if path.name.startswith("."):
            continue
        try:
            record = _load(path)
        except GateError as exc:
            record = {"path": "?", "worktree": "?", "problem": exc.message}
        if record is None:
            continue  # released meanwhile
        live, why = liveness(record, now)
        since = _parse_stamp(record.get("since"))
        out.append({**record, "age_seconds": int((now - since).total_seconds()) if since else None,
                    "live": live, "liveness": why})
    return out
