"""Liveness evidence for git's lock files (docs/locks.md): who holds a file open, which git processes of this user
act, or may act, on a repository. From /proc where there is one; else from `lsof`, run from a system location only
(never found through PATH), which shows no environment: there every git process of this user is doubt. Any doubt
is a reason in `Scan.doubts`, and the caller then treats every lock as live.
"""

import os
import stat
import subprocess
from pathlib import Path

from gates.infra import fsio
from gates.infra.git import own_processes
from gates.infra.paths import within
from gates.infra.text import Pattern

PROC = Path("/proc")
LSOF = ("/usr/sbin/lsof", "/usr/bin/lsof", "/sbin/lsof", "/bin/lsof")
MOUNT = ("/sbin/mount", "/bin/mount", "/usr/bin/mount", "/usr/sbin/mount")
_TOOL_ENV = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL": "C"}
_TOOL_TIMEOUT = 10.0  # lsof can hang on a dead network mount: then doubt, so live


class Scan:
    """What the processes showed: which hold which files open, same-user git processes that may act on the
    repository, and why liveness cannot be established (the scan is complete when there is no doubt)."""

    def __init__(self, *doubts: str) -> None:
        self.doubts = list(doubts)
        self.open_by: dict[tuple[int, int], list[int]] = {}  # (dev, ino) -> pids
        self.git_in_repo: list[tuple[int, str]] = []  # (pid, how it targets the repository, or why that is doubt)


# The inode of the initial (the host's) PID namespace: a constant of the kernel (PROC_PID_INIT_INO, since 3.8);
# every namespace made later gets an inode from 0xF0000000 up.
INIT_PID_NS = 0xEFFFFFFC


