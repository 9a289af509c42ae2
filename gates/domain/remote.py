"""Claims through the git remote (issue 18): one ref per claimed state file, changed only by compare-and-swap.

`refs/gate/claims/<key>` (`<key>`: a digest of the canonical state-file path) points at a commit with no parent
whose tree holds `claim.json`; `refs/gate/fences/<key>` keeps the last acquisition's commit, so that the fence
outlives a release. Every change is a push leased to the value just read, and every read goes to the remote: the
whole design is docs/claims.md ("Claims beyond one clone"). Nothing here pushes a glob or any ref but the ones
named, and nothing writes a ref of the user's repository.
"""

import os

from gates.infra import clock, fsio, gitnet, jsonio, paths, state
from gates.infra.clock import datetime, timedelta
from gates.infra.config import Config, parse_duration
from gates.infra.digest import sha256
from gates.infra.errors import VIOLATION, GateError
from gates.infra.git import Repo
from gates.infra.plain import NamedTuple
from gates.infra.text import excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CLAIMS = "refs/gate/claims"
FENCES = "refs/gate/fences"
FLAGS = "refs/gate/flags"
PROBES = "refs/gate/probe"
PROBE_PREFIX = "probe-"  # `gate doctor --remote`'s probes under CLAIMS and FENCES: never a key (hex)
RECORD = "claim.json"
MAX_RECORD_BYTES = 64 * 1024
ATTEMPTS = 4  # a lease lost to a claim released at once is retried, a few times
MAX_FENCE = 2**63 - 1  # what every JSON reader here takes (jsonio.load_json); a claim at it cannot be taken over


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


def harness() -> str | None:
    """Which agent harness runs this session, when it says so."""
    named = os.environ.get("GATE_HARNESS")
    if named:
        return named[:64]
    return "claude-code" if os.environ.get("CLAUDECODE") or os.environ.get("CLAUDE_CODE_ENTRYPOINT") else None


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


def timeout_of(config: Config) -> float:
    return parse_duration(config.section("claims")["remote_timeout"], "claims.remote_timeout").total_seconds()


def connect(repo: Repo, name: str, timeout: float = gitnet.NETWORK_TIMEOUT) -> Remote:
    url = gitnet.remote_url(repo, name)
    lay = state.layout(repo)
    state.ensure_dir(lay, lay.root)
    return Remote(repo, name, url, gitnet.scratch(repo, timeout))


class Seen(NamedTuple):
    """The remote's claim on one key as read: the claim (ref value and record) and the fence high-water mark.

    `problem` is set (and `record` is then a placeholder naming it) when a record breaks the remote-claim
    schema: a one-line reason naming the remote ref and the field."""

    oid: str | None
    record: "dict[str, Any] | None"
    fence_oid: str | None
    fence: int
    problem: str | None = None


