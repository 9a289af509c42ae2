"""`gate install-hooks`: native git hooks for users who do not use the pre-commit framework.

What the hook runs, where it is written and how a hook of the user's is chained are in
docs/gates.md#without-the-framework-native-hooks; a folder other repositories share (a global
`core.hooksPath`) is written only with `--global` (`shared_by_others`, `_allowed`; docs/security.md).
"""

import os
import sys

from gates.infra import fsio, paths
from gates.infra.errors import CANNOT_RUN, USAGE, VIOLATION, GateError
from gates.infra.git import Repo
from gates.infra.text import excerpt, shell_quote

MARK = "# installed by handoff-gate: `gate install-hooks` (remove with `gate install-hooks --uninstall`)"
CHAINED = ".pre-gate"
KINDS = ("pre-commit", "pre-push")  # every hook `gate install-hooks` can write: `--uninstall` looks at each
ENTRY = "from gates.main import launch; launch()"  # the end of every `-c` program our hooks run
# What earlier versions wrote (`from gates.cli import main` still runs): recognised as ours too.
ENTRIES = (ENTRY, "import sys; from gates.main import main; sys.exit(main())",
           "import sys; from gates.cli import main; sys.exit(main())")
HOOK_CAP = 1 << 20  # what of a hook file is read: ours is a few hundred bytes
# The pushed refs on stdin, judged by the one gate of the push (handoff-claim-remote, when claims.remote is set), as the
# framework's pre-push stage runs it: the other gates judge commits, and an uncommitted edit is no reason to refuse a push.
PUSH_ARGS = " --remote --pre-push --only handoff-claim-remote"


def hooks_dir(repo: Repo) -> str:
    """Where git runs hooks from (asked of git once a run). A `core.hooksPath` set by the repository's own config
    (which anyone who shaped the repository may have written) must lead into the repository."""
    if "hooks_dir" in repo.memo:
        return str(repo.memo["hooks_dir"])
    proc = repo.git("rev-parse", "--git-path", "hooks")
    if proc.returncode != 0:
        raise GateError(f"cannot find the hooks folder: {proc.stderr.strip()[:200]}", reason="io-error")
    path = os.path.join(repo.toplevel, proc.stdout.strip())  # as git prints it: absolute, or from the top
    source = hooks_path_source(repo)
    if source is not None and source[0] in OWN_SCOPES and not _inside(repo, path):
        raise GateError(f"core.hooksPath from the repository's own config leads outside it "
                        f"({excerpt(os.path.realpath(path), 300)}): refused — set it in your global config if you mean it",
                        reason="config-invalid")
    repo.memo["hooks_dir"] = path
    return path


OWN_SCOPES = ("local", "worktree")  # the repository's own config files; every other scope is the user's or a command's
EVERYWHERE_GUARD = "[ -e .gate.yaml ] || [ -L .gate.yaml ] || exit 0"  # a shared folder's hook: only the gate's repositories


def hooks_path_source(repo: Repo) -> tuple[str, str, str] | None:
    """(scope, origin, value) of the `core.hooksPath` git uses here, as `git config --show-scope --show-origin`
    says them (`global`, `file:/home/u/.gitconfig`, `~/.githooks`), or None when it is not set."""
    if "hooks_source" not in repo.memo:
        # 1: not set. Any other failure is not "not set": the hooks folder's judge would be skipped.
        proc = repo.ask("config", "--show-scope", "--show-origin", "--get", "core.hooksPath", answers=(0, 1))
        fields = proc.stdout.rstrip("\n").split("\t", 2) if proc.returncode == 0 else []
        repo.memo["hooks_source"] = tuple(fields) if len(fields) == 3 else None
    source = repo.memo["hooks_source"]
    return source if isinstance(source, tuple) else None


def _inside(repo: Repo, path: str) -> bool:
    real = os.path.realpath(path)
    return any(paths.within(real, str(root)) for root in (repo.toplevel, repo.common_dir, repo.git_dir))


def shared_by_others(repo: Repo) -> str | None:
    """Why the hooks folder is not this repository's own (a hook written there runs in other repositories
    too), or None when it is: an absolute `core.hooksPath` from outside the repository's own config (a relative
    one names a folder in each repository), or a folder that resolves outside the repository."""
    folder = hooks_dir(repo)
    source = hooks_path_source(repo)
    if source is not None and source[0] not in OWN_SCOPES and source[2].startswith(("/", "~")):
        scope, origin, value = source
        return (f"core.hooksPath is {excerpt(value, 200)} in your {excerpt(scope, 20)} config "
                f"({excerpt(origin, 200)}): git runs every repository's hooks from {excerpt(folder, 200)}")
    if not _inside(repo, folder):
        real = excerpt(os.path.realpath(folder), 200)
        return f"the hooks folder {excerpt(folder, 200)} resolves outside this repository ({real})"
    return None


