"""Git's lock files (found by gates/domain/lockscan.py): judge them, and move the stale ones aside into lost+found.

A lock is `stale` only when every piece of evidence says its holder is gone; any doubt is `live` (docs/locks.md).
A move never deletes and never overwrites: it pins the file, renames it into a fresh folder, checks that the very
file it judged moved, and writes a manifest.
"""

import errno
import os
import stat

from gates.domain.lockscan import FRESH, INELIGIBLE, LIVE, STALE, Lock, admin_dirs
from gates.infra import clock, fsio, jsonio, paths, state
from gates.infra.clock import datetime
from gates.infra.config import Config, parse_duration
from gates.infra.digest import sha256
from gates.infra.errors import USAGE, VIOLATION, GateError
from gates.infra.git import Repo
from gates.infra.plain import NamedTuple
from gates.infra.text import Pattern

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gates.domain.procscan import Scan

# Lock names git is known to leave at the top of a git dir; anything under refs/ ending in .lock.
KNOWN_TOP = frozenset({
    "index.lock", "HEAD.lock", "ORIG_HEAD.lock", "FETCH_HEAD.lock", "MERGE_HEAD.lock", "CHERRY_PICK_HEAD.lock",
    "REVERT_HEAD.lock", "AUTO_MERGE.lock", "config.lock", "config.worktree.lock", "packed-refs.lock", "shallow.lock",
})
NEXT_INDEX = ("next-index-", ".lock")  # + a pid: `git commit -- PATH`'s index of the commit it makes


def known_name(name: str) -> bool:
    """Whether `name` is a lock git is known to leave at the top of a git dir (KNOWN_TOP, or a partial commit's
    `next-index-<pid>.lock`)."""
    head, tail = NEXT_INDEX
    return name in KNOWN_TOP or name.startswith(head) and name.endswith(tail) and name[len(head):-len(tail)].isdecimal()


_PID_LINE = Pattern(r"^pid (\d{1,10})\s*$")
_GITDIR_CAP = 1 << 16  # a worktree's `gitdir` holds one path
_GONE = "gone: moved or released by someone else"


def filesystem_now(lay: state.Layout) -> float:
    """The filesystem's own clock: the mtime a file just touched in the state dir gets."""
    probe = os.path.join(state.ensure_dir(lay, lay.root), ".clock")
    try:  # a FIFO planted there: refused at once (ENXIO), never waited on
        fd = os.open(probe, fsio.safe_flags(os.O_WRONLY | os.O_CREAT), 0o644)
    except OSError as exc:
        raise GateError(f"refusing {probe}: {exc.strerror} (the clock probe is a regular file the gate writes)",
                        reason="state-unsafe") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise GateError(f"refusing {probe}: not a regular file", reason="state-unsafe")
        os.utime(fd, None)
        return os.fstat(fd).st_mtime
    finally:
        os.close(fd)


def judge_configured(repo: Repo, found: list[Lock], config: Config) -> float:
    """Judge `found` as every reader of the locks does: by locks.threshold (returned, in seconds) and the filesystem's
    own clock."""
    threshold = parse_duration(config.section("locks")["threshold"], "locks.threshold").total_seconds()
    judge(repo, found, threshold, filesystem_now(state.layout(repo)))
    return threshold


def judge(repo: Repo, locks: list[Lock], threshold: float, fs_now: float) -> None:
    """Give every lock its verdict; one scan of the processes serves them all. A lock younger than the threshold is
    fresh before its filesystem's type (which may ask `mount`) or the processes are asked: `git commit -a` holds
    such a lock while its pre-commit hook runs, on every commit (docs/performance.md)."""
    candidates = [lock for lock in locks if _eligible(lock)]
    for lock in candidates:
        lock.age = fs_now - max(lock.mtime, lock.ctime)
        if lock.age < threshold:
            lock.verdict, lock.reason = FRESH, f"younger than the threshold ({int(threshold)}s)"
    aged = [lock for lock in candidates if lock.verdict != FRESH and _on_a_local_filesystem(lock)]
    if not aged:
        return
    from gates.domain import procscan

    roots, doubts = _repo_roots(repo)
    found = procscan.scan({lock.ident: lock.path for lock in aged}, roots)
    found.doubts += doubts  # a worktree we cannot locate could have a git process working in it
    for lock in aged:
        _verdict(lock, found, locks)


