"""The entry point of the `gate` command, and the no-change path of `gate check` that runs before any heavy import.

A clean `gate check` (exit 0, nothing moved or flagged) leaves a record in the rebuildable cache:
a *recipe* listing everything the run depended on (the files it read, the folders it listed, the
paths that had to stay absent, and git's own files that decide where the repository is and what
HEAD is), a digest of what the recipe found, the time the record expires, and the exact output.
The next `gate check` with the same arguments, from the same folder and environment, finds the
record, evaluates the recipe and, when the digest is the same and the record has not expired,
prints the remembered output and exits 0: no git process and nothing imported beyond `os`, `sys`
and this package's two small modules.

Anything else (another digest, a git lock file, a missing, foreign or unreadable record, a state
folder that is not safely ours) falls through to the full path, which asks git and runs the
gates. Finding the record is not repository discovery: git answered discovery when the record was
written (twice, before and after the run; see fastpath.py), and the recipe holds the evidence that
its answer still holds. Only the gate's own code evaluates recipes; nothing in a record is run.
"""

from __future__ import annotations

import os
import stat
import sys
import time

from gates import __version__, fsio

TYPE_CHECKING = False  # typing itself costs ~3 ms at startup; mypy reads this name as True
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from hashlib import sha256
else:  # the interpreter's own SHA-256 module: hashlib would load OpenSSL first (~2 ms)
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.10, 3.11
        except ImportError:
            from hashlib import sha256

MAGIC = b"handoff-gate quick-record 1\n"
MAX_RECORD_BYTES = 64 << 20
_CHUNK = 1 << 20
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
# Per-commit identity, dates and editors that git and pre-commit set for hooks: none of them changes
# an answer of the gate, and keeping them would make every commit miss. Every other GIT_* and
# GATE_* variable, and the few below, are part of a record's context.
_ENV_IGNORED = frozenset({
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
    "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_REFLOG_ACTION",
})
_ENV_KEPT = ("PATH", "HOME", "XDG_CONFIG_HOME", "PYTHONPATH", "TZ")


class Busy(Exception):
    """A git lock file stands where the gate looks: only the full path may judge it."""


# What one recipe step finds at a path. Each answer is bytes; b"-" means nothing is there.

def content_value(data: bytes) -> bytes:
    return b"c%d:%s" % (len(data), sha256(data).hexdigest().encode())


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
        return b"c%d:%s" % (size, digest.hexdigest().encode())
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


LOOKS: dict[str, Callable[[str], bytes]] = {
    "content": _content,
    "stat": _stat,
    "kind": _kind,
    "list": _listing,
    "lock-free": _lock_free,
}


def context(cwd: str, argv: Iterable[str], environ: Mapping[str, str], encoding: str) -> bytes:
    """Everything outside the recipe that an answer depends on: who runs what, where, with which environment."""
    env = sorted(
        (name, value) for name, value in environ.items()
        if (name.startswith(("GIT_", "GATE_")) and name not in _ENV_IGNORED) or name in _ENV_KEPT
    )
    parts = [MAGIC.decode(), __version__, sys.version, sys.prefix, os.path.realpath(sys.executable), encoding,
             os.uname().nodename, str(os.geteuid()), cwd, "\0argv", *argv, "\0env", *(f"{name}={value}" for name, value in env)]
    return b"\0".join(part.encode("utf-8", "surrogateescape") for part in parts)


def digest(head: bytes, recipe: Iterable[tuple[str, str]]) -> str:
    """The hash of what every step of `recipe` finds now; raises Busy at a git lock file."""
    hashed = sha256(head)
    for op, path in recipe:
        found = LOOKS[op](path)
        hashed.update(b"\0%s\0%s\0%d\0" % (op.encode(), os.fsencode(path), len(found)))
        hashed.update(found)
    return hashed.hexdigest()


# Where a record lives: found the cheap way, trusted only through its recipe.

def slot(cwd: str, argv: Iterable[str]) -> str:
    """One record per folder and argument list: each clean run overwrites it, so the cache never grows."""
    key = "\0".join([cwd, *argv]).encode("utf-8", "surrogateescape")
    return "quick-" + sha256(key).hexdigest()[:32]


