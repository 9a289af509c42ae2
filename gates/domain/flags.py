"""Sentinel flags: a file per failure reason under `<git-common-dir>/gate/flags/` (docs/flags-and-journal.md).

A flag's file name is made only of a UTC time, a reason tag from a closed set and a random token, never from
input text. Nothing is ever deleted: a flag leaves the open folder resolved (`resolve`, `resolve_event`,
`resolve_vanished`: to `flags/resolved/`, journalled) or acknowledged (`flags/acked/`).

`flags/open/` holds one empty marker per (gate, worktree, scope) with an open flag, so that a passing check learns
with one lstat per gate that it has nothing to resolve. Markers are created and removed under the folder's flock
together with the flags they stand for: a marker may outlive its flags, never the other way round.

Every flag file is read with `fsio.read_state_file`: a planted symlink, FIFO, device or oversized file is refused
(`state-unsafe`), never followed, never blocked on.
"""

import os
import stat
import time

from gates.domain import changes, journal
from gates.infra import clock, fsio, jsonio, state
from gates.infra.catalog import CATALOG, flag_reason
from gates.infra.clock import datetime
from gates.infra.digest import sha256
from gates.infra.errors import USAGE, GateError
from gates.infra.git import Repo
from gates.infra.text import Pattern, clean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

# Reasons that are not gate ids. A gate's violations are flagged under its catalog flag_reason, or its id.
EVENT_REASONS = frozenset({
    "config-invalid", "input-unreadable", "io-error", "state-unsafe", "internal-error",
    "claim-denied", "release-denied", "claim-broken", "claim-taken-over", "claim-unverified",
    "stale-lock-quarantined", "lock-held-live", "lock-quarantine-failed", "lock-restore-denied",
    "journal-broken", "stamp-denied", "autofix-applied", "doctor", "closeout-missing", "remote-unreachable",
})
REASONS = frozenset(CATALOG) | EVENT_REASONS
ID_PATTERN = Pattern(rf"^{clock.NAME_PATTERN}-[a-z][a-z+-]{{0,63}}-[0-9a-f]{{8}}$")
MAX_FLAG_BYTES = 1 << 20
MAX_MESSAGE_CHARS = 64 * 1024


def _locked(directory: str) -> fsio.locked:
    """The folder's flock, refusing a lock file planted as anything but a regular file."""
    lock = os.path.join(directory, ".lock")
    try:
        if not stat.S_ISREG(os.lstat(lock).st_mode):
            raise GateError(f"refusing {lock}: not a regular file", reason="state-unsafe")
    except FileNotFoundError:
        pass
    return fsio.locked(directory)


def _set_marker(repo: Repo, lay: state.Layout, name: str) -> None:
    folder = state.ensure_dir(lay, lay.flags_open)
    modes = state.shared_modes(repo)
    mode = modes[0] if modes else 0o666 & ~fsio.umask()
    try:
        os.close(os.open(os.path.join(folder, name), fsio.safe_flags(os.O_WRONLY | os.O_CREAT | os.O_EXCL), mode))
    except FileExistsError:
        return
    except OSError as exc:
        raise GateError(f"cannot write {os.path.join(folder, name)}: {exc.strerror}", reason="io-error") from None
    fsio.fsync_dir(folder)


