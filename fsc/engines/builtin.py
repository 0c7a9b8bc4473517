"""The engines fsc ships, one :class:`fsc.engines.engine.Engine` each (docs/model.md, "Engines"):

- ``dense``: LU of the dense ``(K, X, X)`` matrix (LAPACK; :class:`fsc.engines.sparse.DenseLU`), compiled;
- ``choices``: the same, through the smaller chain just after each choice, block triangular (RAM, chain,
  column, Memento; :class:`fsc.engines.sparse.AfterChoiceLU`), compiled;
- ``power``: the paper's repeated squaring (appendix B; :class:`fsc.engines.power.Power`), the reference;
- ``sparse``: SuperLU, one factorisation per part reused by the adjoint (:class:`fsc.engines.sparse.SparseLU`);
- ``iterative``: FGMRES with a two-level aggregation preconditioner (:mod:`fsc.engines.iterative`);
- ``accurate``: GTH elimination without subtraction, also for ``r = 0`` (:mod:`fsc.engines.accurate`);
- ``large``: the chain after each choice from the world's sparse tables, never listing the joint chain's
  nonzeros (:mod:`fsc.engines.large`).

Each estimates its own memory and time from the sizes (the constants of :mod:`fsc.engines.cost`); their ``auto``
costs order the joint chain's engines as the benchmarks measured them (the thresholds below).  Each imports its
solver when it first builds or factors, so that the estimates run without scipy, torch or numba.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fsc.engines import cost
from fsc.engines.engine import Engine, JointEngine

if TYPE_CHECKING:
    from fsc.engines.sparse import Backend
    from fsc.model.chain import JointChain

__all__ = ["BUILTIN", "Accurate", "Choices", "Dense", "Iterative", "Large", "Power", "Sparse"]

#: ``auto`` thresholds, in joint states per part ``X`` (benchmarks/bench_evaluate.py engines,
#: value and gradient, one thread, r = 1e-5): dense LU up to DENSE_STATES, or up to
#: DENSE_MAX_STATES when ``P`` is dense (at least DENSE_DENSITY of its entries
#: nonzero: RAM, where dense and sparse LU are within 1.5x of each other, 9-22 ms
#: at M = 64); sparse LU up to SPARSE_STATES (Memento m = 4: 1.3 ms against 4.4 ms
#: dense; m = 5: 17 ms against 280 ms dense); the iterative engine beyond (Memento
#: m = 6: 0.1-0.2 s against 0.6 s for sparse LU, whose fill then grows 12x per m).
DENSE_STATES = 200
DENSE_MAX_STATES = 3000
DENSE_DENSITY = 0.05
SPARSE_STATES = 2000
#: ``choices`` takes a sparse recurrent block up to this many states per part (Memento m = 4: 128 states,
#: 0.23 ms against 1.26 ms for sparse LU; m = 5: 512, 6.2 ms against 12.1 sparse and 10.7 iterative;
#: m = 6: 2048, 234 ms against 26 ms iterative), a dense one (RAM) up to DENSE_MAX_STATES.
CHOICES_SPARSE_STATES = 600


def _joint_costs(sizes: cost.Sizes) -> tuple[int, int, float]:
    """``(vectors, chain_bytes, chain_seconds)``: every engine's vectors (``p``, ``lambda``, seeds, the policy's
    tables), and the joint chain's list of nonzeros with the time to build it."""
    KX, N, C = sizes.placed * sizes.nodes, sizes.nodes, sizes.choices  # K X, all joint states
    vectors = 8 * (12 * KX + 4 * N * C)
    return vectors, *cost.chain_build(sizes)


def _dense_estimate(engine: str, sizes: cost.Sizes, copies: int, flops_per_lu: float) -> cost.Estimate:
    """A dense LU (or ``copies`` dense matrices and ``flops_per_lu`` LUs' worth of products) of each part."""
    vectors, chain_bytes, chain_seconds = _joint_costs(sizes)
    KX, X = sizes.placed * sizes.nodes, sizes.joint_states
    flops = (2 / 3) * KX * X**2 * flops_per_lu
    return cost.Estimate(engine, vectors + chain_bytes + copies * 8 * KX * X, chain_seconds + cost.DENSE_SECONDS_PER_FLOP * flops)


