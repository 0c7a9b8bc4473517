"""Files and formats (docs/formats.md): ``.POMDP`` worlds (:mod:`~fsc.io.pomdp_file`) and POMDPX worlds, SARSOP's
factored XML (:mod:`~fsc.io.pomdpx`, docs/pomdp-files.md), run directories and
their lock (:mod:`~fsc.io.rundir`), trajectories (:mod:`~fsc.io.trajectory`) and checkpoints
(:mod:`~fsc.io.checkpoint`).  Policy files are :meth:`fsc.Policy.save` and :meth:`fsc.Policy.load`.
"""
