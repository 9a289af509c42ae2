"""`gate doctor --remote` against a remote that will not be written, as test_remote_refused.py's server answers: the
probe's pushes (the create, its leased delete, the --atomic pair and its clean-up) are judged as every remote-claim
write is (remote.push), and each outcome is said in plain words. A push applied whose answer was lost is a push that
landed: the doctor goes on and deletes its probe refs. Found in review: the doctor said "refuses a push" for it and
left its probe ref on the remote, and guessed "(a host whose hooks allow only heads and tags?)" for a 403, a 500 or a
cut connection instead of saying what git said.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable, NamedTuple

import pytest
from conftest import flag_records, git, run_gate
from remote_helpers import HttpServer, answer_lost, clone, cut_off, refs, refused_with, seed_bare


class Served(NamedTuple):
    server: HttpServer
    bare: Path
    url: str


@pytest.fixture
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    """A bare remote over smart HTTP, seeded before the server starts (the server enables pushes in it)."""
    bare = seed_bare(tmp_path)
    server: HttpServer = request.getfixturevalue("http_server")
    return Served(server, bare, server.url("remote.git"))


def probes(bare: Path) -> list[str]:
    return [ref for ref in refs(bare) if ref.startswith("refs/gate/probe/") or "/probe-" in ref]


def doctor(tree: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The doctor's run and its lines about the remote."""
    proc = run_gate(tree, "doctor", "--remote")
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc, [line for line in proc.stdout.splitlines() if "remote origin" in line]


def unwritable(proc: subprocess.CompletedProcess[str], lines: list[str], tree: Path, *said: str) -> str:
    """One FIX line: the remote could not be written, in git's words; no guess; the doctor's flag about origin."""
    [line] = [x for x in lines if x.startswith("FIX ")]
    assert line.startswith("FIX   remote origin could not be written: it "), line
    assert "the doctor's probe push creating refs/gate/probe/" in line and "claims cannot be taken there" in line, line
    for text in said:
        assert text in line, (text, line)
    assert "allow only heads" not in proc.stdout and "refuses a push" not in proc.stdout, proc.stdout
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [f["about"] for f in flag_records(tree / ".git") if f["reason"] == "doctor"] == [{"remote": "origin"}]
    return line


def test_a_probe_push_applied_whose_answer_was_lost_goes_on_and_leaves_no_probe_ref(served: Served,
                                                                                    tmp_path: Path) -> None:
    a = clone(served.url, tmp_path / "a")
    before = refs(served.bare)
    served.server.answer_pushes(answer_lost)
    proc, lines = doctor(a)
    assert any(x.startswith("ok    remote origin accepts a create-only push under refs/gate/ and its leased delete")
               for x in lines), proc.stdout
    assert "ok    remote origin applies --atomic pushes" in proc.stdout, proc.stdout
    assert not [x for x in lines if x.startswith("FIX")], proc.stdout
    assert refs(served.bare) == before and not probes(served.bare), "the doctor left a probe ref behind"


NO_ANSWER: dict[str, tuple[Callable[..., None], str]] = {
    "403": (refused_with(403), "HTTP 403"),
    "500": (refused_with(500), "HTTP 500"),
    "cut": (cut_off, "Empty reply from server"),
}


@pytest.mark.parametrize("refusal", sorted(NO_ANSWER))
def test_a_probe_push_refused_whole_says_the_remote_could_not_be_written(refusal: str, served: Served,
                                                                         tmp_path: Path) -> None:
    a = clone(served.url, tmp_path / "a")
    before = refs(served.bare)
    policy, said = NO_ANSWER[refusal]
    served.server.answer_pushes(policy)
    proc, lines = doctor(a)
    unwritable(proc, lines, a, "gave no answer to", "git said: ", said)
    assert refs(served.bare) == before and not probes(served.bare)


# What it says is remote text: escapes, a bidi override, then 50,000 characters more.
DECLINING_HOOK = ("#!/bin/sh\nprintf 'policy: refs/gate/ is not for you \\033[2J\\342\\200\\256\\n' >&2\n"
                  "yes 'more noise' | head -c 50000 >&2\nexit 1\n")


def test_a_pre_receive_hook_that_declines_the_probe_is_the_remote_refusing_it(served: Served, tmp_path: Path) -> None:
    a = clone(served.url, tmp_path / "a")
    hook = served.bare / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(DECLINING_HOOK)
    hook.chmod(0o755)
    before = refs(served.bare)
    proc, lines = doctor(a)
    line = unwritable(proc, lines, a, "it refused the doctor's probe push", "pre-receive hook declined",
                      "policy: refs/gate/ is not for you")
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout
    assert len(line) < 1000, len(line)  # 50,000 characters of hook output, cut
    assert refs(served.bare) == before and not probes(served.bare)


def test_a_probe_push_with_no_answer_and_no_read_names_the_ref_to_remove(served: Served, tmp_path: Path) -> None:
    """Applied, then the remote cannot be read (here: gone from the server): whether the probe ref is there cannot
    be told, so the doctor names it and says how to remove it by hand."""
    a = clone(served.url, tmp_path / "a")
    moved = served.bare.with_name("away.git")

    def applied_then_gone(bridge: object) -> None:
        answer_lost(bridge)  # type: ignore[arg-type]
        served.bare.rename(moved)

    served.server.answer_pushes(applied_then_gone)
    proc, lines = doctor(a)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [left] = probes(moved)
    fixes = [x for x in lines if x.startswith("FIX")]
    assert fixes and all(left in x for x in fixes), proc.stdout
    assert "cannot be told" in fixes[0] and "claims cannot be taken" not in fixes[0], fixes
    assert f"remove it by hand (`git push origin --delete {left}`)" in fixes[-1], fixes
    assert "allow only heads" not in proc.stdout and "refuses a push" not in proc.stdout
    git(moved, "update-ref", "-d", left)
