"""The asymmetric column of confidence: the CCP with two exits and a biased reset.

The column of confidence policy (paper Definition 3.3) has one exit
probability ``eps`` at both tops and a reset that starts in ``1A`` or ``1B``
with probability 1/2.  Its asymmetric form has three parameters:

- ``eps_A``: after ``-`` at the top ``MA``, step down with ``eps_A``;
- ``eps_B``: the same at the top ``MB``;
- ``split`` (``j``): the reset starts in ``1A`` with probability ``j`` and in
  ``1B`` with ``1 - j``.

Closed form (extends the chain argument of appendix C).  Under ``H_A`` the
``2M`` merged states lie on the line ``MA .. 1A 1B .. MB``; a step moves toward
``MA`` with probability ``k_A`` and toward ``MB`` with ``k_B``, the top ``MA``
leaves with ``eps_A k_B`` and ``MB`` with ``eps_B k_A``; the reset puts mass
``r j`` on ``1A`` and ``r (1 - j)`` on ``1B``.  Balancing the flux out of the
top ``j' + 1`` states of a column gives the same ratio recursion
``sigma = p_centre / P_column`` as the symmetric case (the reset enters at the
centre only, so the split does not appear in it).  With
``x_A = (1 - r) c_A sigma_A`` the flux from ``1A`` to ``1B`` per unit mass of
column ``A`` (``c_A = k_B``; ``eps_A k_B`` when ``M = 1``) and ``x_B`` the
flux back, the balance of column ``A`` reads
``r P_A + x_A P_A = x_B P_B + r j``, so that, with ``P_A + P_B = 1``,

.. math::

    q_{H_A} = P_B = \\frac{r (1 - j) + x_A}{r + x_A + x_B}.

Under ``H_B`` the rewards of the arms swap, so the worse-arm mass is
``q_{H_B}(eps_A, eps_B, j) = q_{H_A}(eps_B, eps_A, 1 - j)``, and the task's
``q`` is the average of the two.  ``q`` is linear in ``j`` (each denominator
is independent of ``j``): its slope is ``(r / 2) (1 / D_{H_B} - 1 / D_{H_A})``,
zero when ``eps_A = eps_B``.  The optimum therefore has ``j`` in ``{0, 1}``;
by the symmetry ``q(eps_A, eps_B, j) = q(eps_B, eps_A, 1 - j)`` it is taken
with ``j = 1``.

Conventions: ``native`` is the stationary worse-arm probability above;
``paper`` reads ``q`` from the gain ``(1 - r) mu (1 - 2 q)``, i.e.
``q_paper = (1 - r) q + r / 2``: an increasing affine map, so both have the
same minimiser.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from fsc.errors import InputError, InputTypeError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import RAM, Chain, Column
from fsc.model.policy import Policy

from .ccp import ccp_probs
from .closed_form import _check_r, _crossing, _open_unit, ccp_eps_best, ccp_q, to_convention
from .necklaces.words import integer_arg

__all__ = [
    "AsymmetricOptimum",
    "asymmetric_ccp",
    "asymmetric_ccp_optimum",
    "asymmetric_ccp_probs",
    "asymmetric_ccp_q",
    "to_convention",
]


def _unit(name: str, value: object, *, low_open: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputTypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    ok = (0 < value <= 1) if low_open else (0 <= value <= 1)
    if not (math.isfinite(value) and ok):
        raise InputError(f"{name} must be in {'(0, 1]' if low_open else '[0, 1]'}, got {value!r}")
    return value


def asymmetric_ccp_probs(arch: MemoryArchitecture, eps_A: float, eps_B: float, split: float) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of the asymmetric CCP on a RAM-like architecture (``RAM``, ``Chain``, ``Column``).

    As :func:`policies.ccp_probs`, but the top ``MA`` steps down after ``-``
    with ``eps_A``, the top ``MB`` with ``eps_B``, and the blank node ``1_``
    plays ``1A`` with probability ``split`` and ``1B`` with ``1 - split``.

    Returns ``(probs, init_probs)`` of shapes ``(N, C)`` (node, choice) and ``(N,)``.
    """
    eps_A = _unit("eps_A", eps_A, low_open=True)
    eps_B = _unit("eps_B", eps_B, low_open=True)
    split = _unit("split", split, low_open=False)
    probs, init = ccp_probs(arch, 1.0)
    M, choice = arch.M, arch.choice_index
    for x, other, eps in (("A", "B", eps_A), ("B", "A", eps_B)):
        row = probs[arch.node_index(f"{M}{x}-")]
        row[:] = 0
        row[choice(f"{M}{x}")] += 1 - eps
        row[choice(f"{M - 1}{x}" if M > 1 else f"1{other}")] += eps
    blank = probs[arch.node_index("1_")]
    blank[:] = 0
    blank[choice("1A")], blank[choice("1B")] = split, 1 - split
    return probs, init


