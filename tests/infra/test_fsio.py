"""The atomic writer, the capped reader, the temp-file names, the safe open flags and move-aside (gates/infra/fsio.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gates.infra import fsio
from gates.infra.errors import GateError


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(fsio.TEMP_PREFIX)]


def test_write_replaces_whole_content_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    assert fsio.write_atomic(target, b"old")
    assert fsio.write_atomic(target, b"new content")
    assert target.read_bytes() == b"new content"
    assert _leftovers(tmp_path) == []


def test_new_files_follow_the_umask_and_existing_modes_are_kept(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        fsio.write_atomic(tmp_path / "new", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o640
    kept = tmp_path / "kept"
    kept.write_bytes(b"x")
    kept.chmod(0o604)
    fsio.write_atomic(kept, b"y")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o604


def test_exclusive_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "once"
    assert fsio.write_atomic(target, b"first", exclusive=True)
    assert not fsio.write_atomic(target, b"second", exclusive=True)
    assert target.read_bytes() == b"first"
    assert _leftovers(tmp_path) == []


def test_a_failed_write_keeps_the_old_content_and_says_which_step(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    with pytest.raises(GateError) as caught:
        fsio.write_atomic(tmp_path / "missing-dir" / "f", b"new")
    assert "(open folder): No such file or directory" in caught.value.message
    assert target.read_bytes() == b"old"


def test_the_capped_reader_refuses_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big"
    with open(big, "wb") as handle:
        handle.truncate(10 * 1024 * 1024 * 1024)  # sparse: reading it would take long
    assert fsio.read_bytes_capped(big, 1000, "big") == 10 * 1024 * 1024 * 1024
    small = tmp_path / "small"
    small.write_bytes(b"abc")
    assert fsio.read_bytes_capped(small, 3, "small") == b"abc"
    assert fsio.read_bytes_capped(small, 2, "small") == 3


@pytest.mark.parametrize(
    ("data", "text"),
    [(b"a\r\nb\r\n", ["a", "b"]), (b"\xef\xbb\xbfa\nb", ["a", "b"]), (b"a\x0bb\x1cc\n", ["a\x0bb\x1cc"]), (b"", [])],
)
def test_lines_are_numbered_as_an_editor_numbers_them(data: bytes, text: list[str]) -> None:
    assert fsio.split_lines(fsio.decode_text(data, "f")) == text


def test_temp_names_are_recognised_exactly() -> None:
    for target in ("HANDOFF.md", "x", "a-b-c.json", "n" * 80, "20261130T000000Z-io-error-00000000.json"):
        name = fsio.temp_name(target)
        assert fsio.is_temp_name(name) and name.startswith(f".tmp-{target[:40]}-"), name
    near_misses = [".tmp-HANDOFF.md-0123456789AB", ".tmp-HANDOFF.md-0123456789a", ".tmp--0123456789ab",
                   ".tmp-HANDOFF.md", ".tmp-someflag-abc", "tmp-HANDOFF.md-0123456789ab", ".tmp-" + "n" * 41 + "-0123456789ab",
                   "HANDOFF.md", ".tmp-HANDOFF.md-0123456789abc", ".tmp-HANDOFF.md-0123456789ag"]
    assert [n for n in near_misses if fsio.is_temp_name(n)] == []


def test_safe_flags_always_refuse_links_and_never_wait_on_a_fifo(tmp_path: Path) -> None:
    flags = fsio.safe_flags(os.O_RDONLY)
    assert flags & os.O_NOFOLLOW and flags & os.O_CLOEXEC and flags & os.O_NONBLOCK
    assert not fsio.safe_flags(os.O_RDONLY, nonblock=False) & os.O_NONBLOCK
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.close(os.open(fifo, flags))  # returns at once: no writer is waited for


def test_move_aside_checks_the_pinned_file_and_names_a_failed_rename(tmp_path: Path) -> None:
    source, other, folder = tmp_path / "a", tmp_path / "b", tmp_path / "evidence"
    folder.mkdir()
    source.write_text("a")
    other.write_text("b")
    assert fsio.move_aside(source, folder / "a", pinned=os.stat(source)) is True
    assert (folder / "a").read_text() == "a" and not source.exists()
    assert fsio.move_aside(other, folder / "b", pinned=os.stat(folder / "a")) is False  # not the file judged
    failed = fsio.move_aside(tmp_path / "gone", folder / "gone")
    assert isinstance(failed, FileNotFoundError)
    assert fsio.move_names_aside(folder, ["a", "gone"], tmp_path) == ["a"]