def raise_flag(repo: Repo, reason: str, message: str, *, command: str, exit_code: int, now: datetime | None = None,
               gate: str | None = None, scope: "dict[str, Any] | None" = None, observed_ns: int | None = None,
               about: dict[str, str | None] | None = None) -> str:
    """Write (or count again) the flag for `reason`; returns its id.

    `gate`: the gate whose failure this is (its next pass in the same worktree and `scope`
    resolves the flag); None for an event, which stays until acknowledged or a later run sees its
    cause gone (resolve_event). `about`: what the failing run found unsound, for an event a later run
    settles only when it finds that sound (a doctor's reach, a check's configuration or schema).
    `observed_ns`: when the failing run began, so that a pass begun earlier never resolves it.
    """
    if reason not in REASONS:
        raise ValueError(f"unknown flag reason {reason!r}")
    if gate is not None and gate not in CATALOG:
        raise ValueError(f"unknown gate {gate!r}")
    lay = state.layout(repo)
    directory = state.ensure_dir(lay, lay.flags)
    now = now or clock.now()
    seen_ns = observed_ns if observed_ns is not None else time.time_ns()
    message, command = clean(message), clean(command)  # a flag is read by people and agents: never a raw control
    message = message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS] + "\n… (cut)"
    worktree = str(repo.toplevel)
    key = sha256("\0".join((reason, message, worktree)).encode("utf-8", "surrogatepass")).hexdigest()
    scope = changes.keyed(gate, scope) if gate else None
    with _locked(directory):
        for path in _flag_files(directory, reason):
            record, _ = _load(path)
            if (record is not None and record.get("key") == key and record.get("reason") == reason
                    and record.get("gate") == gate and record.get("scope") == scope and record.get("about") == about):
                record.update(count=int(record.get("count", 1)) + 1, last_seen=clock.utc_text(now),
                              seen_ns=max(seen_ns, int(record.get("seen_ns") or 0)), head=repo.head)
                _write(repo, path, record)
                if gate is not None:
                    _set_marker(repo, lay, changes.marker(gate, worktree, scope))
                return str(record["id"])
        flag_id = f"{clock.name_text(now)}-{reason}-{os.urandom(4).hex()}"
        # created_ns orders the flags raised within one second
        record = {"version": 1, "id": flag_id, "reason": reason, "message": message,
                  "first_seen": clock.utc_text(now), "created_ns": time.time_ns(), "last_seen": clock.utc_text(now), "count": 1,
                  "worktree": worktree, "head": repo.head, "command": command, "exit_code": exit_code,
                  "key": key, "gate": gate, "scope": scope, "seen_ns": seen_ns}
        if about is not None:
            record["about"] = about
        _write(repo, os.path.join(directory, f"{flag_id}.json"), record)
        if gate is not None:  # after the flag: a marker may outlive its flags, never the other way round
            _set_marker(repo, lay, changes.marker(gate, worktree, scope))
    journal.append(repo, "flag-raised", {"id": flag_id, "reason": reason, "command": command}, now)
    return flag_id


def resolve(repo: Repo, gates: list[str], scope: "dict[str, Any]", *, command: str, observed_ns: int | None = None) -> list[str]:
    """Move this worktree's open flags of `gates` (which just passed in a check of `scope`) to flags/resolved/.

    Costs one lstat per gate when nothing is open for it. A flag raised by a run that began after
    `observed_ns` (when this check began) is left open. Returns the ids resolved.
    """
    lay = state.layout(repo)
    worktree = str(repo.toplevel)
    wanted = changes.open_markers(repo, [gate for gate in gates if gate in CATALOG], scope)
    if not wanted:
        return []
    now = clock.now()
    observed = observed_ns if observed_ns is not None else time.time_ns()
    resolved_dir = state.ensure_dir(lay, lay.flags_resolved)
    moved: dict[str, list[str]] = {}
    with _locked(lay.flags):
        left = set()
        reasons = {flag_reason(g) for g in wanted} | {"autofix-applied"}
        for path in _flag_files(lay.flags):
            if reason_of_id(os.path.basename(path)[:-5]) not in reasons:
                continue  # only the flags these gates can have raised are read
            record = _here(path, worktree)
            if (record is None or record.get("gate") not in wanted
                    or record.get("scope") != changes.keyed(str(record["gate"]), scope)):
                continue
            gate = str(record["gate"])
            if int(record.get("seen_ns") or 0) > observed:
                left.add(gate)  # raised by a run that began after this check: not this check's to resolve
                continue
            moved.setdefault(gate, []).append(_move_resolved(repo, path, record, resolved_dir, command, now))
        for gate, name in wanted.items():
            if gate not in left:
                _unlink_if_there(os.path.join(lay.flags_open, name))
        fsio.fsync_dir(lay.flags)
        fsio.fsync_dir(resolved_dir)
    for gate, ids in moved.items():
        journal.append(repo, "flags-resolved", {"ids": ids, "gate": gate, "command": command}, now)
    return [i for ids in moved.values() for i in ids]


def resolve_event(repo: Repo, reason: str, *, command: str, observed_ns: int, raised_by: str | None = None,
                  about: list[dict[str, str | None]] | None = None) -> list[str]:
    """Move this worktree's open `reason` event flags raised before `observed_ns` (when the run that found their
    cause gone began) to flags/resolved/, only those a command starting with `raised_by` raised when it is given,
    and only those whose `about` (raise_flag) is one of `about` when it is given (a flag without one matches
    none); returns the ids resolved. Lists the folder first: with no such flag it reads nothing."""
    if reason not in EVENT_REASONS:
        return []

    def settled(record: "dict[str, Any]") -> bool:
        return (record.get("reason") == reason and record.get("gate") is None
                and (raised_by is None or str(record.get("command", "")).startswith(raised_by))
                and (about is None or record.get("about") in about))

    return _resolve_settled(repo, reason, settled, {"reason": reason}, command, observed_ns)


