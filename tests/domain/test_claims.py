"""gates/domain/claims.py: the claim key (one per canonical path) and TTLs through the API."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from claims_helpers import SPELLINGS, spell

from gates.domain import claims
from gates.infra.git import discover


def test_without_a_ttl_a_live_claim_is_never_broken_by_age(trees: list[Path]) -> None:
    main, a, _ = trees
    found = discover(a, {})
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    holder = claims.holder_of(found, None)
    assert claims.claim(found, "HANDOFF.md", holder, None, None, start).kind == "granted"
    later = start + timedelta(days=3650)
    other = claims.holder_of(discover(main, {}), None)
    assert claims.claim(discover(main, {}), "HANDOFF.md", other, None, None, later).kind == "denied"


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_the_key_is_the_canonical_path_whatever_the_spelling(trees: list[Path], spelling: str) -> None:
    a = trees[1]
    spell(a, spelling)
    assert claims.key(discover(a, {}), spelling) == "HANDOFF.md"
    assert claims.key(discover(a, {}), "sub/../HANDOFF.md") == "HANDOFF.md"  # the schema refuses it; the key does not need it to


@pytest.mark.parametrize("spelling", ["../HANDOFF.md", "/etc/passwd", ".", "sub/..", "out.md", "out/HANDOFF.md",
                                      ".git/HEAD", ".git/hooks/../HEAD", "gitlink/HANDOFF.md", "a\x00b"])
def test_a_key_that_leaves_the_tree_or_enters_a_git_dir_is_refused(trees: list[Path], tmp_path: Path,
                                                                    spelling: str) -> None:
    from gates.infra.errors import GateError

    main = trees[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "HANDOFF.md").write_text("x")
    (main / "sub").mkdir()
    os.symlink(outside / "HANDOFF.md", main / "out.md")
    os.symlink(outside, main / "out")
    os.symlink(main / ".git", main / "gitlink")
    with pytest.raises(GateError) as caught:
        claims.key(discover(main, {}), spelling)
    assert caught.value.reason == "state-unsafe" and "handoff.path" in caught.value.message


def test_a_fractional_ttl_through_the_api_is_not_rounded(trees: list[Path]) -> None:
    main, a, _ = trees
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    found = discover(a, {})
    granted = claims.claim(found, "HANDOFF.md", claims.holder_of(found, None), timedelta(seconds=1.5), None, start)
    assert granted.record is not None and granted.record["ttl_seconds"] == 1.5
    other = discover(main, {})
    assert claims.claim(other, "HANDOFF.md", claims.holder_of(other, None), None, None,
                        start + timedelta(seconds=1.4)).kind == "denied"
    renewed = claims.claim(found, "HANDOFF.md", claims.holder_of(found, None), None, None, start + timedelta(seconds=1))
    assert renewed.kind == "renewed" and renewed.record is not None
    assert renewed.record["expires"] == "2026-01-01T00:00:02.500000Z"
