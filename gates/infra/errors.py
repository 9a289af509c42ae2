"""Exit codes and the one error type that expected failures raise."""

OK = 0
VIOLATION = 1  # violations found, or a request denied
USAGE = 2
CANNOT_RUN = 3  # not a repository, bad config, unreadable file, I/O error
INTERNAL = 4  # a bug
INTERRUPTED = 130


class GateError(Exception):
    """An expected problem: a one-line message, an exit code and a reason tag for its flag."""

    # What the error is about, when a later run that finds that sound settles its flag (set by the one that knows it:
    # the configuration that could not be loaded, the project schema a check could not use; kept in the flag's
    # `about`, docs/flags-and-journal.md). A class default: most errors have none, and cost nothing for it.
    about: dict[str, str | None] | None = None

    def __init__(
        self,
        message: str,
        *,
        code: int = CANNOT_RUN,
        reason: str = "io-error",
        path: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.path = path
        self.line = line

    def render(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        from gates.infra.text import clean

        return clean(f"{where}{self.message}")  # no raw control or bidi character reaches a terminal or a flag
