from __future__ import annotations

from gates.main import launch

launch()
