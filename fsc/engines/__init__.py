"""The engines: linear algebra of the joint chain, behind one protocol (docs/model.md, "Engines").

An engine is an :class:`~fsc.engines.engine.Engine` object (:mod:`~fsc.engines.engine`); the ones fsc ships are in
:mod:`~fsc.engines.builtin`, and :mod:`~fsc.engines.registry` holds them all by name and decides ``auto``.  Each
factors its operator once per policy and answers the forward and adjoint solves: dense LAPACK LU and sparse
LU (:mod:`~fsc.engines.sparse`), the power method (:mod:`~fsc.engines.power`), the iterative solver
(:mod:`~fsc.engines.iterative`), the accurate one (:mod:`~fsc.engines.accurate`), the large-world one
(:mod:`~fsc.engines.large`).  :mod:`~fsc.engines.cost` sizes the world and
:mod:`~fsc.engines.estimate` refuses what no engine can hold, before anything is built;
:mod:`~fsc.engines.kernels` holds the compiled loops around the solves.
"""
