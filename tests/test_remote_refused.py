"""A remote that will not be written, as the failures come: the whole push refused over smart HTTP with no per-ref
answer (a 403 or a 500 on git-receive-pack, the connection cut), a receive-pack that refuses our ref (a pre-receive
hook, an unpacker error, a hostile report), and a push applied whose answer was lost. None of them is a lost race:
the gate says the remote could not be written, in git's words cleaned and cut (exit 3, `remote-unreachable`), or,
when the remote's refs show the push landed, that it did. A compare-and-swap lost at the server is still a race.
Found in review: a renewal refused whole read as "another clone won the race", naming this clone's own claim.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import pytest
from conftest import flag_records, git, run_gate
from remote_helpers import (
    HttpServer,
    answer_lost,
    claim_ref,
    clone,
    clone_id,
    cut_off,
    moved_first,
    refs,
    refused_with,
    remote_record,
    reported,
    seed_bare,
)


class Served(NamedTuple):
    server: HttpServer
    bare: Path
    url: str


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    bare = seed_bare(tmp_path)
    server = HttpServer(tmp_path / "srv")
    try:
        yield Served(server, bare, server.url("remote.git"))
    finally:
        server.stop()


def local_state(tree: Path) -> dict[str, bytes]:
    """This clone's claim records and the remote claim it remembers holding: what a refused push must not change."""
    gate = tree / ".git" / "gate"
    return {str(p.relative_to(gate)): p.read_bytes() for pattern in ("claims/*.json", "remote/held-*.json")
            for p in gate.glob(pattern)}


def journal(tree: Path) -> list[str]:
    path = tree / ".git" / "gate" / "journal.jsonl"
    return [json.loads(line)["action"] for line in path.read_text().splitlines()] if path.exists() else []


