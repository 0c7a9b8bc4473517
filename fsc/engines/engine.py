"""What an engine is: one object behind one protocol (:class:`Engine`), kept in :mod:`fsc.engines.registry`.

An engine computes, for each closed part ``k`` of the world, ``p = r (I - (1 - r) P)^{-1} p_0`` and the adjoint
solve of its gradient.  It says what it costs from the sizes alone (:meth:`Engine.estimate`), builds its
operator from a world and an architecture (the joint chain, or the large engine's tables), factors it for a
policy (a :class:`fsc.engines.sparse.Backend`: ``solve``, ``solve_adjoint``, ``residual``), gives ``dL/dpi``
through ``P`` from the adjoint ``lambda``, and may run the whole value and gradient in compiled code
(:meth:`Engine.fused_constants`).  :class:`fsc.evaluate.Evaluator` calls these methods and nothing else.

Nothing here imports scipy, torch or numba: the estimates run before a command imports them
(:func:`fsc.engines.estimate.check_declared`).  An engine imports its solvers when it first builds or factors.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import numpy as np

    from fsc.engines.cost import Estimate, Sizes
    from fsc.engines.sparse import Backend
    from fsc.model.architecture import MemoryArchitecture
    from fsc.model.chain import JointChain
    from fsc.model.pomdp import POMDP

__all__ = ["Engine", "JointEngine"]


class Engine(abc.ABC):
    """One engine: its name, what it accepts, its estimates, its operator, its solver and its gradient.

    Attributes:
        name: what ``engine=`` and ``--engine`` call it.
        zero_reset: whether it accepts ``reset = 0`` (a chain with a single recurrent class).
        auto: whether ``auto`` may pick it (:func:`fsc.engines.registry.choose_engine`).
        joint: whether its operator is the joint chain (:func:`fsc.model.chain.joint_chain`); ``auto`` decides
            between the engines that are not (they work from the world's own tables) before it builds the chain.
    """

    name: ClassVar[str]
    zero_reset: ClassVar[bool] = False
    auto: ClassVar[bool] = True
    joint: ClassVar[bool] = True

    @abc.abstractmethod
    def estimate(self, sizes: Sizes) -> Estimate:
        """Peak bytes and seconds of one evaluation with its gradient, from ``sizes`` alone (set-up included)."""

    @abc.abstractmethod
    def set_up_seconds(self, sizes: Sizes) -> float:
        """Seconds to build :meth:`operator` before the first evaluation."""

    def auto_cost(self, chain: JointChain, reset: float) -> float | None:
        """This engine's cost for ``auto`` on a built joint chain, lowest first (the order the benchmarks measured
        among the joint chain's engines), or None when ``auto`` does not take it there.  None by default."""
        return None

    def takes_over(self, sizes: Sizes, estimates: dict[str, Estimate], limit: float) -> bool:
        """For an engine that is not :attr:`joint`: whether ``auto`` runs it rather than build the joint chain,
        given every candidate's estimate and the memory ``limit`` (it fits: checked by the caller)."""
        return False

    @abc.abstractmethod
    def operator(self, world: POMDP, architecture: MemoryArchitecture) -> Any:
        """The structure this engine solves on, per (world, architecture) and for any policy (cached by the builder)."""

    def frame(self, operator: Any) -> Any:
        """The read-out tables of ``operator`` (:class:`fsc.model.chain.ChainFrame`'s fields: parts, weights,
        initial world, per-step tables); the joint chain has them itself."""
        return operator

    @abc.abstractmethod
    def factor(self, operator: Any, probs: np.ndarray, p0: np.ndarray, reset: float) -> Backend:
        """The solver of ``A p = r p0`` and ``A^T lambda = g`` for the policy's ``probs`` ``(N, C)`` and the reset
        distributions ``p0`` ``(K, X)``."""

    @abc.abstractmethod
    def transition_gradient(self, operator: Any, backend: Backend, lam: np.ndarray, p: np.ndarray, reset: float) -> np.ndarray:
        """``dL/dpi`` ``(N, C)`` through ``P``: ``sum (1 - r) lambda[x2] p[x] dP[x2, x]/dpi[n, c]``."""

    def fused_constants(self, operator: Any, architecture: MemoryArchitecture, tables: np.ndarray, step_reward: np.ndarray, reset: float,
                        scale: float) -> Any:  # fmt: skip
        """The tables of the compiled value and gradient (:class:`fsc.engines.kernels.Fused`), or None: this engine
        has no compiled path (the default).  ``tables``: the reward then the metric tables read out; ``scale``: the
        weight of the gain read out in the loss."""
        return None

    def __repr__(self) -> str:
        return f"<engine {self.name!r}>"


class JointEngine(Engine):
    """An engine on the joint chain (:class:`fsc.model.chain.JointChain`): the nonzeros of ``P`` are the policy's
    entries times the world's weights; ``dL/dpi`` through them is a scatter over the chain's nonzeros."""

    def set_up_seconds(self, sizes: Sizes) -> float:
        from fsc.engines.cost import chain_build

        return chain_build(sizes)[1]

    def operator(self, world: POMDP, architecture: MemoryArchitecture) -> JointChain:
        from fsc.model.chain import joint_chain

        return joint_chain(world, architecture)

    def factor(self, operator: JointChain, probs: np.ndarray, p0: np.ndarray, reset: float) -> Backend:
        values = probs.reshape(-1)[operator.node_choice] * operator.weight
        return self.backend(operator, values, p0, reset, probs)

    @abc.abstractmethod
    def backend(self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float, probs: np.ndarray) -> Backend:
        """The solver from the nonzeros ``values`` of ``P`` (in the chain's order)."""

    def transition_gradient(self, operator: JointChain, backend: Backend, lam: np.ndarray, p: np.ndarray, reset: float) -> np.ndarray:
        from fsc.engines import kernels

        chain, arch = operator, operator.architecture
        return kernels.transition_gradient(lam, p, chain.flat_rows, chain.flat_cols, chain.node_choice, (1 - reset) * chain.weight, arch.num_nodes,
                                           arch.num_choices)  # fmt: skip