def _eligible(lock: Lock) -> bool:
    try:
        info = os.lstat(lock.path)
    except FileNotFoundError:
        lock.verdict, lock.reason = INELIGIBLE, "gone meanwhile"
        return False
    lock.size, lock.mtime, lock.ctime = info.st_size, info.st_mtime, info.st_ctime
    lock.ident = (info.st_dev, info.st_ino)
    problem = None
    if stat.S_ISLNK(info.st_mode):
        problem = "a symlink"
    elif not stat.S_ISREG(info.st_mode):
        problem = f"not a regular file but {_kind(info.st_mode)}: git cannot take this lock while it is there"
    elif info.st_nlink != 1:
        problem = f"has {info.st_nlink} hard links"
    elif info.st_uid != os.geteuid():
        problem = f"owned by another user (uid {info.st_uid})"
    elif lock.companion:
        problem = "a ~pid.lock companion: evidence about its lock, never moved on its own"
    elif not lock.shown.startswith("refs/") and not known_name(os.path.basename(lock.path)):
        problem = "not a lock name git is known to leave"
    if problem:
        lock.verdict, lock.reason = INELIGIBLE, problem
        return False
    return True


def _on_a_local_filesystem(lock: Lock) -> bool:
    """Whether an old lock's holder can be looked for here: not when its filesystem is a network one, whose
    other clients' processes are not ours to see, or of a type that cannot be established."""
    from gates.domain import procscan

    kind = procscan.filesystem_type(lock.path)
    if kind is None:
        lock.verdict, lock.reason = INELIGIBLE, "the type of its filesystem cannot be established: reported, never moved"
    elif procscan.is_network_fs(kind):
        lock.verdict, lock.reason = INELIGIBLE, f"on a network filesystem ({kind}): reported, never moved"
    else:
        return True
    return False


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), f"a file of type {stat.S_IFMT(mode):o}")


def _repo_roots(repo: Repo) -> tuple[list[str], list[str]]:
    """The directories a git process of this repository could work in, and why any could not be found."""
    roots = {os.path.realpath(repo.toplevel), os.path.realpath(repo.common_dir)}
    doubts = []
    for admin in admin_dirs(repo)[1:]:
        roots.add(os.path.realpath(admin))
        try:  # a file of the git dir, which whoever shaped the repository may have planted: never waited on
            data = fsio.read_regular(os.path.join(admin, "gitdir"), _GITDIR_CAP)
        except OSError as exc:  # a FIFO, a folder, a symlink, unreadable: that worktree's admin data is unreadable
            doubts.append(f"the work tree of {admin} cannot be located ({exc.strerror})")
            continue
        if len(data) > _GITDIR_CAP:
            doubts.append(f"the work tree of {admin} cannot be located (its gitdir file is over {_GITDIR_CAP} bytes)")
            continue
        gitfile = data.decode(errors="replace").strip()
        if gitfile:
            roots.add(os.path.realpath(os.path.dirname(gitfile)))
    return sorted(roots), doubts


