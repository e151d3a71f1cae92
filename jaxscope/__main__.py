"""``python -m jaxscope run script.py [--recompiles] [--leaks]``."""

from __future__ import annotations

import sys

from jaxscope._cli import main

if __name__ == "__main__":
    sys.exit(main())
