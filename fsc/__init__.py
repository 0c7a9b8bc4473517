"""fsc: finite-state controllers in partially observable worlds.

Declare a world (:class:`POMDP`), a memory architecture
(:class:`MemoryArchitecture` and its subclasses), a :class:`Policy` on it, and
evaluate the controller exactly (:func:`evaluate`) or by Monte Carlo
(:func:`simulate`), and train it (:func:`flow`, :func:`optimize`, and
:func:`fsc.train.run_training` for resumable runs on disk).
"""

from .automaton import Automaton, product
from .chain import JointChain, joint_chain
from .evaluate import CONVENTIONS, Evaluation, evaluate
from .iterative import ConvergenceError
from .memory import RAM, Chain, Column, Memento, MemoryArchitecture, architecture_kind, parse_memory, register_architecture
from .optim import Adam, Ascent, GradientFlow, Objective, Record, State, flow, optimize
from .policy import Policy
from .pomdp import POMDP, Task, as_pomdp
from .pomdp_file import read_pomdp, write_pomdp
from .simulate import Simulation, simulate
from .solve import ENGINES, choose_engine

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
    "Record",
    "State",
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
    "read_pomdp",
    "write_pomdp",
]
