"""Remote claim records and the pre-push gate, as the attacks came (issue 25): a record of the wrong shape
(adv09), the fence at its bound (adv26), a remote that hides refs/gate/ (adv11), a change pushed to a fork
first (adv10) and SHA-256 remotes (adv15's remote half). Real bare remotes made here: file://, git daemon.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import GATE_BIN, commit_all, flag_records, git, handoff_text, init_repo, run_gate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from remote_helpers import bare_repository, claim_ref, clone, clone_id, refs, remote_record, seed_bare

from gates.domain import remote

MAX_FENCE = 2**63 - 1


def forge(bare: Path, body: bytes, *names: str) -> str:
    """A claim commit made in the bare remote, as any clone with push access can make one; the refs set to it."""
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=bare, input=body, capture_output=True,
                          check=True).stdout.decode().strip()
    tree = subprocess.run(["git", "mktree"], cwd=bare, input=f"100644 blob {blob}\tclaim.json\n".encode(),
                          capture_output=True, check=True).stdout.decode().strip()
    commit = git(bare, "commit-tree", tree, "-m", "forged")
    for name in names:
        git(bare, "update-ref", name, commit)
    return commit


def record_of(tree: Path, clone: str | None = None, **fields: Any) -> dict[str, Any]:
    """A well-formed record naming the clone at `tree` (or `clone`) as holder, with `fields` replaced (... drops one)."""
    base: dict[str, Any] = {"version": 1, "kind": "handoff-gate-claim", "clone": clone or clone_id(tree), "host": "h",
                            "worktree": str(tree.resolve()), "branch": "main", "session": None, "harness": None,
                            "since": "2026-01-01T00:00:00Z", "renewed": "2026-01-01T00:00:00Z", "ttl_seconds": None,
                            "expires": None, "note": None, "fence": 1, "path": "HANDOFF.md"}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not ...}


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr


# -- adv09: a record of the wrong shape is refused with one line naming the ref and the field. --

BAD: dict[str, tuple[dict[str, Any], str]] = {
    "ttl-a-string": (dict(ttl_seconds="x"), "ttl_seconds"),
    "fence-a-list": (dict(fence=[1]), "fence"),
    "fence-a-string": (dict(fence="7"), "fence"),
    "fence-true": (dict(fence=True), "fence"),
    "fence-negative": (dict(fence=-1), "fence"),
    "clone-null": (dict(clone=None), "clone"),
    "worktree-nested": (dict(worktree={"a": {"b": [1, 2]}}), "worktree"),
    "expires-a-number": (dict(expires=12), "expires"),
    "ttl-huge": (dict(ttl_seconds=10**18, expires="2026-01-01T00:00:00Z"), "ttl_seconds"),
    "fence-missing": (dict(fence=...), "'fence' is a required property"),
    "version-2": (dict(version=2), "version"),
}


def _claimed_by_a(tmp_path: Path) -> tuple[Path, Path, Path]:
    bare = seed_bare(tmp_path)
    a, b = clone(f"file://{bare}", tmp_path / "a"), clone(f"file://{bare}", tmp_path / "b")
    assert run_gate(a, "claim", "--session", "A").returncode == 0
    return bare, a, b


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_remote_record_is_refused_with_one_line_naming_the_ref_and_field(case: str,
                                                                                   tmp_path: Path) -> None:
    bare, a, _ = _claimed_by_a(tmp_path)
    ref = claim_ref(a)
    fields, named = BAD[case]
    real = remote_record(bare, ref)
    real.update(fields)
    forge(bare, json.dumps({k: v for k, v in real.items() if v is not ...}).encode(), ref)
    before = refs(bare)
    proc = run_gate(a, "claim", "--session", "A")
    no_traceback(proc)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert ref in line and named in line and "never free" in line, line
    assert refs(bare) == before, "a refused claim changed the remote"
    assert [f["reason"] for f in flag_records(a / ".git")] == ["claim-denied"]


@pytest.mark.parametrize("body", [b"not json", b"\xff\xfe", b"[1, 2]", b'{"fence": 1, "fence": 2}',
                                  b'{"version": 1, "fence": 99999999999999999999}', b"[" * 5000 + b"]" * 5000,
                                  b'{"note": "' + b"x" * (70 * 1024) + b'"}'],
                         ids=["not-json", "not-utf8", "a-list", "duplicate-key", "beyond-2-63", "deep", "over-64k"])
def test_bytes_that_are_no_record_are_refused_without_a_traceback(body: bytes, tmp_path: Path) -> None:
    bare, a, b = _claimed_by_a(tmp_path)
    ref = claim_ref(a)
    forge(bare, body, ref)
    before = refs(bare)
    proc = run_gate(b, "claim")
    no_traceback(proc)
    assert proc.returncode == 1 and ref in proc.stderr and "claim.json" in proc.stderr, proc.stderr
    assert not list((b / ".git" / "gate" / "claims").glob("*.json")), "the local grant was not given back"
    assert refs(bare) == before


def test_a_malformed_record_is_listed_refused_at_push_and_removed_only_by_force(tmp_path: Path) -> None:
    bare, a, b = _claimed_by_a(tmp_path)
    ref = claim_ref(a)
    forge(bare, json.dumps(record_of(a, ttl_seconds=[1])).encode(), ref)
    listed = run_gate(b, "claims", "--remote")
    no_traceback(listed)
    assert listed.returncode == 0 and "an unreadable record" in listed.stdout and "ttl_seconds" in listed.stdout
    as_json = run_gate(b, "claims", "--remote", "--format", "json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["claims"][0]["live"] is True
    (b / "HANDOFF.md").write_text((b / "HANDOFF.md").read_text() + "\n")
    git(b, "commit", "-q", "--no-verify", "-am", "b edits the hand-over")
    pushed = run_gate(b, "check", "--remote", "--only", "handoff-claim-remote")
    no_traceback(pushed)
    assert pushed.returncode == 1 and "cannot be read" in pushed.stdout and "ttl_seconds" in pushed.stdout
    kept = run_gate(b, "release")
    assert kept.returncode == 1 and ref in kept.stderr and ref in refs(bare), kept.stderr
    broken = run_gate(b, "release", "--force", "--reason", "a broken record")
    assert broken.returncode == 0, broken.stderr
    assert ref not in refs(bare)
    [manifest] = (b / ".git" / "gate" / "lost+found").glob("*/manifest.json")
    assert "ttl_seconds" in manifest.read_text()
    assert run_gate(b, "claim").returncode == 0  # and the key is usable again, at the next fence
    assert remote_record(bare, ref)["fence"] == 2


def test_a_broken_fence_ref_is_refused_naming_it(tmp_path: Path) -> None:
    bare, a, b = _claimed_by_a(tmp_path)
    fence_ref = claim_ref(a, "refs/gate/fences")
    forge(bare, b'{"version": 1, "fence": "high"}', fence_ref)
    assert run_gate(a, "release", "--session", "A").returncode == 1  # the fence cannot be read: nothing is released
    proc = run_gate(b, "claim")
    no_traceback(proc)
    assert proc.returncode == 1 and fence_ref in proc.stderr and "fence" in proc.stderr, proc.stderr


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=40), lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)
FIELDS = ["version", "kind", "key", "path", "token", "clone", "host", "worktree", "branch", "session", "harness",
          "since", "renewed", "ttl_seconds", "expires", "note", "fence"]
VALID = {"version": 1, "clone": "0" * 32, "host": "h", "worktree": "/w", "fence": 3,
         "expires": "2026-01-01T00:00:00Z", "ttl_seconds": 60, "since": "2026-01-01T00:00:00Z"}


def _use(record: dict[str, Any]) -> None:
    """What the readers do with an accepted record: judge it, describe it, compare it, renew from it."""
    from datetime import datetime, timedelta, timezone

    who = remote.Me("0" * 32, "h", "/w", "main", None, None)
    remote.liveness(record, datetime(2026, 6, 1, tzinfo=timezone.utc), who)
    remote.describe(record)
    remote.is_holder(record, who)
    if record.get("ttl_seconds"):
        assert datetime(2026, 6, 1, tzinfo=timezone.utc) + timedelta(seconds=int(record["ttl_seconds"]))
    assert 0 <= int(record["fence"]) <= MAX_FENCE


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(FIELDS), value=JSON, drop=st.booleans())
def test_property_one_field_of_any_value_only_our_answer_escapes(field: str, value: Any, drop: bool) -> None:
    record = dict(VALID)
    if drop:
        record.pop(field, None)
    else:
        record[field] = value
    parsed, why = remote.parse_record(json.dumps(record).encode())
    assert (parsed is None) != (why is None)
    if parsed is not None:
        _use(parsed)
    else:
        assert why is not None and "\n" not in why


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300) | JSON.map(lambda v: json.dumps(v).encode()))
def test_property_any_bytes_only_our_answer_escapes(data: bytes) -> None:
    parsed, why = remote.parse_record(data)
    assert (parsed is None) != (why is None)
    if parsed is not None:
        _use(parsed)


# -- adv26: the fence's bound, one for the writer and the reader. --

def test_a_record_at_the_fence_bound_is_not_taken_over_and_its_holder_renews_and_releases(tmp_path: Path) -> None:
    bare = seed_bare(tmp_path)
    a, b = clone(f"file://{bare}", tmp_path / "a"), clone(f"file://{bare}", tmp_path / "b")
    ref, fence_ref = claim_ref(a), claim_ref(a, "refs/gate/fences")
    expired = record_of(b, "f" * 32, fence=MAX_FENCE, ttl_seconds=60, expires="2020-01-01T00:00:00Z")
    forge(bare, json.dumps(expired).encode(), ref, fence_ref)
    before = refs(bare)
    taken = run_gate(a, "claim")
    no_traceback(taken)
    assert taken.returncode == 1 and "the bound (2**63-1)" in taken.stdout + taken.stderr, taken.stderr
    assert refs(bare) == before
    assert "claim-denied" in [f["reason"] for f in flag_records(a / ".git")]
    # The holder of a record at the bound (written by the takeover of one at the bound minus one) keeps it working.
    forge(bare, json.dumps(record_of(b, "f" * 32, fence=MAX_FENCE - 1, ttl_seconds=60, expires="2020-01-01T00:00:00Z")).encode(),
          ref, fence_ref)
    took = run_gate(a, "claim", "--ttl", "1h")
    assert took.returncode == 0 and f"fence {MAX_FENCE}" in took.stdout, took.stdout + took.stderr
    assert remote_record(bare, ref)["fence"] == MAX_FENCE
    renewed = run_gate(a, "claim")
    assert renewed.returncode == 0 and renewed.stdout.startswith("renewed"), renewed.stdout + renewed.stderr
    assert run_gate(a, "stamp").returncode == 0
    assert f"- fence: {MAX_FENCE}" in (a / "HANDOFF.md").read_text()
    git(a, "commit", "-q", "--no-verify", "-am", "close-out at the bound")
    assert run_gate(a, "check", "--remote", "--only", "handoff-claim-remote").returncode == 0
    released = run_gate(a, "release")
    assert released.returncode == 0 and ref not in refs(bare), released.stdout + released.stderr


def test_a_meta_fence_of_other_digits_or_beyond_the_bound_is_no_fence(tmp_path: Path) -> None:
    bare = seed_bare(tmp_path)
    a = clone(f"file://{bare}", tmp_path / "a")
    assert run_gate(a, "claim").returncode == 0 and run_gate(a, "stamp").returncode == 0
    text = (a / "HANDOFF.md").read_text()
    for fence in ("\u00b2", "\u0663", str(2**63), "9" * 40):
        (a / "HANDOFF.md").write_text(text.replace("- fence: 1", f"- fence: {fence}"))
        git(a, "commit", "-q", "--no-verify", "-am", f"fence {fence!r}")
        proc = run_gate(a, "check", "--remote", "--only", "handoff-claim-remote")
        no_traceback(proc)
        assert proc.returncode == 0 and "carries no Meta fence" in proc.stdout, (fence, proc.stdout, proc.stderr)


# -- adv11: a remote that hides refs/gate/ reads as unknown, never free. --

@pytest.fixture(params=["file", "git"])
def hidden_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    from remote_helpers import serve

    return serve(request, tmp_path)


def test_a_remote_that_hides_refs_gate_from_fetches_is_unknown_not_free(hidden_url: str, tmp_path: Path) -> None:
    bare = bare_repository(tmp_path)
    git(bare, "config", "uploadpack.hideRefs", "refs/gate")
    a, b = clone(hidden_url, tmp_path / "a"), clone(hidden_url, tmp_path / "b")
    assert run_gate(a, "claim", "--session", "A").returncode == 0
    assert claim_ref(a) in refs(bare)
    before = refs(bare)
    denied = run_gate(b, "claim")
    no_traceback(denied)
    assert denied.returncode == 3 and "hides refs/gate/claims/" in denied.stderr, denied.stdout + denied.stderr
    assert not list((b / ".git" / "gate" / "claims").glob("*.json"))
    (b / "HANDOFF.md").write_text((b / "HANDOFF.md").read_text() + "- [ ] B's notes\n")
    git(b, "commit", "-q", "--no-verify", "-am", "B")
    line = f"refs/heads/main {git(b, 'rev-parse', 'HEAD')} refs/heads/main {git(b, 'rev-parse', 'HEAD~1')}\n"
    pushed = subprocess.run([str(GATE_BIN), "check", "--pre-push", "--remote", "--only",
                             "handoff-claim-remote"], cwd=b, input=line, capture_output=True, text=True, timeout=60)
    assert pushed.returncode == 1 and "never taken as free" in pushed.stdout, pushed.stdout + pushed.stderr
    doctor = run_gate(b, "doctor", "--remote")
    fixes = [x for x in doctor.stdout.splitlines() if x.startswith("FIX") and "remote origin" in x]
    assert any("does not list it" in x for x in fixes) and any("hides refs/gate/claims/" in x for x in fixes), fixes
    assert refs(bare) == before, "the doctor's probes or a refusal left something on the remote"


def test_a_claim_refused_for_a_hidden_fence_leaves_no_claim_to_renew(tmp_path: Path) -> None:
    """A review found: with the fences hidden from pushes (transfer.hideRefs), git 2.39's receive-pack refused the
    fence of an --atomic claim push yet applied its claim ref. The claim exited 3 ("unknown"), but its record stayed on
    the remote under fence 1, the fence the last holder used, and the next `gate claim` renewed it: a grant whose fence
    is not above the last one, so the last holder's stale close-out would pass the push gate. The claim ref is put
    back (leased on what the push wrote); the fence, a high-water mark, may stay raised."""
    bare = seed_bare(tmp_path)
    a, b = clone(f"file://{bare}", tmp_path / "a"), clone(f"file://{bare}", tmp_path / "b")
    assert run_gate(a, "claim", "--session", "A").returncode == 0 and run_gate(a, "release", "--session", "A").returncode == 0
    git(bare, "config", "transfer.hideRefs", "refs/gate/fences")
    before = {ref: oid for ref, oid in refs(bare).items() if not ref.startswith("refs/gate/fences/")}
    first = run_gate(b, "claim", "--session", "B")
    no_traceback(first)
    assert first.returncode == 3 and "hides refs/gate/fences/" in first.stderr, first.stdout + first.stderr
    assert claim_ref(b) not in refs(bare)
    assert {ref: oid for ref, oid in refs(bare).items() if not ref.startswith("refs/gate/fences/")} == before
    again = run_gate(b, "claim", "--session", "B")
    assert again.returncode == 3 and "renewed" not in again.stdout, again.stdout + again.stderr


def test_a_claim_ref_the_hidden_fence_push_left_and_the_remote_will_not_take_back_is_named(tmp_path: Path,
                                                                                         daemon: object) -> None:
    """The put-back above can itself be refused (here the remote's update hook refuses to delete a claim ref; over
    git://, since the gate runs a local remote's receive-pack with hooks off): the claim ref the refused push wrote
    then stays on the remote. That was dropped without a word; the error names the ref and how to remove it, and
    the claim is still refused (exit 3), never taken."""
    bare = seed_bare(tmp_path)
    url = daemon.url("remote.git")  # type: ignore[attr-defined]
    a, b = clone(url, tmp_path / "a"), clone(url, tmp_path / "b")
    assert run_gate(a, "claim", "--session", "A").returncode == 0 and run_gate(a, "release", "--session", "A").returncode == 0
    git(bare, "config", "transfer.hideRefs", "refs/gate/fences")
    hook = bare / "hooks" / "update"
    hook.write_text('#!/bin/sh\ncase "$1:$3" in refs/gate/claims/*:0000000000000000000000000000000000000000) '
                    'echo "no deleting claims here" >&2; exit 1;; esac\nexit 0\n')
    hook.chmod(0o755)
    first = run_gate(b, "claim", "--session", "B")
    no_traceback(first)
    assert first.returncode == 3 and "hides refs/gate/fences/" in first.stderr, first.stdout + first.stderr
    assert f"; the remote may also hold {claim_ref(b)} as this push wrote it, which could not be put back" \
           in first.stderr, first.stderr
    assert "`gate release --force --reason TEXT` once the remote advertises refs/gate/" in first.stderr
    assert claim_ref(b) in refs(bare)  # the ref the error names is there: what it says is so
    assert not list((b / ".git" / "gate" / "claims").glob("*.json"))  # no local claim was made of it


def test_a_remote_that_hides_refs_gate_from_pushes_too_refuses_claims_and_doctor_says_why(tmp_path: Path) -> None:
    bare = seed_bare(tmp_path)
    git(bare, "config", "transfer.hideRefs", "refs/gate/claims")
    a = clone(f"file://{bare}", tmp_path / "a")
    denied = run_gate(a, "claim")
    no_traceback(denied)
    assert denied.returncode == 3 and "deny updating a hidden ref" in denied.stderr, denied.stderr
    assert not list((a / ".git" / "gate" / "claims").glob("*.json"))
    # git 2.39's receive-pack applies the rest of an --atomic push whose hidden ref it refused: the fence (a
    # high-water mark, safe to raise) may have moved; no claim was made.
    assert claim_ref(a) not in refs(bare)
    before = refs(bare)
    doctor = run_gate(a, "doctor", "--remote")
    assert any(x.startswith("FIX") and "hides refs/gate/ claims or fences" in x for x in doctor.stdout.splitlines()), \
        doctor.stdout
    assert refs(bare) == before


def test_a_pushed_fence_the_remote_does_not_show_is_refused(tmp_path: Path) -> None:
    """The hand-over says a claim was taken (fence 1); a remote showing none lost or hides its refs/gate/."""
    bare = seed_bare(tmp_path)
    a = clone(f"file://{bare}", tmp_path / "a")
    assert run_gate(a, "claim").returncode == 0 and run_gate(a, "stamp").returncode == 0
    git(a, "commit", "-q", "--no-verify", "-am", "close-out under fence 1")
    assert run_gate(a, "release").returncode == 0
    git(bare, "config", "transfer.hideRefs", "refs/gate")
    proc = run_gate(a, "check", "--remote", "--only", "handoff-claim-remote")
    assert proc.returncode == 1 and "lost or hides its refs/gate/" in proc.stdout, proc.stdout + proc.stderr


# -- adv10: a change already pushed to another remote is still judged on the claims remote. --

def test_a_hand_over_change_pushed_to_a_fork_first_is_refused_on_origin(tmp_path: Path) -> None:
    bare = seed_bare(tmp_path)
    fork = tmp_path / "srv" / "fork.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(fork))
    a, b = clone(f"file://{bare}", tmp_path / "a"), clone(f"file://{bare}", tmp_path / "b")
    git(a, "remote", "add", "fork", f"file://{fork}")
    assert run_gate(a, "install-hooks", "--pre-push").returncode == 0
    git(a, "checkout", "-q", "-b", "feat")
    (a / "HANDOFF.md").write_text((a / "HANDOFF.md").read_text() + "- [ ] A's notes\n")
    git(a, "commit", "-q", "--no-verify", "-am", "A: close-out")
    assert subprocess.run(["git", "push", "-q", "fork", "feat"], cwd=a, capture_output=True).returncode == 0
    assert run_gate(b, "claim", "--session", "B", "--ttl", "1h").returncode == 0
    before = refs(bare)
    pushed = subprocess.run(["git", "push", "origin", "feat"], cwd=a, capture_output=True, text=True)
    assert pushed.returncode != 0, pushed.stdout + pushed.stderr
    assert f"clone {clone_id(b)}" in pushed.stdout, pushed.stdout
    assert refs(bare) == before and "refs/heads/feat" not in refs(bare)
    # A new branch that leaves the hand-over as origin has it still goes through while B holds the claim.
    git(a, "checkout", "-q", "-b", "other", "origin/main")
    (a / "code.txt").write_text("work\n")
    commit_all(a, "code only")
    fine = subprocess.run(["git", "push", "-q", "origin", "other"], cwd=a, capture_output=True, text=True)
    assert fine.returncode == 0, fine.stdout + fine.stderr
    assert "refs/heads/other" in refs(bare)


# -- adv15, the remote half: SHA-256 repositories and their 64-hex ids. --

def test_claims_through_a_sha256_remote(tmp_path: Path) -> None:
    probe = subprocess.run(["git", "init", "-q", "--object-format=sha256", str(tmp_path / "probe")],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("this git has no SHA-256")
    seed = init_repo(tmp_path / "seed", "--object-format=sha256")
    (seed / "README").write_text("hello\n")
    head = commit_all(seed, "first")
    assert len(head) == 64
    (seed / "HANDOFF.md").write_text(handoff_text(head))
    (seed / ".gate.yaml").write_text("claims:\n  remote: origin\n")
    commit_all(seed, "handoff")
    bare = tmp_path / "srv" / "remote.git"
    bare.parent.mkdir()
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    a, b = clone(f"file://{bare}", tmp_path / "a"), clone(f"file://{bare}", tmp_path / "b")
    claimed = run_gate(a, "claim", "--session", "A")
    assert claimed.returncode == 0, claimed.stdout + claimed.stderr
    ref = claim_ref(a)
    assert len(refs(bare)[ref]) == 64
    listed = run_gate(b, "claims", "--remote")
    assert listed.returncode == 0 and f"clone {clone_id(a)}" in listed.stdout, listed.stdout + listed.stderr
    denied = run_gate(b, "claim")
    assert denied.returncode == 1 and f"clone {clone_id(a)}" in denied.stdout, denied.stdout + denied.stderr
    (b / "HANDOFF.md").write_text((b / "HANDOFF.md").read_text() + "- [ ] B's notes\n")
    git(b, "commit", "-q", "--no-verify", "-am", "B")
    line = f"refs/heads/main {git(b, 'rev-parse', 'HEAD')} refs/heads/main {git(b, 'rev-parse', 'HEAD~1')}\n"
    pushed = subprocess.run([str(GATE_BIN), "check", "--pre-push", "--remote", "--only",
                             "handoff-claim-remote"], cwd=b, input=line, capture_output=True, text=True, timeout=60)
    assert pushed.returncode == 1 and f"clone {clone_id(a)}" in pushed.stdout, pushed.stdout + pushed.stderr
    released = run_gate(a, "release", "--session", "A")
    assert released.returncode == 0 and ref not in refs(bare), released.stdout + released.stderr
