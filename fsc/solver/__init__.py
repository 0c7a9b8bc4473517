"""Solving: the best controller a portfolio of methods finds within a budget (:class:`Portfolio`, :func:`solve`).

A :class:`Portfolio` is a frozen value holding the budget, the seed and every setting of its methods
(:class:`PointBased`, :class:`Polish`, :class:`Mirror`, :class:`Restarts` around :class:`fsc.optim.Adam`,
:class:`EM`, :class:`Greedy`, :class:`BPI`, :class:`NodeSplit`, and the continuation :class:`Shaped`); its
:meth:`Portfolio.solve` returns a :class:`Solution` (the policy, its exact value, an upper bound and the gap).  The
methods are steps (:class:`fsc.optim.Step`) on one objective (:class:`fsc.objective.Objective`).  ``fsc train``
stays the paper's gradient flow; this is the tool for answers.
"""

from fsc.solver.bound import upper_bound
from fsc.solver.methods import BPI, EM, METHODS, Budget, Greedy, Method, Mirror, NodeSplit, PointBased, Polish, Restarts, Shaped, configured, settings
from fsc.solver.portfolio import Portfolio, solve
from fsc.solver.solution import Solution
from fsc.solver.starts import embed, random_start, split

__all__ = [
    "BPI",
    "EM",
    "METHODS",
    "Budget",
    "Greedy",
    "Method",
    "Mirror",
    "NodeSplit",
    "PointBased",
    "Polish",
    "Portfolio",
    "Restarts",
    "Shaped",
    "Solution",
    "configured",
    "embed",
    "random_start",
    "settings",
    "solve",
    "split",
    "upper_bound",
]