def _allowed(repo: Repo, everywhere: bool, doing: str) -> None:
    """Refuses a hooks folder that `everywhere` (`--global`: for every repository) does not mean, either way, so
    `--global` always means what it says."""
    shared = shared_by_others(repo)
    if shared and not everywhere:
        raise GateError(f"refusing to {doing}: {shared} — pass --global if that is what you want (the gate's hook "
                        "there does nothing in a repository without a .gate.yaml), or give this repository its own "
                        'folder: git config --local core.hooksPath "$(git rev-parse --git-common-dir)/hooks"',
                        reason="config-invalid")
    if everywhere and not shared:
        raise GateError(f"--global: the hooks folder {excerpt(hooks_dir(repo), 200)} is this repository's own "
                        "(no global core.hooksPath names a folder for every repository): run it without --global",
                        code=USAGE, reason="config-invalid")


def doctor(repo: Repo) -> list[tuple[str, str]]:
    """(status, message) about where the native hooks live: a folder other repositories share is said, with
    whether the gate's hook there is the one for every repository (`--global`)."""
    shared = shared_by_others(repo)
    if not shared:
        return []
    hook = os.path.join(hooks_dir(repo), "pre-commit")
    if EVERYWHERE_GUARD in read_hook(hook) and is_ours(hook):
        return [("ok", f"{shared}; the gate's hook there (`gate install-hooks --global`) runs only in repositories "
                       "with a .gate.yaml")]
    return [("warn", f"{shared}: `gate install-hooks` writes there only with --global (its hook then runs in every "
                     "repository with a .gate.yaml), or set core.hooksPath in this repository's own config")]


def command() -> str:
    """`<python> -I [-S] -c '…'`: how a hook starts the gate, with no shim looked up and nothing imported from
    the repository under review. `-S` (no `site`: a tenth of a check) where `_site_folders` allows it, and the
    program puts those folders back itself, or runs `site` after all when `gates` is no longer in any of them
    (docs/gates.md)."""
    folders = _site_folders()
    if folders:
        program = (f"import sys, os; p = {py_list(folders)}; sys.path += p if any(os.path.isdir(os.path.join(f, "
                   f'"gates")) for f in p) else __import__("site").main() or []; {ENTRY}')
    else:
        program = ENTRY
    return f"{shell_quote(sys.executable)} -I{' -S' if folders else ''} -c {shell_quote(program)}"


def py_list(items: list[str]) -> str:
    """A Python list literal of `items` in double quotes (the hook's program stands in single quotes): any path
    comes back as it was, one that is not UTF-8 (surrogate escapes) or holds quotes included."""
    return "[" + ", ".join('"' + repr(item)[1:-1].replace('"', '\\"') + '"' for item in items) + "]"


# The .pth files site may meet that change nothing the gate imports, by name, with the exact content each must have
# (None: any): setuptools' switch for `distutils`, and our own pin, which a plain install puts there (setup.py) and
# which only makes the name `gates` the installed package (_handoff_gate_pin.py) — without it, -S starts would be lost.
HARMLESS_PTH: dict[str, bytes | None] = {"distutils-precedence.pth": None,
                                         "_handoff_gate_pin.pth": b"import _handoff_gate_pin\n"}


def _site_folders() -> list[str]:
    """The interpreter's site-packages folders when the running gate was imported from one of them and they
    hold no .pth file site would act on (an editable install of a dependency, say; our own pin is harmless),
    else []."""
    import site

    import gates

    folders = list(dict.fromkeys(site.getsitepackages()))
    home = os.path.dirname(os.path.dirname(os.path.realpath(gates.__file__)))
    if not any(os.path.realpath(folder) == home for folder in folders):
        return []
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        if any(name.endswith(".pth") and not _harmless(folder, name) for name in names):
            return []
    return folders


def _harmless(folder: str, name: str) -> bool:
    """Whether the .pth file `name` in `folder` is one of HARMLESS_PTH, with its exact content where one is given
    (a regular file: a link or anything else there is judged as site would act on it)."""
    if name not in HARMLESS_PTH:
        return False
    content = HARMLESS_PTH[name]
    if content is None:
        return True
    try:
        return fsio.read_regular(os.path.join(folder, name), len(content)) == content
    except OSError:
        return False


def script(kind: str, everywhere: bool = False) -> str:
    """The hook's text. One written to a folder every repository shares (`everywhere`, `--global`) runs the
    gate only where git runs it at the top of a work tree holding a `.gate.yaml`: elsewhere it does nothing."""
    return (f"#!/bin/sh\n{MARK}\n"
            f'chained="${{0%/*}}/{kind}{CHAINED}"\n'  # (git names a hook by a path; `dirname` would be a process)
            f'if [ -x "$chained" ]; then "$chained" "$@" || exit $?; fi\n'
            + (f"{EVERYWHERE_GUARD}\n" if everywhere else "")
            + f"exec {command()} check{PUSH_ARGS if kind == 'pre-push' else ''}\n")


def is_current(text: str, kind: str) -> bool:
    """Whether a hook's text is what this installation writes (for this repository alone, or for every one)."""
    return text in (script(kind), script(kind, everywhere=True))


