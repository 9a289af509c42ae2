"""Claims through the git remote (issue 18): one ref per claimed state file, changed only by compare-and-swap.

A claim is the ref `refs/gate/claims/<key>` on the remote, where `<key>` is a hex digest of the
canonical state-file path. It points at a commit with no parent whose tree holds `claim.json`:
clone id, host, worktree, branch, session, harness, since, TTL, note and a fence number. Every
change is a push of that one ref with a lease pinned to the value just read (create: the empty
lease, "must not exist"); receive-pack applies it as a compare-and-swap, so of any number of
racing clones exactly one wins. Released claims are deleted, so that the remote keeps one ref
per live claim; the fence must outlive them, so the commit of the last acquisition is also kept
at `refs/gate/fences/<key>` and every acquisition moves both refs in one `--atomic` push.

Reads always go to the remote: `ls-remote` of the two exact refs, then a fetch by id of the
objects not yet in this clone's scratch repository (gitnet.scratch). Nothing here pushes a glob or
any ref but the ones named, and nothing writes a ref of the user's repository.
"""

from __future__ import annotations

import os

from gates.infra import clock, dataio, fsio, gitnet, jsonio, paths, state
from gates.infra.clock import datetime, timedelta
from gates.infra.digest import sha256
from gates.infra.errors import GateError
from gates.infra.git import Repo
from gates.infra.plain import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CLAIMS = "refs/gate/claims"
FENCES = "refs/gate/fences"
FLAGS = "refs/gate/flags"
PROBES = "refs/gate/probe"
PRIVATE_FLAGS = "refs/gate-private/flags"  # in the scratch repository only
RECORD = "claim.json"
MAX_RECORD_BYTES = 64 * 1024
ATTEMPTS = 4  # a lease lost to a claim released at once is retried, a few times


def key_for(repo: Repo, state_rel: str) -> str:
    """The ref component for a state file: a hex digest of its canonical repository-relative path."""
    canon, why = paths.canonical(repo, state_rel)
    if why:
        raise GateError(f"{state_rel}: {why}", reason="config-invalid")
    return sha256(canon.encode("utf-8", "surrogateescape")).hexdigest()[:40]


def clone_id(repo: Repo) -> str:
    """This clone's random id, made once and kept under the state dir (shared by its worktrees)."""
    lay = state.layout(repo)
    path = os.path.join(state.ensure_dir(lay, lay.root), "clone-id")
    for _ in range(2):
        data = fsio.read_state_file(path, 256)
        if data is not None:
            text = data.decode("ascii", "replace").strip()
            if len(text) == 32 and all(c in "0123456789abcdef" for c in text):
                return text
            raise GateError(f"{path} is not a clone id: move it aside", reason="state-unsafe")
        state.write(repo, path, (os.urandom(16).hex() + "\n").encode(), exclusive=True)
    raise GateError(f"cannot make {path}", reason="io-error")


def harness(environ: dict[str, str] | None = None) -> str | None:
    """Which agent harness runs this session, when it says so."""
    env = os.environ if environ is None else environ
    named = env.get("GATE_HARNESS")
    if named:
        return named[:64]
    if env.get("CLAUDECODE") or env.get("CLAUDE_CODE_ENTRYPOINT"):
        return "claude-code"
    return None


class Me(NamedTuple):
    """Who asks, remotely: this clone, this worktree, this session."""

    clone: str
    host: str
    worktree: str
    branch: str | None
    session: str | None
    harness: str | None


def me(repo: Repo, session: str | None) -> Me:
    from gates.domain import claims

    return Me(clone_id(repo), claims.hostname(), str(repo.toplevel), repo.branch(), claims.check_session(session),
              harness())


class Remote(NamedTuple):
    repo: Repo
    name: str
    url: str
    work: gitnet.Scratch


def timeout_of(config: Any) -> float:
    from gates.infra.config import parse_duration

    return parse_duration(config.section("claims")["remote_timeout"], "claims.remote_timeout").total_seconds()


def connect(repo: Repo, name: str, timeout: float = gitnet.NETWORK_TIMEOUT) -> Remote:
    url = gitnet.remote_url(repo, name)
    lay = state.layout(repo)
    state.ensure_dir(lay, lay.root)
    return Remote(repo, name, url, gitnet.scratch(repo, timeout))


class Seen(NamedTuple):
    """The remote's claim on one key as read: the claim (ref value and record) and the fence high-water mark."""

    oid: str | None
    record: dict[str, Any] | None
    fence_oid: str | None
    fence: int


def _decode(remote: Remote, oid: str) -> dict[str, Any]:
    data = gitnet.read_blob(remote.work, oid, RECORD, MAX_RECORD_BYTES)
    problem = {"version": 1, "clone": "?", "host": "?", "worktree": "?", "fence": 0, "problem": "unreadable record"}
    if data is None:
        return problem
    try:
        record = dataio.load_json(data.decode("utf-8", "replace"))
    except dataio.DataError:
        return problem
    if not isinstance(record, dict) or not isinstance(record.get("fence"), int) or not isinstance(record.get("clone"), str):
        return problem
    return record


