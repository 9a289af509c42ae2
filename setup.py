"""The one thing pyproject.toml cannot say: a plain install also puts `_handoff_gate_pin.pth` at the top
of site-packages (beside the `_handoff_gate_pin` module it imports), so that `gates` is always the
installed package (docs/security.md). setuptools has no declarative way to place a file at the top of
purelib, so `build_py` copies it into the build folder, whose whole content lands in the wheel (and in
its RECORD: `pip uninstall` removes it). An editable install (`pip install -e .`) gets no .pth: its
`build_py` runs in editable mode and builds nothing, and a pin there would point at no installed copy.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "_handoff_gate_pin.pth"


class BuildPyWithPin(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:
            self.copy_file(PTH, os.path.join(self.build_lib, PTH), preserve_mode=False)

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        return outputs if self.editable_mode else [*outputs, os.path.join(self.build_lib, PTH)]


setup(cmdclass={"build_py": BuildPyWithPin})