def unwritable(proc: subprocess.CompletedProcess[str], tree: Path, *said: str) -> None:
    """The remote could not be written, said so, with git's words; never a race, never "cannot be reached"."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out
    assert "Traceback" not in out
    assert "could not be written" in proc.stderr, out
    for text in said:
        assert text in proc.stderr, (text, out)
    for wrong in ("won the race", "kept changing", "cannot be reached", f"by worktree {tree.resolve()}"):
        assert wrong not in out, (wrong, out)
    assert flag_records(tree / ".git")[-1]["reason"] == "remote-unreachable"


# -- The whole push refused, no per-ref answer: what the gate says for a take, a renewal and a release. --

REFUSALS: dict[str, tuple[Callable[..., None], str]] = {
    "403": (refused_with(403), "HTTP 403"),
    "500": (refused_with(500), "HTTP 500"),
    "cut": (cut_off, "Empty reply from server"),
    # an answer that names no ref of ours: git prints a "!" line for it, yet it is no answer
    "no-status": (reported([b"unpack ok"]), "[remote failure] (remote failed to report status)"),
}


@pytest.mark.parametrize(("operation", "refusal"), [("renew", "403"), ("renew", "500"), ("renew", "cut"),
                                                    ("renew", "no-status"), ("take", "403"), ("take", "no-status"),
                                                    ("release", "403")])
def test_a_push_refused_whole_is_an_unwritable_remote_not_a_lost_race(operation: str, refusal: str, served: Served,
                                                                     tmp_path: Path) -> None:
    a = clone(served.url, tmp_path / "a")
    if operation != "take":
        assert run_gate(a, "claim", "--ttl", "2h").returncode == 0
    remote_before, local_before, events = refs(served.bare), local_state(a), journal(a)
    policy, said = REFUSALS[refusal]
    served.server.answer_pushes(policy)
    proc = run_gate(a, *(["release"] if operation == "release" else ["claim", "--note", "a new record"]))
    unwritable(proc, a, said, "remote origin")
    assert refs(served.bare) == remote_before, "a refused push changed the remote"
    if operation == "release":  # the local claim goes first (docs/claims.md): the remote one is said to stay
        assert "is still there (until its TTL runs out, if it has one)" in proc.stderr
    else:
        assert local_state(a) == local_before, "a refused push changed this clone's claim"
        assert not [e for e in journal(a)[len(events):] if e.startswith("remote-claim-")]
    served.server.answer_pushes(None)  # the remote takes pushes again: the claim is this clone's as before
    again = run_gate(a, "claim")
    assert again.returncode == 0, again.stdout + again.stderr


# -- receive-pack answers for our ref, and refuses it: the remote refusing, in its words, cleaned and cut. --

HOSTILE_HOOK = """#!/bin/sh
printf 'policy: refs/gate/ is not for you \\033[2J\\033]0;owned\\007 \\342\\200\\256evil\\n' >&2
i=0
while [ $i -lt 300 ]; do printf 'more noise %s %0500d\\n' $i 0 >&2; i=$((i+1)); done
exit 1
"""


def test_a_pre_receive_hook_that_declines_is_the_remote_refusing_our_ref(served: Served, tmp_path: Path) -> None:
    a = clone(served.url, tmp_path / "a")
    hook = served.bare / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)

    def declining(on: bool) -> None:
        if on:
            hook.write_text(HOSTILE_HOOK)
            hook.chmod(0o755)
        else:
            hook.unlink()

    for step in ("take", "renew", "release", "flags"):
        if step in ("renew", "release"):
            declining(False)
            assert run_gate(a, "claim", "--ttl", "2h").returncode == 0
        remote_before, local_before = refs(served.bare), local_state(a)
        declining(True)
        proc = run_gate(a, *{"take": ["claim"], "renew": ["claim", "--note", "renewed"], "release": ["release"],
                             "flags": ["flags", "--push"]}[step])
        unwritable(proc, a, "refused", "pre-receive hook declined", "policy: refs/gate/ is not for you")
        assert "\x1b" not in proc.stderr and "\u202e" not in proc.stderr and "\x07" not in proc.stderr
        assert len(proc.stderr) < 2000, len(proc.stderr)  # 150,000 characters of hook output, cut
        assert refs(served.bare) == remote_before, step
        if step in ("take", "renew"):
            assert local_state(a) == local_before, step


def test_an_unpacker_error_of_a_real_receive_pack_is_the_remote_refusing_our_ref(tmp_path: Path) -> None:
    """receive.maxInputSize: git's own receive-pack refuses the pack, with a per-ref `unpacker error` (file://, where
    the far side's hooks never run, so this is how a local remote refuses)."""
    bare = seed_bare(tmp_path)
    a = clone(f"file://{bare}", tmp_path / "a")
    assert run_gate(a, "claim", "--ttl", "2h").returncode == 0
    git(bare, "config", "receive.maxInputSize", "10")
    remote_before, local_before = refs(bare), local_state(a)
    proc = run_gate(a, "claim", "--note", "renewed")  # a record that differs: a push of the same one sends nothing
    unwritable(proc, a, "unpacker error", "pack exceeds maximum allowed size")
    assert refs(bare) == remote_before and local_state(a) == local_before


def test_a_hostile_report_status_is_said_cleaned_and_bounded(served: Served, tmp_path: Path) -> None:
    """What a server reports (`unpack <why>`, `ng <ref> <why>`) is remote text: git prints it as it came, a line it
    ends being a line of git's porcelain output too."""
    a = clone(served.url, tmp_path / "a")
    assert run_gate(a, "claim", "--ttl", "2h").returncode == 0
    ref = claim_ref(a).encode()
    remote_before, local_before = refs(served.bare), local_state(a)
    forged_ok = b"\n*\t" + b"0" * 40 + b":" + ref + b"\t[up to date]"  # a status line of its own, after ours
    served.server.answer_pushes(reported([b"unpack disk \x1b[31mfull\xe2\x80\xae " + b"x" * 30000,
                                          b"ng " + ref + b" spoiled \x1b]0;t\x07" + b"y" * 30000 + forged_ok]))
    proc = run_gate(a, "claim", "--note", "renewed")
    unwritable(proc, a, "refused", "spoiled", "remote unpack failed: disk")
    assert "\x1b" not in proc.stderr and "\u202e" not in proc.stderr and "\x07" not in proc.stderr
    assert len(proc.stderr) < 2000, len(proc.stderr)
    assert refs(served.bare) == remote_before and local_state(a) == local_before