def resolve_vanished(repo: Repo, *, command: str, observed_ns: int) -> list[str]:
    """Move this worktree's open gate flags whose every judged file is gone (a `gate check scratch.md` of a file
    since deleted) to flags/resolved/: no check can pass on a file that is not there, so nothing else would ever
    resolve them. A range's flags, and those of the configured hand-over, are not touched. Returns the ids."""
    return _resolve_settled(repo, None, _judged_gone, {"why": "the files they judged are gone"}, command, observed_ns)


def _judged_gone(record: "dict[str, Any]") -> bool:
    scope = record.get("scope")
    files = scope.get("files") if isinstance(scope, dict) else None
    return (bool(record.get("gate")) and isinstance(scope, dict) and not scope.get("range") and isinstance(files, list)
            and bool(files) and all(isinstance(f, str) and not os.path.lexists(f) for f in files))


def _resolve_settled(repo: Repo, reason: str | None, settled: "Callable[[dict[str, Any]], bool]", why: dict[str, str],
                     command: str, observed_ns: int) -> list[str]:
    """Move this worktree's open flags (of `reason`, when given) that `settled` accepts and a run begun before
    `observed_ns` raised to flags/resolved/, with their markers; one `flags-resolved` entry says `why`."""
    lay = state.layout(repo)
    if not os.path.isdir(lay.flags) or not _flag_files(lay.flags, reason):
        return []
    now = clock.now()
    worktree = str(repo.toplevel)
    moved: list[str] = []
    with _locked(lay.flags):
        for path in _flag_files(lay.flags, reason):
            record = _here(path, worktree)
            if record is None or int(record.get("seen_ns") or 0) > observed_ns or not settled(record):
                continue
            moved.append(_move_resolved(repo, path, record, state.ensure_dir(lay, lay.flags_resolved), command, now))
            if record.get("gate"):
                _unlink_if_there(os.path.join(lay.flags_open, changes.marker(str(record["gate"]), worktree, record["scope"])))
        if moved:
            fsio.fsync_dir(lay.flags)
            fsio.fsync_dir(lay.flags_resolved)
    if moved:
        journal.append(repo, "flags-resolved", {"ids": moved, **why, "command": command}, now)
    return moved


def _here(path: str, worktree: str) -> "dict[str, Any] | None":
    """The flag at `path` when it is a well-formed one of `worktree`, else None."""
    record, _ = _load(path)
    if record is None or record.get("worktree") != worktree or not ID_PATTERN.match(str(record.get("id"))):
        return None
    return record


def _move_resolved(repo: Repo, path: str, record: "dict[str, Any]", resolved_dir: str, command: str, now: datetime) -> str:
    """Move the open flag at `path` to `resolved_dir`, with the time, command and HEAD that resolved it; its id."""
    record["resolved"] = {"time": clock.utc_text(now), "command": command, "head": repo.head}
    _write(repo, os.path.join(resolved_dir, f"{clock.name_text(now)}-{record['id']}.json"), record)
    os.unlink(path)
    return str(record["id"])


