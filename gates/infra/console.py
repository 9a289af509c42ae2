"""The terminal, for the one layer that speaks: `say` on stderr that never fails, stdout silenced after a break.

Whatever reaches stdout or stderr during a run passes `text.clean` here (GuardedStdout, CleanStream,
`say`, `emit_json`): no caller can print a control, bidi, zero-width, separator or tag character
raw, whatever it forgot to escape.
"""

import errno
import os
import sys

from gates.infra.errors import GateError
from gates.infra.text import clean, clean_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class StdoutError(GateError):
    """The output could not be written: a closed pipe, a full disk, an I/O error."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(f"cannot write to stdout: {exc.strerror or exc}", reason="io-error")


class CleanStream:
    """Stands in for sys.stderr during a run (and is the base of GuardedStdout): every write is `clean`ed, argparse's
    messages and a stray print included."""

    def __init__(self, stream: "Any") -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(clean(text))
        return len(text)

    def writelines(self, lines: "Any") -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> "Any":
        return getattr(self.stream, name)


class GuardedStdout(CleanStream):
    """Stands in for sys.stdout during a run: every write is `clean`ed, and a failed write or flush becomes a
    StdoutError (exit 3).

    After the first failure, stdout is pointed at /dev/null so that nothing later (the interpreter's
    own flush at exit included) fails again; further writes raise, a flush does nothing."""

    def __init__(self, stream: "Any") -> None:
        self.stream = stream  # None: started with fd 1 closed (Python's sys.stdout is then None)
        self.broken: StdoutError | None = None

    def write(self, text: str) -> int:
        if self.broken is not None:
            raise self.broken
        try:
            if self.stream is None:
                raise OSError(errno.EBADF, "stdout is closed (descriptor 1 was not open)")
            return super().write(text)
        except OSError as exc:
            raise self._fail(exc) from None

    def flush(self) -> None:
        if self.broken is not None or self.stream is None:  # (closed: nothing was written, so nothing is lost)
            return
        try:
            self.stream.flush()
        except OSError as exc:
            raise self._fail(exc) from None

    def _fail(self, exc: OSError) -> StdoutError:
        self.broken = StdoutError(exc)
        silence_stdout(self.stream)
        return self.broken


def silence_stdout(stream: "Any" = None) -> None:
    """After a broken pipe or a full disk: point stdout at /dev/null so that the final flush cannot fail."""
    _silence(sys.__stdout__ if stream is None else stream)


def _silence(stream: "Any") -> None:
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file (a test's capture): nothing will flush it at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def say(line: str) -> None:
    """One line on stderr, when stderr works: a closed or full stderr is not a reason to fail."""
    try:
        sys.stderr.write(clean(line) + "\n")
        sys.stderr.flush()
    except OSError:
        _silence(sys.stderr)


def emit_json(document: object) -> None:
    from gates.infra import jsonio

    sys.stdout.write(jsonio.dumps(clean_tree(document), indent=2, ensure_ascii=False) + "\n")