def test_a_remote_that_says_lease_lost_while_holding_our_claim_is_no_lost_race(served: Served, tmp_path: Path) -> None:
    """A lost lease is a race only while the ref moves: a remote that answers "failed to update ref" every time while
    it holds this clone's claim as read cannot be written, whatever it says."""
    a = clone(served.url, tmp_path / "a")
    claim, fence = claim_ref(a).encode(), claim_ref(a, "refs/gate/fences").encode()
    served.server.answer_pushes(reported([b"unpack ok", b"ng " + claim + b" failed to update ref",
                                          b"ng " + fence + b" atomic push failure"]))
    taken = run_gate(a, "claim")
    assert taken.returncode == 3 and "was not taken: remote origin refused 4 pushes in a row as leases lost" \
        in taken.stderr, taken.stdout + taken.stderr
    assert not [r for r in refs(served.bare) if r.startswith("refs/gate/")]
    served.server.answer_pushes(None)
    assert run_gate(a, "claim", "--ttl", "2h").returncode == 0
    remote_before, local_before = refs(served.bare), local_state(a)
    served.server.answer_pushes(reported([b"unpack ok", b"ng " + claim + b" failed to update ref"]))
    proc = run_gate(a, "claim", "--note", "renewed")
    unwritable(proc, a, "4 times in the words of a lost lease, yet holds this clone's claim as it was read")
    assert refs(served.bare) == remote_before and local_state(a) == local_before


# -- The push was applied; only its answer was lost: the remote's refs tell, and the claim is taken. --

def test_a_push_applied_whose_answer_was_lost_is_taken_as_landed(served: Served, tmp_path: Path) -> None:
    a = clone(served.url, tmp_path / "a")
    served.server.answer_pushes(answer_lost)
    took = run_gate(a, "claim", "--ttl", "2h", "--note", "first")
    assert took.returncode == 0, took.stdout + took.stderr
    assert "on remote origin: fence 1" in took.stdout
    record = remote_record(served.bare, claim_ref(a))
    assert (record["clone"], record["note"], record["fence"]) == (clone_id(a), "first", 1)
    assert list((a / ".git" / "gate" / "claims").glob("*.json")), "the local claim was not taken with the remote one"
    renewed = run_gate(a, "claim", "--note", "second")
    assert renewed.returncode == 0 and renewed.stdout.startswith("renewed"), renewed.stdout + renewed.stderr
    assert remote_record(served.bare, claim_ref(a))["note"] == "second"
    released = run_gate(a, "release")
    assert released.returncode == 0, released.stdout + released.stderr
    assert claim_ref(a) not in refs(served.bare)


# -- The guard: a compare-and-swap lost at the server (the ref moved after the advertisement) is still a race. --

def test_a_compare_and_swap_lost_at_the_server_is_still_a_lost_race(served: Served, tmp_path: Path) -> None:
    a, b = clone(served.url, tmp_path / "a"), clone(served.url, tmp_path / "b")
    assert run_gate(b, "claim", "--session", "B").returncode == 0
    ref = claim_ref(b)
    theirs = refs(served.bare)[ref]
    assert run_gate(b, "release", "--session", "B").returncode == 0

    def b_claims_again() -> None:  # b's claim is back between a's read and a's push
        git(served.bare, "update-ref", ref, theirs)
        served.server.answer_pushes(None)

    served.server.answer_pushes(moved_first(b_claims_again))
    taken = run_gate(a, "claim")
    assert taken.returncode == 1, taken.stdout + taken.stderr
    assert f"clone {clone_id(b)}" in taken.stdout and "session B" in taken.stdout
    assert refs(served.bare)[ref] == theirs and not list((a / ".git" / "gate" / "claims").glob("*.json"))

    git(served.bare, "update-ref", "-d", ref)
    assert run_gate(a, "claim", "--ttl", "2h").returncode == 0  # a holds it now; b's record comes back before a renews
    served.server.answer_pushes(moved_first(b_claims_again))
    renewed = run_gate(a, "claim", "--note", "renewed")
    assert renewed.returncode == 1, renewed.stdout + renewed.stderr
    assert f"clone {clone_id(b)}" in renewed.stdout and f"clone {clone_id(a)}" not in renewed.stdout
