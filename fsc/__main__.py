"""``python -m fsc ARGS`` is the ``fsc`` command."""

import sys

from fsc.cli import main

sys.exit(main())
