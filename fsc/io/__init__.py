"""Files and formats (docs/formats.md): ``.POMDP`` worlds (:mod:`~fsc.io.pomdp_file`), run directories and
their lock (:mod:`~fsc.io.rundir`), trajectories (:mod:`~fsc.io.trajectory`) and checkpoints
(:mod:`~fsc.io.checkpoint`).  Policy files are :meth:`fsc.Policy.save` and :meth:`fsc.Policy.load`.
"""