def read(remote: Remote, key: str) -> Seen:
    refs = gitnet.ls_remote(remote.work, remote.url, [f"{CLAIMS}/{key}", f"{FENCES}/{key}"])
    oid, fence_oid = refs.get(f"{CLAIMS}/{key}"), refs.get(f"{FENCES}/{key}")
    gitnet.fetch_objects(remote.work, remote.url, [o for o in (oid, fence_oid) if o])
    record = _decode(remote, oid) if oid else None
    fence = _decode(remote, fence_oid).get("fence", 0) if fence_oid else 0
    return Seen(oid, record, fence_oid, max(int(fence), int(record.get("fence", 0)) if record else 0))


def is_holder(record: dict[str, Any], who: Me) -> bool:
    return (record.get("clone"), record.get("worktree"), record.get("session")) == (who.clone, who.worktree, who.session)


def liveness(record: dict[str, Any], now: datetime, who: Me | None = None) -> tuple[bool, str]:
    """(live, why). Only the TTL can end another clone's claim; doubt counts as live."""
    if record.get("problem"):
        return True, "its record cannot be read: `gate release --force --reason TEXT` removes it"
    expires = clock.parse_utc(record.get("expires"), zoned=True) if record.get("expires") else None
    if expires is not None and now >= expires:
        return False, f"its TTL expired at {record.get('expires')}"
    if who is not None and record.get("clone") == who.clone and record.get("host") == who.host \
            and not os.path.isdir(str(record.get("worktree"))):
        return False, "its worktree (in this clone) no longer exists"
    return True, "held by another clone: only its TTL can end it" if not expires else f"live until {record['expires']}"


def describe(record: dict[str, Any]) -> str:
    from gates.infra.text import excerpt

    def show(key: str, limit: int = 80) -> str:
        return excerpt(str(record.get(key)), limit)

    branch = show("branch") if record.get("branch") else "(detached)"
    parts = [f"clone {show('clone')}", f"host {show('host')}", f"branch {branch}"]
    if record.get("session"):
        parts.append(f"session {show('session')}")
    if record.get("harness"):
        parts.append(f"harness {show('harness')}")
    ttl = f"TTL {record.get('ttl_seconds')}s, expires {show('expires')}" if record.get("ttl_seconds") else "no TTL"
    note = f", note: {excerpt(str(record['note']), 200)!r}" if record.get("note") else ""
    return (f"worktree {show('worktree', 200)} ({', '.join(parts)}), since {show('since')}, {ttl}, "
            f"fence {record.get('fence')}{note}")


class Outcome(NamedTuple):
    kind: str  # granted | renewed | taken-over | denied | released | broken | not-holder | none
    record: dict[str, Any] | None = None
    previous: dict[str, Any] | None = None
    why: str = ""
    oid: str | None = None


def _record(key: str, state_rel: str, who: Me, ttl: timedelta | None, note: str | None, now: datetime, fence: int,
            token: str | None = None, since: str | None = None) -> dict[str, Any]:
    return {
        "version": 1, "kind": "handoff-gate-claim", "key": key, "path": state_rel, "token": token or os.urandom(16).hex(),
        "clone": who.clone, "host": who.host, "worktree": who.worktree, "branch": who.branch,
        "session": who.session, "harness": who.harness, "since": since or clock.utc_text(now), "renewed": clock.utc_text(now),
        "ttl_seconds": int(ttl.total_seconds()) if ttl else None, "expires": clock.utc_text(now + ttl) if ttl else None,
        "note": note, "fence": fence,
    }