def namespace_problem() -> str | None:
    """Why the processes /proc shows may not be every process that can touch the repository, or None: they count
    only when this process is in the host's PID namespace and /proc is that namespace's own (its `self` is this
    process, and NSpid lists one level). Why: docs/security.md."""
    try:
        ns = os.stat(PROC / "self" / "ns" / "pid")
        me = os.readlink(PROC / "self")
        status = fsio.read_regular(PROC / "self" / "status", 1 << 16, follow=True).decode(errors="replace")
    except OSError as exc:
        return (f"the PID namespace of this process cannot be established ({exc.strerror}): git processes outside it "
                "could not be seen")
    nspid = next((line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")), None)
    if me != str(os.getpid()) or (nspid is not None and len(nspid) != 1):
        return ("/proc here is not the PID namespace of this process (it shows another namespace's processes): git "
                "processes that hold these locks could not be seen")
    if ns.st_ino != INIT_PID_NS:
        return ("this gate runs in a PID namespace of its own (a container or `unshare --pid`), not the host's: git "
                "processes outside it cannot be seen, so no lock is judged stale here (move one by hand, or run "
                "`gate locks --quarantine` on the host)")
    return None


def _inside(path: str, roots: list[str]) -> bool:
    return any(within(path, root) for root in roots)


def _system_tool(candidates: tuple[str, ...]) -> str | None:
    return next((path for path in candidates if os.access(path, os.X_OK)), None)


def _run_tool(argv: list[str]) -> str | None:
    """A system tool's output, or None when it could not be run or said anything on stderr (doubt)."""
    try:
        proc = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, env=_TOOL_ENV,
                              timeout=_TOOL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    # lsof exits 1 when it found nothing to list; anything on stderr is a problem it met.
    if proc.returncode not in (0, 1) or proc.stderr.strip():
        return None
    return proc.stdout.decode("utf-8", "surrogateescape")


def scan(targets: dict[tuple[int, int], str], roots: list[str]) -> Scan:
    """One pass over the processes: holders of the files `targets` names ((device, inode) -> path), and git
    processes of this user that act, or may act, on the repository whose directories are `roots`."""
    if not PROC.is_dir() or not (PROC / "self" / "fd").is_dir():
        lsof = _system_tool(LSOF)
        if lsof is None:
            return Scan("no /proc and no lsof on this platform: liveness cannot be established")
        return _scan_lsof(lsof, targets, roots)
    blind = namespace_problem()
    if blind is not None:
        return Scan(blind)
    result = Scan()
    ours = own_processes()  # the gate and its own git children are no other writer
    try:
        mine = os.stat(PROC / "self" / "ns" / "mnt")  # a process in another mount namespace: its paths are not ours
    except OSError as exc:
        return Scan(f"the mount namespace of this process cannot be read ({exc.strerror})")
    try:
        pids = [int(entry.name) for entry in os.scandir(PROC) if entry.name.isdigit()]
    except OSError as exc:
        return Scan(f"/proc cannot be listed: {exc.strerror}")
    for pid in pids:
        if pid not in ours:
            _one(pid, targets, roots, (mine.st_dev, mine.st_ino), result)
    return result


def _one(pid: int, targets: dict[tuple[int, int], str], roots: list[str], mount_ns: tuple[int, int], result: Scan) -> None:
    base = PROC / str(pid)
    try:
        mine = os.stat(base).st_uid == os.geteuid()
    except FileNotFoundError:
        return  # exited meanwhile
    try:
        comm = fsio.read_regular(base / "comm", _COMM_CAP)[:_COMM_CAP].decode(errors="replace").strip()
        if comm.startswith("git") and mine:
            how = _git_process(base, roots, mount_ns)
            if how is not None:
                result.git_in_repo.append((pid, how))
        for fd in os.listdir(base / "fd"):
            try:
                info = os.stat(base / "fd" / fd)
            except OSError:
                continue  # closed meanwhile, or a descriptor without a file
            key = (info.st_dev, info.st_ino)
            if key in targets:
                result.open_by.setdefault(key, []).append(pid)
    except (FileNotFoundError, ProcessLookupError):
        return  # exited meanwhile
    except PermissionError:
        if mine:  # our own process hides from us: doubt
            result.doubts.append(f"process {pid} of this user cannot be inspected")
        # Another user's process: it cannot have opened a lock that only we may write.


_READ_CAP = 1 << 20  # a command line or environment larger than this is doubt
_COMM_CAP = 64  # the kernel keeps 16 bytes of a process's name
_MOUNTINFO_CAP = 1 << 24  # a mount table larger than this is doubt: the filesystem type is unknown
_MAX_PATH_WORDS = 256  # more path-like words than this on one command line is doubt (each costs a realpath)
# git's global options that take the next word as their value (git.c, handle_options).
_GLOBAL_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
                                "--attr-source"})
_ENV_PATHS = ("GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")
_NAMES_GIT_DIR = ("--git-dir", "GIT_DIR", "GIT_COMMON_DIR")
_WORK_TREE = ("--work-tree", "GIT_WORK_TREE")
# Read (again) once git has set up, so relative to where it stands then: the top of its work tree, which is where a
# process that holds a lock is. (A relative GIT_DIR or work tree is relative to where git started: git carries it
# along when it changes folder.)
_AFTER_SETUP = ("GIT_INDEX_FILE", "GIT_COMMON_DIR")


class Doubt(Exception):
    """Where a git process works cannot be established."""


def _git_process(base: Path, roots: list[str], mount_ns: tuple[int, int]) -> str | None:
    """How the git process /proc/<pid> targets the repository, or why that cannot be known (doubt); None when it
    provably works elsewhere. FileNotFoundError (it exited) and PermissionError on its namespace or cwd propagate."""
    theirs = os.stat(base / "ns" / "mnt")
    if (theirs.st_dev, theirs.st_ino) != mount_ns:  # a container's git, seen from the host
        return "it runs in another mount namespace (a container?): its paths are not this process's, so its target " \
               "cannot be established"
    cwd = os.readlink(base / "cwd")
    if _inside(cwd, roots):
        return f"its cwd {cwd} is in the repository"
    try:
        env = {key: value for key, _, value in (item.partition("=") for item in _nul_list(base / "environ", "environment"))}
        argv = _nul_list(base / "cmdline", "command line")
        if not argv:
            _nul_list(base / "environ", "environment")  # an exiting process shows none: ESRCH once its memory is gone
            if _exiting(base):
                return None  # in the kernel's exit path: it runs no code of its own again, so it writes no lock
            raise Doubt("its command line is empty")
        return targets(cwd, argv, env, roots)
    except Doubt as exc:
        return f"cwd {cwd}, and its target cannot be established: {exc}"


