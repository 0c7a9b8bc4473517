"""What training chooses among, and the optimisers' default settings, without torch.

``fsc train`` declares its options (:mod:`fsc.train.arguments`) and reads its world and memory before it
imports torch, so that a file declaring more than the machine can hold is refused at once; its options name
these.  :mod:`fsc.objective` and :mod:`fsc.optim`, which compute with them, re-export them or take their
defaults from here.
"""

from __future__ import annotations

__all__ = ["FLOW_MAX_DGRAD", "OPTIMIZER_NAMES", "ROSENBROCK_TOLERANCE", "TARGETS"]

#: What the optimisers climb: the gain per step, or the discounted return ``gain / r``.
TARGETS = ("gain", "return")

#: The optimisers by name: the keys of :data:`fsc.optim.OPTIMIZERS`, in its order.
OPTIMIZER_NAMES = ("flow", "adam", "ascent", "rosenbrock")

#: The default ``max_dgrad`` of :class:`fsc.optim.GradientFlow`: a step is rejected when the gradient moves by more.
FLOW_MAX_DGRAD = 1e-4

#: The default ``tolerance`` of :class:`fsc.optim.Rosenbrock`: the largest local error estimate of a step, on each logit.
ROSENBROCK_TOLERANCE = 1e-5
