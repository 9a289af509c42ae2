"""`python -I -m gates …`: the same command as `gate …`.

Without `-I` (or `-P`), Python puts the current folder first on the path, so `python -m gates` run in a
repository that holds a `gates/` folder imports that folder instead of this package: nothing in this file
can stop it, since it is never reached. What it can stop is a copy of this very package found that way (a
checkout, a vendored copy in the repository under review): a run that imported the package from the
current folder, not from where it is installed, is refused here, before anything else of the package
is imported. Every command the gate writes or prints uses `-I` or the `gate` script.
"""

from __future__ import annotations

import os
import sys


def _from_the_current_folder() -> bool:
    """Whether this package was imported from the folder the command runs in (the path's first entry)."""
    if sys.flags.isolated or getattr(sys.flags, "safe_path", False):
        return False  # -I or -P: the current folder is not on the path
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    try:
        return here == os.path.realpath(os.getcwd())
    except OSError:
        return True  # the current folder is gone: where this came from cannot be told apart from it


if _from_the_current_folder():
    sys.stderr.write("gate: refusing to run the gates/ package of the current folder, which Python imported instead "
                     "of the installed gate: run `python -I -m gates …` or `gate …`\n")
    sys.exit(3)

from gates.main import launch  # noqa: E402 - after the check above, on purpose

launch()
