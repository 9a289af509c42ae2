"""The one clock (infra/clock.py) and the one move-aside and open-flags helpers (infra/fsio.py)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

from gates.infra import clock, fsio


def test_utc_text_and_parse_round_trip() -> None:
    when = datetime(2026, 1, 31, 12, 0, 5, tzinfo=timezone.utc)
    assert clock.utc_text(when) == "2026-01-31T12:00:05Z"
    assert clock.name_text(when) == "20260131T120005Z"
    assert clock.parse_utc(clock.utc_text(when)) == when
    fine = when + timedelta(microseconds=250)
    assert clock.utc_text_fine(fine) == "2026-01-31T12:00:05.000250Z"
    assert clock.utc_text_fine(when) == "2026-01-31T12:00:05Z"
    assert clock.parse_utc(clock.utc_text_fine(fine)) == fine  # a claim's TTL is kept to the microsecond


def test_parse_utc_says_none_to_what_is_not_a_time() -> None:
    for text in ("", "yesterday", None, 12, "2026-13-01T00:00:00Z", ["2026-01-01"]):
        assert clock.parse_utc(text) is None, text
    naive = clock.parse_utc("2026-01-31T12:00:00")
    assert naive is not None and naive.tzinfo is None
    assert clock.parse_utc("2026-01-31T12:00:00", zoned=True) is None
    assert clock.parse_utc("2026-01-31T12:00:00+00:00", zoned=True) == datetime(2026, 1, 31, 12, tzinfo=timezone.utc)


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
