"""`gate install-hooks`: native git hooks for users who do not use the pre-commit framework.

The hook runs this very interpreter, by absolute path and in isolated mode (`-I`), so no shim is
looked up and nothing from the repository under review is imported. It starts the gate with `-c`
rather than `-m gates`: `-m` loads runpy first (~5 ms on every commit). An existing hook is kept and
chained: it moves to `<name>.pre-gate` and runs first. The hooks folder is git's own answer
(`git rev-parse --git-path hooks`), so `core.hooksPath` and linked worktrees are respected.
"""

from __future__ import annotations

import os
import sys

from gates.infra import fsio, paths
from gates.infra.errors import CANNOT_RUN, VIOLATION, GateError
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
PUSH_ARGS = " --remote --pre-push"  # the pushed refs on stdin; handoff-claim-remote judges them when claims.remote is set


def hooks_dir(repo: Repo) -> str:
    """Where git runs hooks from. A `core.hooksPath` set by the repository's own config (which anyone who
    shaped the repository may have written) must lead into the repository; the user's global one is theirs.
    Asked of git once a run."""
    if "hooks_dir" in repo.memo:
        return str(repo.memo["hooks_dir"])
    proc = repo.git("rev-parse", "--git-path", "hooks")
    if proc.returncode != 0:
        raise GateError(f"cannot find the hooks folder: {proc.stderr.strip()[:200]}", reason="io-error")
    path = os.path.join(repo.toplevel, proc.stdout.strip())  # as git prints it: absolute, or from the top
    scope = repo.git("config", "--show-scope", "--get", "core.hooksPath").stdout.split("\t", 1)[0]
    if scope in ("local", "worktree", "command"):
        real = os.path.realpath(path)
        inside = [str(repo.toplevel), str(repo.common_dir), str(repo.git_dir)]
        if not any(paths.within(real, root) for root in inside):
            raise GateError(f"core.hooksPath from the repository's own config leads outside it ({excerpt(real, 300)}): "
                            "refused — set it in your global config if you mean it", reason="config-invalid")
    repo.memo["hooks_dir"] = path
    return path


def command() -> str:
    """`<python> -I [-S] -c '…'`: how a hook starts the gate, with no shim looked up and nothing imported from
    the repository under review.

    When this gate is installed in one of the interpreter's site-packages folders (a plain install) and
    `site` would add nothing there but the folder itself, the interpreter starts without `site` (-S:
    its .pth files and the sitecustomize it looks for cost a tenth of a check) and the program puts
    the folders back itself. Should `gates` no longer be in any of them (the environment was rebuilt
    for another Python), it runs `site` after all, so the hook still finds what is installed now. An
    editable or unusual install keeps `site`, which knows how to find it: no folder of a checkout is
    ever put on the path.
    """
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


# The one .pth file site may meet that changes nothing the gate imports (setuptools' switch for `distutils`).
HARMLESS_PTH = frozenset({"distutils-precedence.pth"})


def _site_folders() -> list[str]:
    """The interpreter's site-packages folders when the running gate was imported from one of them and they
    hold no .pth file site would act on (an editable install of a dependency, say), else []."""
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
        if any(name.endswith(".pth") and name not in HARMLESS_PTH for name in names):
            return []
    return folders


def script(kind: str) -> str:
    return (f"#!/bin/sh\n{MARK}\n"
            f'chained="${{0%/*}}/{kind}{CHAINED}"\n'  # (git names a hook by a path; `dirname` would be a process)
            f'if [ -x "$chained" ]; then "$chained" "$@" || exit $?; fi\n'
            f"exec {command()} check{PUSH_ARGS if kind == 'pre-push' else ''}\n")


def read_hook(path: str) -> str:
    """A hook file's text ('' when there is none or it cannot be read), its first HOOK_CAP bytes.

    Read through a symlink, as git runs it. A FIFO, a device, a socket or a folder there is refused with a
    one-line error: git cannot run it, the gate must not wait on it, and it is no hook of the user's to chain.
    """
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


def install(repo: Repo, kinds: list[str]) -> list[str]:
    folder = hooks_dir(repo)
    present = _present(folder, kinds)
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
        fsio.write_atomic(path, script(kind).encode(), executable=True)
        os.chmod(path, os.stat(path).st_mode | 0o111 & ~fsio.umask())
        said.append(f"installed {path}")
    return said


def uninstall(repo: Repo, kinds: list[str]) -> list[str]:
    """Remove each of our hooks among `kinds`, putting back the hook that was moved aside for it."""
    folder = hooks_dir(repo)
    present = _present(folder, kinds)
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


def _present(folder: str, kinds: list[str]) -> dict[str, bool]:
    """For each of `kinds` with a hook in place, whether it is ours. All are read before anything changes, so a
    hook that is refused (a FIFO) leaves every hook as it was."""
    return {kind: is_ours(path) for kind in kinds if os.path.lexists(path := os.path.join(folder, kind))}


def _move(source: str, target: str, what: str) -> None:
    """Rename `source` to `target` in the hooks folder and fsync it: the user's hook is never lost to a crash."""
    failed = fsio.move_aside(source, target)
    if isinstance(failed, OSError):
        raise GateError(f"cannot move {what} from {source} to {target}: {failed.strerror}", reason="io-error")
