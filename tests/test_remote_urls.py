"""Remote URLs are judged as git reads them (issue 25): after git's own rewriting (url.<base>.insteadOf,
pushInsteadOf, pushurl), percent-decoding of file:// URLs, ~ expansion and the folders enter_repo() tries; a
remote that leads into this repository is refused with one line naming remote.<name>.url, whatever the spelling."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import call_gate, git, run_gate
from remote_helpers import clone, refs, seed_bare

from gates.infra import gitnet
from gates.infra.errors import GateError


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    bare = seed_bare(tmp_path, "claims:\n  remote: origin\n  remote_timeout: 10s\n")
    tree = clone(f"file://{bare}", tmp_path / "repo")
    (tmp_path / "outside").mkdir()
    return tree, bare


def _own_refs(tree: Path) -> list[str]:
    return git(tree, "for-each-ref", "--format=%(refname)", "refs/gate").split()


def _refused(tree: Path, env: dict[str, str] | None = None) -> str:
    proc = run_gate(tree, "claim", "--session", "A", env=env)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "remote.origin.url refused" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert _own_refs(tree) == []  # nothing was written into this repository's own git dir
    assert not list((tree / ".git" / "gate").glob("claims/*.json")) if (tree / ".git" / "gate").exists() else True
    return proc.stderr


SPELLINGS = {
    "percent-dots": "file://{t}/outside/%2e%2e/repo/.git",
    "percent-upper-slash": "file://{t}/outside/%2E%2E%2Frepo%2F.git",
    "percent-root": "file://{t}%2Frepo%2F.git",
    "file-host": "file://localhost{t}/repo/.git",
    "file-bracketed-host": "file://[::1]{t}/repo",
    "plain-toplevel": "{t}/repo",
    "dot": ".",
    "dot-git": "./.git",
    "dot-dot": "../repo",
    "tilde": "~/repo/.git",
    "symlink": "{t}/outside/link",
    "gitfile": "{t}/outside/far",
    "commondir": "{t}/outside/fake",
}


@pytest.mark.parametrize("form", sorted(SPELLINGS))
def test_a_remote_into_this_repository_is_refused_whatever_the_spelling(form: str, tmp_path: Path) -> None:
    tree, _ = _setup(tmp_path)
    outside = tmp_path / "outside"
    (outside / "link").symlink_to(tree)
    (outside / "far.git").write_text(f"gitdir: {tree}/.git\n")  # enter_repo() tries `far.git` and follows it
    fake = outside / "fake"
    for sub in ("objects", "refs"):
        (fake / sub).mkdir(parents=True)
    (fake / "HEAD").write_text("ref: refs/heads/main\n")
    (fake / "commondir").write_text(f"{tree}/.git\n")  # its refs would be this repository's
    git(tree, "remote", "set-url", "origin", SPELLINGS[form].format(t=tmp_path))
    _refused(tree, env={**os.environ, "HOME": str(tmp_path)})


@pytest.mark.parametrize("how", ["insteadOf", "pushInsteadOf", "pushurl"])
def test_the_url_is_judged_after_the_repositorys_own_rewriting(how: str, tmp_path: Path) -> None:
    tree, bare = _setup(tmp_path)
    if how == "insteadOf":
        git(tree, "config", f"url.{tree}/.insteadOf", "gate-test:")
        git(tree, "remote", "set-url", "origin", "gate-test:.git")
    elif how == "pushInsteadOf":
        git(tree, "config", f"url.{tree}/.git.pushInsteadOf", f"file://{bare}")
    else:
        git(tree, "config", "remote.origin.pushurl", f"file://{tree}/outside/%2e%2e/.git")
    before = refs(bare)
    _refused(tree)
    assert refs(bare) == before


@pytest.mark.parametrize("rule", ["insteadOf", "pushInsteadOf"])
def test_a_rewriting_rule_that_names_a_helper_is_refused_and_runs_nothing(rule: str, tmp_path: Path) -> None:
    tree, bare = _setup(tmp_path)
    ran = tmp_path / "canary-ran"
    program = tmp_path / "canary"
    program.write_text(f"#!/bin/sh\ntouch {ran}\n")
    program.chmod(0o755)
    git(tree, "config", f"url.ext::sh -c {program}% .{rule}", "file://")
    assert "transport helper" in _refused(tree)
    assert not ran.exists()


def test_two_push_urls_are_refused(tmp_path: Path) -> None:
    tree, bare = _setup(tmp_path)
    git(tree, "config", "--add", "remote.origin.pushurl", f"file://{bare}")
    git(tree, "config", "--add", "remote.origin.pushurl", f"file://{tmp_path}/outside")
    assert "2 URLs" in _refused(tree)


@pytest.mark.parametrize("name", ["far x.git", "pct%41.git"])
def test_a_far_repository_is_found_as_git_finds_it(name: str, tmp_path: Path) -> None:
    """Decoding is git's, once: `%20` is a space in a file:// URL; a plain path keeps its `%` (no second decoding)."""
    tree, bare = _setup(tmp_path)
    far = tmp_path / name
    git(tmp_path, "clone", "-q", "--bare", str(bare), str(far))
    url = f"file://{tmp_path}/far%20x.git" if " " in name else str(far)
    git(tree, "remote", "set-url", "origin", url)
    proc = run_gate(tree, "claim", "--session", "A")
    assert proc.returncode == 0, proc.stderr
    assert any(ref.startswith("refs/gate/claims/") for ref in refs(far))
    assert not (tmp_path / "pctA.git").exists()


def test_url_decode_is_gits() -> None:
    assert gitnet._file_path("file://h/a%2e%2E%2f%zz%4", "k") == "/a../%zz%4"
    assert gitnet._file_path("file://h/a+b%25", "k") == "/a+b%"
    assert gitnet._file_path("file://[a/b]/x%2Fy", "k") == "/x/y"
    assert gitnet._file_path("file://h/p", "k") == "/p"
    with pytest.raises(GateError, match="control character"):
        gitnet._file_path("file:///a%00b", "k")
    with pytest.raises(GateError, match="names no path"):
        gitnet._file_path("file://host", "k")


def test_the_refusal_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    tree, _ = _setup(tmp_path)
    git(tree, "remote", "set-url", "origin", f"file://{tmp_path}/outside/%2e%2e/repo/.git")
    code, out, err = call_gate(tree, "claim", "--session", "A", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 3 and out == "", out
    assert err.count("\n") == 1 and "remote.origin.url refused" in err and "leads into this repository" in err, err
    assert _own_refs(tree) == []
