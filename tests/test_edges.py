"""I/O at the edges: a closed pipe, a full disk, a FIFO planted in the state dir, SIGKILL.

Each test is the attack it prevents, run against the installed `gate` as a separate process, with
what must not change snapshotted before and after. The faults are real: a pipe whose reader is
gone, `/dev/full` as stdout, `mkfifo` where the journal was, a file size limit (RLIMIT_FSIZE, set in
the child only) standing in for a full state disk, and SIGKILL at random moments.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

import pytest
from conftest import GATE_BIN, flag_records, git, run_gate

from gates.domain import journal
from gates.infra.git import discover

SENTINEL = b"No work package.\n"
PACKAGE = b"# Work package\n\n## Goal\nShip.\n\n## Plan\n1. do it\n\n## Done when\nshipped\n"
ERRORS = {"full": "No space left on device", "closed": "Broken pipe"}


def _gate_to(cwd: Path, stdout: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`gate ARGS` with stdout a closed pipe (`closed`) or `/dev/full` (`full`)."""
    assert GATE_BIN
    if stdout == "full":
        with open("/dev/full", "wb") as full:
            return subprocess.run([GATE_BIN, *args], cwd=cwd, stdout=full, stderr=subprocess.PIPE, text=True,
                                  stdin=subprocess.DEVNULL, timeout=timeout)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the gate writes a byte
    try:
        return subprocess.run([GATE_BIN, *args], cwd=cwd, stdout=write_end, stderr=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL, timeout=timeout)
    finally:
        os.close(write_end)


def _copies(repo: Path) -> dict[str, bytes]:
    folder = repo / ".git" / "gate" / "mailbox"
    if not folder.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.md")) if not p.name.startswith(".")}


@pytest.mark.parametrize("stdout", ["closed", "full"])
def test_mailbox_take_to_a_closed_pipe_or_a_full_disk_keeps_the_package(repo: Path, stdout: str) -> None:
    box = repo / "WORKPACKAGE.md"
    box.write_bytes(PACKAGE)
    proc = _gate_to(repo, stdout, "mailbox", "take")
    assert box.read_bytes() == PACKAGE  # not cleared: nothing was delivered
    [(name, kept)] = _copies(repo).items()
    assert kept == PACKAGE
    copy = repo / ".git" / "gate" / "mailbox" / name
    message = (f"the work package was not delivered (cannot write to stdout: {ERRORS[stdout]}): it is still in "
               f"WORKPACKAGE.md, and a copy is kept in {copy}")
    assert (proc.returncode, proc.stderr) == (3, f"gate: {message}\n")
    [flag] = flag_records(repo / ".git")
    assert (flag["reason"], flag["exit_code"], flag["message"]) == ("io-error", 3, message)
    # The next take, to a working stdout, delivers it, clears the file and keeps a second copy.
    taken = run_gate(repo, "mailbox", "take", process=True)
    assert (taken.returncode, taken.stdout) == (0, PACKAGE.decode())
    assert box.read_bytes() == SENTINEL
    [second] = [n for n in _copies(repo) if n != name]
    assert taken.stderr == (f"gate: took the work package from WORKPACKAGE.md; a copy is kept in "
                            f"{copy.parent / second}\n")
    [entry] = [json.loads(line) for line in (repo / ".git/gate/journal.jsonl").read_text().splitlines()
               if json.loads(line)["action"] == "mailbox-taken"]
    assert entry["details"] == {"path": "WORKPACKAGE.md", "bytes": len(PACKAGE), "cleared": True,
                                "sha256": hashlib.sha256(PACKAGE).hexdigest(), "copy": str(copy.parent / second)}


def _big_package() -> bytes:
    steps = "".join(f"{i}. step {i:06d} " + "x" * 60 + "\n" for i in range(1, 4001))  # ~300 KB: more than a pipe holds
    return f"# Work package\n\n## Goal\nShip.\n\n## Plan\n{steps}\n## Done when\nshipped\n".encode()


def _drain(stream: IO[bytes], into: list[bytes]) -> None:
    into.append(stream.read())


