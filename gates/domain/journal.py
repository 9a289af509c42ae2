"""The audit journal: one JSON line per state-changing action, each carrying the hash of the one before.

`<git-common-dir>/gate/journal.jsonl` is appended under an flock, one whole line per write, then
fsynced; `journal.head` (written atomically) remembers the last sequence number and hash, so
that entries cut from the end are detected as well as edited, removed or reordered ones.
"""

import os

from gates.infra import clock, fsio, jsonio, state
from gates.infra.clock import datetime
from gates.infra.digest import sha256
from gates.infra.errors import CANNOT_RUN, GateError
from gates.infra.git import Repo
from gates.infra.plain import NamedTuple
from gates.infra.text import clean_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GENESIS = "0" * 64
TAIL_BYTES = 1 << 16


class NotJournalled(GateError):
    """The action was done (every caller appends after it); only its journal entry, or the head naming it, was not."""

    def __init__(self, action: str, cause: GateError, appended: bool) -> None:
        what = "its journal entry was appended but journal.head could not be updated" if appended \
            else "it is not recorded in the journal"
        super().__init__(f"{action}: done, but {what}: {cause.message}", code=CANNOT_RUN, reason=cause.reason)
        self.cause = cause


def _paths(repo: Repo) -> tuple[state.Layout, str, str]:
    lay = state.layout(repo)
    return lay, os.path.join(lay.root, "journal.jsonl"), os.path.join(lay.root, "journal.head")


def entry_hash(entry: "dict[str, Any]") -> str:
    body = {key: value for key, value in entry.items() if key != "hash"}
    canonical = jsonio.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def append(repo: Repo, action: str, details: "dict[str, Any]", now: datetime | None = None) -> "dict[str, Any]":
    """Record one action. Safe with concurrent writers: the read of the last entry and the append are one step."""
    lay, path, head = _paths(repo)
    when = clock.utc_text(now or clock.now())
    appended = False
    try:
        state.ensure_dir(lay, lay.root)
        with fsio.locked(lay.root):
            entry = _append_locked(repo, path, action, details, when)
            appended = True
            state.write(repo, head, (jsonio.dumps({"seq": entry["seq"], "hash": entry["hash"]}) + "\n").encode())
    except GateError as exc:
        raise NotJournalled(action, exc, appended) from None
    return entry


def _append_locked(repo: Repo, path: str, action: str, details: "dict[str, Any]", when: str) -> "dict[str, Any]":
    """One entry chained to the last, appended in one write; the caller holds the state folder's lock."""
    last, torn = _last_entry(repo)
    entry: dict[str, Any] = {
        "seq": (last["seq"] + 1) if last else 1,
        "time": when,
        "action": action,
        "worktree": str(repo.toplevel),
        "details": clean_tree(details),  # `gate journal` and the brief quote it: no raw control, bidi or tag character
        "prev": last["hash"] if last else GENESIS,
    }
    entry["hash"] = entry_hash(entry)
    line = ("\n" if torn else "") + jsonio.dumps(entry, ensure_ascii=False) + "\n"
    modes = state.shared_modes(repo) if not os.path.lexists(path) else None
    fsio.append_line(path, line.encode("utf-8", "surrogateescape"), reason="journal-broken", mode=modes[0] if modes else None)
    return entry


def _last_entry(repo: Repo) -> "tuple[dict[str, Any] | None, bool]":
    """The last whole entry, and whether the file ends in a torn (unterminated) line."""
    tail, _ = read(repo, TAIL_BYTES)
    torn = bool(tail) and not tail.endswith(b"\n")
    for raw in reversed(tail.split(b"\n")):
        try:
            entry = parse_entry(raw.decode("utf-8"))
        except UnicodeDecodeError:
            continue
        if entry is not None and isinstance(entry.get("seq"), int) and isinstance(entry.get("hash"), str):
            return entry, torn
    return None, torn


def parse_entry(line: str) -> "dict[str, Any] | None":
    """One line of the journal as an entry, or None when it is not a JSON object (an empty or torn line, damage)."""
    if not line.strip():
        return None  # the end of the last line: not parsed, as a failed parse loads `json`
    try:
        parsed = jsonio.load_json(line)
    except jsonio.DataError:
        return None
    return parsed if isinstance(parsed, dict) else None


