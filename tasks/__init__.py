"""Concrete worlds for finite-state controllers."""

from .classic import CheeseMaze, Grid4x3, Tiger
from .two_hypothesis import TwoHypothesis

__all__ = ["CheeseMaze", "Grid4x3", "Tiger", "TwoHypothesis"]