@pytest.mark.slow
def test_sigkill_torture_the_package_is_always_in_the_file_the_output_or_a_copy(repo: Path) -> None:
    """`gate mailbox take` killed at random moments, its output drained or stalled (a full pipe blocks it)."""
    assert GATE_BIN
    package, box = _big_package(), repo / "WORKPACKAGE.md"
    box.write_bytes(package)
    start = time.monotonic()
    assert run_gate(repo, "mailbox", "take", process=True).stdout == package.decode()  # the whole run, unkilled
    span = (time.monotonic() - start) * 1.3
    rng = random.Random(20261201)
    tries, cleared, deadline = 0, 0, time.monotonic() + 45
    while tries < 120 and time.monotonic() < deadline:
        if box.read_bytes() != package:
            box.write_bytes(package)  # the next package, as its author would write it
        before = set(_copies(repo))
        proc = subprocess.Popen([GATE_BIN, "mailbox", "take"], cwd=repo, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        assert proc.stdout is not None
        chunks: list[bytes] = []
        reader = threading.Thread(target=_drain, args=(proc.stdout, chunks))
        drained = rng.random() < 0.5
        if drained:
            reader.start()
        time.sleep(rng.uniform(0, span))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if not drained:
            reader.start()  # what the dead writer left in the pipe
        reader.join(timeout=30)
        proc.stdout.close()
        tries += 1
        output, now, copies = b"".join(chunks), box.read_bytes(), _copies(repo)
        assert now in (package, SENTINEL), f"try {tries}: the mailbox file is torn"
        assert all(kept == package for kept in copies.values()), f"try {tries}: a torn copy"
        if now == SENTINEL:  # cleared only after the whole package was delivered and a copy kept
            cleared += 1
            assert output == package, f"try {tries}: cleared, but only {len(output)} bytes were delivered"
            assert set(copies) - before, f"try {tries}: cleared without a copy"
        assert package in (now, output) or package in copies.values(), f"try {tries}: the package is lost"
    print(f'torture: {tries} kills, {cleared} after the clear, span {span:.2f}s')
    assert tries >= 50
    assert 0 < cleared < tries  # kills landed both before and after the clear
    assert journal.verify(discover(repo, {})).ok


COMMANDS = [
    ["check"], ["check", "--format", "json"], ["config"], ["config", "--format", "json"], ["schema", "config"],
    ["flags"], ["init"], ["claim"], ["release"], ["claims"], ["brief"], ["brief", "--format", "claude"], ["stamp"],
    ["journal", "--verify"], ["archive"], ["render"], ["mailbox", "take"], ["doctor"], ["locks"], ["--version"],
    ["record", "new", "a title"], ["install-hooks"],
]


@pytest.mark.parametrize("stdout", ["full", "closed"])
def test_every_command_to_a_full_or_closed_stdout_exits_3_with_one_line(repo: Path, stdout: str) -> None:
    for argv in COMMANDS:
        proc = _gate_to(repo, stdout, *argv)
        line = f"gate: cannot write to stdout: {ERRORS[stdout]}"
        assert proc.returncode == 3 and proc.stderr.startswith(line), (argv, proc.returncode, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, (argv, proc.stderr)
    # A command that changed a file before its output was lost says what it did, in its flag.
    [said] = [r["message"] for r in flag_records(repo / ".git")
              if r["reason"] == "io-error" and str(r["command"]) == "gate stamp"]
    head = git(repo, "rev-parse", "HEAD")
    digest = hashlib.sha256((repo / "HANDOFF.md").read_bytes()).hexdigest()
    assert said == (f"cannot write to stdout: {ERRORS[stdout]} (the output is lost; done before it: stamped "
                    f"HANDOFF.md: ref {head}, sha256 {digest})")


def test_a_fifo_planted_as_the_journal_blocks_no_command(repo: Path) -> None:
    state = repo / ".git" / "gate"
    state.mkdir()
    fifo = state / "journal.jsonl"
    os.mkfifo(fifo)
    handoff_before = (repo / "HANDOFF.md").read_bytes()
    refusing = (f"refusing {fifo}: not a regular file (a FIFO or a device?) where the gate keeps its own files")
    hint = " — `gate journal --repair` moves it aside and starts a new chain"
    stamped = run_gate(repo, "stamp", timeout=20)  # each would wait forever on the FIFO today
    digest = hashlib.sha256((repo / "HANDOFF.md").read_bytes()).hexdigest()
    assert (stamped.returncode, stamped.stdout) == (
        3, f"stamped HANDOFF.md: ref {git(repo, 'rev-parse', 'HEAD')}, sha256 {digest}\n")
    assert stamped.stderr.splitlines()[0] == f"gate: stamp: done, but it is not recorded in the journal: {refusing}{hint}"
    assert (repo / "HANDOFF.md").read_bytes() != handoff_before  # what stdout says is what is on disk
    claim = run_gate(repo, "claim", timeout=20)
    assert claim.returncode == 3
    assert claim.stderr.splitlines()[0] == f"gate: claim-granted: done, but it is not recorded in the journal: {refusing}{hint}"
    listing = run_gate(repo, "journal", timeout=20)
    assert (listing.returncode, listing.stderr.splitlines()[0]) == (3, f"gate: {refusing}{hint}")
    verified = run_gate(repo, "journal", "--verify", timeout=20)
    assert (verified.returncode, verified.stdout) == (1, f"journal broken: {refusing}\n")
    doctor = run_gate(repo, "doctor", timeout=20)
    assert doctor.returncode == 1 and f"FIX   journal broken: {refusing} — `gate journal --repair`" in doctor.stdout
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # never opened, never replaced
    repaired = run_gate(repo, "journal", "--repair", timeout=20)
    assert repaired.returncode == 0, repaired.stderr
    [moved] = (state / "lost+found").glob("*/journal.jsonl")
    assert stat.S_ISFIFO(os.lstat(moved).st_mode)  # kept as evidence, not deleted
    assert run_gate(repo, "journal", "--verify", process=True).returncode == 0


def test_stamp_on_a_full_state_disk_prints_the_new_hash_and_the_failed_step(repo: Path) -> None:
    """The hand-over is written; the journal append hits the file size limit (EFBIG, as ENOSPC would)."""
    journal.append(discover(repo, {}), "padding", {"pad": "x" * 5000})  # the journal is past the limit below
    state = repo / ".git" / "gate"
    journal_before, head_before = (state / "journal.jsonl").read_bytes(), (state / "journal.head").read_bytes()

    def limit() -> None:  # in the child only: any file write past 4 KiB fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    assert GATE_BIN
    proc = subprocess.run([GATE_BIN, "stamp"], cwd=repo, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, preexec_fn=limit)
    digest = hashlib.sha256((repo / "HANDOFF.md").read_bytes()).hexdigest()
    assert proc.returncode == 3
    assert proc.stdout == f"stamped HANDOFF.md: ref {git(repo, 'rev-parse', 'HEAD')}, sha256 {digest}\n"
    assert proc.stderr.splitlines()[0] == ("gate: stamp: done, but it is not recorded in the journal: cannot write "
                                           f"{state / 'journal.jsonl'} (append): File too large")
    assert "Traceback" not in proc.stderr
    assert (state / "journal.jsonl").read_bytes() == journal_before  # nothing torn, nothing half-written
    assert (state / "journal.head").read_bytes() == head_before
    assert run_gate(repo, "journal", "--verify", process=True).returncode == 0


@pytest.mark.parametrize("expect", ["nothex", "a" * 63, "g" * 64, "a" * 65, "", "A" * 64 + "\n"])
def test_a_malformed_expect_is_a_usage_error_not_a_concurrent_change(repo: Path, expect: str) -> None:
    before = (repo / "HANDOFF.md").read_bytes()
    proc = run_gate(repo, "stamp", "--expect", expect, process=True)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"gate: --expect takes the 64 hex digits of a sha256 (as `gate stamp` prints it), not {expect!r}\n"
    assert (repo / "HANDOFF.md").read_bytes() == before
    assert flag_records(repo / ".git") == []  # a usage error is not flagged
    good = run_gate(repo, "stamp", "--expect", hashlib.sha256(before).hexdigest().upper(), process=True)
    assert good.returncode == 0, good.stderr
