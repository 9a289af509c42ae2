"""Small helpers shared by the tests of more than one module (the common ones are in conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from conftest import ROOT, git, handoff_text, run_gate


def break_with_punctuation(repo: Path) -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done\n- [ ] a, b: c"))


def brief_flags(repo: Path) -> str:
    """The flags section of `gate brief` (which must succeed)."""
    brief = run_gate(repo, "brief")
    assert brief.returncode == 0, brief.stderr
    return brief.stdout.split("## 1. Flags")[1].split("## 2.")[0]


def entries(folder: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry under `folder` (links not followed): mode and content or link target."""
    out: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        body: bytes | str = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else b""
        out[str(path.relative_to(folder))] = (info.st_mode, body)
    return out


def source_copy(dest: Path) -> Path:
    """This checkout's files as they would be committed (tracked and untracked, not ignored) copied to `dest`:
    what a plain `pip install` of it builds from, with no build folder or egg-info of the checkout's own."""
    listing = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    tracked = subprocess.run(listing, cwd=ROOT, capture_output=True, text=True, check=True)
    for name in filter(None, tracked.stdout.split("\0")):
        if (ROOT / name).is_symlink():  # gates/schemas, the link to schemas/: a link in the copy too
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).symlink_to(os.readlink(ROOT / name))
        elif (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest
