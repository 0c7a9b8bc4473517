"""The engines: linear algebra of the joint chain, behind one interface (docs/model.md, "Engines").

:mod:`~fsc.engines.solve` holds the registry of backends and the automatic choice; each backend factors
the chain once and answers the forward and adjoint solves: dense LAPACK LU and sparse LU
(:mod:`~fsc.engines.sparse`), the iterative solver (:mod:`~fsc.engines.iterative`), the accurate one
(:mod:`~fsc.engines.accurate`).  :mod:`~fsc.engines.kernels` holds the compiled loops around the solves.
"""
