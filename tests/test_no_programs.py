"""No program named by the repository ever runs: the attack.

A hostile repository sets every key of `.git/config` (and of a file it includes) that makes git run
a program to a canary: a script that leaves a marker file named after its key. Each canary is first
shown to fire under plain git, so the test would catch the gate reaching it; then every `gate`
command runs as a process and the marker folder must stay empty.
"""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import pytest
from conftest import commit_all, git, handoff_text, init_repo, run_gate

# Every hook name git knows (githooks(5)); each one is a canary in the repository's hooks folder.
HOOKS = ("applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
         "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
         "pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
         "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
         "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
         "post-index-change")

SIGNATURES = {  # a forged signature of each kind git verifies, and the program it hands it to
    "gpg.program": "-----BEGIN PGP SIGNATURE-----\n\n iQEzBAABCAAdFiEEforged\n -----END PGP SIGNATURE-----",
    "gpg.ssh.program": "-----BEGIN SSH SIGNATURE-----\n U1NIU0lHforged\n -----END SSH SIGNATURE-----",
    "gpg.x509.program": "-----BEGIN SIGNED MESSAGE-----\n MIAGCSqGforged\n -----END SIGNED MESSAGE-----",
}


class Canaries:
    """One script per key; running it leaves `ran-<key>` in the marker folder."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "canary-bin"
        self.markers = root / "canary-markers"
        self.bin.mkdir()
        self.markers.mkdir()

    def __call__(self, name: str, *, drain: bool = False) -> str:
        """The script for `name`; `drain` reads its stdin to the end first, so that git, still writing to
        it, meets no closed pipe (git dies of SIGPIPE there, and stops before the next canary it would reach)."""
        path = self.bin / name.replace("/", "-")
        read = "cat >/dev/null\n" if drain else ""
        path.write_text(f'#!/bin/sh\n{read}touch "{self.markers}/ran-{name.replace("/", "-")}"\nexit 0\n')
        path.chmod(0o755)
        return str(path)

    def fired(self) -> set[str]:
        return {p.name.removeprefix("ran-") for p in self.markers.iterdir()}

    def clear(self) -> None:
        for path in self.markers.iterdir():
            path.unlink()


def _forge_signed(repo: Path, parent: str, signature: str, message: str) -> str:
    """A commit carrying a signature header nobody made: `git hash-object -t commit` takes any text."""
    tree = git(repo, "write-tree")
    who = "Mallory <m@example.invalid> 1700000000 +0000"
    body = f"tree {tree}\nparent {parent}\nauthor {who}\ncommitter {who}\ngpgsig {signature}\n\n{message}\n"
    proc = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo, input=body,
                          capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def _on_a_tty(repo: Path, *args: str) -> None:
    """git with its output on a terminal, where it starts a pager."""
    leader, follower = pty.openpty()
    try:
        subprocess.run(["git", *args], cwd=repo, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
                       timeout=30, check=False)
    finally:
        os.close(follower)
        os.close(leader)


def _quietly(repo: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> None:
    subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, text=True, timeout=30, check=False,
                   env=env)


def hostile_repository(tmp_path: Path, canary: Canaries) -> tuple[Path, str, str]:
    """A repository whose every program-naming key is a canary; (its path, a base for --range)."""
    repo = init_repo(tmp_path / "repo")
    (repo / "README").write_text("hello\n")
    (repo / "external.dat").write_text("one\n")
    (repo / "process.txt").write_text("a long-running filter would read this\n")
    (repo / ".gitattributes").write_text("* diff=drv filter=flt merge=mrg\nprocess.txt filter=proc\nexternal.dat !diff\n")
    base = commit_all(repo, "first")
    (repo / "HANDOFF.md").write_text(handoff_text(base))
    (repo / "ARCHIVE.md").write_text("# Archive\n")
    (repo / "external.dat").write_text("two\n")
    (repo / "README").write_text("hello, reader\n")
    head = handoff = commit_all(repo, "handoff")
    # History the gate reads (`brief`'s log, `check --range`) runs through commits with forged signatures.
    for n, signature in enumerate(SIGNATURES.values()):
        (repo / "HANDOFF.md").write_text(handoff_text(head, target=f"Build thing {n}."))
        git(repo, "add", "HANDOFF.md")
        head = _forge_signed(repo, head, signature, f"signed {n}")
        git(repo, "update-ref", "refs/heads/main", head)
    # A staged change for `check`, and an unstaged one for the filters.
    (repo / "HANDOFF.md").write_text(handoff_text(head))
    (repo / "ARCHIVE.md").write_text("# Archive\nmore\n")
    git(repo, "add", "HANDOFF.md", "ARCHIVE.md")
    (repo / "README").write_text("hello again\n")
    os.utime(repo / "process.txt", (1_000_000_000, 1_000_000_000))  # not racily clean: git never re-reads it
    _quietly(repo, "update-index", "-q", "--refresh")

    # Somewhere to fetch from and to borrow objects from: a promisor remote and an alternate.
    other = init_repo(tmp_path / "other")
    (other / "x").write_text("x\n")
    commit_all(other, "other")
    (repo / ".git" / "objects" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{other}/.git/objects\n")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in HOOKS:
        (hooks / hook).symlink_to(canary(f"hook/{hook}"))
    allowed_signers = tmp_path / "allowed_signers"
    allowed_signers.write_text("")
    included = tmp_path / "included.gitconfig"
    included.write_text("".join(f"[{key.rpartition('.')[0]}]\n\t{key.rpartition('.')[2]} = {canary(key, drain=True)}\n"
                                for key in SIGNATURES)
                        + f"[gpg \"ssh\"]\n\tallowedSignersFile = {allowed_signers}\n[log]\n\tshowSignature = true\n")
    config = {
        "include.path": str(included),
        "core.fsmonitor": canary("core.fsmonitor"),
        "core.pager": canary("core.pager"),
        "core.editor": canary("core.editor"),
        "sequence.editor": canary("sequence.editor"),
        "core.sshCommand": canary("core.sshCommand"),
        "core.gitProxy": canary("core.gitProxy"),
        "core.askPass": canary("core.askPass"),
        "credential.helper": canary("credential.helper"),
        "core.alternateRefsCommand": canary("core.alternateRefsCommand"),
        "core.hooksPath": str(hooks),
        "diff.external": canary("diff.external"),
        "diff.drv.textconv": canary("diff.drv.textconv"),
        "diff.drv.command": canary("diff.drv.command"),
        "filter.flt.clean": canary("filter.flt.clean"),
        "filter.flt.smudge": canary("filter.flt.smudge"),
        "filter.proc.process": canary("filter.proc.process"),
        "merge.mrg.driver": canary("merge.mrg.driver"),
        "uploadpack.packObjectsHook": canary("uploadpack.packObjectsHook"),  # git honours it in no repo config
        "remote.origin.url": str(other),
        "remote.origin.uploadpack": canary("remote.origin.uploadpack"),
        "remote.origin.receivepack": canary("remote.origin.receivepack"),
        "remote.origin.promisor": "true",
        "protocol.ext.allow": "always",
        "protocol.allow": "always",
        "remote.ext.url": f"ext::{canary('protocol.ext')}",
        "core.repositoryformatversion": "1",
        "extensions.partialClone": "origin",
        **{f"pager.{cmd}": canary(f"pager.{cmd}") for cmd in (
            "log", "diff", "diff-tree", "rev-list", "rev-parse", "cat-file", "config", "symbolic-ref",
            "merge-base", "version", "show", "status")},
    }
    for key, value in config.items():
        git(repo, "config", key, value)
    # A partial clone lacking a blob the gate reads: reading it makes git fetch it from the promisor remote.
    missing = git(repo, "rev-parse", f"{handoff}:HANDOFF.md")
    (repo / ".git" / "objects" / missing[:2] / missing[2:]).unlink()
    return repo, base, missing


def _fire_each_under_plain_git(repo: Path, base: str) -> None:
    """Each key reached by plain git, so that a canary the gate never fires is a canary that works."""
    _quietly(repo, "status")                                          # core.fsmonitor
    _on_a_tty(repo, "log", "-1", "--no-show-signature")               # pager.log
    _on_a_tty(repo, "branch", "--list")                                # core.pager
    _quietly(repo, "log", "-3", "--format=%h")                        # log.showSignature: gpg.*.program
    _quietly(repo, "diff", base, "HEAD", "--", "external.dat")        # diff.external
    _quietly(repo, "diff", base, "HEAD", "--", "README")              # diff.drv.command
    _quietly(repo, "diff", "--cached", "--no-ext-diff", "HEAD", "--", "ARCHIVE.md")  # diff.drv.textconv
    _quietly(repo, "hash-object", "README")                           # filter.flt.clean
    _quietly(repo, "cat-file", "--filters", "HEAD:ARCHIVE.md")        # filter.flt.smudge
    _quietly(repo, "cat-file", "--filters", "HEAD:process.txt")        # filter.proc.process
    _quietly(repo, "commit", "--allow-empty")                         # hooks, core.editor (aborted: no message)
    # sequence.editor: `rebase -i` wants a clean tree, which the canary filters never leave; a clean
    # repository that includes this config shows the key reached.
    _quietly(repo.parent / "other", "-c", f"include.path={repo / '.git' / 'config'}", "rebase", "-i", "HEAD")
    _quietly(repo, "ls-remote", "ssh://example.invalid/x")            # core.sshCommand
    _quietly(repo, "ls-remote", "git://example.invalid/x")            # core.gitProxy
    _quietly(repo, "ls-remote", "ext")                                # protocol.ext
    _quietly(repo, "ls-remote", "origin")                             # remote.origin.uploadpack
    _quietly(repo, "push", "origin", "HEAD:refs/heads/elsewhere")     # remote.origin.receivepack
    _quietly(repo, "credential", "fill", stdin="protocol=https\nhost=example.invalid\n\n")  # helper, askPass
    _quietly(repo, "rev-list", "--alternate-refs", "--max-count=1")   # core.alternateRefsCommand


EXPECTED_UNDER_PLAIN_GIT = {
    "core.fsmonitor", "pager.log", "core.pager", *SIGNATURES, "diff.external", "diff.drv.command",
    "diff.drv.textconv", "filter.flt.clean", "filter.flt.smudge", "filter.proc.process", "hook-pre-commit",
    "core.editor", "sequence.editor", "core.sshCommand", "core.gitProxy", "protocol.ext",
    "remote.origin.uploadpack", "remote.origin.receivepack", "credential.helper", "core.askPass",
    "core.alternateRefsCommand", "remote.origin.uploadpack (lazy fetch)",
}


def test_plain_git_fires_every_canary(tmp_path: Path) -> None:
    canary = Canaries(tmp_path)
    repo, base, missing = hostile_repository(tmp_path, canary)
    _fire_each_under_plain_git(repo, base)
    fired = canary.fired()
    canary.clear()
    _quietly(repo, "cat-file", "blob", missing)  # the lazy fetch of a partial clone runs the promisor's upload-pack
    fired |= {f"{name} (lazy fetch)" for name in canary.fired()}
    assert EXPECTED_UNDER_PLAIN_GIT <= fired, sorted(EXPECTED_UNDER_PLAIN_GIT - fired)


def _commands(base: str) -> list[list[str]]:
    return [["check"], ["check", "--range", f"{base}..HEAD"], ["check", "--format", "json"], ["check", "--fix"],
            ["check", "HANDOFF.md"], ["brief"], ["brief", "--format", "claude"], ["brief", "--format", "json"],
            ["claim"], ["claims"], ["release"], ["claim"], ["release", "--force", "--reason", "test"],
            ["locks"], ["locks", "--quarantine"], ["flags"], ["flags", "--ack-all"], ["journal"],
            ["journal", "--verify"], ["doctor"], ["config"], ["schema", "flag"], ["stamp"], ["archive"],
            ["render"], ["render", "--diff"], ["record", "new", "a title"], ["mailbox", "take"], ["init"],
            ["install-hooks", "--pre-push"], ["doctor"], ["check"], ["install-hooks", "--uninstall"],
            ["brief", "--format", "codex"], ["brief", "--format", "gemini"], ["brief", "--format", "copilot"],
            *(["closeout", "--format", fmt] for fmt in ("text", "claude", "codex", "gemini", "copilot", "cursor")),
            ["install-hooks", "--agent", "claude,codex,gemini,copilot,cursor,agents-md"], ["doctor"],
            ["install-hooks", "--agent", "claude,codex,gemini,copilot,cursor,agents-md", "--uninstall"]]


@pytest.mark.slow
def test_no_gate_command_runs_a_program_named_by_the_repository(tmp_path: Path) -> None:
    canary = Canaries(tmp_path)
    repo, base, _ = hostile_repository(tmp_path, canary)
    before = sorted(canary.markers.iterdir())
    assert before == []
    ran, crashed = {}, {}
    for command in _commands(base):
        proc = run_gate(repo, *command, process=True)
        if proc.returncode == 4:
            crashed[" ".join(command)] = proc.stderr[-400:]
        ran[" ".join(command)] = canary.fired()
        canary.clear()
    assert {command: fired for command, fired in ran.items() if fired} == {}
    assert crashed == {}
    assert sorted(canary.markers.iterdir()) == before
    # And from a hook's environment, as a parent git may shape it: repository pointers, config given
    # with `git -c` (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT), variables naming programs.
    env = {**os.environ, "GIT_DIR": str(repo / ".git"), "GIT_INDEX_FILE": str(repo / ".git" / "index"),
           "GIT_CONFIG_PARAMETERS": "'log.showsignature'='true'",
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": canary("env.fsmonitor"),
           **{name: canary(f"env.{name}") for name in (
               "GIT_PAGER", "GIT_EXTERNAL_DIFF", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_SSH", "GIT_SSH_COMMAND",
               "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND")}}
    # A relative PATH entry (`.`, or an empty one) is searched from the work tree: a committed `git` answers.
    (repo / "git").symlink_to(canary("PATH-relative-git"))
    env["PATH"] = f".::{os.environ['PATH']}"
    _quietly(repo, "version", env=env)
    assert canary.fired() == {"PATH-relative-git"}, "a relative PATH entry does not reach ./git: the test would prove nothing"
    canary.clear()
    for command in (["check"], ["check", "--range", f"{base}..HEAD"], ["brief"], ["doctor"]):
        run_gate(repo, *command, env=env)
        assert canary.fired() == set(), command
    assert sorted(canary.markers.iterdir()) == before


def test_a_clean_filter_named_by_the_repository_never_runs_on_a_stat_dirty_file(tmp_path: Path) -> None:
    """`git status` re-reads a touched file through its clean filter: the brief's salvage and the stop hook
    ask git what is uncommitted, and must not run the filter that the repository's config names."""
    canary = Canaries(tmp_path)
    repo = init_repo(tmp_path / "repo")
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    (repo / "a.txt").write_text("hello\n")
    head = commit_all(repo, "first")
    (repo / "HANDOFF.md").write_text(handoff_text(head))
    commit_all(repo, "handoff")
    git(repo, "config", "filter.evil.clean", canary("filter-clean"))
    git(repo, "config", "filter.evil.process", canary("filter-process"))

    def touch() -> None:
        os.utime(repo / "a.txt", (1_500_000_000, 1_500_000_000))  # same bytes, new stat: git must re-read it

    touch()
    _quietly(repo, "status")
    assert canary.fired()  # plain git runs it: the test can fail
    canary.clear()
    for argv in (["brief"], ["brief", "--format", "claude"], ["closeout", "--format", "text"],
                 ["closeout", "--format", "claude"], ["check"], ["doctor"]):
        touch()
        run_gate(repo, *argv, process=True)
        assert not canary.fired(), (argv, canary.fired())


