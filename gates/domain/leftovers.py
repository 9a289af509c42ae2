"""Temp files a killed writer left behind: found by their exact name (`fsio.is_temp_name`), reported, moved aside.

The atomic writer makes its temp file beside the target, so a writer killed between creating it and
renaming it leaves `.tmp-HANDOFF.md-<12 hex>` in the work tree, where `git add -A` would commit it.
Where they are looked for: the folders of the files the gate writes in the work tree (the hand-over,
the archive, the mailbox, `.gate.yaml`, the records folder, the hooks folder when it is in the work
tree) and the whole state dir. A staged one anywhere in the tree is found from the staged changes.

Nothing is ever deleted: `move` puts them in `<common>/gate/lost+found/<utc>-<random>/` with a manifest,
and only those old enough that no writer can still be using them (a writer holds its temp file for the
milliseconds of a write and an fsync).
"""

from __future__ import annotations

import errno
import os
import stat
import time

from gates.infra import clock, fsio, jsonio, paths, state
from gates.infra.clock import datetime
from gates.infra.config import Config
from gates.infra.digest import sha256
from gates.infra.git import Repo
from gates.infra.plain import NamedTuple

MIN_AGE = 600.0  # seconds: younger temp files may belong to a writer running now; they are reported, never moved
MAX_MOVED_BYTES = 64 << 20  # the largest leftover moved aside (the gate's own files are capped far below it)
SKIP_IN_STATE = frozenset({"lost+found"})  # what was moved aside already


class Leftover(NamedTuple):
    path: str  # absolute
    shown: str  # relative to the work tree, or absolute under the state dir
    in_tree: bool
    age: float  # seconds since the later of mtime and ctime


def work_tree_folders(repo: Repo, config: Config, extra: list[str] | None = None) -> list[str]:
    """The folders of the work tree the gate writes files into."""
    names = [config.section(key)["path"] for key in ("handoff", "archive", "mailbox")]
    relative = [config.section("records")["path"], *(os.path.dirname(name) for name in names)]
    folders = {repo.toplevel, *(os.path.normpath(repo.path(name)) for name in relative)}
    folders.update(os.path.dirname(os.path.abspath(path)) for path in extra or [])
    return sorted(folders)


def in_work_tree(repo: Repo, config: Config, extra: list[str] | None = None,
                 hooks_folder: str | None = None) -> list[Leftover]:
    folders = work_tree_folders(repo, config, extra)
    if hooks_folder is not None and _inside(hooks_folder, repo.toplevel):
        folders.append(hooks_folder)
    found: dict[str, Leftover] = {}
    for folder in folders:
        for path in _scan(folder):
            if _inside(os.path.dirname(path), repo.toplevel) and path not in found:
                found[path] = _leftover(path, repo.relpath(path), True)
    return sorted(found.values())


def in_state_dir(repo: Repo) -> list[Leftover]:
    """Temp files anywhere under the state dir (never following a link; nothing when the dir is unsafe)."""
    lay = state.layout(repo)
    if state.unsafe(lay) or not os.path.isdir(lay.root):
        return []
    found = []
    for folder, dirs, files in os.walk(lay.root, followlinks=False):
        if folder == lay.root:
            dirs[:] = [name for name in dirs if name not in SKIP_IN_STATE]
        for name in files:
            if fsio.is_temp_name(name):
                path = os.path.join(folder, name)
                found.append(_leftover(path, path, False))
    return sorted(found)


def staged(changed: list[tuple[str, str]]) -> list[str]:
    """The paths among (status, path) pairs that add or change a file with a temp file's name."""
    return sorted(path for status, path in changed if status != "D" and fsio.is_temp_name(path.rsplit("/", 1)[-1]))