def asymmetric_ccp(M: int, eps_A: float, eps_B: float, split: float) -> tuple[Column, Policy]:
    """The asymmetric CCP on ``Column(M)``; its exact ``q`` is :func:`asymmetric_ccp_q`."""
    arch = Column(integer_arg("M", M, 1))
    probs, init = asymmetric_ccp_probs(arch, eps_A, eps_B, split)
    return arch, Policy.from_probs(arch, probs, init)


def asymmetric_ccp_q(mu: float, M: int, r: float, eps_A: float, eps_B: float, split: float, *, convention: str = "native") -> float:
    """Exact ``q`` of the asymmetric CCP (see the module docstring for the derivation).

    ``q = (q_{H_A} + q_{H_B}) / 2`` with ``q_{H_A} = (r (1 - j) + x_A) / (r + x_A + x_B)``.
    Equals :func:`policies.closed_form.ccp_q` when ``eps_A = eps_B`` and ``split = 1/2``.

    Raises:
        TypeError, ValueError: for arguments out of range.
    """
    mu = _open_unit("mu", mu)
    M = integer_arg("M", M, 1)
    r = _check_r(r, allow_zero=True)
    eps_A = _unit("eps_A", eps_A, low_open=True)
    eps_B = _unit("eps_B", eps_B, low_open=True)
    j = _unit("split", split, low_open=False)
    hi, lo = (1.0 + mu) / 2.0, (1.0 - mu) / 2.0
    # H_A: column A climbs with hi, column B with lo.
    xa, xb = _crossing(r, hi, lo, eps_A, M), _crossing(r, lo, hi, eps_B, M)
    q_a = (r * (1.0 - j) + xa) / (r + xa + xb)
    # H_B: column B is the good one; the worse-arm mass is column A's.
    ya, yb = _crossing(r, lo, hi, eps_A, M), _crossing(r, hi, lo, eps_B, M)
    q_b = (r * j + yb) / (r + ya + yb)
    return to_convention(0.5 * (q_a + q_b), r, convention)


@attrs.frozen
class AsymmetricOptimum:
    """The optimum of :func:`asymmetric_ccp_q` over ``(eps_A, eps_B, split)``, beside the symmetric CCP's."""

    mu: float
    M: int
    reset: float
    convention: str
    q: float
    eps_A: float
    eps_B: float
    split: float
    q_symmetric: float
    eps_symmetric: float

    @property
    def gain(self) -> float:
        """``q_symmetric - q`` (>= 0)."""
        return self.q_symmetric - self.q

    def to_dict(self) -> dict:
        return {**attrs.asdict(self), "gain": self.gain}


