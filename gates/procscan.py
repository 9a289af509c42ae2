"""Liveness evidence: who holds a file open, which git processes work in a repository.

From /proc where there is one (Linux); else from `lsof` (macOS ships it as /usr/sbin/lsof), run
from a system location only, never found through PATH. Any doubt counts as alive: no /proc and
no lsof, an lsof that fails, or a process of ours that cannot be read makes the scan
`complete = False`, and the caller must then treat every lock as live.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

PROC = Path("/proc")
LSOF = ("/usr/sbin/lsof", "/usr/bin/lsof", "/sbin/lsof", "/bin/lsof")
MOUNT = ("/sbin/mount", "/bin/mount", "/usr/bin/mount", "/usr/sbin/mount")
_TOOL_ENV = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL": "C"}
_TOOL_TIMEOUT = 10.0  # lsof can hang on a dead network mount: then doubt, so live


class Scan:
    """What /proc showed: which processes hold which files open, and same-user git processes in the repository."""

    def __init__(self, complete: bool = True, doubts: list[str] | None = None) -> None:
        self.complete = complete
        self.doubts = doubts or []
        self.open_by: dict[tuple[int, int], list[int]] = {}  # (dev, ino) -> pids
        self.git_in_repo: list[tuple[int, str]] = []  # (pid, cwd)


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


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
    processes of this user with a cwd under `roots`."""
    if not PROC.is_dir() or not (PROC / "self" / "fd").is_dir():
        lsof = _system_tool(LSOF)
        if lsof is None:
            return Scan(False, ["no /proc and no lsof on this platform: liveness cannot be established"])
        return _scan_lsof(lsof, targets, roots)
    inodes = set(targets)
    result = Scan()
    me, uid = os.getpid(), os.geteuid()
    try:
        entries = [entry.name for entry in os.scandir(PROC) if entry.name.isdigit()]
    except OSError as exc:
        return Scan(False, [f"/proc cannot be listed: {exc.strerror}"])
    for name in entries:
        pid = int(name)
        if pid != me:
            _one(pid, uid, inodes, roots, result)
    return result


def _one(pid: int, uid: int, inodes: set[tuple[int, int]], roots: list[str], result: Scan) -> None:
    base = PROC / str(pid)
    try:
        owner = os.stat(base).st_uid
    except FileNotFoundError:
        return  # exited meanwhile
    mine = owner == uid
    try:
        comm = (base / "comm").read_text(errors="replace").strip()
        if comm.startswith("git") and mine:
            cwd = os.readlink(base / "cwd")
            if _inside(cwd, roots):
                result.git_in_repo.append((pid, cwd))
        for fd in os.listdir(base / "fd"):
            try:
                info = os.stat(base / "fd" / fd)
            except OSError:
                continue  # closed meanwhile, or a descriptor without a file
            key = (info.st_dev, info.st_ino)
            if key in inodes:
                result.open_by.setdefault(key, []).append(pid)
    except FileNotFoundError:
        return
    except PermissionError:
        if mine:  # our own process hides from us: doubt
            result.complete = False
            result.doubts.append(f"process {pid} of this user cannot be inspected")
        # Another user's process: it cannot have opened a lock that only we may write.


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
    me = os.getpid()
    if targets:
        held = _run_tool([lsof, "-w", "-n", "-P", "-F", "pfi", "--", *targets.values()])
        if held is None:
            return Scan(False, ["lsof failed to list the holders of the lock files"])
        by_inode = {ino: (dev, ino) for dev, ino in targets}
        for pid, fields in _lsof_records(held):
            key = by_inode.get(int(fields["i"])) if fields.get("i", "").isdigit() else None
            if key is not None and pid not in (me, 0):
                result.open_by.setdefault(key, []).append(pid)
    cwds = _run_tool([lsof, "-w", "-n", "-P", "-a", "-u", str(os.geteuid()), "-c", "git", "-d", "cwd", "-F", "pfn"])
    if cwds is None:
        return Scan(False, ["lsof failed to list the working directories of git processes"])
    for pid, fields in _lsof_records(cwds):
        cwd = fields.get("n", "")
        if pid != me and _inside(cwd, roots):
            result.git_in_repo.append((pid, cwd))
    return result


def pid_alive(pid: int) -> bool | None:
    """True alive, False dead, None unknown."""
    if pid <= 0:
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
_MOUNT_LINUX = re.compile(r"^.+? on (.+) type (\S+) \(.*\)$")  # util-linux: `dev on /dir type ext4 (rw,...)`
_MOUNT_BSD = re.compile(r"^.+? on (.+) \(([^,()]+)(?:, [^()]*)?\)$")  # macOS: `dev on /dir (apfs, local, ...)`


def _mounts() -> list[tuple[str, str]] | None:
    """(mount point, filesystem type) of every mount: /proc/self/mountinfo, else the `mount` command's listing."""
    try:
        lines = (PROC / "self" / "mountinfo").read_text(errors="replace").splitlines()
    except OSError:
        tool = _system_tool(MOUNT)
        output = _run_tool([tool]) if tool else None
        return None if output is None else parse_mount_listing(output)
    found = []
    for line in lines:
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
    mounts = _mounts()
    best, kind = "", None
    for mount, fs_type in mounts or []:
        if _inside(path, [mount]) and len(mount) >= len(best):
            best, kind = mount, fs_type
    return kind


def is_network_fs(kind: str | None) -> bool:
    return kind is not None and (kind in NETWORK_FS or kind.startswith("fuse"))
