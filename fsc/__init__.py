"""fsc: finite-state controllers in partially observable worlds.

Declare a world (:class:`POMDP`), a memory architecture
(:class:`MemoryArchitecture` and its subclasses), a :class:`Policy` on it, and
evaluate the controller exactly (:func:`evaluate`) or by Monte Carlo
(:func:`simulate`), and train it (:func:`flow`, :func:`optimize`, and
:func:`fsc.train.run_training` for resumable runs on disk).

The names below are imported when first used (:mod:`fsc.lazy`), so ``import fsc`` and the command line's
``fsc --help`` do not wait for torch and numba.
"""

from fsc.lazy import export

__version__ = "0.1.0"

__all__ = export(
    __name__,
    {
        "fsc.engines.iterative": ("ConvergenceError",),
        "fsc.engines.registry": ("ENGINES", "Engine", "register_engine", "unregister_engine"),
        "fsc.evaluate": ("CONVENTIONS", "Evaluation", "evaluate"),
        "fsc.io.pomdp_file": ("read_pomdp", "write_pomdp"),
        "fsc.model.architecture": ("Automaton", "MemoryArchitecture", "architecture_kind", "register_architecture"),
        "fsc.model.chain": ("JointChain", "joint_chain"),
        "fsc.model.memory": ("RAM", "Chain", "Column", "Memento", "parse_memory"),
        "fsc.model.policy": ("Policy",),
        "fsc.model.pomdp": ("POMDP", "Task", "as_pomdp"),
        "fsc.model.product": ("product",),
        "fsc.objective": ("Objective",),
        "fsc.optim": ("Adam", "Ascent", "GradientFlow", "Record", "Rosenbrock", "State", "Step", "StopRule", "flow", "optimize"),
        "fsc.simulate": ("Simulation", "simulate"),
        "fsc.solver": ("Portfolio", "Solution", "solve"),
    },
)
