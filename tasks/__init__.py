"""Concrete worlds for finite-state controllers, and the built-in worlds by name (:data:`WORLDS`)."""

from .classic import CheeseMaze, Grid4x3, Tiger
from .two_hypothesis import TwoHypothesis

__all__ = ["WORLDS", "CheeseMaze", "Grid4x3", "Tiger", "TwoHypothesis"]

#: The built-in worlds by the name the command line gives them (``--world NAME``): name -> the task, built
#: with its defaults (the two-hypothesis world with its gap ``mu``, ``--mu``).
WORLDS = {"two-hypothesis": TwoHypothesis, "tiger": Tiger, "cheese-maze": CheeseMaze, "4x3": Grid4x3}