_PF_EXITING = 0x4  # include/linux/sched.h: the task is in do_exit (its memory may be gone already)


def _exiting(base: Path) -> bool:
    """Whether the process's flags (field 9 of /proc/<pid>/stat, after its name in parentheses) say it is exiting
    and it has no other thread: between giving up its memory (an empty command line) and becoming a zombie, it runs
    no code of its own. (A leader that left by itself shows the same while its other threads go on.)"""
    try:
        fields = fsio.read_regular(base / "stat", 4096).rpartition(b")")[2].split()
        return bool(int(fields[6]) & _PF_EXITING) and len(os.listdir(base / "task")) == 1
    except (OSError, ValueError, IndexError):
        return False  # cannot tell: doubt stays


def _nul_list(path: Path, what: str) -> list[str]:
    try:
        data = fsio.read_regular(path, _READ_CAP)
    except (FileNotFoundError, ProcessLookupError):
        raise  # it exited meanwhile; ESRCH: it is exiting, its memory is gone, it can no longer touch a lock
    except OSError as exc:
        raise Doubt(f"its {what} cannot be read ({exc.strerror})") from None
    if len(data) > _READ_CAP:
        raise Doubt(f"its {what} is larger than {_READ_CAP} bytes")
    words = data.decode("utf-8", "surrogateescape").split("\0")
    return words[:-1] if words[-1] == "" else words


def targets(cwd: str, argv: list[str], env: dict[str, str], roots: list[str]) -> str | None:
    """How a git process with this cwd, command line and environment targets `roots`; None when it provably works
    elsewhere. Raises Doubt when that cannot be established."""
    if not os.path.isabs(cwd) or cwd.endswith(" (deleted)"):
        raise Doubt("its cwd is gone")
    program = os.path.basename(argv[0]) if argv else ""
    if program == "git":
        options, rest = _global_options(argv[1:])
    elif program.startswith("git-"):  # git-receive-pack /path, git-upload-pack, git-remote-*: no global options
        options, rest = [], argv[1:]
    else:
        raise Doubt(f"its command line starts with {program[:60]!r}, not git")
    here = cwd
    for name, value in options:
        if name == "-C" and value:
            here = os.path.join(here, value)  # an absolute one starts afresh; relative ones stack
    named = [(name, value) for name, value in options if name in ("--git-dir", "--work-tree") and value]
    named += [(key, env[key]) for key in _ENV_PATHS if env.get(key)]
    if any(name == "--bare" for name, _ in options):
        named.append(("--bare", here))
    work_trees = [_resolve(os.path.join(here, value), name) for name, value in named if name in _WORK_TREE]
    git_dirs: list[str] = []
    for name, value in named:
        bases = [here]
        if os.path.isabs(value):
            pass
        elif name in _AFTER_SETUP:  # read again once git stands where it works: any folder it may have moved to
            bases = list(dict.fromkeys((cwd, here, *work_trees)))
        elif work_trees and name not in _WORK_TREE:
            raise Doubt(f"{name} {value[:200]!r} is relative, and with a work tree given git may have left the "
                        "directory it is relative to")
        for base in bases:
            real = _resolve(os.path.join(base, value), name)
            if _inside(real, roots):
                return f"{name} {real}"
            if name in (*_NAMES_GIT_DIR, "--bare"):
                git_dirs.append(real)
    if not any(name in ("--git-dir", "GIT_DIR", "--bare") for name, _ in named):
        for start in dict.fromkeys((cwd, os.path.normpath(here))):
            found = _discover(start)
            if found is not None and _inside(found, roots):
                return f"it finds {found} from {start}"
            if found is not None:
                git_dirs.append(found)
    for git_dir in git_dirs:
        common = _commondir(git_dir)
        if common is not None and _inside(common, roots):
            return f"{git_dir} has its common dir at {common}"
    return _named_on_command_line(here, rest, env, roots)