def _verdict(lock: Lock, found: "Scan", locks: list[Lock]) -> None:
    evidence: dict[str, Any] = {"scan_complete": not found.doubts}
    lock.evidence = evidence
    holders = found.open_by.get(lock.ident, [])
    companion = _companion(lock, locks)
    if companion is not None:
        evidence["companion"] = companion
    if found.doubts:
        evidence["doubts"] = found.doubts
        lock.verdict, lock.reason = LIVE, f"liveness cannot be established ({found.doubts[0]})"
    elif holders:
        evidence["open_by"] = holders
        lock.verdict, lock.reason = LIVE, f"held open by process {', '.join(map(str, holders))}"
    elif found.git_in_repo:
        evidence["git_processes"] = [{"pid": pid, "how": how} for pid, how in found.git_in_repo]
        pid, how = found.git_in_repo[0]
        more = f" (and {len(found.git_in_repo) - 1} more)" if len(found.git_in_repo) > 1 else ""
        lock.verdict, lock.reason = LIVE, f"git process {pid} may be working in this repository: {how}{more}"
    elif companion is not None and companion["alive"] is not False:
        lock.verdict, lock.reason = LIVE, f"its ~pid.lock companion names process {companion.get('pid')}, not known dead"
    else:
        lock.verdict, lock.reason = STALE, "no holder: not open anywhere, no git process acting on the repository"


def _companion(lock: Lock, locks: list[Lock]) -> "dict[str, Any] | None":
    folder, name = os.path.split(lock.path)
    partner = os.path.join(folder, f"{name.removesuffix('.lock')}~pid.lock")
    if not any(other.path == partner for other in locks) and not os.path.exists(partner):
        return None
    plain = os.path.isfile(partner) and not os.path.islink(partner)
    data = fsio.read_state_file(partner, 4096) if plain else None
    match = _PID_LINE.match(data.decode("ascii", "replace")) if data is not None else None
    if not match:
        return {"path": partner, "pid": None, "alive": None}
    pid = int(match.group(1))
    from gates.domain import procscan

    return {"path": partner, "pid": pid, "alive": procscan.pid_alive(pid)}


class Moved(NamedTuple):
    lock: Lock
    evidence_dir: str | None = None
    target: str | None = None
    problem: str = ""  # why it was not moved, when it was not


def quarantine(repo: Repo, lock: Lock, threshold: float, when: datetime) -> Moved:
    """Move one stale lock aside, judging it again while pinned. Serialised by an flock on lost+found."""
    lay = state.layout(repo)
    with fsio.locked(state.ensure_dir(lay, lay.lost_found)):
        try:
            pin = os.open(lock.path, fsio.safe_flags(os.O_RDONLY))
        except FileNotFoundError:
            return Moved(lock, problem=_GONE)
        except OSError as exc:
            return Moved(lock, problem=f"cannot be pinned: {exc.strerror}")
        try:
            return _move_pinned(repo, lay, lock, pin, threshold, when)
        finally:
            os.close(pin)


def _move_pinned(repo: Repo, lay: state.Layout, lock: Lock, pin: int, threshold: float, when: datetime) -> Moved:
    pinned = os.fstat(pin)
    again = Lock(lock.path, lock.shown, companion=lock.companion)
    judge(repo, [again], threshold, filesystem_now(lay))
    if again.verdict != STALE or again.ident != (pinned.st_dev, pinned.st_ino):
        return Moved(again, problem=f"no longer stale: {again.reason or 'it changed'}")
    content = os.pread(pin, 1 << 20, 0)
    evidence_dir = state.new_evidence_dir(lay, when)
    parts = lock.shown.split("/")
    target = os.path.join(evidence_dir, *parts)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    moved = fsio.move_aside(lock.path, target, pinned=pinned)
    if isinstance(moved, OSError):
        for depth in range(len(parts) - 1, -1, -1):  # only the folders made for this move, deepest first
            os.rmdir(os.path.join(evidence_dir, *parts[:depth]))
        if moved.errno == errno.ENOENT:
            return Moved(again, problem=_GONE)
        why = "on another filesystem than lost+found (EXDEV): left in place" if moved.errno == errno.EXDEV else moved.strerror
        return Moved(again, problem=f"cannot be moved: {why}")
    if not moved:
        return _put_back(again, evidence_dir, target)
    _manifest(repo, evidence_dir, again, target, content, when)
    from gates.domain import journal  # (a check that meets only fresh locks, as every `git commit -a` does, needs none)

    journal.append(repo, "lock-quarantined", {"path": lock.path, "to": target, "reason": again.reason}, when)
    return Moved(again, evidence_dir, target)


