"""Training runs on disk: resumable, checkpointed, bit-for-bit reproducible (docs/runs-on-disk.md).

:func:`run_training` trains one controller in a run directory; :func:`read_trajectory` and
:func:`load_checkpoint` read a run back.  :mod:`fsc.train.arguments` declares every argument once, for
the command line, sweeps and :class:`TrainingConfig`, the run's arguments as one checked object;
``python -m fsc.train`` is ``fsc train``.

The names below are imported when first used (:mod:`fsc.lazy`): ``fsc train`` reads its world and memory
(:mod:`fsc.train.setting`) before torch is imported.
"""

from fsc.lazy import export

__all__ = export(
    __name__,
    {
        "fsc.io.checkpoint": ("CHECKPOINT", "PREVIOUS_CHECKPOINT", "load_checkpoint"),
        "fsc.train.loop": ("CONVERGED", "TrainingResult", "converged"),
        "fsc.io.trajectory": ("csv_header", "read_trajectory"),
        "fsc.train.arguments": ("TrainingConfig",),
        "fsc.train.run": ("run_training",),
    },
)
