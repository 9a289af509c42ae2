"""The entry point: `gates/_bin/gate`, `python -I -m gates` and the native and agent hooks start here.

`launch()` runs the command line as a process and ends it; `main()` is the command line itself (what
the tests call in-process): it guards stdout, makes the invocation, hands it to gates/cli.py and
writes its flags.
"""

import gc
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


def launch() -> "NoReturn":
    """Run `gate` as a process and end it, without the work a short run does not need.

    A run is short: the cyclic collector is switched off before our modules are imported (it ran
    dozens of times over them, and a run builds no cyclic garbage worth collecting). When the command
    returns, the process ends as soon as stdout and stderr are flushed, skipping the interpreter's
    teardown of every module (a tenth of a check), unless something registered an exit handler
    (`atexit` was imported) or another thread still runs: then it ends the ordinary way. Nothing waits
    for the teardown: files are written with os.write and closed as they go (gates/infra/fsio.py), and
    every git the run started and never read is stopped when main() ends. A SystemExit (argparse's
    `--help` and usage errors) or an exception ends the ordinary way too. GATE_ORDINARY_EXIT=1 in the
    environment turns both off (the collector runs, the interpreter tears down), for debugging.
    """
    ordinary = os.environ.get("GATE_ORDINARY_EXIT") == "1"
    if not ordinary:
        gc.disable()
    code = main()
    if ordinary:
        sys.exit(code)
    leave(code)


def leave(code: int) -> "NoReturn":
    """End the process with `code`: at once when nothing is left for the interpreter's exit to do."""
    threading = sys.modules.get("threading")
    if "atexit" not in sys.modules and (threading is None or threading.active_count() == 1):
        try:
            for stream in dict.fromkeys((sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)):
                if stream is not None:
                    stream.flush()
        except (OSError, ValueError):
            pass  # the ordinary exit below reports it as the interpreter always has
        else:
            os._exit(code)
    sys.exit(code)


def main(argv: list[str] | None = None) -> int:
    """The `gate` command line, in-process: its exit code."""
    from gates import cli
    from gates.commands import Invocation, failed
    from gates.infra.console import CleanStream, GuardedStdout, StdoutError, say
    from gates.infra.errors import CANNOT_RUN

    argv = sys.argv[1:] if argv is None else list(argv)
    if os.name != "posix":
        say("gate: handoff-gate runs on Linux and macOS only (POSIX file semantics are required)")
        return CANNOT_RUN
    real_stdout, real_stderr = sys.stdout, sys.stderr
    guard = GuardedStdout(real_stdout)
    sys.stdout = guard  # every write to stdout below is cleaned, and fails as a StdoutError, never a traceback
    if real_stderr is not None:
        sys.stderr = CleanStream(real_stderr)  # and every write to stderr is cleaned (gates/infra/text.py)
    run = Invocation(argv)
    try:
        try:
            code = cli.run(argv, run)
            try:
                sys.stdout.flush()  # here, not at the interpreter's exit: a full disk or closed pipe is our exit 3
            except StdoutError as exc:
                code = failed(exc, run)
        finally:
            sys.stdout = real_stdout
        return run.write_flags(code)
    finally:
        run.close()
        sys.stderr = real_stderr