def start_dir(environ: Mapping[str, str]) -> str:
    """Where discovery starts: GATE_ROOT when it pins the repository, else the working directory."""
    return environ.get("GATE_ROOT") or os.getcwd()


def _small(path: str) -> bytes | None:
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        return os.read(fd, 4096) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)


def _common_dir(start: str, environ: Mapping[str, str]) -> str | None:
    git_dir = None if environ.get("GATE_ROOT") else environ.get("GIT_DIR")
    if git_dir:
        git_dir = os.path.join(start, git_dir)
    else:
        folder = start
        while git_dir is None:
            dotgit = os.path.join(folder, ".git")
            if os.path.isdir(dotgit):
                git_dir = dotgit
            elif os.path.isfile(dotgit):
                text = _small(dotgit) or b""
                if not text.startswith(b"gitdir: "):
                    return None
                git_dir = os.path.join(folder, os.fsdecode(text[8:].strip()))
            else:
                parent = os.path.dirname(folder)
                if parent == folder:
                    return None
                folder = parent
    pointer = _small(os.path.join(git_dir, "commondir"))
    return os.path.join(git_dir, os.fsdecode(pointer.strip())) if pointer else git_dir


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


def record_path(environ: Mapping[str, str], argv: list[str]) -> str | None:
    common = _common_dir(start_dir(environ), environ)
    if common is None:
        return None
    gate_dir = os.path.join(common, "gate")
    cache_dir = os.path.join(gate_dir, "cache")
    record = os.path.join(cache_dir, slot(os.getcwd(), argv))
    return record if _ours(gate_dir, True) and _ours(cache_dir, True) and _ours(record, False) else None


def encode(recipe: list[tuple[str, str]], found: str, until: float, output: bytes) -> bytes:
    steps = b"".join(b"%s\0%s\0" % (op.encode(), os.fsencode(path)) for op, path in recipe)
    return MAGIC + b"until %r\ndigest %s\nrecipe %d\n" % (until, found.encode(), len(steps)) + steps + output


def decode(data: bytes) -> tuple[float, str, list[tuple[str, str]], bytes] | None:
    """(until, digest, recipe, output) of a record, or None for anything that is not one."""
    if not data.startswith(MAGIC):
        return None
    try:
        until_line, found_line, size_line, body = data[len(MAGIC):].split(b"\n", 3)
        until = float(until_line.removeprefix(b"until "))
        found = found_line.removeprefix(b"digest ").decode("ascii")
        size = int(size_line.removeprefix(b"recipe "))
        fields = body[:size].split(b"\0")
        if len(body) < size or len(fields) % 2 != 1 or fields[-1]:
            return None
        recipe = [(fields[i].decode("ascii"), os.fsdecode(fields[i + 1])) for i in range(0, len(fields) - 1, 2)]
    except ValueError:  # UnicodeDecodeError included
        return None
    if any(op not in LOOKS for op, _ in recipe):
        return None
    return until, found, recipe, body[size:]


def replay(argv: list[str], environ: Mapping[str, str]) -> bytes | None:
    """The output of the last clean run when nothing it depended on changed since, else None."""
    try:
        path = record_path(environ, argv)
        data = fsio.read_state_file(path, MAX_RECORD_BYTES) if path else None
        parsed = decode(data) if data else None
        if parsed is None or time.time() >= parsed[0]:
            return None
        encoding = getattr(sys.stdout, "encoding", None) or ""
        if digest(context(os.getcwd(), argv, environ, encoding), parsed[2]) != parsed[1]:
            return None
    except Exception:  # noqa: BLE001 - Busy, a planted file, I/O, or a bug here: this path only saves time,
        return None  # and the full path answers whatever went wrong (and flags it when it is real)
    return parsed[3]


def main(argv: list[str] | None = None) -> int:
    """The `gate` command: the no-change path for `gate check`, else the full command line (gates/cli.py)."""
    argv = sys.argv[1:] if argv is None else list(argv)
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
    from gates.cli import main as full

    return full(argv)


def silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so that the interpreter's final flush cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