def read(repo: Repo, tail: int | None = None) -> tuple[bytes, int]:
    """The journal's bytes (only its last `tail` ones when given) and its size; nothing when there is no journal.

    A FIFO, device, symlink or hard link planted in its place is refused, never waited on."""
    _, path, _ = _paths(repo)
    fd = -1
    try:
        fd = fsio.open_state_fd(path, os.O_RDONLY)
        size = os.lseek(fd, 0, os.SEEK_END)
        os.lseek(fd, 0 if tail is None else max(0, size - tail), os.SEEK_SET)
        return fsio.read_fd(fd), size
    except FileNotFoundError:
        return b"", 0
    except OSError as exc:
        raise GateError(f"cannot read {path}: {exc.strerror}", reason="journal-broken") from None
    except GateError as exc:
        raise GateError(f"{exc.message} — `gate journal --repair` moves it aside and starts a new chain",
                        reason=exc.reason) from None
    finally:
        if fd >= 0:
            os.close(fd)


class Verdict(NamedTuple):
    ok: bool
    entries: int
    problem: str = ""
    line: int = 0
    unfinished: list[int] | None = None  # lines of appends a crash cut short (never acknowledged, so not damage)


def read_all(repo: Repo) -> "tuple[list[tuple[int, dict[str, Any] | None, str]], dict[str, Any] | None]":
    """Every line as (line number, entry or None, raw text), and the head record."""
    _, _, head = _paths(repo)
    rows: list[tuple[int, dict[str, Any] | None, str]] = []
    data, _ = read(repo)
    raws = data.decode("utf-8", "replace").split("\n")
    if raws and raws[-1] == "":
        raws.pop()
    for number, raw in enumerate(raws, start=1):
        rows.append((number, parse_entry(raw), raw))
    head_data = fsio.read_state_file(head, 4096)
    head_record = None
    if head_data is not None:
        try:
            loaded = jsonio.load_json(head_data.decode("utf-8", "replace"))
            head_record = loaded if isinstance(loaded, dict) else None
        except jsonio.DataError:
            head_record = {"seq": -1, "hash": "unreadable"}
    return rows, head_record


def _unfinished(rows: "list[tuple[int, dict[str, Any] | None, str]]", at: int, seq: int, prev: str,
                head: "dict[str, Any] | None") -> bool:
    """Whether the non-entry line `rows[at]` is an append a crash cut short (its writer killed between pages, before
    `journal.head` named it: docs/flags-and-journal.md), not damage: it begins as the next entry would and is followed
    by nothing, the head still naming the entry before it, or by the retried entry, chained to the same one."""
    if not rows[at][2].startswith('{"seq": %d, ' % (seq + 1)):
        return False
    if at + 1 == len(rows):
        return head is None or head.get("seq") == seq
    following = rows[at + 1][1]
    return following is not None and following.get("seq") == seq + 1 and following.get("prev") == prev


def verify(repo: Repo) -> Verdict:
    try:
        rows, head = read_all(repo)
    except GateError as exc:  # a FIFO, a device or a symlink planted as the journal or its head
        return Verdict(False, 0, exc.message.split(" — ")[0], 1)
    prev, seq, unfinished = GENESIS, 0, []
    for at, (number, entry, _) in enumerate(rows):
        if entry is None:
            if _unfinished(rows, at, seq, prev, head):
                unfinished.append(number)
                continue
            return Verdict(False, seq, f"line {number} is not a journal entry (edited, or torn by a crash)", number)
        if entry.get("hash") != entry_hash(entry):
            return Verdict(False, seq, f"entry {entry.get('seq')} at line {number} was edited (its hash does not match)", number)
        if entry.get("prev") != prev or entry.get("seq") != seq + 1:
            return Verdict(False, seq, f"entry {entry.get('seq')} at line {number} does not follow entry {seq} "
                           "(one was removed, or they were reordered)", number)
        prev, seq = str(entry["hash"]), int(entry["seq"])
    if head is not None and (not isinstance(head.get("seq"), int) or head["seq"] > seq):
        return Verdict(False, seq, f"the journal ends at entry {seq} but journal.head names entry {head.get('seq')}: "
                       "entries were cut from its end", len(rows) + 1)
    if head is not None and head["seq"] == seq and head.get("hash") != prev:
        return Verdict(False, seq, f"the last entry {seq} is not the one journal.head recorded", len(rows))
    return Verdict(True, seq, unfinished=unfinished)


def repair(repo: Repo, now: datetime | None = None) -> "tuple[str, dict[str, Any]] | None":
    """A broken journal moves, with its head, into lost+found; a new chain starts by naming it. None: intact."""
    verdict = verify(repo)
    if verdict.ok:
        return None
    lay, path, head = _paths(repo)
    when = now or clock.now()
    with fsio.locked(lay.root):
        evidence = state.new_evidence_dir(lay, when)
        # whatever is there (a FIFO, a symlink) is moved, never opened
        fsio.move_names_aside(lay.root, [os.path.basename(path), os.path.basename(head)], evidence)
    entry = append(repo, "journal-restarted", {"problem": verdict.problem, "whole_entries": verdict.entries,
                                               "evidence": str(evidence)}, when)
    return evidence, entry
