"""The one door to the disk: the atomic writer and the capped reader of input files.

Writes: a private temp file in the target's directory, written in full, fsynced, renamed
over the target (or linked, when the target must not exist yet), the directory fsynced, and
the result read back and compared. Readers skip the temp files; a crashed writer's leftovers
are never deleted blindly (`gate doctor` reports them, `gate doctor --fix` moves them to lost+found).

A temp file's name is `.tmp-<target name, first 40 characters>-<12 lowercase hex digits>`:
`temp_name` makes it and `is_temp_name` recognises exactly that shape, nothing else.
"""

import errno
import os
import stat
import time

from gates.infra.errors import CANNOT_RUN, GateError

TYPE_CHECKING = False  # typing itself costs ~3 ms at startup; mypy reads this name as True
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Callable

    StrPath = str | os.PathLike[str]  # what the functions below take: a str on the commit path, a Path elsewhere

TEMP_PREFIX = ".tmp-"
TEMP_NAME_CHARS = 40  # how much of the target's name a temp name keeps
TEMP_RANDOM_BYTES = 6  # written as 12 lowercase hex digits after the last '-'
_HEX = frozenset("0123456789abcdef")
BOM = b"\xef\xbb\xbf"


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_ALWAYS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


def safe_flags(flags: int, *, nonblock: bool = True) -> int:
    """`flags` for `os.open` with what every open of the gate's carries; the one place they are put together.

    O_NOFOLLOW: a symlink at the last component is refused (ELOOP), not followed (`open_file` refuses
    one on the way too). O_CLOEXEC: no program the gate runs inherits the descriptor. O_NOCTTY: a
    terminal planted there never becomes ours. O_NONBLOCK (unless `nonblock=False`): the open of a
    FIFO planted there returns at once (ENXIO for a writer with no reader) instead of waiting; it
    changes nothing for a regular file or a folder.
    """
    return flags | _ALWAYS | (os.O_NONBLOCK if nonblock else 0)


_DIR_FLAGS = safe_flags(os.O_RDONLY | getattr(os, "O_DIRECTORY", 0), nonblock=False)


