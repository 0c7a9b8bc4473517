"""Sweeps: many ``fsc train`` runs, on a laptop or on a cluster (docs/sweeps.md).

A spec names a grid of ``fsc train`` arguments (:mod:`fsc.sweep.spec`); each point is an ordinary run
directory trained by ``fsc train`` in a process of its own, under a lock (:mod:`fsc.sweep.worker`); the
driver runs the unfinished points on a local pool or a Dask cluster (:mod:`fsc.sweep.driver`), and
:func:`summarize` collects them (:mod:`fsc.sweep.summary`).
"""

from fsc.sweep.driver import SweepReport, check_sweep_directory, run_sweep
from fsc.sweep.spec import ARGUMENTS, Point, Sweep, load_spec
from fsc.sweep.summary import summarize, write_summary
from fsc.sweep.worker import run_point

__all__ = ["ARGUMENTS", "Point", "Sweep", "SweepReport", "check_sweep_directory", "load_spec", "run_point", "run_sweep", "summarize", "write_summary"]
