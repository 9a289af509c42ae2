"""Small helpers shared by the tests of more than one module (the common ones are in conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import git, handoff_text


def break_with_punctuation(repo: Path) -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done\n- [ ] a, b: c"))


def entries(folder: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry under `folder` (links not followed): mode and content or link target."""
    out: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        body: bytes | str = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else b""
        out[str(path.relative_to(folder))] = (info.st_mode, body)
    return out