def asymmetric_ccp_optimum(mu: float, M: int, r: float, *, convention: str = "native") -> AsymmetricOptimum:
    """Minimise :func:`asymmetric_ccp_q` over ``eps_A, eps_B`` in (0, 1] and ``split`` in [0, 1].

    ``q`` is linear in ``split``, so ``split = 1`` (or 0, the mirror image);
    ``(eps_A, eps_B)`` is then found by a bounded quasi-Newton search on
    ``log eps`` started from the symmetric optimum (and from a few shifted
    starts), and the best of these is kept, never worse than the symmetric
    CCP with ``split = 1``.  The minimiser is the same in both conventions
    (an increasing affine map apart); ``q`` is reported in ``convention``.
    """
    mu = _open_unit("mu", mu)
    M = integer_arg("M", M, 1)
    r = _check_r(r, allow_zero=False)
    if convention not in ("native", "paper"):
        raise InputError(f"convention must be 'native' or 'paper', got {convention!r}")
    from scipy import optimize  # here, not at the top: it takes 0.3 s to import, and `fsc train` imports this module

    eps0 = ccp_eps_best(mu, M, r)
    q_sym = ccp_q(mu, M, r, eps0)

    def f(z: np.ndarray) -> float:
        ea, eb = (min(1.0, math.exp(v)) for v in z)
        return asymmetric_ccp_q(mu, M, r, ea, eb, 1.0)

    # Scale so that the optimiser sees differences of order 1.
    scale = max(q_sym, 1e-300)
    bounds = [(math.log(1e-300) if eps0 < 1e-100 else math.log(eps0) - 30.0, 0.0)] * 2
    best_z = np.log([eps0, eps0])
    best = f(best_z)
    for shift in (0.0, 0.05, -0.05, 0.3):
        start = np.log([eps0, eps0]) + np.array([shift, -shift])
        start = np.minimum(start, 0.0)
        res = optimize.minimize(lambda z: f(z) / scale, start, method="L-BFGS-B", bounds=bounds, options={"ftol": 1e-16, "gtol": 1e-13, "maxiter": 500})
        value = f(res.x)
        if value < best:
            best, best_z = value, res.x
    # Polish with Nelder-Mead (no gradient noise at the 1e-16 level).
    res = optimize.minimize(lambda z: f(z) / scale, best_z, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-17, "maxiter": 4000})
    z = np.minimum(res.x, 0.0)
    if f(z) < best:
        best, best_z = f(z), z
    ea, eb = (min(1.0, math.exp(v)) for v in best_z)
    return AsymmetricOptimum(
        mu=mu,
        M=M,
        reset=r,
        convention=convention,
        q=to_convention(best, r, convention),
        eps_A=ea,
        eps_B=eb,
        split=1.0,
        q_symmetric=to_convention(q_sym, r, convention),
        eps_symmetric=eps0,
    )


def is_ram_like(arch: MemoryArchitecture) -> bool:
    """RAM, Chain or Column with two arms: the architectures the (asymmetric) CCP lives on."""
    return isinstance(arch, (RAM, Chain, Column)) and arch.arms == 2


def cmd_asymmetric_ccp(args) -> dict:
    """The record printed by ``fsc closed-form asymmetric-ccp`` (the optimum at ``--mu``, ``--M``, ``--reset``)."""
    if args.eps is not None:
        raise InputError(f"--eps is for the symmetric ccp; asymmetric-ccp prints its optimum over (eps_A, eps_B, split), got --eps {args.eps!r}")
    optimum = asymmetric_ccp_optimum(args.mu, args.M, args.reset, convention=args.convention)
    return {
        "q": optimum.q,
        "eps_A": optimum.eps_A,
        "eps_B": optimum.eps_B,
        "split": optimum.split,
        "q_symmetric": optimum.q_symmetric,
        "eps_symmetric": optimum.eps_symmetric,
        "gain": optimum.gain,
        "convention": optimum.convention,
        "mu": optimum.mu,
        "M": optimum.M,
        "reset": optimum.reset,
    }


def q_and_probability_gradient(world, arch: MemoryArchitecture, probs: np.ndarray, init_probs: np.ndarray, reset: float, convention: str = "native"):
    """``q`` and its gradient with respect to the probability table and the initial distribution.

    ``q`` is computed as :func:`fsc.evaluate` does (dense engine), but from
    ``probs[n, c]`` (node, choice) and ``init_probs[n]`` as leaves, so that the
    gradient exists at deterministic policies (whose logits are infinite).
    Returns ``(q, dq/dprobs (N, C), dq/dinit (N,))``.
    """
    from fsc.evaluate import Evaluator

    evaluator = Evaluator(world, arch, reset, "dense", convention)
    run = evaluator.forward_probs(np.asarray(probs, dtype=np.float64), np.asarray(init_probs, dtype=np.float64))
    d_probs, d_init = evaluator.backward(run, metrics={"q": 1.0}, on="probs")
    return run.metrics["q"], d_probs, d_init


