"""Concrete worlds for finite-state controllers."""

from .two_hypothesis import TwoHypothesis

__all__ = ["TwoHypothesis"]
