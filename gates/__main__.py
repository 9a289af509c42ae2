from __future__ import annotations

from gates.main import main

raise SystemExit(main())