def _scan(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return [entry.path for entry in entries  # (the prefix first: a folder of 10,000 records has none)
                    if entry.name.startswith(fsio.TEMP_PREFIX) and fsio.is_temp_name(entry.name)]
    except OSError:
        return []


def _inside(path: str, top: str) -> bool:
    return paths.within(os.path.realpath(path), os.path.realpath(top))


def _leftover(path: str, shown: str, in_tree: bool) -> Leftover:
    try:
        info = os.lstat(path)
        age = time.time() - max(info.st_mtime, info.st_ctime)
    except OSError:
        age = 0.0
    return Leftover(path, shown, in_tree, age)


class Moved(NamedTuple):
    said: list[str]  # one line per file: moved, or why it stayed
    folder: str | None  # the lost+found folder, when anything moved


def move(repo: Repo, found: list[Leftover], now: datetime | None = None) -> Moved:
    """Move every leftover old enough into one fresh lost+found folder, with a manifest; never delete."""
    when = now or clock.now()
    said: list[str] = []
    ready = []
    for item in found:
        if item.age < MIN_AGE:
            said.append(f"left {item.shown}: {int(item.age)}s old, a writer may still be using it")
        else:
            ready.append(item)
    if not ready:
        return Moved(said, None)
    lay = state.layout(repo)
    target = state.new_evidence_dir(lay, when)
    entries = []
    for number, item in enumerate(ready):
        name = f"{number:03d}-{os.path.basename(item.path)}"
        entry, why = _move_one(item, target, name)
        if entry is None:
            said.append(f"left {item.shown}: {why}")
            continue
        entries.append(entry)
        said.append(f"moved {item.shown} to {os.path.join(target, name)}")
    manifest = {"version": 1, "kind": "temp-files", "moved_at": clock.utc_text(when),
                "why": "temp files of writers that never finished (killed or crashed); nothing was deleted",
                "files": entries}
    state.write(repo, os.path.join(target, "manifest.json"), (jsonio.dumps(manifest, indent=2) + "\n").encode())
    if entries:
        from gates.domain import journal

        journal.append(repo, "temp-files-moved", {"to": str(target), "paths": [e["from"] for e in entries]}, when)
    return Moved(said, target)


def _move_one(item: Leftover, target: str, name: str) -> tuple[dict[str, object] | None, str]:
    """lstat, pin, rename into `target`, check the inode that arrived is the pinned one."""
    try:
        info = os.lstat(item.path)
    except FileNotFoundError:
        return None, "gone already"
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror}"
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_uid != os.geteuid():
        return None, "not a regular file of yours with one link: inspect it yourself"
    if info.st_size > MAX_MOVED_BYTES:  # hashed for the manifest: a planted 4 GB file would take minutes
        return None, f"{info.st_size:,} bytes, larger than any file the gate writes: inspect it yourself"
    try:
        fd = os.open(item.path, fsio.safe_flags(os.O_RDONLY))
    except OSError as exc:
        return None, f"cannot be opened: {exc.strerror}"
    try:
        pinned = os.fstat(fd)
        if (pinned.st_dev, pinned.st_ino) != (info.st_dev, info.st_ino):
            return None, "it changed while being looked at"
        digest, read = sha256(), 0
        while read <= MAX_MOVED_BYTES and (chunk := os.read(fd, 1 << 20)):
            digest.update(chunk)
            read += len(chunk)
        if read != pinned.st_size or os.fstat(fd).st_size != read:  # it grew (or shrank) while it was hashed
            return None, "it changed while being looked at"
        destination = os.path.join(target, name)
        moved = fsio.move_aside(item.path, destination, pinned=pinned)
        if isinstance(moved, OSError):
            if moved.errno == errno.EXDEV:
                return None, "on another filesystem than the state dir: move it out of the work tree yourself"
            return None, f"cannot be moved: {moved.strerror}"
        if not moved:
            return None, f"a different file arrived in {destination}: inspect both"
    finally:
        os.close(fd)
    return {"from": item.path, "shown": item.shown, "name": name, "size": pinned.st_size,
            "mtime": int(pinned.st_mtime), "sha256": digest.hexdigest()}, ""