def _global_options(words: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """git's global options, in order ((name, value); value "" for a flag), and the words from the command on."""
    options: list[tuple[str, str]] = []
    i = 0
    while i < len(words) and words[i].startswith("-"):
        word = words[i]
        if word in _GLOBAL_WITH_VALUE:
            if i + 1 >= len(words):
                raise Doubt(f"{word} without its value")
            i += 1
            options.append((word, words[i]))
        elif word.startswith("--"):
            name, _, value = word.partition("=")  # `--bare`: value ""
            options.append((name, value))
        else:
            options.append((word, ""))
        i += 1
    return options, words[i:]


def _resolve(path: str, name: str) -> str:
    """The real path of `path`, or of its folder when it does not exist (yet); Doubt when neither resolves."""
    try:
        return os.path.realpath(path, strict=True)
    except OSError:
        pass
    try:
        return os.path.join(os.path.realpath(os.path.dirname(path), strict=True), os.path.basename(path))
    except OSError as exc:
        raise Doubt(f"{name} {path[:200]!r} cannot be resolved ({exc.strerror})") from None


def _read_small(path: str) -> str:
    """A gitfile or a `commondir` file (of any git dir a process names, so possibly planted): read through a symlink
    as git does, never waited on (a FIFO is doubt), at most 4097 bytes."""
    try:
        return fsio.read_regular(path, 4096, follow=True).decode("utf-8", "surrogateescape")
    except OSError as exc:
        raise Doubt(f"{path[:200]} cannot be read ({exc.strerror})") from None


def _kind(path: str) -> str | None:
    """"file", "dir", "other" (following symlinks, as git does), or None when nothing is there; Doubt on an error."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise Doubt(f"{path[:200]} cannot be examined ({exc.strerror})") from None
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"


def _discover(start: str) -> str | None:
    """The git dir git's own discovery finds from `start` (walking up, gitfiles followed), or None when none."""
    folder = start
    while True:
        dotgit = os.path.join(folder, ".git")
        kind = _kind(dotgit)
        if kind == "file":
            text = _read_small(dotgit)
            if not text.startswith("gitdir: "):
                raise Doubt(f"{dotgit[:200]} is neither a git dir nor a gitfile")
            return _resolve(os.path.join(folder, text[len("gitdir: "):].strip()), dotgit)
        if kind == "dir":
            return os.path.realpath(dotgit)
        if kind == "other" or (kind is None and os.path.lexists(dotgit)):  # a dangling symlink too
            raise Doubt(f"{dotgit[:200]} is neither a folder nor a file")
        if _kind(os.path.join(folder, "HEAD")) == "file" and (_kind(os.path.join(folder, "objects")) == "dir"
                                                              or _kind(os.path.join(folder, "commondir")) == "file"):
            return os.path.realpath(folder)  # a bare repository, or a worktree's admin dir
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _commondir(git_dir: str) -> str | None:
    path = os.path.join(git_dir, "commondir")
    if not os.path.lexists(path):
        return None
    text = _read_small(path).strip()
    return _resolve(os.path.join(git_dir, text), path) if text else None


def _named_on_command_line(here: str, words: list[str], env: dict[str, str], roots: list[str]) -> str | None:
    """A path in the repository named on the command line (`git-receive-pack /repo`, `git config -f …`)."""
    paths = []
    for word in words:
        value = word.partition("=")[2] if word.startswith("-") and "=" in word else word
        value = value.removeprefix("file://")
        if value.startswith("~/") and env.get("HOME"):
            value = env["HOME"] + value[1:]
        if "/" in value or value in (".", ".."):
            paths.append(value)
    if len(paths) > _MAX_PATH_WORDS:
        raise Doubt(f"{len(paths)} paths on its command line")
    for value in paths:
        real = os.path.realpath(os.path.join(here, value))
        if _inside(real, roots):
            return f"its command line names {real}"
    return None


def _lsof_records(output: str) -> list[tuple[int, dict[str, str]]]:
    """lsof -F output as (pid, fields of one file): a `p` line starts a process, an `f` line a file."""
    records: list[tuple[int, dict[str, str]]] = []
    pid = 0
    for line in output.split("\n"):
        if not line:
            continue
        tag, value = line[0], line[1:]
        if tag == "p":
            pid = int(value) if value.isdigit() else 0
        elif tag == "f":
            records.append((pid, {}))
        elif records and records[-1][0] == pid:
            records[-1][1][tag] = value
    return records


def _scan_lsof(lsof: str, targets: dict[tuple[int, int], str], roots: list[str]) -> Scan:
    result = Scan()
    ours = own_processes()
    held = _run_tool([lsof, "-w", "-n", "-P", "-F", "pfi", "--", *targets.values()])  # judge always names a file
    if held is None:
        return Scan("lsof failed to list the holders of the lock files")
    by_inode = {ino: (dev, ino) for dev, ino in targets}
    for pid, fields in _lsof_records(held):
        key = by_inode.get(int(fields["i"])) if fields.get("i", "").isdigit() else None
        if key is not None and pid != 0 and pid not in ours:
            result.open_by.setdefault(key, []).append(pid)
    cwds = _run_tool([lsof, "-w", "-n", "-P", "-a", "-u", str(os.geteuid()), "-c", "git", "-d", "cwd", "-F", "pfn"])
    if cwds is None:
        return Scan("lsof failed to list the working directories of git processes")
    for pid, fields in _lsof_records(cwds):
        cwd = fields.get("n", "")
        if pid == 0 or pid in ours:
            continue
        if _inside(cwd, roots):
            result.git_in_repo.append((pid, f"its cwd {cwd} is in the repository"))
        else:  # without /proc its command line and environment (GIT_DIR, --git-dir) cannot be read
            result.git_in_repo.append((pid, f"cwd {cwd}, but without /proc its command line and environment cannot be "
                                            "read: its target cannot be established"))
    return result


def pid_alive(pid: int) -> bool | None:
    """True alive, False dead, None unknown: a pid read from a file may be one kill() cannot even take (past a C int),
    which names no process anyone can ask about."""
    if not 0 < pid < 1 << 31:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return None
    return True


NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre", "gpfs",
              "davfs", "sshfs", "fuse", "afpfs", "webdav")
