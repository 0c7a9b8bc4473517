"""``python -m fsc.train ARGS`` trains as ``fsc train ARGS`` does (a sweep starts its trainers so)."""

import sys

from fsc.train.command import main

sys.exit(main())
