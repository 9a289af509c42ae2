"""The bench's launcher: runs each measured command as its own direct child and reports time, exit code and memory.

Why a separate, small process: on Linux a child's `ru_maxrss` starts from the resident size of the
process that forked it (the parent's pages are counted until the child's exec), so a command
started by the bench itself, which holds fixtures and results in memory, would report the bench's
size instead of its own. This launcher imports nothing but built-in modules (`python -I -S`), so
what it adds is smaller than any Python program measured; the bench reports that size once.

Protocol, one request a line on stdin: cwd NUL stderr-file NUL argv[0] NUL argv[1] ...; one
answer a line on stdout: "<seconds> <exit code> <ru_maxrss KiB>". The environment is inherited.
"""

import os
import sys
import time


def run(cwd: bytes, err_path: bytes, argv: list[bytes]) -> str:
    err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null = os.open(os.devnull, os.O_RDWR)
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.dup2(err, 2)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - start
    os.close(err)
    os.close(null)
    return f"{elapsed!r} {os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}\n"


def main() -> None:
    for line in sys.stdin.buffer:
        cwd, err_path, *argv = line.rstrip(b"\n").split(b"\0")
        sys.stdout.write(run(cwd, err_path, argv))
        sys.stdout.flush()


main()