def _dense_chain(chain: JointChain) -> bool:
    """Whether ``auto`` runs a dense LU on the whole chain: small, or dense and not too large."""
    X = chain.size
    density = chain.nnz / (chain.num_parts * X * X)
    return X <= DENSE_STATES or (density >= DENSE_DENSITY and X <= DENSE_MAX_STATES)


class Dense(JointEngine):
    """Dense LAPACK LU of ``I - (1 - r) P`` per part, reused by the adjoint, and the compiled training step."""

    name = "dense"

    def estimate(self, sizes: cost.Sizes) -> cost.Estimate:
        return _dense_estimate(self.name, sizes, 1, 1)

    def auto_cost(self, chain: JointChain, reset: float) -> float | None:
        return 2.0 if _dense_chain(chain) else None

    def backend(self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float, probs: np.ndarray) -> Backend:
        from fsc.engines.sparse import DenseLU

        return DenseLU(chain, values, p0, reset)

    def fused_constants(self, operator, architecture, tables, step_reward, reset, scale):
        from fsc.engines.kernels import Fused
        from fsc.model.chain import KernelTables

        none, nothing, flags = np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros((0, 0), dtype=bool)
        no_tables = KernelTables(none, none, nothing, np.zeros((0, 0), dtype=np.int64), 0, none, none, none, none, nothing, False)
        after = (False, no_tables, none, none, nothing, flags, flags, np.zeros((0, 4), dtype=np.int64))
        return Fused(*_fused_common(operator, architecture, tables, step_reward, reset, scale), *after)


def _fused_common(chain: JointChain, arch, tables: np.ndarray, step_reward: np.ndarray, reset: float, scale: float) -> tuple:
    """The first eighteen fields of :class:`fsc.engines.kernels.Fused` (the whole chain's tables), in order."""
    return (
        np.ascontiguousarray(arch.allowed), np.ascontiguousarray(arch.reset_mask), chain.node_choice, chain.weight,
        np.ascontiguousarray(chain.initial_world, dtype=np.float64), chain.dense_index_t, np.ascontiguousarray(chain.padding),
        chain.part_weights, tables, step_reward, chain.flat_rows, chain.flat_cols, (1 - reset) * chain.weight,
        float(reset), float(1 - reset), chain.states_per_part, arch.num_nodes, scale,
    )  # fmt: skip


class Choices(JointEngine):
    """Dense LU of the chain after each choice (:class:`fsc.model.chain.AfterChoice`), block triangular, and its
    compiled training step."""

    name = "choices"

    def estimate(self, sizes: cost.Sizes) -> cost.Estimate:
        vectors, chain_bytes, chain_seconds = _joint_costs(sizes)
        Y = sizes.states_per_part * sizes.classes
        KY = sizes.placed * sizes.classes  # K Y
        return cost.Estimate(self.name, vectors + chain_bytes + 8 * KY * Y, chain_seconds + cost.DENSE_SECONDS_PER_FLOP * (2 / 3) * KY * Y**2)

    def auto_cost(self, chain: JointChain, reset: float) -> float | None:
        after = chain.after_choice
        if after is None:
            return None
        YR = after.recurrent_size
        dense_block = YR <= DENSE_MAX_STATES and len(after.b_index_t) >= DENSE_DENSITY * chain.num_parts * YR * YR
        return 1.0 if YR <= CHOICES_SPARSE_STATES or dense_block else None

    def operator(self, world, architecture) -> JointChain:
        from fsc.model.chain import require_after_choice

        chain = super().operator(world, architecture)
        require_after_choice(chain)
        return chain

    def backend(self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float, probs: np.ndarray) -> Backend:
        from fsc.engines.sparse import AfterChoiceLU

        return AfterChoiceLU(chain, values, p0, reset, probs=probs)

    def transition_gradient(self, operator: JointChain, backend: Backend, lam: np.ndarray, p: np.ndarray, reset: float) -> np.ndarray:
        from fsc.engines import kernels

        t = operator.after_choice  # P = G Pi: through G, in O(K S N C)
        return kernels.after_choice_transition_gradient(lam, p, t.kernel_tables, t.valid, 1 - reset, operator.states_per_part, operator.architecture.num_nodes)

    def fused_constants(self, operator, architecture, tables, step_reward, reset, scale):
        from fsc.engines.kernels import Fused

        t = operator.after_choice
        after = (True, t.kernel_tables, t.b_index_t, t.b_node_choice, t.b_weight, t.b_padding, t.valid, t.b_runs)
        return Fused(*_fused_common(operator, architecture, tables, step_reward, reset, scale), *after)