def _unlink_if_there(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass  # removed meanwhile


def reason_of_id(flag_id: str) -> str:
    """The reason part of a flag id `<time>-<reason>-<random>` (one ID_PATTERN matches)."""
    return flag_id[17:-9] if len(flag_id) > 26 else ""


def _write(repo: Repo, path: str, record: "dict[str, Any]") -> None:
    state.write(repo, path, (jsonio.dumps(record, indent=2, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape"))


def _load(path: str) -> "tuple[dict[str, Any] | None, GateError | None]":
    """The flag at `path`, or None and why not: a planted file (`state-unsafe`) is never followed or blocked on."""
    try:
        data = fsio.read_state_file(path, MAX_FLAG_BYTES)
        if data is None:
            return None, None
        record = jsonio.load_json(fsio.decode_text(data, os.path.basename(path)))
    except GateError as exc:
        return None, exc
    except jsonio.DataError:
        return None, None
    return (record, None) if _shaped(record) else (None, None)


def _shaped(record: object) -> bool:
    """Whether `record` is an object whose counts and times are whole numbers, as the gate computes with them, and
    whose `about`, when it has one, is one of the flag schema's shapes (resolve_event settles by it): a forged
    `"seen_ns": "x"` or `"about": 5` planted in the folder is no flag (shown as unreadable), never an internal error
    nor a value passed on."""
    return (isinstance(record, dict) and all(type(record.get(key, 0)) is int for key in ("count", "seen_ns", "created_ns"))
            and ("about" not in record or _about_shaped(record["about"])))


def _about_shaped(about: object) -> bool:
    """One of schemas/flag.schema.json's `about`: the configuration, a project schema by its path, a doctor's reach."""
    if not isinstance(about, dict):
        return False
    if about.keys() == {"input"}:
        return bool(about["input"] == "configuration")
    if about.keys() == {"input", "path"}:
        return bool(about["input"] == "handoff.schema") and isinstance(about["path"], str)
    return about.keys() == {"remote"} and (about["remote"] is None or isinstance(about["remote"], str))


def _flag_files(folder: str, reason: str | None = None) -> list[str]:
    """The flag files of a folder (`*.json`, or `*-<reason>-*.json`); a writer's temp files (dot names) are not flags."""
    part = f"-{reason}-" if reason else ""
    return [path for path in fsio.listing(folder, ".json") if part in os.path.basename(path)[:-5]]


def _records(folder: str, status: str) -> "list[dict[str, Any]]":
    """The flags of a folder, each marked with `status`; one that cannot be read is shown as one, never dropped."""
    if not os.path.isdir(folder):
        return []
    out = []
    for path in _flag_files(folder):
        record, problem = _load(path)
        flag_id = os.path.basename(path)[:-5]
        if record is None or not isinstance(record.get("message"), str):
            if problem is not None and problem.reason == "state-unsafe":
                reason, why = "state-unsafe", f"{problem.message}: it was not written by the gate and was not read; "
            else:
                reason, why = "unreadable-flag", f"flag file {path} cannot be read as a flag: "
            record = {"id": flag_id, "reason": reason, "count": 1, "first_seen": "", "last_seen": "",
                      "message": f"{why}inspect it, then `gate flags --ack {flag_id}`"}
        out.append({**record, "status": status})
    return out


def _ordered(records: "list[dict[str, Any]]") -> "list[dict[str, Any]]":
    return sorted(records, key=lambda r: (str(r.get("first_seen", "")), int(r.get("created_ns") or 0), str(r.get("id", ""))))


def pending(repo: Repo) -> "list[dict[str, Any]]":
    """Every open flag (neither resolved nor acknowledged), oldest first."""
    return _ordered(_records(state.layout(repo).flags, "open"))


def every(repo: Repo) -> "list[dict[str, Any]]":
    """Open, resolved and acknowledged flags, oldest first, each with its `status`."""
    lay = state.layout(repo)
    return _ordered(_records(lay.flags, "open") + _records(lay.flags_resolved, "resolved")
                    + _records(lay.flags_acked, "acknowledged"))


def resolved_since(repo: Repo, since: datetime | None) -> "list[dict[str, Any]]":
    """Resolved flags resolved at or after `since` (every resolved flag when None).

    A resolved flag's file name begins with its resolution time: only the files resolved since
    `since` are read.
    """
    folder = state.layout(repo).flags_resolved
    if not os.path.isdir(folder):
        return []
    floor = clock.name_text(since) if since else ""
    out = []
    for path in _flag_files(folder):
        if os.path.basename(path)[:16] < floor:
            continue
        record, _ = _load(path)
        if record is not None:
            out.append(record)
    return _ordered(out)


def acknowledge(repo: Repo, ids: list[str] | None) -> list[str]:
    """Move the named flags (all when `ids` is None) to flags/acked/; returns the ids moved."""
    lay = state.layout(repo)
    if not os.path.isdir(lay.flags):
        if ids:
            raise GateError(f"no such flag: {ids[0]}", code=USAGE, reason="usage")
        return []
    for flag_id in ids or []:
        # lexists, not is_file: a planted FIFO or symlink shown as a flag can be moved aside like one
        if not ID_PATTERN.match(flag_id) or not os.path.lexists(os.path.join(lay.flags, f"{flag_id}.json")):
            raise GateError(f"no such flag: {flag_id[:80]!r} (see `gate flags`)", code=USAGE, reason="usage")
    acked_dir = state.ensure_dir(lay, lay.flags_acked)
    with _locked(lay.flags):
        names = [f"{i}.json" for i in ids] if ids else [os.path.basename(p) for p in _flag_files(lay.flags)]
        moved = [name.removesuffix(".json") for name in fsio.move_names_aside(lay.flags, names, acked_dir)]
        if ids is None and os.path.isdir(lay.flags_open):  # nothing is open any more: no marker stands for anything
            for marker in os.listdir(lay.flags_open):
                _unlink_if_there(os.path.join(lay.flags_open, marker))
    if moved:
        journal.append(repo, "flags-acknowledged", {"ids": moved})
    return moved
