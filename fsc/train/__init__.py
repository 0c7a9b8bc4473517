"""Training runs on disk: resumable, checkpointed, bit-for-bit reproducible (docs/runs-on-disk.md).

:func:`run_training` trains one controller in a run directory; :func:`read_trajectory` and
:func:`load_checkpoint` read a run back.  :mod:`fsc.train.arguments` declares every argument once, for
the command line, sweeps and :class:`TrainingConfig`, the run's arguments as one checked object;
``python -m fsc.train`` is ``fsc train``.
"""

from fsc.io.checkpoint import CHECKPOINT, PREVIOUS_CHECKPOINT, load_checkpoint
from fsc.io.trajectory import csv_header, read_trajectory
from fsc.train.arguments import TrainingConfig
from fsc.train.loop import CONVERGED, TrainingResult, converged
from fsc.train.run import run_training

__all__ = [
    "CHECKPOINT", "CONVERGED", "PREVIOUS_CHECKPOINT", "TrainingConfig", "TrainingResult", "converged", "csv_header", "load_checkpoint",
    "read_trajectory", "run_training",
]  # fmt: skip
