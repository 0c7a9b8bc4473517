"""Training runs on disk: resumable, checkpointed, bit-for-bit reproducible (docs/runs-on-disk.md).

:func:`run_training` trains one controller in a run directory; :func:`read_trajectory` and
:func:`load_checkpoint` read a run back.  :mod:`fsc.train.arguments` declares every argument once, for
the command line and for sweeps.
"""

from fsc.io.checkpoint import CHECKPOINT, PREVIOUS_CHECKPOINT, load_checkpoint
from fsc.io.trajectory import csv_header, read_trajectory
from fsc.train.loop import CONVERGED, TrainingResult, converged
from fsc.train.run import run_training

__all__ = ["CHECKPOINT", "CONVERGED", "PREVIOUS_CHECKPOINT", "TrainingResult", "converged", "csv_header", "load_checkpoint", "read_trajectory", "run_training"]
