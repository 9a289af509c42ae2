from __future__ import annotations

from gates.cli import main

raise SystemExit(main())