def _commit(remote: Remote, record: dict[str, Any], now: datetime) -> str:
    body = (jsonio.dumps(record, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    subject = f"gate claim {record['path']} fence {record['fence']}"
    return gitnet.make_commit(remote.work, {RECORD: body}, subject, when=int(now.timestamp()))


def acquire(remote: Remote, state_rel: str, who: Me, ttl: timedelta | None, note: str | None,
            now: datetime) -> Outcome:
    """Take, renew or take over the remote claim; a denial names the holder (the winner, after a lost race)."""
    key = key_for(remote.repo, state_rel)
    for _ in range(ATTEMPTS):
        seen = read(remote, key)
        current = seen.record
        if current is not None and is_holder(current, who):
            keep_ttl = ttl if ttl is not None else (timedelta(seconds=int(current["ttl_seconds"]))
                                                    if current.get("ttl_seconds") else None)
            record = _record(key, state_rel, who, keep_ttl, note if note is not None else current.get("note"), now,
                             int(current["fence"]), token=str(current.get("token")), since=str(current.get("since")))
            oid = _commit(remote, record, now)
            if gitnet.push_refs(remote.work, remote.url, [(f"{CLAIMS}/{key}", oid, seen.oid)]).ok:
                return Outcome("renewed", record, oid=oid)
            continue
        why = ""
        if current is not None:
            live, why = liveness(current, now, who)
            if live:
                return Outcome("denied", current, why=why)
        record = _record(key, state_rel, who, ttl, note, now, seen.fence + 1)
        oid = _commit(remote, record, now)
        result = gitnet.push_refs(remote.work, remote.url, [(f"{CLAIMS}/{key}", oid, seen.oid),
                                                         (f"{FENCES}/{key}", oid, seen.fence_oid)])
        if result.ok:
            return Outcome("taken-over" if current else "granted", record, previous=current, why=why, oid=oid)
        if not result.reached:
            raise gitnet.Unreachable(f"git push {remote.url}: {result.message}")
    after = read(remote, key)
    if after.record is not None:
        return Outcome("denied", after.record, why="another clone won the race")
    raise GateError(f"the remote claim on {state_rel} kept changing under {ATTEMPTS} attempts: try again",
                    reason="claim-denied")


def release(remote: Remote, state_rel: str, who: Me, force_reason: str | None = None) -> Outcome:
    """Delete the claim ref, leased to the exact value read: the holder's own, or anyone's with `force_reason`."""
    key = key_for(remote.repo, state_rel)
    for _ in range(ATTEMPTS):
        seen = read(remote, key)
        if seen.record is None:
            return Outcome("none")
        mine = is_holder(seen.record, who)
        if not mine and force_reason is None:
            return Outcome("not-holder", seen.record)
        result = gitnet.push_refs(remote.work, remote.url, [(f"{CLAIMS}/{key}", None, seen.oid)])
        if result.ok:
            return Outcome("released" if mine else "broken", seen.record, why=force_reason or "", oid=seen.oid)
        if not result.reached:
            raise gitnet.Unreachable(f"git push {remote.url}: {result.message}")
    raise GateError(f"the remote claim on {state_rel} kept changing under {ATTEMPTS} attempts: try again",
                    reason="release-denied")


def list_claims(remote: Remote, now: datetime) -> list[dict[str, Any]]:
    refs = gitnet.ls_remote(remote.work, remote.url, [f"{CLAIMS}/*"])
    gitnet.fetch_objects(remote.work, remote.url, sorted(set(refs.values())))
    out = []
    for ref, oid in sorted(refs.items()):
        record = _decode(remote, oid)
        live, why = liveness(record, now)
        since = clock.parse_utc(record.get("since"), zoned=True)
        out.append({**record, "ref": ref, "oid": oid, "live": live, "liveness": why,
                    "age_seconds": int((now - since).total_seconds()) if since else None})
    return out


# -- What this clone holds, as last told by the remote: for `gate stamp` (the fence) and `gate brief`. --

def _held_path(repo: Repo, key: str) -> str:
    lay = state.layout(repo)
    return os.path.join(state.ensure_dir(lay, os.path.join(lay.root, "remote")), f"held-{key}.json")


def remember(repo: Repo, key: str, remote_name: str, who: Me, record: dict[str, Any] | None, oid: str | None,
             unverified: bool = False) -> None:
    """Keep (or, with no record, forget) the remote claim this worktree holds."""
    path = _held_path(repo, key)
    if record is None:
        if os.path.lexists(path):
            os.unlink(path)
        return
    held = {"version": 1, "remote": remote_name, "oid": oid, "fence": record.get("fence"), "clone": who.clone,
            "worktree": who.worktree, "session": who.session, "unverified": unverified, "expires": record.get("expires")}
    state.write(repo, path, (jsonio.dumps(held, indent=2) + "\n").encode())


def held(repo: Repo, state_rel: str) -> dict[str, Any] | None:
    """The remote claim this worktree last took on `state_rel`, or None."""
    try:
        path = _held_path(repo, key_for(repo, state_rel))
        data = fsio.read_state_file(path, MAX_RECORD_BYTES)
        record = dataio.load_json(data.decode("utf-8", "replace")) if data is not None else None
    except (GateError, dataio.DataError):
        return None
    if not isinstance(record, dict) or record.get("worktree") != str(repo.toplevel):
        return None
    return record


def keep_in_lost_found(repo: Repo, record: dict[str, Any], oid: str | None, action: str, why: str, who: Me,
                       now: datetime) -> str:
    """A broken or taken-over remote record, kept with a manifest (the remote no longer has it)."""
    evidence = state.new_evidence_dir(state.layout(repo), now)
    state.write(repo, os.path.join(evidence, "claim.json"), (jsonio.dumps(record, indent=2, ensure_ascii=False) + "\n").encode())
    manifest = {"version": 1, "kind": "remote-claim", "action": action, "reason": why, "when": clock.utc_text(now),
                "oid": oid, "by": who._asdict(), "items": [{"moved_to": "claim.json", "record": record}]}
    body = (jsonio.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode()
    state.write(repo, os.path.join(evidence, "manifest.json"), body)
    return evidence
