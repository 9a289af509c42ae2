"""Temp files a killed writer left behind: found by their exact name (`fsio.is_temp_name`), reported, moved aside.

The atomic writer makes its temp file beside the target, so a writer killed between creating it and
renaming it leaves `.tmp-HANDOFF.md-<12 hex>` in the work tree, where `git add -A` would commit it.
Where they are looked for: the folders of the files the gate writes in the work tree (the hand-over,
the archive, the mailbox, `.gate.yaml`, the records folder, the hooks folder when it is in the work
tree) and the whole state dir. A staged one anywhere in the tree is found from the staged changes.

Nothing is ever deleted: `gate doctor --fix` moves them into `<common>/gate/lost+found/<utc>-<random>/` with a
manifest (gates/commands/doctor.py), and only those old enough that no writer can still be using them (a writer
holds its temp file for the milliseconds of a write and an fsync).
"""

import os
import time

from gates.infra import fsio, paths, state
from gates.infra.config import Config
from gates.infra.git import Repo
from gates.infra.plain import NamedTuple

MIN_AGE = 600.0  # seconds: younger temp files may belong to a writer running now; they are reported, never moved
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
