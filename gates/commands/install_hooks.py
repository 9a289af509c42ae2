"""`gate install-hooks`: native git hooks, or an agent harness's wiring."""

from gates.commands import Invocation, ids
from gates.infra.errors import OK, USAGE, GateError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    parser.add_argument("--uninstall", action="store_true",
                         help="remove every hook the gate installed (pre-push too), putting chained hooks back")
    parser.add_argument("--pre-push", action="store_true", help="also a pre-push hook")
    parser.add_argument("--global", action="store_true", dest="everywhere",
                         help="write (or remove) the hooks in the folder a global or system core.hooksPath names, "
                         "which every repository shares: the hook there runs only in repositories with a .gate.yaml")
    parser.add_argument("--agent", action="append", metavar="NAME[,NAME]", type=_agent_names,
                         help="instead, wire the session loop into an agent harness: claude, codex, gemini, copilot, "
                         "cursor or agents-md (repeatable; with --uninstall, remove exactly that)")
    parser.add_argument("--local", action="store_true",
                         help="with --agent claude: write .claude/settings.local.json (yours alone, not committed) with "
                         "this installation's interpreter, instead of the committed .claude/settings.json")


def run(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.domain import hooks

    if args.agent:  # an agent harness's project configuration, not git's hooks
        if args.everywhere:
            raise GateError("--global is for the native git hooks; --agent writes this repository's harness files only",
                            code=USAGE, reason="config-invalid")
        from gates.domain import agents

        said = agents.run(run.repo(), [a for names in args.agent for a in ids(names)], args.uninstall, args.local)
    elif args.local:
        raise GateError("--local is for --agent claude: the native git hooks are not committed", code=USAGE,
                        reason="config-invalid")
    elif args.uninstall:  # every hook the gate installed, whatever else was asked
        said = hooks.uninstall(run.repo(), list(hooks.KINDS), args.everywhere)
    else:
        said = hooks.install(run.repo(), ["pre-commit", *(["pre-push"] if args.pre_push else [])], args.everywhere)
    for line in said:
        print(line)
    return OK


def _agent_names(text: str) -> str:
    from gates.domain.agents import AGENTS

    unknown = [name for name in ids(text) if name not in AGENTS]
    if unknown or not ids(text):
        import argparse

        raise argparse.ArgumentTypeError(f"unknown agent {(unknown or [text])[0]!r} (known: {', '.join(AGENTS)})")
    return text
