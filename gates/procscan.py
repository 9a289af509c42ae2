"""Liveness evidence from /proc: who holds a file open, which git processes work in a repository.

Any doubt counts as alive: a platform without /proc, or a process of ours that cannot be read,
makes the scan `complete = False`, and the caller must then treat every lock as live.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


class Scan:
    """What /proc showed: which processes hold which files open, and same-user git processes in the repository."""

    def __init__(self, complete: bool = True, doubts: list[str] | None = None) -> None:
        self.complete = complete
        self.doubts = doubts or []
        self.open_by: dict[tuple[int, int], list[int]] = {}  # (dev, ino) -> pids
        self.git_in_repo: list[tuple[int, str]] = []  # (pid, cwd)


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def scan(inodes: set[tuple[int, int]], roots: list[str]) -> Scan:
    """One pass over the processes: holders of `inodes`, and git processes with a cwd under `roots`."""
    result = Scan()
    if not PROC.is_dir() or not (PROC / "self" / "fd").is_dir():
        result.complete = False
        result.doubts.append("no /proc on this platform: liveness cannot be established")
        return result
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
              "davfs", "sshfs", "fuse")


def filesystem_type(path: str) -> str | None:
    """The type of the filesystem `path` is on, from /proc/self/mountinfo (None when unknown)."""
    try:
        lines = (PROC / "self" / "mountinfo").read_text(errors="replace").splitlines()
    except OSError:
        return None
    best, kind = "", None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 5 or not right:
            continue
        mount = fields[4].encode().decode("unicode_escape")  # \040 and friends
        if _inside(path, [mount]) and len(mount) >= len(best):
            best, kind = mount, right.split()[0]
    return kind


def is_network_fs(kind: str | None) -> bool:
    return kind is not None and (kind in NETWORK_FS or kind.startswith("fuse"))