class Power(JointEngine):
    """The paper's power method (:class:`fsc.engines.power.Power`): the reference of the published code; never ``auto``."""

    name = "power"
    auto = False

    def estimate(self, sizes: cost.Sizes) -> cost.Estimate:
        return _dense_estimate(self.name, sizes, 3, 6)

    def backend(self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float, probs: np.ndarray) -> Backend:
        from fsc.engines.power import Power as PowerMethod

        return PowerMethod(chain, values, p0, reset)


def _sparse_estimate(engine: str, sizes: cost.Sizes, factor_bytes_per_nonzero: int) -> cost.Estimate:
    """The chain's list, a CSC copy, and the factor or the preconditioner."""
    vectors, chain_bytes, chain_seconds = _joint_costs(sizes)
    factor = factor_bytes_per_nonzero * sizes.chain_nonzeros
    return cost.Estimate(engine, vectors + chain_bytes + factor, chain_seconds + cost.SPARSE_SECONDS_PER_NONZERO * cost.JOINT_FILL * sizes.chain_nonzeros)


class Sparse(JointEngine):
    """SuperLU of ``I - (1 - r) P`` per part, reused for the adjoint."""

    name = "sparse"

    def estimate(self, sizes: cost.Sizes) -> cost.Estimate:
        return _sparse_estimate(self.name, sizes, 12 * cost.JOINT_FILL)

    def auto_cost(self, chain: JointChain, reset: float) -> float | None:
        return 3.0 if chain.size <= SPARSE_STATES else None

    def backend(self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float, probs: np.ndarray) -> Backend:
        from fsc.engines.sparse import SparseLU

        return SparseLU(chain, values, p0, reset)


class Iterative(JointEngine):
    """FGMRES with the two-level preconditioner, residuals checked (falls back to sparse LU on small chains)."""

    name = "iterative"

    def estimate(self, sizes: cost.Sizes) -> cost.Estimate:
        return _sparse_estimate(self.name, sizes, 24)

    def auto_cost(self, chain: JointChain, reset: float) -> float | None:
        return 4.0  # any chain: the last resort of the joint chain's engines

    def backend(self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float, probs: np.ndarray) -> Backend:
        from fsc.engines.iterative import Iterative as IterativeSolver

        return IterativeSolver(chain, values, p0, reset)


class Accurate(JointEngine):
    """GTH elimination without subtraction: small relative errors, and ``reset = 0``, which ``auto`` gives it."""

    name = "accurate"
    zero_reset = True

    def estimate(self, sizes: cost.Sizes) -> cost.Estimate:
        return _dense_estimate(self.name, sizes, 1, 1)

    def auto_cost(self, chain: JointChain, reset: float) -> float | None:
        return 0.0 if reset == 0 else None

    def backend(self, chain: JointChain, values: np.ndarray, p0: np.ndarray, reset: float, probs: np.ndarray) -> Backend:
        from fsc.engines.accurate import Accurate as GTH

        return GTH(chain, values, p0, reset)