def read_hook(path: str) -> str:
    """A hook file's first HOOK_CAP bytes as text ('' when there is none or it cannot be read), read through a
    symlink as git runs it. A FIFO, a device, a socket or a folder there is refused with a one-line error: git cannot
    run it, the gate must not wait on it, and it is no hook of the user's to chain."""
    try:
        data = fsio.read_regular(path, HOOK_CAP, follow=True)
    except fsio.NotRegularFile as exc:
        raise GateError(f"refusing {path}: {exc.strerror} — git cannot run it as a hook; move it aside yourself",
                        code=CANNOT_RUN, reason="input-unreadable") from None
    except OSError:
        return ""
    return data[:HOOK_CAP].decode(errors="replace")


def is_ours(path: str) -> bool:
    return MARK in read_hook(path)


def install(repo: Repo, kinds: list[str], everywhere: bool = False) -> list[str]:
    """Write our hook of each of `kinds`, chaining a hook of the user's. Only into this repository's own hooks
    folder, unless `everywhere` (`--global`) says the shared one is meant (see `_allowed`)."""
    folder, present = _prepared(repo, kinds, everywhere, "install the hooks")
    os.makedirs(folder, exist_ok=True)
    said = []
    for kind in kinds:
        path = os.path.join(folder, kind)
        chained = os.path.join(folder, f"{kind}{CHAINED}")
        if present.get(kind) is False:  # a hook of the user's
            if os.path.lexists(chained):
                raise GateError(f"{path} exists and so does {chained}: move one of them yourself", code=VIOLATION,
                                reason="io-error")
            _move(path, chained, f"your {kind} hook")
            said.append(f"kept your {kind} hook: it now runs first, from {chained}")
        # A compare-and-swap: a hook written here since it was judged (absent, or ours) is never replaced unseen
        expected = _exact(path) if present.get(kind) else None
        fsio.rewrite(path, expected, script(kind, everywhere).encode(), shown=path, who="gate install-hooks",
                     executable=True)
        os.chmod(path, os.stat(path).st_mode | 0o111 & ~fsio.umask())
        said.append(f"installed {path}" + (" (for every repository that has a .gate.yaml)" if everywhere else ""))
    if _committable(repo, folder):
        said.append(f"note: {excerpt(folder, 200)} is in the work tree (core.hooksPath), where a hook can be committed, "
                    "and these hooks name this machine's Python: do not commit them (`.gitignore` them); each clone "
                    "runs `gate install-hooks` itself")
    return said


def _committable(repo: Repo, folder: str) -> bool:
    """Whether the hooks folder lies in the work tree, outside every git directory: what is written there can be
    committed, and a hook naming this machine's interpreter fails in every other clone."""
    real = os.path.realpath(folder)
    return paths.within(real, str(repo.toplevel)) and not any(
        paths.within(real, str(root)) for root in (repo.common_dir, repo.git_dir))


def uninstall(repo: Repo, kinds: list[str], everywhere: bool = False) -> list[str]:
    """Remove each of our hooks among `kinds`, putting back the hook that was moved aside for it: in a shared
    hooks folder only with `everywhere` (`--global`), as for `install`."""
    folder, present = _prepared(repo, kinds, everywhere, "remove the hooks")
    said = []
    for kind in kinds:
        path = os.path.join(folder, kind)
        chained = os.path.join(folder, f"{kind}{CHAINED}")
        ours = present.get(kind, False)
        if ours:
            os.unlink(path)  # our own generated file
        if os.path.lexists(chained):
            if os.path.lexists(path):
                said.append(f"left your {kind} hook at {chained}: {path} is not ours, so it stays where it is")
                continue
            _move(chained, path, f"your {kind} hook")
            said.append(f"removed the handoff-gate {kind} hook; your own hook is back at {path}" if ours
                        else f"your own {kind} hook is back at {path} (the handoff-gate hook was gone already)")
        elif ours:
            said.append(f"removed {path}")
    return said or [f"no handoff-gate hook in {folder}"]


def _exact(path: str) -> bytes:
    """The bytes of our hook at `path`, as they are now: what its rewrite expects to replace."""
    try:
        return fsio.read_regular(path, HOOK_CAP + 1)
    except OSError as exc:
        raise GateError(f"cannot read {path}: {exc.strerror}", reason="io-error") from None


def _prepared(repo: Repo, kinds: list[str], everywhere: bool, doing: str) -> tuple[str, dict[str, bool]]:
    """The hooks folder `_allowed` lets this run change, and for each of `kinds` with a hook in place, whether it is
    ours: all are read before anything changes, so a hook that is refused (a FIFO) leaves every hook as it was."""
    _allowed(repo, everywhere, doing)
    folder = hooks_dir(repo)
    return folder, {kind: is_ours(path) for kind in kinds if os.path.lexists(path := os.path.join(folder, kind))}


def _move(source: str, target: str, what: str) -> None:
    """Rename `source` to `target` in the hooks folder and fsync it: the user's hook is never lost to a crash."""
    failed = fsio.move_aside(source, target)
    if isinstance(failed, OSError):
        raise GateError(f"cannot move {what} from {source} to {target}: {failed.strerror}", reason="io-error")
