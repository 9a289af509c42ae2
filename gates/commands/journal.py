"""`gate journal`: print, verify or repair the audit journal."""

from gates.commands import Invocation
from gates.infra import clock
from gates.infra.errors import OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    journal_actions = parser.add_mutually_exclusive_group()
    journal_actions.add_argument("--verify", action="store_true", help="check the hash chain; exit 1 at the first bad entry")
    journal_actions.add_argument("--repair", action="store_true",
                                 help="move a broken journal into lost+found and start a new chain that names it")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text for people (default), or one JSON document")


def run(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.domain import journal
    from gates.infra import jsonio

    repo = run.repo()
    if args.repair:
        repaired = journal.repair(repo, clock.now())
        if repaired is None:
            print("journal intact: nothing to repair")
            return OK
        run.announce("journal-broken", f"journal restarted: the broken one is kept in {repaired[0]}; the new chain's "
                     "first entry names it")
        return OK
    if args.verify:
        verdict = journal.verify(repo)
        if not verdict.ok:
            return run.deny("journal-broken", f"journal broken: {verdict.problem}")
        print(f"journal intact: {verdict.entries} entries, each chained to the one before")
        if verdict.unfinished:
            lines = ", ".join(str(n) for n in verdict.unfinished)
            print(f"  and {len(verdict.unfinished)} append(s) a crash cut short before they were recorded (line "
                  f"{lines}): kept as they are, each followed by the retried entry or by nothing")
        return OK
    rows, _ = journal.read_all(repo)
    for number, entry, raw in rows:
        if args.format == "json":
            print(raw)
        elif entry is None:
            print(f"line {number}: (not an entry) {raw[:200]}")
        else:
            print(f"{entry.get('seq'):>5} {entry.get('time')} {entry.get('action')} "
                  f"{jsonio.dumps(entry.get('details'), ensure_ascii=False)}")
    return OK