class Large(Engine):
    """The chain after each choice from the world's sparse tables (:class:`fsc.engines.large.LargeLU`): ``auto`` runs
    it instead of building the joint chain when that chain is large or its engines do not fit or are slow."""

    name = "large"
    joint = False

    def estimate(self, sizes: cost.Sizes) -> cost.Estimate:
        vectors, _, _ = _joint_costs(sizes)
        KX, C = sizes.placed * sizes.nodes, sizes.choices
        K, Q = max(sizes.parts, 1), sizes.classes
        Y = sizes.states_per_part * Q  # each part's B
        nnz = sizes.large_nonzeros
        fill = cost.large_fill(sizes)
        # Per block, the dense (S_part, Q_a, Q) table of sum_o O W and the (Q_a, Q) masks of the classes that follow.
        vectors += 8 * sizes.states_per_part * sizes.largest_action_classes * Q
        vectors += (9 + sizes.observations) * K * sizes.actions * sizes.largest_action_classes * Q
        # G, G^T and the map from the policy to B's entries, CSR (12 bytes an entry), and their construction
        vectors += cost.STEP_BYTES_PER_NONZERO * sizes.step_nonzeros
        seconds = K * cost.lu_seconds(fill // K, Y, nnz // K) + cost.SPARSE_SECONDS_PER_NONZERO * KX * C
        timed = sizes.state_fill > 0  # a world read: its fill measured (else its declared sizes: the factor alone)
        besides = vectors + cost.LARGE_BYTES_PER_NONZERO * nnz + 12 * (fill - fill // K) if timed else 0  # all but one part's factor
        if not cost.complete_lu(fill // K, Y, nnz // K, timed=timed, besides=besides):  # GMRES, an incomplete LU of 3 nnz(B)
            fill, seconds = 3 * nnz, K * cost.krylov_seconds(nnz // K, Y) + cost.SPARSE_SECONDS_PER_NONZERO * KX * C
        return cost.Estimate(self.name, vectors + cost.LARGE_BYTES_PER_NONZERO * nnz + 12 * fill, seconds)

    def set_up_seconds(self, sizes: cost.Sizes) -> float:
        return cost.LARGE_SECONDS_PER_NONZERO * sizes.large_nonzeros

    def takes_over(self, sizes: cost.Sizes, estimates: dict[str, cost.Estimate], limit: float) -> bool:
        """When the joint chain holds more than ``LARGE_CHAIN_NONZEROS`` nonzeros (building its list would take longer
        than the whole evaluation here: benchmarks/bench_large.py), when ``choices`` does not fit, or when this engine
        is estimated at under a tenth of the fastest of ``choices`` and ``sparse`` that fits and that one at over
        ``SLOW_CHAIN_SECONDS`` (``machine`` with ``ram:1``: a long horizon whose chain the iterative engine solves in
        many seconds, this engine in milliseconds)."""
        choices = estimates.get("choices")
        if sizes.chain_nonzeros > cost.LARGE_CHAIN_NONZEROS or (choices is not None and choices.bytes > limit):
            return True
        chain = [estimates[name] for name in ("choices", "sparse") if name in estimates]
        seconds = min((e.seconds for e in chain if e.bytes <= limit), default=float("inf"))
        return seconds > cost.SLOW_CHAIN_SECONDS and 10 * estimates[self.name].seconds < seconds

    def operator(self, world, architecture):
        from fsc.engines.large import large_chain

        return large_chain(world, architecture)

    def frame(self, operator):
        return operator.frame  # the world's own tables: no list of the chain's nonzeros

    def factor(self, operator, probs: np.ndarray, p0: np.ndarray, reset: float) -> Backend:
        from fsc.engines.large import LargeLU

        return LargeLU(operator, None, p0, reset, probs=probs)

    def transition_gradient(self, operator, backend: Backend, lam: np.ndarray, p: np.ndarray, reset: float) -> np.ndarray:
        return backend.transition_gradient(lam, p)  # P = G Pi, G from the world's tables


#: The engines fsc ships, in the order the registry lists them.
BUILTIN = (Dense(), Choices(), Power(), Sparse(), Iterative(), Accurate(), Large())