class Hidden(GateError):
    """The remote's fetch advertisement lacks refs/gate/ refs its push side has: a claim there reads as unknown."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="remote-unreachable")


def _decode(remote: Remote, ref: str, oid: str) -> "tuple[dict[str, Any], str | None]":
    """(record, None), or (placeholder, why) when the record at `ref` is unreadable or breaks the schema."""
    # None is git's `missing` (or a record over the bound): a failed read is raised, never taken for it
    record, why = parse_record(gitnet.read_blobs(remote.work, [oid], RECORD, MAX_RECORD_BYTES)[oid])
    if record is None or why is not None:
        why = f"remote {remote.name}: {excerpt(ref, 120)} ({oid[:12]}): {why}"
        return {"version": 1, "fence": 0, "problem": why}, why
    return record, None


def parse_record(data: bytes | None) -> "tuple[dict[str, Any] | None, str | None]":
    """The one reader of a remote claim record: (record, None), or (None, why) naming the field and what is wrong.

    Only this function's own answer comes out, whatever the bytes (a property test holds it)."""
    if data is None:
        return None, f"no {RECORD} of at most {MAX_RECORD_BYTES} bytes"
    try:
        record = jsonio.load_json(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None, f"{RECORD} is not UTF-8"
    except jsonio.DataError as exc:
        return None, f"{RECORD}: {exc.message}"
    from gates.infra import schemas, validation

    found = validation.validate(schemas.load("remote-claim"), record, {})
    if found:
        return None, f"{RECORD}: {found[0][1]} (schemas/remote-claim.schema.json)"
    return record, None


def read(remote: Remote, key: str, look: bool = True) -> Seen:
    """The claim and fence on `key`, as the remote has them; Hidden when it hides them from fetches. `look` False
    leaves out the look for a ref hidden from fetches (a conversation more): for a writer whose push is leased on
    what it read, so that a hidden ref fails the lease, and the writer reads again with the look."""
    claim_ref, fence_ref = f"{CLAIMS}/{key}", f"{FENCES}/{key}"
    for _ in range(ATTEMPTS):
        refs = gitnet.ls_remote(remote.work, remote.url, [claim_ref, fence_ref])
        absent = [ref for ref in (claim_ref, fence_ref) if ref not in refs]
        hidden = pushed_side_has(remote, absent) if absent and look else []
        if not hidden:
            break
        # Made between the two looks (a racing claimer), or hidden: a look again tells, and only a remote that
        # keeps showing it to pushes alone, each time, is taken as hiding it.
    else:
        raise Hidden(hidden_message(remote, hidden[0], "its fetch side (ls-remote) does not list it, yet its push "
                                    "side has it (uploadpack.hideRefs?)"))
    oid, fence_oid = refs.get(claim_ref), refs.get(fence_ref)
    gitnet.fetch_objects(remote.work, remote.url, [o for o in (oid, fence_oid) if o])
    record, why = _decode(remote, claim_ref, oid) if oid else (None, None)
    fenced, fence_why = _decode(remote, fence_ref, fence_oid) if fence_oid else ({"fence": 0}, None)
    fence = max(int(fenced["fence"]), int(record["fence"]) if record else 0)
    return Seen(oid, record, fence_oid, fence, why or fence_why)


def pushed_side_has(remote: Remote, refs: list[str]) -> list[str]:
    """Which of `refs` (not listed by ls-remote) the push side of the remote has.

    A dry-run delete leased to "must not exist" sends nothing: git judges the lease against receive-pack's
    own advertisement, so `uploadpack.hideRefs` (which hides refs from ls-remote and fetch only) shows."""
    result = gitnet.push_refs(remote.work, remote.url, [(ref, None, None) for ref in refs], dry_run=True)
    if not result.reached:
        raise gitnet.Unreachable(f"git push --dry-run {remote.url}: {result.message}")
    return [ref for ref, status in result.status.items() if "stale info" in status]


def hidden_message(remote: Remote, ref: str, how: str) -> str:
    return (f"remote {remote.name} hides {ref}: {how} — a claim there is unknown, never free; let the remote "
            "advertise refs/gate/ (no uploadpack.hideRefs, transfer.hideRefs or receive.hideRefs over it; "
            "`gate doctor --remote` checks)")


def push(remote: Remote, updates: list[tuple[str, str | None, str | None]], doing: str) -> bool:
    """Compare-and-swap `updates` (gitnet.push_refs): True when every ref moved, False when the swap was lost to a
    change made since the read (the caller reads again). `doing` names the push in a message ("the push renewing
    the claim on HANDOFF.md"). What is no lost race is never returned as one: a ref receive-pack refuses because it
    hides it raises Hidden; a ref it refuses for another reason (a hook, an unpacker error) raises gitnet.Unwritten;
    a push it gave no answer for is judged by the remote's refs read again: applied (True), as they were read
    (gitnet.Unwritten), moved by another (False), or not readable (gitnet.Unreachable)."""
    result = gitnet.push_refs(remote.work, remote.url, updates)
    if result.ok:
        return True
    for ref, status in result.status.items():
        if "hidden ref" in status:
            left = _withdraw(remote, updates)
            raise Hidden(hidden_message(remote, ref, f"it refuses to update it ({status.lstrip('! ')})") + left)
    if result.refused:
        raise gitnet.Unwritten(f"remote {remote.name} could not be written: it refused {doing} "
                               f"({_answers(result.refused)}); git said: {result.message}")
    if result.reached:
        return False  # each ref answered, and each refusal was a lease lost: another clone moved it since the read
    try:
        now = gitnet.ls_remote(remote.work, remote.url, [ref for ref, _, _ in updates])
    except gitnet.Unreachable as exc:
        raise gitnet.Unreachable(f"{doing} got no answer ({result.message}) and whether remote {remote.name} applied "
                                 f"it cannot be told ({exc.message}); if it did, `gate release` gives it back") from None
    if all(now.get(ref) == new for ref, new, _ in updates):
        return True  # applied: only its answer was lost
    if all(now.get(ref) == expected for ref, _, expected in updates):
        answered = _answers({ref: status for ref, status in result.status.items() if status.startswith("!")})
        raise gitnet.Unwritten(f"remote {remote.name} could not be written: it gave no answer to {doing}"
                               f"{f' ({answered})' if answered else ''} and still holds what was read; git said: "
                               f"{result.message}")
    return False  # moved by another since the read: read again


def _withdraw(remote: Remote, updates: list[tuple[str, str | None, str | None]]) -> str:
    """Put back each claim ref a push refused for a hidden ref wrote all the same (git 2.39's receive-pack applies the
    rest of an --atomic push whose hidden ref it refused): a claim left without its fence would be renewed under a
    fence already used. Leased on what the push wrote; the fence, a high-water mark, may stay raised. Returns what
    the error raised next must add: '' when nothing is left, else which ref may be and what to do."""
    wrote = [(ref, new, expected) for ref, new, expected in updates if ref.startswith(f"{CLAIMS}/") and new]
    if not wrote:
        return ""
    why = ""
    try:
        now = gitnet.ls_remote(remote.work, remote.url, [ref for ref, _, _ in wrote])
        back: list[tuple[str, str | None, str | None]] = [(ref, expected, new) for ref, new, expected in wrote
                                                           if now.get(ref) == new]
        if not back or gitnet.push_refs(remote.work, remote.url, back).ok:
            return ""
    except (GateError, OSError) as exc:
        why = f" ({exc.render() if isinstance(exc, GateError) else exc})"
    refs = ", ".join(ref for ref, _, _ in wrote)
    return (f"; the remote may also hold {refs} as this push wrote it, which could not be put back{why}: "
            "`gate release --force --reason TEXT` once the remote advertises refs/gate/, or delete it there by hand")


def _answers(status: dict[str, str]) -> str:
    """`ref summary; …` of git's (cleaned, cut) porcelain status for each ref."""
    return "; ".join(f"{ref} {said.lstrip('! ')}" for ref, said in status.items())


def lost_leases(remote: Remote) -> str:
    return (f"remote {remote.name} refused {ATTEMPTS} pushes in a row as leases lost (the ref moved by another clone "
            "after each read, or so the remote says): try again")


def is_holder(record: "dict[str, Any]", who: Me) -> bool:
    return (record.get("clone"), record.get("worktree"), record.get("session")) == (who.clone, who.worktree, who.session)


def liveness(record: "dict[str, Any]", now: datetime, who: Me | None = None) -> tuple[bool, str]:
    """(live, why). Another clone's claim ends at its release, its TTL, or a `gate release --force`; doubt counts as
    live."""
    if record.get("problem"):
        return True, f"its record cannot be read ({record['problem']}): `gate release --force --reason TEXT` removes it"
    expires = clock.parse_utc(record.get("expires"), zoned=True) if record.get("expires") else None
    if expires is not None and now >= expires:
        return False, f"its TTL expired at {clock.shown(record['expires'])}"
    if who is not None and record.get("clone") == who.clone and record.get("host") == who.host \
            and not os.path.isdir(str(record.get("worktree"))):
        return False, "its worktree (in this clone) no longer exists"
    if not expires:
        return True, ("held by another clone, with no TTL: its release ends it, or `gate release --force --reason "
                      "TEXT` once that session is gone")
    return True, f"live until {clock.shown(record['expires'])}"


def describe(record: "dict[str, Any]") -> str:
    if record.get("problem"):
        return f"an unreadable record ({record['problem']})"

    def show(key: str, limit: int = 80) -> str:
        return excerpt(clock.shown(record.get(key)) if key in ("since", "expires") else str(record.get(key)), limit)

    branch = show("branch") if record.get("branch") else "(detached)"
    parts = [f"clone {show('clone')}", f"host {show('host')}", f"branch {branch}"]
    parts += [f"{key} {show(key)}" for key in ("session", "harness") if record.get(key)]
    ttl = f"TTL {record.get('ttl_seconds')}s, expires {show('expires')}" if record.get("ttl_seconds") else "no TTL"
    note = f", note: {excerpt(str(record['note']), 200)!r}" if record.get("note") else ""
    return (f"worktree {show('worktree', 200)} ({', '.join(parts)}), since {show('since')}, {ttl}, "
            f"fence {record.get('fence')}{note}")


class Outcome(NamedTuple):
    kind: str  # granted | renewed | taken-over | denied | released | broken | not-holder | none
    record: "dict[str, Any] | None" = None
    previous: "dict[str, Any] | None" = None
    why: str = ""
    oid: str | None = None


def _record(key: str, state_rel: str, who: Me, ttl: timedelta | None, note: str | None, now: datetime, fence: int,
            token: str | None = None, since: str | None = None) -> "dict[str, Any]":
    return {
        "version": 1, "kind": "handoff-gate-claim", "key": key, "path": state_rel, "token": token or os.urandom(16).hex(),
        "clone": who.clone, "host": who.host, "worktree": who.worktree, "branch": who.branch,
        "session": who.session, "harness": who.harness, "since": since or clock.utc_text(now), "renewed": clock.utc_text(now),
        "ttl_seconds": int(ttl.total_seconds()) if ttl else None, "expires": clock.utc_text(now + ttl) if ttl else None,
        "note": note, "fence": fence,
    }


def _commit(remote: Remote, record: "dict[str, Any]", now: datetime) -> str:
    try:
        body = (jsonio.dumps(record, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a worktree path or branch that is not UTF-8: no reader could take it
        why: str | None = "the worktree path or branch is not UTF-8 text"
    else:  # never write what a reader (this one included) would refuse: one bound for both
        why = parse_record(body)[1]
    if why is not None:
        raise GateError(f"the claim record for {record['path']} was not written: {why}", code=VIOLATION,
                        reason="claim-denied")
    subject = f"gate claim {record['path']} fence {record['fence']}"
    return gitnet.make_commit(remote.work, {RECORD: body}, subject, when=int(now.timestamp()))


def acquire(remote: Remote, state_rel: str, who: Me, ttl: timedelta | None, note: str | None,
            now: datetime) -> Outcome:
    """Take, renew or take over the remote claim; a denial names the holder (the winner, after a lost race)."""
    key = key_for(remote.repo, state_rel)
    for attempt in range(ATTEMPTS):
        # The first read skips the look for refs hidden from fetches: a ref the push side has fails the push's lease
        # (leased on "absent"), and the reads after a lost lease look, so a hiding remote is still unknown, never free.
        seen = read(remote, key, look=attempt > 0)
        if seen.problem:
            raise unreadable(seen.problem, "the claim was not taken", "claim-denied")
        current = seen.record
        if current is not None and is_holder(current, who):
            keep_ttl = ttl if ttl is not None else (timedelta(seconds=int(current["ttl_seconds"]))
                                                    if current.get("ttl_seconds") else None)
            record = _record(key, state_rel, who, keep_ttl, note if note is not None else current.get("note"), now,
                             int(current["fence"]), token=current.get("token"), since=current.get("since"))
            oid = _commit(remote, record, now)
            if push(remote, [(f"{CLAIMS}/{key}", oid, seen.oid)], f"the push renewing the claim on {state_rel}"):
                return Outcome("renewed", record, oid=oid)
            continue
        why = ""
        if current is not None:
            live, why = liveness(current, now, who)
            if live:
                return Outcome("denied", current, why=why)
        if seen.fence >= MAX_FENCE:
            raise GateError(f"the remote claim on {state_rel} cannot be taken: its fence on remote {remote.name} is "
                            f"{seen.fence}, the bound (2**63-1), so no higher fence can be written — a forged or "
                            f"corrupt record: delete {FENCES}/{key} (and {CLAIMS}/{key}) on the remote by hand once no "
                            "holder of an older fence can still push", code=VIOLATION, reason="claim-denied")
        record = _record(key, state_rel, who, ttl, note, now, seen.fence + 1)
        oid = _commit(remote, record, now)
        doing = f"the push {'taking over' if current else 'taking'} the claim on {state_rel} and its fence"
        if push(remote, [(f"{CLAIMS}/{key}", oid, seen.oid), (f"{FENCES}/{key}", oid, seen.fence_oid)], doing):
            return Outcome("taken-over" if current else "granted", record, previous=current, why=why, oid=oid)
    after = read(remote, key)
    if after.record is not None and not is_holder(after.record, who):
        return Outcome("denied", after.record, why="another clone won the race")
    if after.record is not None:  # this clone's own claim, as read each time: no other clone moved it
        raise gitnet.Unwritten(f"remote {remote.name} could not be written: it refused the push renewing the claim on "
                               f"{state_rel} {ATTEMPTS} times in the words of a lost lease, yet holds this clone's "
                               "claim as it was read")
    raise GateError(f"the remote claim on {state_rel} was not taken: {lost_leases(remote)}", reason="claim-denied")


def release(remote: Remote, state_rel: str, who: Me, force_reason: str | None = None) -> Outcome:
    """Delete the claim ref, leased to the exact value read: the holder's own, or anyone's with `force_reason`."""
    key = key_for(remote.repo, state_rel)
    for _ in range(ATTEMPTS):
        seen = read(remote, key)
        if seen.record is None:
            return Outcome("none")
        mine = is_holder(seen.record, who)
        if seen.problem and force_reason is None:
            raise unreadable(seen.problem, "nothing was released", "release-denied")
        if not mine and force_reason is None:
            return Outcome("not-holder", seen.record)
        doing = f"the push {'releasing' if mine else 'breaking'} the claim on {state_rel}"
        if push(remote, [(f"{CLAIMS}/{key}", None, seen.oid)], doing):
            return Outcome("released" if mine else "broken", seen.record, why=force_reason or "", oid=seen.oid)
    raise GateError(f"the remote claim on {state_rel} was not released: {lost_leases(remote)}", reason="release-denied")


def unreadable(problem: str, what: str, reason: str) -> GateError:
    """The refusal for a record that breaks the schema: a denial (exit 1) naming the ref and the field."""
    return GateError(f"{problem}: {what} — a claim record that cannot be read is a live claim, never free; "
                     "`gate release --force --reason TEXT` removes the claim ref (a broken fence ref: delete it on the "
                     "remote by hand)", code=VIOLATION, reason=reason)


def list_claims(remote: Remote, now: datetime) -> "list[dict[str, Any]]":
    refs = gitnet.ls_remote(remote.work, remote.url, [f"{CLAIMS}/*"])
    gitnet.fetch_objects(remote.work, remote.url, sorted(set(refs.values())))
    out = []
    for ref, oid in sorted(refs.items()):
        if ref.startswith(f"{CLAIMS}/{PROBE_PREFIX}"):
            continue  # a doctor's probe, there for a moment
        record, _ = _decode(remote, ref, oid)
        live, why = liveness(record, now)
        since = clock.parse_utc(record.get("since"), zoned=True)
        out.append({**record, "ref": ref, "oid": oid, "live": live, "liveness": why,
                    "age_seconds": int((now - since).total_seconds()) if since else None})
    return out


# -- What this clone holds, as last told by the remote: for `gate stamp` (the fence) and `gate brief`. --

class Elsewhere(NamedTuple):
    """The claim on a file as a remote has it now, from where this clone stands (remote.another_clones)."""

    record: "dict[str, Any] | None"  # another clone's live claim there (None: none, or see below)
    problem: str | None  # the record there cannot be read: never free, and never proof of a holder either
    unread: str | None  # the remote could not be asked: why


def another_clones(repo: Repo, config: Config, name: str, state_rel: str, seconds: float) -> Elsewhere:
    """Whether another clone holds the claim on `state_rel` on remote `name`, read now as the pre-push gate reads it,
    within `seconds`. This clone's own records there are not another's (its worktrees' claims are the local ones)."""
    gitnet.bound_run(seconds)
    try:
        target = connect(repo, name, seconds)
        seen = read(target, key_for(repo, state_rel))
        who = me(repo, None)
    except (GateError, OSError) as exc:
        return Elsewhere(None, None, excerpt(exc.render() if isinstance(exc, GateError) else str(exc), 200))
    if seen.problem:
        return Elsewhere(None, excerpt(seen.problem, 200), None)
    record = seen.record
    if record is None or record.get("clone") == who.clone or not liveness(record, clock.now(), who)[0]:
        return Elsewhere(None, None, None)
    return Elsewhere(record, None, None)


def _held_path(repo: Repo, key: str) -> str:
    lay = state.layout(repo)
    return os.path.join(state.ensure_dir(lay, os.path.join(lay.root, "remote")), f"held-{key}.json")


def remember(repo: Repo, key: str, remote_name: str, who: Me, record: "dict[str, Any] | None", oid: str | None,
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


def held(repo: Repo, state_rel: str) -> "dict[str, Any] | None":
    """The remote claim this worktree last took on `state_rel`, or None."""
    try:
        path = _held_path(repo, key_for(repo, state_rel))
        data = fsio.read_state_file(path, MAX_RECORD_BYTES)
        record = jsonio.load_json(data.decode("utf-8", "replace")) if data is not None else None
    except (GateError, jsonio.DataError):
        return None
    if not isinstance(record, dict) or record.get("worktree") != str(repo.toplevel):
        return None
    return record


def keep_in_lost_found(repo: Repo, record: "dict[str, Any]", oid: str | None, action: str, why: str, who: Me,
                       now: datetime) -> str:
    """A broken or taken-over remote record, kept with a manifest (the remote no longer has it)."""
    evidence = state.new_evidence_dir(state.layout(repo), now)
    manifest = {"version": 1, "kind": "remote-claim", "action": action, "reason": why, "when": clock.utc_text(now),
                "oid": oid, "by": who._asdict(), "items": [{"moved_to": "claim.json", "record": record}]}
    for name, document in (("claim.json", record), ("manifest.json", manifest)):
        state.write(repo, os.path.join(evidence, name), (jsonio.dumps(document, indent=2, ensure_ascii=False) + "\n").encode())
    return evidence