_MOUNT_LINUX = Pattern(r"^.+? on (.+) type (\S+) \(.*\)$")  # util-linux: `dev on /dir type ext4 (rw,...)`
_MOUNT_BSD = Pattern(r"^.+? on (.+) \(([^,()]+)(?:, [^()]*)?\)$")  # macOS: `dev on /dir (apfs, local, ...)`


def _mounts() -> list[tuple[str, str]] | None:
    """(mount point, filesystem type) of every mount: /proc/self/mountinfo, else the `mount` command's listing."""
    try:
        data = fsio.read_regular(PROC / "self" / "mountinfo", _MOUNTINFO_CAP, follow=True)  # the kernel's own
    except OSError:
        tool = _system_tool(MOUNT)
        output = _run_tool([tool]) if tool else None
        return None if output is None else parse_mount_listing(output)
    if len(data) > _MOUNTINFO_CAP:
        return None
    found = []
    for line in data.decode(errors="replace").splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) >= 5 and right:
            found.append((fields[4].encode().decode("unicode_escape"), right.split()[0]))  # \040 and friends
    return found


def parse_mount_listing(output: str) -> list[tuple[str, str]]:
    """The `mount` command's listing, in the Linux or the BSD/macOS form."""
    found = []
    for line in output.splitlines():
        match = _MOUNT_LINUX.match(line) or _MOUNT_BSD.match(line)
        if match:
            found.append((match.group(1).replace("\\040", " "), match.group(2)))
    return found


def filesystem_type(path: str) -> str | None:
    """The type of the filesystem `path` is on (None when unknown: the caller treats that as doubt)."""
    best, kind = "", None
    for mount, fs_type in _mounts() or []:
        if within(path, mount) and len(mount) >= len(best):
            best, kind = mount, fs_type
    return kind


def is_network_fs(kind: str) -> bool:
    return kind in NETWORK_FS or kind.startswith("fuse")
