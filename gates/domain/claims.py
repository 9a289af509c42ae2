"""Exclusive claims on the state file: first mover wins, the same claim from every worktree.

A claim is a JSON record at `<git-common-dir>/gate/claims/<hash>.json`, where the hash is of the
claim key: the state file's canonical path relative to the work tree root (`key()`: normalised,
symlinks inside the tree resolved, refused when it leaves the tree or enters a git directory), so
every worktree of a clone, however its config spells the path, names the same claim. A record is
written to a private temp file, fsynced, then published with `link()`: readers see a complete
record or none, and EEXIST means someone else holds it. Every
read-decide-write step (claim, renew, take over, release, break) runs under an flock on the
claims folder, so a decision is never made on a record that changes underneath it. Records are
never deleted: a released one moves to `claims/released/`, a broken or taken-over one to
`lost+found/` with a manifest.

The holder is the worktree (and the session id, when one is given): the `gate claim` process
exits at once, so its pid says nothing. A worktree is known by its git admin dir *and* the identity
of the `commondir` file git writes there once, at `git worktree add` (inode and ctime, see
`worktree_id()`): `git worktree move` rewrites only `gitdir`, so the claim follows the move (that
file says where to); `git worktree remove` or `prune` deletes the admin dir, so a worktree re-added
at the same place, which gets the same admin dir name and often the same inodes, is a new holder.
The gate writes nothing outside its state dir to know this.
"""

import os
import posixpath
import stat