def local_optimality(mu: float, M: int, r: float, *, convention: str = "native", h: float = 1e-4) -> dict:
    """Is the asymmetric CCP optimum a local minimum of ``q`` over all policies of ``RAM(M)``?

    Over the policy simplex (each node's choice distribution, and the initial
    distribution), at the optimum ``pi*``:

    - first order: for every node and every allowed choice ``c`` the
      directional derivative of moving mass to ``c`` from the choices in use,
      ``g[n, c] - sum_c' pi*[n, c'] g[n, c']``, must be ``>= 0``;
      ``margin`` is its smallest value over the choices not in use at nodes that
      carry stationary mass (strictly positive: those directions increase ``q``
      to first order); ``flat`` counts the directions with zero derivative
      (nodes never visited; they cannot lower ``q`` to first order);
    - the free directions: the two top exits (``stationarity``: the largest
      ``|dq/d eps|`` there, ~0) with the Hessian of the closed form in
      ``(eps_A, eps_B)`` (``hessian_eigenvalues``, by central differences of
      :func:`asymmetric_ccp_q`), and the split, at its bound ``j = 1`` with
      ``dq/dj < 0`` (``split_slope``).

    The logits of a deterministic choice are infinite, so a Hessian "on the
    logits" at ``pi*`` is zero in those directions; this first-order
    (Karush-Kuhn-Tucker) check on the probabilities is the statement that
    holds there.
    """
    from tasks import TwoHypothesis

    o = asymmetric_ccp_optimum(mu, M, r, convention=convention)
    arch = RAM(M)
    probs, init = asymmetric_ccp_probs(arch, o.eps_A, o.eps_B, o.split)
    world = TwoHypothesis(mu)
    q, g, g0 = q_and_probability_gradient(world, arch, probs, init, r, convention)
    import fsc

    visited = fsc.evaluate(world, Policy.from_probs(arch, probs, init), reset=r).distribution.detach().numpy().sum(axis=(0, 1)) > 0
    deriv = g - (probs * g).sum(axis=1, keepdims=True)
    unused = arch.allowed & (probs == 0)
    margin = float(deriv[unused & visited[:, None]].min())
    flat = int((np.abs(deriv[unused & ~visited[:, None]]) < 1e-14).sum())
    init_deriv = g0 - (init * g0).sum()
    init_margin = float(init_deriv[arch.reset_mask & (init == 0)].min()) if (arch.reset_mask & (init == 0)).any() else math.inf

    def f(ea: float, eb: float) -> float:
        return asymmetric_ccp_q(mu, M, r, ea, eb, 1.0, convention=convention)

    ea, eb = o.eps_A, o.eps_B
    ha, hb = h * ea, h * eb
    f0 = f(ea, eb)
    faa = (f(ea + ha, eb) - 2 * f0 + f(ea - ha, eb)) / ha**2
    fbb = (f(ea, eb + hb) - 2 * f0 + f(ea, eb - hb)) / hb**2
    fab = (f(ea + ha, eb + hb) - f(ea + ha, eb - hb) - f(ea - ha, eb + hb) + f(ea - ha, eb - hb)) / (4 * ha * hb)
    stationarity = max(abs(f(ea + ha, eb) - f(ea - ha, eb)) / (2 * ha), abs(f(ea, eb + hb) - f(ea, eb - hb)) / (2 * hb))
    split_slope = asymmetric_ccp_q(mu, M, r, ea, eb, 1.0, convention=convention) - asymmetric_ccp_q(mu, M, r, ea, eb, 0.0, convention=convention)
    return {
        "mu": mu,
        "M": M,
        "reset": r,
        "q": q,
        "q_closed_form": o.q,
        "eps_A": ea,
        "eps_B": eb,
        "margin": margin,
        "init_margin": init_margin,
        "flat": flat,
        "stationarity": stationarity,
        "hessian_eigenvalues": [float(v) for v in np.linalg.eigvalsh(np.array([[faa, fab], [fab, fbb]]))],
        "split_slope": split_slope,
    }