def _put_back(lock: Lock, evidence_dir: str, target: str) -> Moved:
    """We moved a file that is not the one we judged: restore it when its place is free."""
    try:
        os.link(target, lock.path)
        os.unlink(target)  # one name again, at its own place
        return Moved(lock, problem="replaced while being moved: put back")
    except OSError:
        return Moved(lock, evidence_dir, target, "replaced while being moved, and its place is taken: kept in lost+found")


def _manifest(repo: Repo, evidence_dir: str, lock: Lock, target: str, content: bytes, when: datetime) -> None:
    manifest = {
        "version": 1,
        "kind": "git-lock",
        "action": "quarantined",
        "when": clock.utc_text(when),
        "items": [{
            "original": lock.path,
            "moved_to": os.path.relpath(target, evidence_dir).replace(os.sep, "/"),
            "size": lock.size,
            "mtime": clock.utc_text_fine(clock.at(lock.mtime)),  # to the microsecond: evidence of its age
            "ctime": clock.utc_text_fine(clock.at(lock.ctime)),
            "sha256": sha256(content).hexdigest(),
            "reason": lock.reason,
            "evidence": lock.evidence,
        }],
    }
    state.write(repo, os.path.join(evidence_dir, "manifest.json"), (jsonio.dumps(manifest, indent=2) + "\n").encode())


_EVIDENCE_ID = Pattern(rf"^{clock.NAME_PATTERN}-[0-9a-f]{{12}}$")  # state.new_evidence_dir's names


def restore(repo: Repo, evidence_id: str) -> list[str]:
    """Put the locks of one quarantine back where they were, each only when its place is free."""
    lay = state.layout(repo)
    if not _EVIDENCE_ID.match(evidence_id):
        raise GateError(f"{evidence_id[:60]!r} is not a quarantine ID (like 20260101T120000Z-0123456789ab)",
                        code=USAGE, reason="usage")
    folder = os.path.join(lay.lost_found, evidence_id)
    manifest_path = os.path.join(folder, "manifest.json")
    where = (f"IDs are the folder names in {lay.lost_found}, printed by `gate locks --quarantine` and `gate check` "
             "when they move a lock")
    with fsio.locked(state.ensure_dir(lay, lay.lost_found)):  # one restore at a time, and none during a move
        if not os.path.isfile(manifest_path):
            raise _denied(f"no quarantine {evidence_id}: nothing restored ({where})")
        data = fsio.read_state_file(manifest_path, 1 << 20) or b"{}"
        try:
            manifest = jsonio.load_json(fsio.decode_text(data, manifest_path))
        except jsonio.DataError as exc:
            raise GateError(f"{manifest_path}: {exc.message}", reason="state-unsafe") from None
        if not isinstance(manifest, dict) or manifest.get("kind") != "git-lock":
            raise GateError(f"{evidence_id} is not a lock quarantine", code=USAGE, reason="usage")
        items = manifest.get("items")
        if not isinstance(items, list) or not all(isinstance(item, dict) and isinstance(item.get("original"), str)
                                                  and isinstance(item.get("moved_to"), str) for item in items):
            raise GateError(f"manifest of {evidence_id} is not one the gate wrote", reason="state-unsafe")
        if manifest.get("action") == "restored":
            raise _denied(f"quarantine {evidence_id} was already restored: nothing to put back ({where})")
        # Every path of every item is resolved and confined, and what comes back pinned, before anything is moved.
        plan: list[_Restorable] = []
        try:
            for item in items:
                plan.append(_restorable(repo, folder, evidence_id, item))
            restored = [_restore_one(each, evidence_id) for each in plan]
        finally:
            for each in plan:
                os.close(each.pin)
        manifest["action"] = "restored"
        state.write(repo, manifest_path, (jsonio.dumps(manifest, indent=2) + "\n").encode())
    from gates.domain import journal

    journal.append(repo, "lock-restored", {"quarantine": evidence_id, "paths": restored})
    return restored