def test_the_claim_gates_look_at_an_edited_state_file_runs_no_filter_the_repository_names(tmp_path: Path) -> None:
    """A check of the work tree under another worktree's claim asks whether the state file has uncommitted edits
    (to warn that a commit of them would be refused): that question reads the work-tree file, which a diff passes
    through its clean filter. It must be asked as the brief asks it, with the repository's filters off."""
    canary = Canaries(tmp_path)
    repo = init_repo(tmp_path / "repo")
    (repo / ".gitattributes").write_text("HANDOFF.md filter=evil\n")
    head = commit_all(repo, "first")
    (repo / "HANDOFF.md").write_text(handoff_text(head))
    commit_all(repo, "handoff")
    git(repo, "config", "filter.evil.clean", canary("filter-clean", drain=True))
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "other", str(other))
    assert run_gate(other, "claim", process=True).returncode == 0
    with (repo / "HANDOFF.md").open("a") as out:
        out.write("- [ ] an edit under the other worktree's claim — next: x\n")
    _quietly(repo, "diff", "--quiet", "HEAD", "--", "HANDOFF.md")
    assert canary.fired()  # plain git runs it: the test can fail
    canary.clear()
    proc = run_gate(repo, "check", process=True)
    assert not canary.fired(), canary.fired()
    assert "[handoff-claim warning] HANDOFF.md has uncommitted changes" in proc.stdout, proc.stdout
