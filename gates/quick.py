"""The entry point of the `gate` command, and the no-change path of `gate check` that runs before any heavy import.

A clean `gate check` (exit 0, nothing moved or flagged) leaves a record in the rebuildable cache:
a *recipe* listing everything the run depended on (the files it read, the folders it listed, the
paths that had to stay absent, and git's own files that decide where the repository is and what
HEAD is), two digests of what the recipe found (the second counts the index by what it stages),
git's answer for where the run looked, the time the record expires, and the exact output. The
next `gate check` with the same arguments, from the same folder and installation, finds the
record, evaluates the recipe and, when a digest is the same and the record has not expired,
prints the remembered output and exits 0: no git process, and nothing imported beyond `os`,
`sys`, the interpreter's SHA modules and three small modules of this package.

Anything else (other digests, a git lock file, a missing, foreign or unreadable record, a state
folder that is not safely ours) falls through to the full path, which asks git and runs the
gates. Finding the record is not repository discovery: git answered discovery for the run that
wrote the record (proven to describe the recorded state; see fastpath.py), `locate` must arrive at
the same answer, and the recipe holds the evidence that the answer still holds. Only the gate's own code
evaluates recipes; nothing in a record is run.
"""

from __future__ import annotations

import os
import stat
import sys
import time

from gates import __version__, fsio
from gates.errors import GateError

TYPE_CHECKING = False  # typing itself costs ~3 ms at startup; mypy reads this name as True
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from hashlib import sha256
    from typing import Any
else:  # the interpreter's own SHA-256 module: hashlib would load OpenSSL first (~2 ms)
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.10, 3.11
        except ImportError:
            from hashlib import sha256

MAGIC = b"handoff-gate quick-record 2\n"
MAX_RECORD_BYTES = 64 << 20
_CHUNK = 1 << 20
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
# What a record's context keeps of the environment: every GIT_* and GATE_* variable but those below, and a
# few more. Left out: per-commit identity, dates and editors, and what git and the pre-commit framework set
# for hooks (GIT_PREFIX, GIT_EXEC_PATH, a PATH with git's exec path or the hook's environment first) — none
# changes an answer, and keeping them would make every hook run miss. GIT_DIR and GIT_INDEX_FILE are left out
# too, because they are checked more precisely: where they lead must be where the record's run looked
# (see `locate`).
_ENV_IGNORED = frozenset({
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
    "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_REFLOG_ACTION", "GIT_PREFIX", "GIT_EXEC_PATH",
    "GIT_DIR", "GIT_INDEX_FILE",
})
_ENV_KEPT = ("HOME", "XDG_CONFIG_HOME", "PYTHONPATH", "TZ")
PACKAGE = os.path.dirname(os.path.abspath(__file__))


class Busy(Exception):
    """A git lock file stands where the gate looks: only the full path may judge it."""


# What one recipe step finds at a path. Each answer is bytes; b"-" means nothing is there.

def content_value(data: bytes) -> bytes:
    """What a `content` step finds for these bytes (fastpath compares .gate.yaml as it was read with it)."""
    return _content_tag(len(data), sha256(data))


def _content_tag(size: int, digest: Any) -> bytes:
    return b"c%d:%s" % (size, digest.hexdigest().encode())


def _content(path: str) -> bytes:
    """A file's size and hash (streamed: any size); a folder, FIFO or device by its type, unopened if blocking."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return b"-"
    except OSError as exc:
        return b"!%d" % (exc.errno or 0)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b"t%o" % stat.S_IFMT(info.st_mode)
        digest, size = sha256(), 0
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
            size += len(chunk)
        return _content_tag(size, digest)
    except OSError as exc:
        return b"!%d" % (exc.errno or 0)
    finally:
        os.close(fd)


def _info(path: str) -> os.stat_result | bytes:
    """The stat of `path`, or what stands for its absence (b"-") or failure (b"!errno")."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return b"-"
    except OSError as exc:
        return b"!%d" % (exc.errno or 0)