from gates.infra import clock, fsio, jsonio, paths, state
from gates.infra.clock import datetime, timedelta
from gates.infra.digest import sha256
from gates.infra.errors import USAGE, GateError
from gates.infra.git import Repo
from gates.infra.plain import NamedTuple
from gates.infra.text import Pattern, excerpt, unsafe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_RECORD_BYTES = 64 * 1024
MAX_NOTE_CHARS = 500
_SESSION = Pattern(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$")
MAIN_WORKTREE = "main"  # the worktree_id of the main worktree: git cannot move or remove it
RECORD_VERSION = 2  # 2: `path` is the canonical key and the holder carries `worktree_id`; 1: `path` as configured


def _usage(message: str) -> GateError:
    return GateError(message, code=USAGE, reason="usage")


def valid_session(value: object) -> str | None:
    """`value` when it is a session id `gate claim` would take (safe in a shell and in a Markdown code span as it
    is); None otherwise: a record is hostile input, and no command to copy is built of what it names."""
    return value if isinstance(value, str) and _SESSION.match(value) and ".." not in value else None


FORCE = "`gate release --force --reason TEXT`"
NO_SESSION_ID = f"its record names no valid session id: {FORCE} ends it"


def check_session(session: str | None) -> str | None:
    if session is None:
        return None
    if not _SESSION.match(session) or ".." in session:
        raise _usage(f"session id {session[:40]!r} refused: use 1-128 of A-Z a-z 0-9 . _ : @ + - (no '..', no '/')")
    return session


def check_note(note: str | None) -> str | None:
    if note is None:
        return None
    if unsafe(note):
        raise _usage("note refused: it holds control, NUL or bidi characters")
    if len(note) > MAX_NOTE_CHARS:
        raise _usage(f"note refused: {len(note)} characters, at most {MAX_NOTE_CHARS}")
    return note


def _refuse_path(configured: str, why: str) -> GateError:
    return GateError(f"handoff.path {configured[:80]!r}: {why}: the claim key must name a file inside the work tree",
                     reason="state-unsafe")


def key(repo: Repo, configured: str) -> str:
    """The claim key of the state file `configured` names: its canonical path relative to the work tree root.

    `./HANDOFF.md`, `HANDOFF.md/`, `.//HANDOFF.md`, `sub/../HANDOFF.md` and a symlink inside the
    tree that leads to HANDOFF.md are all `HANDOFF.md`. Symlinks are resolved the way the kernel
    does (a link before `..`); a path that leaves the work tree, names the tree itself or lands in a
    git directory (`.git`, the git dir, the common dir) is refused: the rule of every configured path
    (paths.canonical), asked again rather than trusted. Already canonical keys map to themselves.
    """
    if not configured or "\x00" in configured:
        raise _refuse_path(configured, "not a path")
    canonical, why = paths.canonical(repo, configured)  # the config loader's own rule, asked again
    if why:
        raise _refuse_path(configured, why)
    return canonical


class Holder(NamedTuple):
    """Who asks: this worktree (its git admin dir and the gate's id kept in it), and the session when one is named."""

    worktree: str
    git_dir: str
    branch: str | None
    session: str | None
    host: str
    worktree_id: str | None = None


def hostname() -> str:
    """This machine's name, as claims (local and remote) and remote flags record it."""
    return os.uname().nodename


def _linked_id(git_dir: str) -> str | None:
    """`<inode>:<ctime ns>` of the admin dir's `commondir`, or None when it has none (or it is not a plain file).

    Git writes `commondir` once, at `git worktree add`, and never again: `git worktree move` and
    `repair` rewrite `gitdir` and the worktree's `.git` file only. A file re-created by a later
    add may get the same inode (the admin dir's own inode is reused at once: it proves nothing),
    but not the same ctime: the claim being judged was made after the first add and before the
    removal, so any re-add happened at least one `gate claim` run later, far past the clock's
    granularity. A restore from a backup also changes both: the claim then looks abandoned.
    """
    try:
        info = os.lstat(os.path.join(git_dir, "commondir"))
    except OSError:
        return None
    return f"{info.st_ino}:{info.st_ctime_ns}" if stat.S_ISREG(info.st_mode) else None


def worktree_id(repo: Repo) -> str | None:
    """What tells this worktree from one re-added in its place, and survives `git worktree move`."""
    if os.path.realpath(repo.git_dir) == os.path.realpath(repo.common_dir):
        return MAIN_WORKTREE
    return _linked_id(str(repo.git_dir))


def holder_of(repo: Repo, session: str | None) -> Holder:
    return Holder(worktree=str(repo.toplevel), git_dir=str(repo.git_dir), branch=repo.branch(),
                  session=check_session(session), host=hostname(), worktree_id=worktree_id(repo))


def _ttl_number(ttl: timedelta) -> int | float:
    seconds = ttl.total_seconds()
    return int(seconds) if seconds == int(seconds) else seconds


def claim_path(lay: state.Layout, claim_key: str) -> str:
    """Where the claim on `claim_key` (a `key()`) is published: the same name as before keys were canonical."""
    digest = sha256(claim_key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return os.path.join(lay.claims, f"{digest}.json")


def _canonical(lay: state.Layout, state_rel: str) -> str:
    return key(lay.repo, state_rel) if lay.repo is not None else state_rel


def read(lay: state.Layout, state_rel: str) -> "dict[str, Any] | None":
    """The claim on the file `state_rel` names (any spelling), or None. A record that is not one is refused."""
    found = _find(lay, _canonical(lay, state_rel))
    return found[1] if found else None


def _find(lay: state.Layout, claim_key: str) -> "tuple[str, dict[str, Any]] | None":
    """The record at the key's name; failing that, a version-1 record published under another spelling.

    Records written before keys were canonical sit at the hash of the path as configured
    (`./HANDOFF.md`, say). They still hold their file: found here, they are renewed, released or
    taken over like any other, and a renewal republishes them under the canonical name.
    """
    if not os.path.isdir(lay.claims):
        return None
    path = claim_path(lay, claim_key)
    record = _load(path)
    if record is not None:
        return path, record
    for other in fsio.listing(lay.claims, ".json"):
        if other == path:
            continue
        try:
            legacy = _load(other)
            if legacy is not None and legacy.get("version", 1) == 1 and isinstance(legacy.get("path"), str) \
                    and _canonical(lay, legacy["path"]) == claim_key:
                return other, legacy
        except GateError:
            continue  # not a record (`gate claims` lists it), or a path that is no key: it holds nothing
    return None


def _load(path: str) -> "dict[str, Any] | None":
    data = fsio.read_state_file(path, MAX_RECORD_BYTES)
    if data is None:
        return None
    try:
        record = jsonio.load_json(fsio.decode_text(data, path))
    except (jsonio.DataError, GateError) as exc:
        raise GateError(f"claim record {path} is unreadable ({exc}): inspect it, then move it aside with "
                        "`gate release --force --reason TEXT`", reason="state-unsafe") from None
    ttl = record.get("ttl_seconds") if isinstance(record, dict) else None
    if (not isinstance(record, dict) or not isinstance(record.get("token"), str)
            or ttl is not None and (type(ttl) not in (int, float) or not 0 <= ttl < 1 << 53)):  # what describe() reads
        raise GateError(f"claim record {path} is not a claim record", reason="state-unsafe")
    return record


def is_holder(record: "dict[str, Any]", holder: Holder) -> bool:
    return same_worktree(record, holder) and record.get("session") == holder.session


def same_worktree(record: "dict[str, Any]", holder: Holder) -> bool:
    return _same_worktree(record, holder.git_dir, holder.worktree, holder.worktree_id)


def held_here(record: "dict[str, Any]", repo: Repo) -> bool:
    """Whether the claim is this worktree's (any session): read-only, for the gate and the briefing."""
    return _same_worktree(record, str(repo.git_dir), str(repo.toplevel), worktree_id(repo))


def _same_worktree(record: "dict[str, Any]", git_dir: str, worktree: str, wt_id: str | None) -> bool:
    if record.get("git_dir") != git_dir:
        return False
    if record.get("worktree_id"):  # MAIN_WORKTREE, or a linked worktree's `commondir` identity
        return bool(record["worktree_id"] == wt_id)
    # A record from before worktree ids: the admin dir is ours, and its worktree is here or gone (moved here).
    recorded = str(record.get("worktree", ""))
    return recorded == worktree or not os.path.isdir(recorded)


def expiry(record: "dict[str, Any]") -> datetime | None:
    """When the claim's TTL runs out (None: it has none, or none readable as a UTC time: doubt, so no expiry)."""
    return clock.parse_utc(record.get("expires"), zoned=True) if record.get("expires") else None


def liveness(record: "dict[str, Any]", now: datetime, host: str | None = None) -> tuple[bool, str]:
    """(live, why). Doubt counts as live: a worktree on another host cannot be looked at from here."""
    expires = expiry(record)
    if expires is not None and now >= expires:
        return False, f"its TTL expired at {excerpt(clock.shown(record['expires']), 60)}"
    if record.get("host") != (host or hostname()):
        return True, f"held from host {excerpt(str(record.get('host')), 120)}: its worktree cannot be checked from here"
    git_dir, worktree = str(record.get("git_dir", "")), str(record.get("worktree", ""))
    if not os.path.isdir(git_dir):
        return False, "its worktree was removed (its git directory is gone)"
    no_ttl = "" if expires else "; no TTL"
    if record.get("worktree_id") and record["worktree_id"] != MAIN_WORKTREE:
        now_id = _linked_id(git_dir)
        if now_id is None:
            return True, f"{excerpt(git_dir, 400)} has no commondir, so its worktree cannot be told apart: doubt{no_ttl}"
        if now_id != record["worktree_id"]:
            return False, f"its worktree was removed (its git directory {excerpt(git_dir, 400)} now belongs to another worktree)"
        worktree = _located(git_dir) or worktree
        if not os.path.isdir(worktree):
            return False, "its worktree folder no longer exists"
        if worktree != record.get("worktree"):
            return True, f"its worktree moved to {excerpt(str(worktree), 400)}{no_ttl}"
        return True, f"its worktree is present{no_ttl}"
    if not os.path.isdir(worktree):
        # A record from before worktree ids: if its admin dir now points at a live folder, that is a move
        # (or a re-add there, which no record of that age can tell apart): doubt, so live.
        moved = _located(git_dir)
        if moved and moved != worktree and os.path.isdir(moved):
            return True, (f"its worktree moved to {excerpt(str(moved), 400)}, or was re-added there (a record without a "
                           f"worktree id){no_ttl}")
        return False, "its worktree folder no longer exists"
    return True, f"its worktree is present{no_ttl}"


def claimed_elsewhere(repo: Repo, configured: str, now: datetime | None = None, proven: bool = False) -> str | None:
    """The live claim on the hand-over (`configured`) another worktree of this clone holds, described; None when there
    is none. A commit of the hand-over is refused while it stands (handoff-claim): the close-out and the brief word
    their steps for it. `proven`: only a holder shown present (held_by_a_worktree_here), never doubt, for a gate that
    yields to it."""
    try:
        record = read(state.layout(repo), key(repo, configured))
    except (GateError, OSError):
        return None  # the gates say what cannot be read
    now = now or clock.now()
    if record is None or held_here(record, repo):
        return None
    if not (held_by_a_worktree_here(record, repo, now) if proven else liveness(record, now)[0]):
        return None
    return describe(record)


def held_by_a_worktree_here(record: "dict[str, Any]", repo: Repo, now: datetime) -> bool:
    """Whether the claim is shown held by another worktree of this very clone, present now: its host is this one, its
    admin dir is this clone's common dir or one of its linked worktrees' (whose identity matches the record), and that
    worktree's folder exists, within its TTL. Never on doubt (another host, a copied clone, a dir that cannot be told):
    for a gate that yields to the holder, where liveness's doubt-is-live would let anyone yield."""
    if held_here(record, repo) or record.get("host") != hostname():
        return False
    expires = expiry(record)
    if expires is not None and now >= expires:
        return False
    git_dir, common = os.path.realpath(str(record.get("git_dir", ""))), os.path.realpath(str(repo.common_dir))
    if git_dir == common:  # the main worktree
        return record.get("worktree_id") in (None, MAIN_WORKTREE) and os.path.isdir(str(record.get("worktree", "")))
    wt_id = record.get("worktree_id")
    if os.path.dirname(git_dir) != os.path.join(common, "worktrees") or not wt_id or _linked_id(git_dir) != wt_id:
        return False
    located = _located(git_dir)
    return located is not None and os.path.isdir(located)


def _located(git_dir: str) -> str | None:
    """Where a linked worktree is now: git's admin dir records it in `gitdir` (`<worktree>/.git`), moves included."""
    try:
        data = fsio.read_state_file(os.path.join(git_dir, "gitdir"), 8192)
    except GateError:
        return None
    target = data.decode("utf-8", "surrogateescape").strip() if data else ""
    if not os.path.isabs(target) or "\x00" in target:  # no file, an empty one, or no absolute path
        return None
    return os.path.realpath(os.path.dirname(target) if posixpath.basename(target) == ".git" else target)


def describe(record: "dict[str, Any]") -> str:
    """The holder in one line. A record is hostile input (a file any process of this user can write): every field is
    escaped and capped, whatever its type, so that no field can end the line or forge another."""
    def field(key: str, limit: int = 120) -> str:
        return excerpt(str(record.get(key)), limit)

    parts = [f"branch {field('branch') if record.get('branch') else '(detached)'}"]
    if record.get("session"):
        parts.append(f"session {field('session', 130)}")
    parts.append(f"host {field('host')}")
    ttl = "no TTL"
    if record.get("ttl_seconds"):
        try:
            ttl = f"TTL {_human(float(record['ttl_seconds']))}"
        except (TypeError, ValueError, OverflowError):
            ttl = f"TTL {field('ttl_seconds', 40)}"
        ttl += f", expires {excerpt(clock.shown(record.get('expires')), 60)}"
    note = f", note: {excerpt(repr(record['note']), 520)}" if record.get("note") else ""
    return (f"worktree {field('worktree', 400)} ({', '.join(parts)}), since "
            f"{excerpt(clock.shown(record.get('since')), 60)}, {ttl}{note}")


def _human(seconds: float) -> str:
    parts = []
    whole, fraction = int(seconds), seconds - int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if whole >= size:
            parts.append(f"{whole // size}{unit}")
            whole %= size
    if whole or fraction:
        parts.append(f"{whole + fraction:g}s" if fraction else f"{whole}s")
    return "".join(parts) or "0s"


class Outcome(NamedTuple):
    kind: str  # granted | renewed | taken-over | denied | released | broken | not-holder | other-session | none
    record: "dict[str, Any] | None" = None
    previous: "dict[str, Any] | None" = None
    why: str = ""
    evidence: str | None = None


def _new_record(claim_key: str, holder: Holder, ttl: timedelta | None, note: str | None, now: datetime) -> "dict[str, Any]":
    return {"version": RECORD_VERSION, "token": os.urandom(16).hex(), "path": claim_key, "worktree": holder.worktree,
            "git_dir": holder.git_dir, "worktree_id": holder.worktree_id, "branch": holder.branch,
            "session": holder.session, "host": holder.host,
            "since": clock.utc_text(now), "renewed": clock.utc_text(now),  # shown to people: to the second
            "ttl_seconds": _ttl_number(ttl) if ttl else None, "expires": clock.utc_text_fine(now + ttl) if ttl else None,
            "note": note}


def _encode(record: "dict[str, Any]") -> bytes:
    """A claim record on one line: the C encoder's form (an indented one would load all of `json` on every
    renewal, 9 ms here)."""
    return (jsonio.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def blocking(repo: Repo, state_rel: str, holder: Holder, now: datetime) -> "tuple[dict[str, Any], str] | None":
    """(the record, why it is live) of another holder's live claim that `claim` now would be denied by, else None:
    a look without the lock and without a write, for a caller that must know before it asks elsewhere."""
    current = read(state.layout(repo), state_rel)
    if current is None or is_holder(current, holder):
        return None
    live, why = liveness(current, now, holder.host)
    return (current, why) if live else None


def holds(repo: Repo, state_rel: str, holder: Holder) -> bool:
    """Whether `holder` holds the claim on `state_rel` now (a look without the lock)."""
    current = read(state.layout(repo), state_rel)
    return current is not None and is_holder(current, holder)


def claim(repo: Repo, state_rel: str, holder: Holder, ttl: timedelta | None, note: str | None, now: datetime) -> Outcome:
    return _journal(repo, _claim(repo, state_rel, holder, ttl, note, now), now)


def release(repo: Repo, state_rel: str, holder: Holder, now: datetime, force_reason: str | None = None) -> Outcome:
    return _journal(repo, _release(repo, state_rel, holder, now, force_reason), now)


def _journal(repo: Repo, outcome: Outcome, now: datetime) -> Outcome:
    """Journal what `outcome` changed, and hand it on."""
    actions = {"granted": "claim-granted", "renewed": "claim-renewed", "taken-over": "claim-taken-over",
               "released": "claim-released", "broken": "claim-broken"}
    if outcome.kind in actions and outcome.record is not None:
        details = {key: outcome.record.get(key) for key in ("path", "worktree", "session", "token")}
        if outcome.why:
            details["why"] = outcome.why
        if outcome.evidence is not None:
            details["evidence"] = str(outcome.evidence)
        from gates.domain import journal  # a check reads claims and writes none: it never loads the journal

        journal.append(repo, actions[outcome.kind], details, now)
    return outcome


def _claim(repo: Repo, state_rel: str, holder: Holder, ttl: timedelta | None, note: str | None, now: datetime) -> Outcome:
    lay = state.layout(repo)
    claim_key = key(repo, state_rel)
    folder = state.ensure_dir(lay, lay.claims)
    path = claim_path(lay, claim_key)
    with fsio.locked(folder):
        found = _find(lay, claim_key)
        where, current = found if found else (path, None)
        if current is not None and is_holder(current, holder):
            if ttl is None and current.get("ttl_seconds"):
                ttl = timedelta(seconds=float(current["ttl_seconds"]))
            keep_note = note if note is not None else current.get("note")
            renewed = {**_new_record(claim_key, holder, ttl, keep_note, now),
                       "token": current["token"], "since": current.get("since")}
            state.write(repo, path, _encode(renewed))
            if where != path:  # a version-1 record under an old spelling: now republished under the key, kept
                _move(where, _released_name(lay, current, now), current["token"])
            return Outcome("renewed", renewed)
        evidence, why = None, ""
        if current is not None:
            live, why = liveness(current, now, holder.host)
            if live:
                return Outcome("denied", current, why=why)
            evidence = _set_aside(lay, where, current, "claim-taken-over", why, holder, now)
        record = _new_record(claim_key, holder, ttl, note, now)
        if not state.write(repo, path, _encode(record), exclusive=True):
            # Published by something that does not take our lock: it is there first, so it wins.
            return Outcome("denied", read(lay, claim_key), why="published meanwhile")
        return Outcome("taken-over" if current else "granted", record, previous=current, why=why, evidence=evidence)


def _released_name(lay: state.Layout, record: "dict[str, Any]", now: datetime) -> str:
    released = state.ensure_dir(lay, lay.claims_released)
    return os.path.join(released, f"{clock.name_text(now)}-{os.urandom(4).hex()}-{str(record['token'])[:16]}.json")


def _release(repo: Repo, state_rel: str, holder: Holder, now: datetime, force_reason: str | None) -> Outcome:
    lay = state.layout(repo)
    claim_key = key(repo, state_rel)
    folder = state.ensure_dir(lay, lay.claims)
    with fsio.locked(folder):
        found = _find(lay, claim_key)
        if found is None:
            return Outcome("none")
        where, current = found
        if is_holder(current, holder):
            target = _released_name(lay, current, now)
            _move(where, target, current["token"])
            return Outcome("released", current, evidence=target)
        if force_reason is None:
            return Outcome("other-session" if same_worktree(current, holder) else "not-holder", current)
        evidence = _set_aside(lay, where, current, "claim-broken", force_reason, holder, now)
        return Outcome("broken", current, why=force_reason, evidence=evidence)


def _move(source: str, target: str, token: str) -> None:
    """Rename a record aside (never over anything) and check it is the record we judged."""
    if os.path.lexists(target):
        raise GateError(f"refusing to move {source} over {target}", reason="state-unsafe")
    try:
        if isinstance(failed := fsio.move_aside(source, target), OSError):
            raise failed
    except OSError as exc:
        raise GateError(f"cannot move {source} to {target}: {exc.strerror}", reason="io-error") from None
    moved = _load(target)
    if moved is None or moved.get("token") != token:
        raise GateError(f"the record moved to {target} is not the one judged: inspect it", reason="state-unsafe")


def _set_aside(lay: state.Layout, path: str, record: "dict[str, Any]", action: str, why: str, by: Holder,
               now: datetime) -> str:
    evidence = state.new_evidence_dir(lay, now)
    name = os.path.basename(path)
    _move(path, os.path.join(evidence, name), str(record["token"]))
    manifest = {"version": 1, "kind": "claim", "action": action, "reason": why, "when": clock.utc_text_fine(now),
                "by": {"worktree": by.worktree, "branch": by.branch, "session": by.session, "host": by.host},
                "items": [{"original": path, "moved_to": name, "record": record}]}
    assert lay.repo is not None
    state.write(lay.repo, os.path.join(evidence, "manifest.json"), _encode(manifest))
    return evidence


def list_all(repo: Repo, now: datetime) -> "list[dict[str, Any]]":
    """Every published claim, with its age and liveness."""
    lay = state.layout(repo)
    out = []
    for path in fsio.listing(lay.claims, ".json"):
        try:
            record = _load(path)
        except GateError as exc:
            record = {"path": "?", "worktree": "?", "problem": exc.message}
        if record is None:
            continue  # released meanwhile
        live, why = liveness(record, now)
        since = clock.parse_utc(record.get("since"))
        out.append({**record, "age_seconds": int((now - since).total_seconds()) if since else None,
                    "live": live, "liveness": why})
    return out


def release_denial(state_rel: str, holder: Holder, outcome: "Outcome") -> str | None:
    """Why this clone's claim was not released (`outcome` of claims.release: held for another session of this
    worktree, or by another worktree), or None when it was not refused."""
    record = outcome.record
    if outcome.kind not in ("other-session", "not-holder") or record is None:
        return None
    if outcome.kind == "not-holder":
        return (f"not released: this worktree does not hold the claim on {state_rel}; {describe(record)} does — "
                "`gate release --force --reason TEXT` breaks it if that session is gone")
    return session_denial("not released", state_rel, record.get("session"), holder.session)


def session_denial(said: str, state_rel: str, held: object, given: str | None) -> str:
    """A release refused because this worktree's claim is another session's (`held`) than the one `given`."""
    if held and valid_session(held) is None:
        return f"{said}: the claim on {state_rel} is held by this worktree for another session; {NO_SESSION_ID}"
    if held:
        asked = f"not session {excerpt(str(given), 130)}" if given else "and no session was given"
        return (f"{said}: the claim on {state_rel} is held by this worktree for session {held}, {asked} — "
                f"pass --session {held} or set GATE_SESSION={held}")
    return (f"{said}: the claim on {state_rel} is held by this worktree without a session, not for "
            f"session {given} — run `gate release` without --session and with GATE_SESSION unset")