def open_dir(directory: "StrPath", *, create: bool = False, mode: int = 0o777) -> int:
    """A descriptor of the absolute, resolved `directory`, opened one component at a time following no symlink.

    A symlink anywhere on the way (one planted, or swapped in after the path was resolved) is refused
    with ELOOP/ENOTDIR instead of being followed. With `create`, missing folders are made on the way.
    """
    parts = filter(None, os.path.abspath(directory).split(os.sep))
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in parts:
            try:
                step = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                except FileExistsError:
                    pass  # made meanwhile by another process: opened below without following a link
                step = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(path: "StrPath", flags: int, mode: int = 0o666) -> int:
    """os.open of `path` without following a symlink in any component (see open_dir)."""
    folder, name = os.path.split(os.path.abspath(path))
    dir_fd = open_dir(folder)
    try:
        return os.open(name, safe_flags(flags, nonblock=False), mode, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def fsync_dir(directory: "StrPath") -> None:
    fd = open_dir(directory)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def listing(folder: "StrPath", suffix: str) -> list[str]:
    """The paths of a folder's entries whose names end in `suffix`, sorted; a writer's temp files and other
    dot names left out, and none at all when the folder is missing."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(os.path.join(folder, name) for name in names if name.endswith(suffix) and not name.startswith("."))


def move_aside(
    source: "StrPath", target: "StrPath", *, pinned: os.stat_result | None = None, sync: bool = True
) -> OSError | bool:
    """Rename `source` to `target` (a name in a folder of evidence), then fsync both folders: the move is durable.

    `os.rename` moves a symlink or a FIFO itself, never what it names. Returns the rename's OSError when
    nothing moved (ENOENT: someone moved it first; EXDEV: another filesystem): the caller names it. With
    `pinned` (the fstat of the file judged, held open), False when a different file arrived: nothing is
    fsynced, and the caller puts it back or keeps it. True when moved. Errors after the rename are raised.
    `sync=False` leaves the fsyncs to the caller (`move_names_aside` moves many, then fsyncs once).
    """
    try:
        os.rename(source, target)
    except OSError as exc:
        return exc
    if pinned is not None and not os.path.samestat(os.lstat(target), pinned):
        return False
    if sync:
        fsync_dir(os.path.dirname(os.path.abspath(source)))
        fsync_dir(os.path.dirname(os.path.abspath(target)))
    return True


def move_names_aside(source_dir: "StrPath", names: list[str], target_dir: "StrPath") -> list[str]:
    """Move each of `names` from `source_dir` into `target_dir` (same name), then fsync both folders once.

    A name already gone (moved by someone else meanwhile) is skipped; any other error is raised.
    Returns the names moved.
    """
    moved = []
    for name in names:
        failed = move_aside(os.path.join(source_dir, name), os.path.join(target_dir, name), sync=False)
        if isinstance(failed, FileNotFoundError):
            continue
        if isinstance(failed, OSError):
            raise failed
        moved.append(name)
    fsync_dir(source_dir)
    fsync_dir(target_dir)
    return moved


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _staged(dir_fd: int, name: str, data: bytes, executable: bool, mode: int | None) -> str:
    """A synced temp file beside `name` in `dir_fd` holding `data`, with the mode `name` should get (see
    _target_mode): its name, for both writers to rename or link. On an error nothing of it is left, and the
    OSError carries the step it failed at (stat, create temp file, chmod, write, fsync) as `step`."""
    step, tmp = "stat", None
    try:
        mode = _target_mode(name, dir_fd, executable, mode)
        step = "create temp file"
        fd, tmp = _mkstemp(dir_fd, name)
        try:
            step = "chmod"
            os.fchmod(fd, mode)
            step = "write"
            _write_all(fd, data)
            step = "fsync"
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        _discard(tmp, dir_fd)
        exc.step = step  # type: ignore[attr-defined]  # the writers name it in their error
        raise
    return tmp


def _discard(tmp: str | None, dir_fd: int) -> None:
    """Remove our own temp file `tmp` (never the target), if there is one; an error here changes nothing."""
    if tmp is not None:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass


def write_atomic(path: "StrPath", data: bytes, *, exclusive: bool = False, reason: str = "io-error",
                 executable: bool = False, mode: int | None = None, parents: bool = False) -> bool:
    """Put `data` at `path` so that readers see the old or the new content, never a mix.

    `path` must be resolved (see paths.py): no component is followed if it is a symlink, and a symlink
    or anything but a regular file at `path` itself is refused, never replaced or written through.
    With `exclusive`, the target must not exist: returns False (and writes nothing) when it does.
    New files get the mode the umask allows (with execute bits when `executable`); an existing file
    keeps its read and write bits, and its execute bits only when `executable`. With `parents`,
    missing folders are created (without following a link).
    """
    folder, name = os.path.split(os.path.abspath(path))
    step, dir_fd = "open folder", -1
    tmp: str | None = None
    try:
        dir_fd = open_dir(folder, create=parents)
        step = "stage"
        tmp = _staged(dir_fd, name, data, executable, mode)
        step = "link" if exclusive else "rename"
        if exclusive:
            try:
                os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp, dir_fd=dir_fd)
        else:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        tmp = None
        step = "fsync directory"
        os.fsync(dir_fd)
        step = "read back"
        _verify(dir_fd, name, data)
    except OSError as exc:
        raise _io_error(getattr(exc, "step", step), path, exc, reason) from None
    finally:
        _discard(tmp, dir_fd)
        if dir_fd >= 0:
            os.close(dir_fd)
    return True


class Changed(GateError):
    """A compare-and-swap rewrite found the file changed since it was read: nothing was written."""


# Test seam: called with (stage, path) at "read" (the file pinned, before the first comparison), "swap" (the new
# content in its temp file, before the last comparison) and "rename" (after it, right before the rename). Empty in
# production.
RACE_HOOKS: "list[Callable[[str, str], None]]" = []


SETTLE = 0.05  # seconds between rewrite's rename and its last look at the old file: see rewrite


def rewrite(path: "StrPath", expected: bytes | None, data: bytes, *, shown: str, who: str, code: int = CANNOT_RUN,
            reason: str = "io-error", parents: bool = False, executable: bool = False) -> None:
    """Replace the file at `path`, which held `expected` when it was read (None: it did not exist), with `data`:
    a compare-and-swap. Every read-modify-write of a repository file goes through here.

    The file is opened again under the same confined opens as write_atomic (no symlink followed on the way) and
    pinned; its content is compared with `expected` before the temp file is made and again right before the
    rename (the path must still name the pinned file). SETTLE seconds after the rename the pinned old file is read
    once more: a write that reached it after the comparison (in the instant before the rename, or from a writer that
    had opened it before the rename and wrote a moment later) is put back (the old file's whole content returns to
    `path` when `path` still holds `data`). A writer that keeps the old file open longer and writes to it later
    is not seen: no portable call tells who holds a file open. Any difference raises Changed ("… changed while
    WHO was rewriting it; nothing was written — run it again"), with `code` and `reason`; an I/O error is a
    GateError naming the step, exit 3, `io-error`, as write_atomic's. `executable`: the new file has execute
    bits from its first instant (a hook git would otherwise skip).
    """
    changed = Changed(f"{shown} changed while {who} was rewriting it; nothing was written — run it again",
                      code=code, reason=reason)
    if expected is None:
        if not write_atomic(path, data, exclusive=True, parents=parents, executable=executable):
            raise changed
        return
    folder, name = os.path.split(os.path.abspath(path))
    step, tmp, dir_fd, pin = "open folder", None, -1, -1
    try:
        dir_fd = open_dir(folder)
        step = "open"
        try:
            pin = os.open(name, safe_flags(os.O_RDONLY), dir_fd=dir_fd)
        except FileNotFoundError:
            raise changed from None
        step = "read"
        if not stat.S_ISREG(os.fstat(pin).st_mode):
            raise OSError(errno.EINVAL, "not a regular file: refused")
        _race("read", path)
        if _read_up_to(pin, len(expected) + 1) != expected:
            raise changed
        step = "stage"
        tmp = _staged(dir_fd, name, data, executable, None)
        _race("swap", path)
        step = "compare"
        if not _names(dir_fd, name, pin) or _read_up_to(pin, len(expected) + 1) != expected:
            raise changed
        _race("rename", path)
        step = "rename"
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        tmp = None
        step = "fsync directory"
        os.fsync(dir_fd)
        _race("renamed", path)
        time.sleep(SETTLE)  # a writer that opened the old file before the rename may write to it a moment later
        late = _read_up_to(pin, os.fstat(pin).st_size + 1)  # the old file: did a write reach it after the comparison?
        if late != expected:
            step = "put back"
            _put_back(dir_fd, name, data, late, shown, changed)
            raise changed
        step = "read back"
        _verify(dir_fd, name, data, prefix=True)  # a line appended since the rename is someone's, and kept
    except OSError as exc:
        raise _io_error(getattr(exc, "step", step), path, exc, "io-error") from None
    finally:
        _discard(tmp, dir_fd)
        for fd_ in (pin, dir_fd):
            if fd_ >= 0:
                os.close(fd_)


def _race(stage: str, path: "StrPath") -> None:
    for hook in RACE_HOOKS:
        hook(stage, os.fspath(path))


def _names(dir_fd: int, name: str, pin: int) -> bool:
    """Whether `name` in `dir_fd` is still the pinned file."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return os.path.samestat(info, os.fstat(pin))


def _put_back(dir_fd: int, name: str, ours: bytes, late: bytes, shown: str, changed: Changed) -> None:
    """A write reached the old file after the last comparison: its whole content goes back in place of ours, when
    the path still holds exactly ours; else it is kept beside it, as a temp file `gate doctor` reports."""
    fd, tmp = _mkstemp(dir_fd, name)
    try:
        os.fchmod(fd, stat.S_IMODE(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode))
        _write_all(fd, late)
        os.fsync(fd)
    finally:
        os.close(fd)
    current = os.open(name, safe_flags(os.O_RDONLY), dir_fd=dir_fd)
    try:
        still_ours = _read_up_to(current, len(ours) + 1) == ours and _names(dir_fd, name, current)
        if still_ours:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            os.fsync(dir_fd)
            return
    finally:
        os.close(current)
    os.fsync(dir_fd)
    raise Changed(f"{changed.message.split(';')[0]}, twice: what was written to it meanwhile is kept in "
                  f"{os.path.join(os.path.dirname(shown), tmp)} — fold it back in by hand, then run it again",
                  code=changed.code, reason=changed.reason)


def _target_mode(name: str, dir_fd: int, executable: bool, mode: int | None) -> int:
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return mode if mode is not None else (0o777 if executable else 0o666) & ~umask()
    if stat.S_ISLNK(info.st_mode):
        raise OSError(errno.ELOOP, "a symlink is there: refused (it is never written through or replaced)")
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, "not a regular file: refused")
    kept = stat.S_IMODE(info.st_mode)
    return kept if executable else kept & ~0o7111  # a data file never keeps (or gains) execute or set-id bits


def temp_name(name: str) -> str:
    """The name of a fresh temp file for a target called `name` (in the target's own directory)."""
    return f"{TEMP_PREFIX}{name[:TEMP_NAME_CHARS]}-{os.urandom(TEMP_RANDOM_BYTES).hex()}"


def is_temp_name(filename: str) -> bool:
    """Whether `filename` has exactly the shape `temp_name` gives: the one test every reader and detector uses."""
    if not filename.startswith(TEMP_PREFIX):
        return False
    stem, dash, tail = filename[len(TEMP_PREFIX):].rpartition("-")
    return (bool(dash) and 0 < len(stem) <= TEMP_NAME_CHARS and "/" not in stem
            and len(tail) == 2 * TEMP_RANDOM_BYTES and set(tail) <= _HEX)


def _mkstemp(dir_fd: int, name: str) -> tuple[int, str]:
    flags = safe_flags(os.O_WRONLY | os.O_CREAT | os.O_EXCL, nonblock=False)
    for _ in range(100):
        candidate = temp_name(name)
        try:
            return os.open(candidate, flags, 0o600, dir_fd=dir_fd), candidate
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name")


def _verify(dir_fd: int, name: str, data: bytes, *, prefix: bool = False) -> None:
    """The file reads back as `data` (with `prefix`: begins with it, as when someone appended to it since)."""
    fd = os.open(name, safe_flags(os.O_RDONLY), dir_fd=dir_fd)
    try:
        back = _read_up_to(fd, len(data) + (0 if prefix else 1))
    finally:
        os.close(fd)
    if back != data:
        raise OSError(errno.EIO, "the file read back differs from what was written")


def _io_error(step: str, path: "StrPath", exc: OSError, reason: str) -> GateError:
    detail = exc.strerror or str(exc)
    if exc.errno in (errno.ELOOP, errno.ENOTDIR) and step in ("open folder", "open", "open for append", "open lock"):
        detail = "a symlink (or a file) where a folder should be on its path: refused, not followed"
    return GateError(f"cannot write {path} ({step}): {detail}", code=CANNOT_RUN, reason=reason)


def append_line(path: "StrPath", data: bytes, *, reason: str, mode: int | None = None) -> None:
    """Append one record with a single O_APPEND write, then fsync: concurrent appenders never interleave."""
    try:  # a FIFO planted here is refused, never waited on
        fd = open_state_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode if mode is not None else 0o666 & ~umask())
    except OSError as exc:
        raise _io_error("open for append", path, exc, reason) from None
    try:
        if os.write(fd, data) != len(data):
            raise OSError(errno.EIO, "short write: the record is torn")
        os.fsync(fd)
    except OSError as exc:
        raise _io_error("append", path, exc, reason) from None
    finally:
        os.close(fd)


