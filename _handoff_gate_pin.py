"""Pins the import name `gates` to the handoff-gate installed beside this file (docs/security.md).

A plain (non-editable) install puts this module and `_handoff_gate_pin.pth` (its one line imports it)
at the top of site-packages, so `site` loads it at every start of this environment's Python. Without
`-I` or `-P` Python puts the current folder (or the script's) first on the path, and a `gates/` folder
there, committed in a repository under review, would be imported instead of the installed gate
before any line of the gate runs. The finder put first on `sys.meta_path` answers for the one
top-level name `gates` with the package installed next to this file, and for every other name
nothing: the package's submodules are found through its own `__path__`. When that package is not
there (an uninstall that left this file, an editable install), it answers nothing and Python imports
as it would without it. In an environment where handoff-gate is installed, the name `gates` is ours.

It costs next to nothing at every start: no import (`_frozen_importlib_external` is the import
system itself, always loaded; `os` is loaded by `site`), one class, one list insert.
"""

import os
import sys
from _frozen_importlib_external import PathFinder

_HERE = os.path.dirname(__file__)
_INIT = os.path.join(_HERE, "gates", "__init__.py")


class _GatesPin:
    """The meta path finder for the name `gates` alone."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "gates":
            return None
        spec = PathFinder.find_spec(name, [_HERE], target)
        return spec if spec is not None and spec.origin == _INIT else None  # a regular package of ours, or nothing


sys.meta_path.insert(0, _GatesPin)
