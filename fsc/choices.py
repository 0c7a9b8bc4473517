"""What training and solving choose among, and the default settings of the optimisers and of the solver's
methods, without torch.

``fsc train`` and ``fsc solve`` declare their options (:mod:`fsc.train.arguments`, :mod:`fsc.cli.solve`) and
read their world and memory before they import torch, so that a file declaring more than the machine can hold
is refused at once; their options name these.  :mod:`fsc.objective`, :mod:`fsc.optim` and
:mod:`fsc.solver.methods`, which compute with them, re-export them or take their defaults from here.
"""

from __future__ import annotations

__all__ = ["FLOW_MAX_DGRAD", "OPTIMIZER_NAMES", "ROSENBROCK_TOLERANCE", "SHAPED", "SOLVER_METHODS", "TARGETS"]

#: What the optimisers climb: the gain per step, or the discounted return ``gain / r``.
TARGETS = ("gain", "return")

#: The optimisers by name: the keys of :data:`fsc.optim.OPTIMIZERS`, in its order.
OPTIMIZER_NAMES = ("flow", "adam", "ascent", "rosenbrock")

#: The default ``max_dgrad`` of :class:`fsc.optim.GradientFlow`: a step is rejected when the gradient moves by more.
FLOW_MAX_DGRAD = 1e-4

#: The default ``tolerance`` of :class:`fsc.optim.Rosenbrock`: the largest local error estimate of a step, on each logit.
ROSENBROCK_TOLERANCE = 1e-5

#: The solver's methods by name, in the order a round runs them, with the defaults of their settings: the
#: fields of :class:`fsc.solver.PointBased` (``beliefs``: the most beliefs it samples), :class:`fsc.solver.Polish`,
#: :class:`fsc.solver.Mirror`, :class:`fsc.solver.Restarts` (``adam``: the fields of its :class:`fsc.optim.Adam`, then
#: its own), :class:`fsc.solver.EM`, :class:`fsc.solver.Greedy`, :class:`fsc.solver.BPI` and
#: :class:`fsc.solver.NodeSplit`, which take their defaults from here (``steps``: the most steps of the method in one
#: round of the portfolio; Perseus stages for ``pointbased``, sweeps and escapes for ``bpi``, splits for ``nodesplit``,
#: kicks for ``polish``).
SOLVER_METHODS = {
    "pointbased": {"beliefs": 1000, "steps": 500},
    "polish": {"kicks": 3, "patience": 30, "steps": 200},
    "mirror": {"rate": 1.0, "steps": 2000},
    "adam": {"lr": 0.1, "beta1": 0.9, "beta2": 0.999, "eps": 1e-12, "relative_eps": True, "patience": 100, "steps": 300},
    "em": {"steps": 200},
    "greedy": {"tries": 20, "steps": 300},
    "bpi": {"tries": 4, "steps": 10},
    "nodesplit": {"tries": 8, "steps": 50},
}

#: The defaults of :class:`fsc.solver.Shaped`: the weights of the negative rewards in the objectives climbed in
#: turn before the true one, and the steps of each method on each.
SHAPED = {"weights": (0.0, 0.5), "steps": 300}
