"""fsc: finite-state controllers in partially observable worlds.

Declare a world (:class:`POMDP`), a memory architecture
(:class:`MemoryArchitecture` and its subclasses), a :class:`Policy` on it, and
evaluate the controller exactly (:func:`evaluate`) or by Monte Carlo
(:func:`simulate`), and train it (:func:`flow`, :func:`optimize`, and
:func:`fsc.train.run_training` for resumable runs on disk).
"""

from fsc.engines.iterative import ConvergenceError
from fsc.engines.solve import ENGINES, choose_engine
from fsc.evaluate import CONVENTIONS, Evaluation, evaluate
from fsc.io.pomdp_file import read_pomdp, write_pomdp
from fsc.model.architecture import Automaton, MemoryArchitecture, architecture_kind, register_architecture
from fsc.model.chain import JointChain, joint_chain
from fsc.model.memory import RAM, Chain, Column, Memento, parse_memory
from fsc.model.policy import Policy
from fsc.model.pomdp import POMDP, Task, as_pomdp
from fsc.model.product import product
from fsc.objective import Objective
from fsc.optim import Adam, Ascent, GradientFlow, Optimizer, Record, State, StopRule, flow, optimize
from fsc.simulate import Simulation, simulate
from fsc.solver import Solution, solve

__version__ = "0.1.0"

__all__ = [
    "CONVENTIONS",
    "ConvergenceError",
    "ENGINES",
    "Adam",
    "Automaton",
    "Ascent",
    "GradientFlow",
    "Objective",
    "Optimizer",
    "Record",
    "State",
    "StopRule",
    "POMDP",
    "RAM",
    "Chain",
    "Column",
    "Evaluation",
    "architecture_kind",
    "register_architecture",
    "JointChain",
    "Memento",
    "MemoryArchitecture",
    "Policy",
    "Simulation",
    "Task",
    "as_pomdp",
    "choose_engine",
    "evaluate",
    "flow",
    "joint_chain",
    "optimize",
    "product",
    "parse_memory",
    "simulate",
    "Solution",
    "solve",
    "read_pomdp",
    "write_pomdp",
]
