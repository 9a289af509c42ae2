"""`python -I -m gates …`: the same command as `gate …`.

Without `-I` (or `-P`), Python puts the current folder first on the path, so `python -m gates` run in a
repository that holds a `gates/` folder would import that folder instead of this package, and nothing in
this file could stop it, since it would never be reached. A plain install stops it before: the
`_handoff_gate_pin.pth` it puts in site-packages pins the name `gates` to the installed package (see
`_handoff_gate_pin.py`). What this file stops is the rest: a copy of this very package imported from
the current folder (a checkout, a vendored copy, an environment without the pin) is refused, and the
current folder is taken off the path before anything else is imported, so no other module the gate
imports (`json.py`, `__future__.py`, `ruamel/` committed there) comes from the repository either. This
file itself imports nothing that is not loaded already (hence no `from __future__ import annotations`).
Every command the gate writes or prints uses `-I` or the `gate` script.
"""

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
if not (sys.flags.isolated or getattr(sys.flags, "safe_path", False)) and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]  # the current folder, which Python put first: nothing more is imported from the repository

from gates.main import launch  # noqa: E402 - after the check above, on purpose

launch()
