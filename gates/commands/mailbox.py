"""`gate mailbox take`: deliver the work package, keeping a copy."""

import sys

from gates.commands import Invocation
from gates.infra import clock
from gates.infra.console import say
from gates.infra.errors import OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    parser.add_argument("action", choices=("take",),
                        help="take: print the work package, then clear the file to its sentinel line (a copy is kept)")


def run(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.domain import mailbox

    def deliver(package: str) -> None:  # raises StdoutError when the output fails: the file is then kept
        sys.stdout.write(package if package.endswith("\n") else package + "\n")
        sys.stdout.flush()

    taken = mailbox.take(run.repo(), run.config(), clock.now(), deliver)
    if taken is None:
        print("the mailbox is empty: no work package")
        return OK
    if taken.cleared:
        say(f"gate: took the work package from {taken.shown}; a copy is kept in {taken.copy}")
    else:
        say(f"gate: delivered the work package (a copy is kept in {taken.copy}); {taken.shown} changed meanwhile and "
            "was left as it is")
    if taken.journal_error is not None:
        raise taken.journal_error
    return OK