class locked:  # noqa: N801 - used as `with fsio.locked(folder):`
    """Serialise read-modify-write sequences of gate processes on one state folder.

    flock is released by the kernel when its holder dies, so a crash never leaves it held.
    """

    def __init__(self, directory: "StrPath") -> None:
        self.path = os.path.join(directory, ".lock")
        self.fd = -1

    def __enter__(self) -> None:
        import fcntl  # POSIX only: importing this module must still work where the gate refuses to run

        try:  # never waits on a FIFO, never follows a link
            self.fd = open_file(self.path, safe_flags(os.O_RDWR | os.O_CREAT), 0o666 & ~umask())
        except OSError as exc:
            raise _io_error("open lock", self.path, exc, "io-error") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self.fd)
            raise

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: "TracebackType | None") -> None:
        os.close(self.fd)


def read_bytes_capped(path: "StrPath", cap: int, shown: str, *, dir_fd: int | None = None) -> bytes | int:
    """The bytes of the regular file at `path`, or its size (an int) when it is larger than `cap`.

    Never blocks on a FIFO, never reads more than `cap` + 1 bytes, and never follows a symlink: `path`
    is resolved first (paths.confined), so a link met here was swapped in since and is refused. With
    `dir_fd` (a folder opened by open_dir), `path` is a name in that folder.
    """
    flags = safe_flags(os.O_RDONLY)
    try:
        fd = open_file(path, flags) if dir_fd is None else os.open(path, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        raise GateError("file not found", reason="input-unreadable", path=shown) from None
    except OSError as exc:
        linked = exc.errno in (errno.ELOOP, errno.ENOTDIR)
        why = "a symlink on its path changed since it was resolved: refused" if linked else exc.strerror
        raise GateError(f"cannot open: {why}", reason="input-unreadable", path=shown) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise GateError("not a regular file", reason="input-unreadable", path=shown)
        if info.st_size > cap:
            return info.st_size
        data = _read_up_to(fd, cap + 1)
    except OSError as exc:
        raise GateError(f"cannot read: {exc.strerror}", reason="input-unreadable", path=shown) from None
    finally:
        os.close(fd)
    return len(data) if len(data) > cap else data


class NotRegularFile(OSError):
    """What `read_regular` raises for a FIFO, a device, a socket or a folder: its strerror says which."""


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int, path: "StrPath") -> NotRegularFile:
    if stat.S_ISLNK(mode):
        return NotRegularFile(errno.ELOOP, "a symlink: not followed", os.fspath(path))
    if stat.S_ISDIR(mode):
        return NotRegularFile(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    what = next((name for test, name in _KINDS if test(mode)), "not a plain file")
    return NotRegularFile(errno.EINVAL, f"{what}, not a regular file", os.fspath(path))


def read_regular(path: "StrPath", cap: int, *, follow: bool = False) -> bytes:
    """At most `cap` + 1 bytes of the regular file at `path` (more than `cap`: the caller knows it is larger), for
    readers that name every OSError themselves: a file of a git dir (a worktree's `gitdir`, a hook, `HEAD`), /proc.

    Never waits: anything but a regular file (a FIFO, a device, a socket, a folder) is refused before it is opened
    (NotRegularFile), and the open carries O_NONBLOCK, so a FIFO swapped in meanwhile returns at once and is refused
    by its fstat. A symlink at `path` is refused too (NotRegularFile, ELOOP), unless `follow` (for a file git itself
    reads through one). Every other OSError (FileNotFoundError, PermissionError, ProcessLookupError from /proc) is
    raised as it is.
    """
    info = os.stat(path, follow_symlinks=follow)
    if not stat.S_ISREG(info.st_mode):
        raise _not_regular(info.st_mode, path)
    flags = safe_flags(os.O_RDONLY)
    fd = os.open(path, flags & ~getattr(os, "O_NOFOLLOW", 0) if follow else flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(mode, path)
        return _read_up_to(fd, cap + 1)
    finally:
        os.close(fd)


def _read_up_to(fd: int, limit: int) -> bytes:
    """The first `limit` bytes (fewer at its end) of the regular file open at `fd`, read by position: a file
    pinned by `rewrite` is read from its start each time it is compared."""
    chunks, at = [], 0
    while at < limit:
        chunk = os.pread(fd, min(limit - at, 1 << 20), at)
        if not chunk:
            break
        chunks.append(chunk)
        at += len(chunk)
    return b"".join(chunks)


def read_state_file(path: "StrPath", cap: int) -> bytes | None:
    """A file the gate itself wrote under its state dir, or None when there is none.

    A symlink, a FIFO, a device, a hard-linked file or an oversized file there was planted, not
    written by us: it is refused (`state-unsafe`), never followed, never blocked on.
    """
    for attempt in range(20):
        try:
            fd = open_file(path, safe_flags(os.O_RDONLY))
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise GateError(f"refusing {path}: a symlink where the gate keeps its own files", reason="state-unsafe") from None
            raise _io_error("open", path, exc, "io-error") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise GateError(f"refusing {path}: not a regular file", reason="state-unsafe")
            if info.st_size > cap:
                raise GateError(f"refusing {path}: {info.st_size:,} bytes, over the {cap:,}-byte cap", reason="state-unsafe")
            if info.st_nlink == 1:
                return _read_up_to(fd, cap + 1)
        finally:
            os.close(fd)
        # A writer publishing with link() has two names for a moment; a planted hard link keeps them.
        time.sleep(0.005 * (attempt + 1))
    raise GateError(f"refusing {path}: it has other hard links", reason="state-unsafe")


def same_text(a: bytes, b: bytes) -> bool:
    """Whether two copies of a text file say the same, line ends aside (a checkout with CRLF, `eol=crlf` or
    core.autocrlf, is no change: `git status` says none)."""
    return a == b or a.replace(b"\r\n", b"\n") == b.replace(b"\r\n", b"\n")


def decode_text(data: bytes, shown: str) -> str:
    """UTF-8 text with a leading BOM dropped; binary and undecodable input is refused with its line."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise GateError("UTF-16 text is not supported: save the file as UTF-8", reason="input-unreadable", path=shown, line=1)
    if data.startswith(BOM):
        data = data[len(BOM):]
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise GateError("binary content (a NUL byte): expected UTF-8 text", reason="input-unreadable", path=shown, line=line)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise GateError(f"not valid UTF-8 (byte 0x{data[exc.start]:02x}): save the file as UTF-8", reason="input-unreadable",
                        path=shown, line=line) from None


def split_lines(text: str) -> list[str]:
    """Lines as an editor numbers them: LF or CRLF ends a line, nothing else does."""
    lines = text.split("\n")  # never empty: a text without a newline is one line
    if not lines[-1]:
        lines.pop()
    if "\r" not in text:
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def open_state_fd(path: "StrPath", flags: int, mode: int = 0o666) -> int:
    """Open a file the gate keeps under its state dir, never blocking on what was planted there (see safe_flags).

    The opened file must be a regular file with one name: anything else (a FIFO, a device, a symlink, a hard
    link) is refused (`state-unsafe`) before a byte is read or written. FileNotFoundError and other OSErrors
    are the caller's to name.
    """
    try:
        fd = open_file(path, safe_flags(flags), mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
            what = "a FIFO or a device" if exc.errno == errno.ENXIO else "a symlink"
            raise GateError(f"refusing {path}: {what} where the gate keeps its own files", reason="state-unsafe") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            what = "not a regular file (a FIFO or a device?)" if not stat.S_ISREG(info.st_mode) else "it has other hard links"
            raise GateError(f"refusing {path}: {what} where the gate keeps its own files", reason="state-unsafe")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_fd(fd: int) -> bytes:
    """Everything from `fd` to its end."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)
