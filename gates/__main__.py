from __future__ import annotations

from gates.quick import main

raise SystemExit(main())
