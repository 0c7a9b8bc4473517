"""``python -m fsc.cli ARGS`` is the ``fsc`` command (a sweep starts its trainers so)."""

import sys

from fsc.cli import main

sys.exit(main())
