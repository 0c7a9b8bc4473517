"""Solving: the best controller a portfolio of methods finds within a budget (:func:`solve`).

:func:`solve` returns a :class:`Solution` (the policy, its exact value, an upper bound and the gap);
the methods (:data:`METHODS`) share one signature, ``method(problem, start, budget, rng) -> Policy``, and
one evaluator (:class:`Problem`).  ``fsc train`` stays the paper's gradient flow; this is the tool for
answers.
"""

from fsc.solver.bound import upper_bound
from fsc.solver.methods import METHODS, ascent, em, greedy, mirror
from fsc.solver.portfolio import solve
from fsc.solver.problem import Budget, Problem
from fsc.solver.solution import Solution
from fsc.solver.starts import embed, random_start, split

__all__ = ["METHODS", "Budget", "Problem", "Solution", "ascent", "em", "embed", "greedy", "mirror", "random_start", "solve", "split", "upper_bound"]
