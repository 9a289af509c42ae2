"""paths.real_from answers what os.path.realpath answers, for every shape a path below a resolved folder can take."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from gates.infra.paths import real_from


def _tree(root: Path) -> Path:
    """A folder reached through a link (`given`), holding files, folders, links in and out, a loop and a dangling
    link."""
    real = root / "real"
    (real / "dir" / "sub").mkdir(parents=True)
    (real / "file").write_text("x")
    (root / "outside").mkdir()
    (real / "link-in").symlink_to("dir")
    (real / "link-out").symlink_to(root / "outside")
    (real / "dir" / "up").symlink_to("..")
    (real / "loop").symlink_to("loop")
    (real / "dangling").symlink_to("nowhere")
    (root / "given").symlink_to(real)
    return real


def test_real_from_is_realpath_for_every_shape(tmp_path: Path) -> None:
    real = _tree(tmp_path)
    given = str(tmp_path / "given")
    parts = ["dir", "sub", "file", "link-in", "link-out", "up", "loop", "dangling", "missing", ".", "..", ""]
    checked = 0
    for length in range(1, 4):
        for combo in itertools.product(parts, repeat=length):
            for top in (given, str(real)):
                path = top + os.sep + os.sep.join(combo)
                assert real_from(path, top, str(real)) == os.path.realpath(path), path
                checked += 1
    assert real_from(given, given, str(real)) == os.path.realpath(given)
    assert real_from("/etc/../tmp", given, str(real)) == os.path.realpath("/etc/../tmp")  # not below: realpath
    assert checked > 3000


def test_real_from_lstats_instead_of_walking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain path below the folder is answered without realpath (the point of the helper)."""
    real = _tree(tmp_path)

    def refuse(*_: object) -> str:
        raise AssertionError("realpath called")

    monkeypatch.setattr(os.path, "realpath", refuse)
    assert real_from(str(real / "dir" / "sub" / "new"), str(real), str(real)) == str(real / "dir" / "sub" / "new")
