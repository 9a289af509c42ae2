"""The entry point: `gates/_bin/gate`, `python -m gates` and the native and agent hooks start here.

It guards stdout, makes the invocation, hands it to the command line (gates/cli.py) and writes its flags.
"""

from __future__ import annotations

import os
import sys

from gates import cli
from gates.commands.invocation import Run
from gates.infra.console import GuardedStdout, StdoutError, say
from gates.infra.errors import CANNOT_RUN


def main(argv: list[str] | None = None) -> int:
    """The `gate` command line: `_bin/gate`, `python -m gates` and the native hooks start here."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if os.name != "posix":
        say("gate: handoff-gate runs on Linux and macOS only (POSIX file semantics are required)")
        return CANNOT_RUN
    real_stdout = sys.stdout
    guard = GuardedStdout(real_stdout)
    sys.stdout = guard  # every write to stdout below fails as a StdoutError, never a traceback
    run = Run(argv)
    try:
        code = cli.run(argv, run)
        try:
            sys.stdout.flush()  # here, not at the interpreter's exit: a full disk or closed pipe is our exit 3
        except StdoutError as exc:
            code = cli.failed(exc, run)
    finally:
        sys.stdout = real_stdout
    return run.write_flags(code)