def _stat(path: str) -> bytes:
    """Type, inode, size and both times: what changes whenever git rewrites a file (always by rename)."""
    info = _info(path)
    if isinstance(info, bytes):
        return info
    return b"s%o %d %d %d %d" % (info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _kind(path: str) -> bytes:
    """What stands there and who owns it (git's safe.directory rule looks at owners)."""
    info = _info(path)
    return info if isinstance(info, bytes) else b"k%o %d" % (stat.S_IFMT(info.st_mode), info.st_uid)


def _names(path: str) -> list[str] | None:
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return None


def _listing(path: str) -> bytes:
    try:
        names = _names(path)
    except OSError as exc:
        return b"!%d" % (exc.errno or 0)
    return b"-" if names is None else b"\0".join(os.fsencode(name) for name in names)


def _lock_free(path: str) -> bytes:
    """A folder git keeps lock files in: any `*.lock` there sends the run down the full path."""
    try:
        names = _names(path)
    except OSError as exc:
        return b"!%d" % (exc.errno or 0)
    if names and any(name.endswith(".lock") for name in names):
        raise Busy(path)
    return b"-" if names is None else b"ok"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (index v4 path compression): each continuation adds one before shifting."""
    byte = data[pos]
    value = byte & 0x7F
    while byte & 0x80:
        pos += 1
        byte = data[pos]
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos + 1


def index_entries(data: bytes) -> list[tuple[bytes, bytes]] | None:
    """(mode + object id + flags, path) of every entry of a git index file; None for a format this reader does
    not take apart (a split index, another version, SHA-256 object ids are never given to it).

    gitformat-index(5): a 12-byte header ("DIRC", version, entry count), then entries of 40 bytes of stat
    data, a 20-byte SHA-1, 2 bytes of flags (2 more with the extended bit, version 3 and up) and the path,
    NUL-padded to a multiple of 8 bytes in versions 2 and 3, prefix-compressed and unpadded in version 4;
    then extensions (4-byte signature, 4-byte size) and a 20-byte checksum, verified here: a damaged index
    is never read as one that stages the same entries."""
    if data[:4] != b"DIRC" or len(data) < 32 or not _checksum_ok(data):
        return None
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        return None
    entries, pos, name, end = [], 12, b"", len(data) - 20
    try:
        for _ in range(count):
            fixed = data[pos + 24:pos + 28] + data[pos + 40:pos + 62]  # mode, object id, flags
            at = pos + 62
            if data[pos + 60] & 0x40:  # extended flags follow
                if version < 3:
                    return None
                fixed += data[at:at + 2]
                at += 2
            if version == 4:
                drop, at = _varint(data, at)
                if drop > len(name):
                    return None
                stop = data.index(b"\0", at)
                name = name[:len(name) - drop] + data[at:stop]
                pos = stop + 1
            else:
                stop = data.index(b"\0", at)
                name = data[at:stop]
                pos += (stop - pos + 8) & ~7
            if pos > end:
                return None
            entries.append((fixed, name))
        while pos + 8 <= end:
            if data[pos:pos + 4] == b"link":  # a split index keeps its entries in another file
                return None
            pos += 8 + int.from_bytes(data[pos + 4:pos + 8], "big")
    except (ValueError, IndexError):
        return None
    return entries if pos == end else None  # the extensions must end exactly at the checksum: not truncated


def _checksum_ok(data: bytes) -> bool:
    """The trailing SHA-1 over everything before it (all zeros when `index.skipHash` told git not to write one)."""
    if TYPE_CHECKING:
        from hashlib import sha1
    else:
        try:
            from _sha1 import sha1
        except ImportError:  # pragma: no cover - depends on the interpreter
            from hashlib import sha1
    tail = data[-20:]
    return tail == bytes(20) or sha1(data[:-20]).digest() == tail


def _staged(path: str) -> bytes:
    """What a git index stages (see index_entries), without the stat data and the extensions (cache tree,
    untracked cache) that git rewrites on every commit before its hook runs; else the index's stat."""
    data = read_capped(path, MAX_RECORD_BYTES)
    entries = index_entries(data) if data else None
    if entries is None:
        return _stat(path)
    hashed = sha256()
    for fixed, name in entries:
        hashed.update(b"%d\0%s%s\0" % (len(fixed), fixed, name))
    return b"i%d:%s" % (len(entries), hashed.hexdigest().encode())


def read_capped(path: str, cap: int) -> bytes | None:
    """A regular file's bytes through the one capped reader (fsio), or None: missing, unreadable, too big."""
    try:
        data = fsio.read_bytes_capped(path, cap, path)
    except GateError:
        return None
    return data if isinstance(data, bytes) else None


LOOKS: dict[str, Callable[[str], bytes]] = {
    "content": _content,
    "stat": _stat,
    "kind": _kind,
    "list": _listing,
    "lock-free": _lock_free,
    "index": _stat,  # the cheap look at the index; `digest(staged=True)` takes it apart instead
}


def context(cwd: str, argv: Iterable[str], environ: Mapping[str, str], encoding: str) -> bytes:
    """Everything outside the recipe that an answer depends on: who runs what, where, with which environment."""
    env = sorted(
        (name, value) for name, value in environ.items()
        if (name.startswith(("GIT_", "GATE_")) and name not in _ENV_IGNORED) or name in _ENV_KEPT
    )
    parts = [MAGIC.decode(), __version__, PACKAGE, sys.version, sys.prefix, os.path.realpath(sys.executable), encoding,
             os.uname().nodename, str(os.geteuid()), cwd, "\0argv", *argv, "\0env", *(f"{name}={value}" for name, value in env)]
    return b"\0".join(part.encode("utf-8", "surrogateescape") for part in parts)


def evaluate(recipe: Iterable[tuple[str, str]]) -> list[bytes]:
    """What every step of `recipe` finds now; raises Busy at a git lock file."""
    return [LOOKS[op](path) for op, path in recipe]


def digest(head: bytes, recipe: list[tuple[str, str]], staged: bool = False, found: list[bytes] | None = None) -> str:
    """The hash of what `recipe` finds now (or found, when `found` is given by `evaluate`).

    With `staged`, the index counts by what it stages rather than by its stat: `git commit` rewrites
    the index (same entries, new cache tree) just before its pre-commit hook runs, so a check made
    right after `git add` is still the answer for the commit that follows."""
    hashed = sha256(head)
    for (op, path), value in zip(recipe, evaluate(recipe) if found is None else found, strict=True):
        if staged and op == "index":
            value = _staged(path)
        hashed.update(b"\0%s\0%s\0%d\0" % (op.encode(), os.fsencode(path), len(value)))
        hashed.update(value)
    return hashed.hexdigest()


# Where a record lives: found the cheap way, trusted only through its recipe.

def slot(cwd: str, argv: Iterable[str]) -> str:
    """One record per folder, argument list and installation: each clean run overwrites it (the cache never grows)."""
    key = "\0".join([cwd, sys.prefix, *argv]).encode("utf-8", "surrogateescape")
    return "quick-" + sha256(key).hexdigest()[:32]


def start_dir(environ: Mapping[str, str]) -> str:
    """Where discovery starts: GATE_ROOT when it pins the repository, else the working directory."""
    return environ.get("GATE_ROOT") or os.getcwd()


def locate(environ: Mapping[str, str]) -> tuple[str, str, str, str] | None:
    """(top, git dir, common dir, index) by the simplest reading of `.git`, GIT_DIR and GIT_INDEX_FILE.

    Not discovery: a record is replayed only when this equals what git answered for the run that made it
    (which the record keeps) and the record's discovery evidence is unchanged; any doubt means no."""
    start = start_dir(environ)
    pinned = bool(environ.get("GATE_ROOT"))  # GATE_ROOT drops inherited GIT_* pointers (git.py)
    if environ.get("GIT_DIR") and not pinned:
        top = os.path.abspath(environ.get("GIT_WORK_TREE") or start)
        git_dir = os.path.join(start, environ["GIT_DIR"])
    else:
        top = start
        while not os.path.lexists(os.path.join(top, ".git")):
            parent = os.path.dirname(top)
            if parent == top:
                return None
            top = parent
        git_dir = os.path.join(top, ".git")
        if not os.path.isdir(git_dir):
            text = read_capped(git_dir, 4096) or b""
            if not text.startswith(b"gitdir: "):
                return None
            git_dir = os.path.join(top, os.fsdecode(text[8:].strip()))
    pointer = read_capped(os.path.join(git_dir, "commondir"), 4096)
    common = os.path.join(git_dir, os.fsdecode(pointer.strip())) if pointer else git_dir
    index_file = None if pinned else environ.get("GIT_INDEX_FILE")
    index = os.path.join(top, index_file) if index_file else os.path.join(git_dir, "index")
    return tuple(os.path.realpath(path) for path in (top, git_dir, common, index))  # type: ignore[return-value]


def _ours(path: str, folder: bool) -> bool:
    """Ours alone: owned by this user, not a symlink, writable by no one else (a group-writable folder only
    when the group is this user's own, as with a umask of 002). Else the record is not read at all: a record
    someone else could have written could say "passed" for anything."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    kind_ok = stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode)
    others = info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP and info.st_gid != os.getegid())
    return kind_ok and info.st_uid == os.geteuid() and not others


def record_path(common: str, argv: list[str]) -> str | None:
    gate_dir = os.path.join(common, "gate")
    cache_dir = os.path.join(gate_dir, "cache")
    record = os.path.join(cache_dir, slot(os.getcwd(), argv))
    return record if _ours(gate_dir, True) and _ours(cache_dir, True) and _ours(record, False) else None


class Record:
    """A clean run's record: until when it holds, git's answer for that run (top, git dir, common dir, index),
    the digests of its recipe (plain, and with the index by what it stages), the recipe and the output."""

    def __init__(self, until: float, where: tuple[str, str, str, str], found: tuple[str, str],
                 recipe: list[tuple[str, str]], output: bytes) -> None:
        self.until = until
        self.where = where
        self.found = found
        self.recipe = recipe
        self.output = output

    def encode(self) -> bytes:
        where = b"\0".join(os.fsencode(path) for path in self.where)
        steps = b"".join(b"%s\0%s\0" % (op.encode(), os.fsencode(path)) for op, path in self.recipe)
        return (MAGIC + b"until %r\ndigest %s %s\nwhere %d\nrecipe %d\n" % (
            self.until, self.found[0].encode(), self.found[1].encode(), len(where), len(steps))
            + where + steps + self.output)

    @classmethod
    def decode(cls, data: bytes) -> Record | None:
        """The record in `data`, or None for anything that is not one."""
        if not data.startswith(MAGIC):
            return None
        try:
            until, found, where_size, steps_size, body = data[len(MAGIC):].split(b"\n", 4)
            plain, staged = found.removeprefix(b"digest ").decode("ascii").split(" ")
            cut = int(where_size.removeprefix(b"where "))
            end = cut + int(steps_size.removeprefix(b"recipe "))
            where = [os.fsdecode(path) for path in body[:cut].split(b"\0")]
            fields = body[cut:end].split(b"\0")
            if len(body) < end or len(where) != 4 or len(fields) % 2 != 1 or fields[-1]:
                return None
            recipe = [(fields[i].decode("ascii"), os.fsdecode(fields[i + 1])) for i in range(0, len(fields) - 1, 2)]
            record = cls(float(until.removeprefix(b"until ")), (where[0], where[1], where[2], where[3]),
                         (plain, staged), recipe, body[end:])
        except ValueError:  # UnicodeDecodeError included
            return None
        if not 0 < record.until < 1e11:  # NaN and infinity included: a record always expires
            return None
        return record if all(op in LOOKS for op, _ in recipe) else None


def replay(argv: list[str], environ: Mapping[str, str]) -> bytes | None:
    """The output of the last clean run when nothing it depended on changed since, else None."""
    try:
        where = locate(environ)
        path = record_path(where[2], argv) if where else None
        data = fsio.read_state_file(path, MAX_RECORD_BYTES) if path else None
        record = Record.decode(data) if data else None
        if record is None or record.where != where or time.time() >= record.until:
            return None
        head = context(os.getcwd(), argv, environ, getattr(sys.stdout, "encoding", None) or "")
        found = evaluate(record.recipe)  # each step once; the index is taken apart only when its stat differs
        if (digest(head, record.recipe, found=found) != record.found[0]
                and digest(head, record.recipe, staged=True, found=found) != record.found[1]):
            return None
    except (Busy, GateError, OSError):  # a lock file, a planted file, I/O: the full path answers (and judges them)
        return None
    return record.output


def main(argv: list[str] | None = None) -> int:
    """The `gate` command: the no-change path for `gate check`, else the full command line (gates/cli.py)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    failure = None
    if argv[:1] == ["check"] and os.name == "posix" and hasattr(sys.stdout, "buffer"):
        try:
            output = replay(argv, os.environ)
            if output is not None:
                sys.stdout.buffer.write(output)
                sys.stdout.flush()
                return 0
        except BrokenPipeError:
            silence_stdout()
            return 1  # as the full path does (cli.py)
        except KeyboardInterrupt:
            sys.stderr.write("gate: interrupted\n")
            return 130
        except Exception as exc:  # noqa: BLE001 - a bug here: the full path answers, and the bug is flagged there
            failure = exc
    from gates.cli import main as full

    return full(argv, failure)


def silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so that the interpreter's final flush cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