class _Restorable(NamedTuple):
    original: str  # where it goes back: its folder resolved through every symlink, inside the common dir
    source: str  # where it is, in the quarantine folder, reached without following a link
    pin: int  # the file itself, held open: a regular file with one name


def _restorable(repo: Repo, folder: str, evidence_id: str, item: "dict[str, Any]") -> _Restorable:
    """One item of a manifest, judged: a manifest is a file in the git dir, which whoever shaped the repository can
    write. Where the lock goes back is judged through every symlink of its folder; what comes back must be a file of
    this quarantine, reached without following a link (a folder linked out of it would bring any file of the user's
    in, and the move would take it from its place), with no other name."""
    parent, name = os.path.split(os.path.normpath(item["original"]))
    original = os.path.join(os.path.realpath(parent), name)
    parts = item["moved_to"].split("/")
    inside = original != repo.common_dir and paths.within(original, repo.common_dir)
    if not inside or name in ("", os.curdir, os.pardir) or os.path.isabs(item["moved_to"]) \
            or any(part in ("", os.curdir, os.pardir) for part in parts):
        raise GateError(f"manifest of {evidence_id} names a path outside the repository", reason="state-unsafe")
    source = os.path.join(folder, *parts)
    try:
        pin = fsio.open_state_fd(source, os.O_RDONLY)  # no link followed on the way; a regular file with one name
    except FileNotFoundError:
        raise _denied(f"quarantine {evidence_id} no longer holds {item['moved_to']}: not restored") from None
    except GateError as exc:
        raise GateError(f"manifest of {evidence_id} names a path outside the quarantine: {exc.message}",
                        reason="state-unsafe") from None
    except OSError as exc:
        raise GateError(f"manifest of {evidence_id}: {source}: {exc.strerror}", reason="state-unsafe") from None
    return _Restorable(original, source, pin)


def _restore_one(item: _Restorable, evidence_id: str) -> str:
    """Link the pinned file back at its place, through folders opened without following a link, then drop its
    quarantine name: a move that never deletes (a file that is not the pinned one keeps its quarantine name)."""
    pinned = os.fstat(item.pin)
    source_dir, name = os.path.split(item.source)
    target_dir, target = os.path.split(item.original)
    opened: list[int] = []
    try:
        opened.append(fsio.open_dir(source_dir))
        try:
            opened.append(fsio.open_dir(target_dir))
        except FileNotFoundError:
            raise _denied(f"{target_dir} is gone: quarantine {evidence_id} not restored") from None
        except OSError:  # a link swapped in since it was resolved
            raise GateError(f"manifest of {evidence_id} names a path outside the repository",
                            reason="state-unsafe") from None
        src_fd, dst_fd = opened
        try:
            os.link(name, target, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
        except FileExistsError:
            raise _denied(f"{item.original} exists: quarantine {evidence_id} not restored (its place is taken)") from None
        except FileNotFoundError:
            raise _denied(f"quarantine {evidence_id} no longer holds {item.source}: not restored") from None
        if not os.path.samestat(os.stat(target, dir_fd=dst_fd, follow_symlinks=False), pinned):
            os.unlink(target, dir_fd=dst_fd)  # the second name of a file swapped in meanwhile: it keeps its first
            raise _denied(f"{item.source} changed while being restored: quarantine {evidence_id} not restored")
        os.unlink(name, dir_fd=src_fd)
    finally:
        for fd in opened:
            os.close(fd)
    return item.original


def _denied(message: str) -> GateError:
    return GateError(message, code=VIOLATION, reason="lock-restore-denied")
