"""Policy anatomy: read a (trained) policy back as structure.

:func:`anatomy` evaluates a policy exactly and returns

- its near-deterministic skeleton: for every node that carries stationary
  mass, the choice it makes with probability ``>= 1 - delta``, or the
  choices it mixes;
- which nodes carry the stationary mass (summed over the hypotheses);
- the nearest known family and the distance to it:

  * RAM, Column, Chain with two arms: the (a)symmetric column of confidence
    (:mod:`policies.asymmetric`) with its parameters read off the policy
    (``eps_A``, ``eps_B``: the step-down probabilities after ``-`` at the
    tops ``MA-``, ``MB-``; ``split``: the probability that the reset node
    ``1_`` plays ``1A``);
  * Memento ``m`` with two arms: the necklace policy (Definition 4.1) on the
    project's chain (:func:`policies.necklace_exits`), with ``eps0`` read at
    ``A..A-..-`` and ``eps1`` at the first exit word;

  the distance is the stationary-mass-weighted mean of the total-variation
  distance between a row of the policy and the family's row,
  ``sum_n mass[n] TV(probs[n], family[n])`` (unvisited nodes do not change
  ``q``), plus the TV distance of the initial distributions;
  ``max_distance`` is the largest row distance over nodes with mass above
  ``mass_floor``.  A family is claimed when the distance is below ``tol``
  and the largest row distance below ``max_tol`` (a policy that stays like
  the family where the mass sits but decides differently at a few rarely
  visited exits is not the family); ``deviations`` lists the nodes where
  ``mass[n] TV_n`` is largest; the policy's memory labels are taken as
  they are (a CCP with relabelled memories is not recognised).

Any other controller (an :class:`fsc.Automaton`, a product, a restriction, a
world other than the two-hypothesis one) gets its value, skeleton and mass
and no family: :func:`describe` says so.  Nodes and choices are named by
``node_names`` and ``choice_names`` (text, whatever the labels are).

Arrays: ``probs[n, c]`` (node, choice) as in :class:`fsc.Policy`;
``mass[n]`` the stationary probability of node ``n``.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
import torch

import fsc
from fsc.errors import InputError
from fsc.model.architecture import MemoryArchitecture
from fsc.model.memory import RAM, Chain, Column, Memento
from fsc.model.policy import Policy, check_policy

from .asymmetric import asymmetric_ccp_probs
from .necklace import necklace_exits, necklace_probs
from .necklaces import necklace

__all__ = ["KNOWN_FAMILIES", "Anatomy", "anatomy", "describe"]

#: What :func:`describe` says of a controller outside every family it knows.
KNOWN_FAMILIES = (
    "The families known are the column of confidence policy (RAM, Chain or Column with two arms) and the "
    "necklace policy (Memento, m >= 2), both in the two-hypothesis world; the skeleton and mass below are this policy's own."
)


@attrs.frozen(kw_only=True)
class Anatomy:
    """The result of :func:`anatomy` (plain numbers, JSON-able by :meth:`to_dict`).

    Attributes:
        q: exact ``q`` in ``convention``; ``None`` in a world without the metric ``q``.
        gain: the exact gain (reward per step) in ``convention``.
        skeleton: node label -> its choice (``"1A"``) when near-deterministic,
            or ``{choice: probability}`` when it mixes; nodes with mass only.
        mass: node label -> stationary mass, largest first, down to ``mass_floor``.
        family: ``"symmetric CCP"``, ``"asymmetric CCP"``, ``"necklace"`` or ``None``.
        nearest: the nearest family tried (``None`` when the architecture has none).
        distance: distance to ``nearest`` (see the module docstring); ``inf`` if none.
        parameters: the family's parameters read off the policy.
        details: family-specific structure (necklaces visited with their mass, exits in use).
    """

    architecture: str
    q: float | None
    gain: float
    convention: str
    reset: float
    skeleton: dict
    mass: dict
    family: str | None
    nearest: str | None
    distance: float
    parameters: dict
    details: dict

    def to_dict(self) -> dict:
        return attrs.asdict(self)


def _node_mass(world, policy: Policy, reset: float, convention: str) -> tuple[float | None, float, np.ndarray]:
    with torch.no_grad():
        ev = fsc.evaluate(world, policy, reset=reset, convention=convention)
    p = ev.distribution.numpy()  # (K, S, N)
    mass = np.einsum("k,ksn->n", ev.part_weights.numpy(), p)
    q = float(ev.metrics["q"]) if "q" in ev.metrics else None
    return q, float(ev.gain), mass


def _distance(probs: np.ndarray, family: np.ndarray, visited: np.ndarray, mass: np.ndarray) -> tuple[float, float]:
    """Mass-weighted mean and largest (over visited nodes) total-variation distance between rows of ``probs`` and ``family``."""
    if not visited.any():
        return math.inf, math.inf
    tv = 0.5 * np.abs(probs - family).sum(axis=1)
    return float((mass * tv).sum() / mass.sum()), float(tv[visited].max())


def _deviations(arch: MemoryArchitecture, probs: np.ndarray, family: np.ndarray, mass: np.ndarray, visited: np.ndarray, top: int = 8) -> list[dict]:
    """The visited nodes where ``mass[n] * TV(probs[n], family[n])`` is largest, with both rows' main choices."""
    tv = 0.5 * np.abs(probs - family).sum(axis=1)
    order = [n for n in np.argsort(-(mass * tv)) if visited[n] and tv[n] > 1e-3][:top]
    choices = arch.choice_names
    return [{"node": arch.node_names[n], "mass": float(mass[n]), "tv": float(tv[n]),
             "policy": {choices[c]: round(float(probs[n, c]), 4) for c in np.argsort(-probs[n])[:2]},
             "family": {choices[c]: round(float(family[n, c]), 4) for c in np.argsort(-family[n])[:2]}} for n in order]  # fmt: skip


def _clip(x: float) -> float:
    return float(min(1.0, max(x, 1e-300)))


def _ccp_family(arch: MemoryArchitecture, probs: np.ndarray, init: np.ndarray, visited: np.ndarray, mass: np.ndarray, split_tol: float, eps_tol: float):
    M, choice = arch.M, arch.choice_index
    eps = {}
    for x, other in (("A", "B"), ("B", "A")):
        row = probs[arch.node_index(f"{M}{x}-")]
        eps[x] = _clip(row[choice(f"{M - 1}{x}" if M > 1 else f"1{other}")])
    blank = probs[arch.node_index("1_")]
    split = float(blank[choice("1A")] / max(blank[choice("1A")] + blank[choice("1B")], 1e-300))
    family_probs, family_init = asymmetric_ccp_probs(arch, eps["A"], eps["B"], split)
    mean, largest = _distance(probs, family_probs, visited, mass)
    distance = mean + float(0.5 * np.abs(init - family_init).sum())
    deviations = _deviations(arch, probs, family_probs, mass, visited)
    symmetric = abs(eps["A"] - eps["B"]) <= eps_tol * max(eps["A"], eps["B"]) and abs(split - 0.5) <= split_tol
    name = "symmetric CCP" if symmetric else "asymmetric CCP"
    return name, distance, {"eps_A": eps["A"], "eps_B": eps["B"], "split": split}, {"max_distance": largest, "deviations": deviations}


def _necklace_family(arch: Memento, probs: np.ndarray, init: np.ndarray, visited: np.ndarray, mass: np.ndarray):
    m = arch.m
    exits = necklace_exits(m)
    labels = arch.node_labels
    oldest_choice = lambda label: "AB".index(label[0])  # noqa: E731
    eps0 = _clip(probs[labels.index("A" * m + "-" * m), 1])
    # eps1: the leave probability at an exit word whose rewards favour the exit's side
    eps1_values = []
    leaving = {}
    for n, label in enumerate(labels):
        if len(label) != 2 * m:
            continue
        leave = float(probs[n, 1 - oldest_choice(label)])
        if visited[n] and 1e-3 < leave < 1 - 1e-3:
            leaving[label] = leave
    for word in exits.toward_a.values():
        for n, label in enumerate(labels):
            if len(label) == 2 * m and label[:m] == word and all((x == "A") == (o == "+") for x, o in zip(label[:m], label[m:], strict=True)):
                eps1_values.append(float(probs[n, 1 - oldest_choice(label)]))
    eps1 = _clip(max(eps1_values)) if eps1_values else 1.0
    family_probs, family_init = necklace_probs(arch, eps0, eps1, exits)
    mean, largest = _distance(probs, family_probs, visited, mass)
    distance = mean + float(0.5 * np.abs(init - family_init).sum())
    deviations = _deviations(arch, probs, family_probs, mass, visited)
    by_necklace: dict[str, float] = {}
    for n, label in enumerate(labels):
        if len(label) == 2 * m:
            key = necklace(label[:m])
            by_necklace[key] = by_necklace.get(key, 0.0) + float(mass[n])
    details = {
        "max_distance": largest,
        "deviations": deviations,
        "chain": list(exits.chain),
        "mass_by_necklace": dict(sorted(by_necklace.items(), key=lambda kv: -kv[1])),
        "mixed_full_histories": dict(sorted(leaving.items(), key=lambda kv: -kv[1])[:20]),
    }
    return "necklace", distance, {"eps0": eps0, "eps1": eps1}, details


def anatomy(
    policy: Policy,
    world=None,
    *,
    mu: float = 0.1,
    reset: float = 1e-3,
    convention: str = "native",
    delta: float = 0.01,
    mass_floor: float = 1e-6,
    tol: float = 0.05,
    max_tol: float = 0.25,
) -> Anatomy:
    """Read ``policy`` as structure (see the module docstring).

    Args:
        policy: a :class:`fsc.Policy`.
        world: the world (default ``TwoHypothesis(mu)``); the families are known in the two-hypothesis world only.
        reset, convention: where ``q`` and the stationary mass are computed.
        delta: a row is near-deterministic when its largest probability is ``>= 1 - delta``.
        mass_floor: nodes with less stationary mass are left out (and do not count in the distance).
        tol, max_tol: a family is claimed when its distance is below ``tol`` and its largest row distance below ``max_tol``.
    """
    from tasks import TwoHypothesis

    check_policy(policy)
    for name, value in (("delta", delta), ("mass_floor", mass_floor), ("tol", tol), ("max_tol", max_tol)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise InputError(f"{name} must be a number in [0, 1), got {value!r}")
    world = TwoHypothesis(mu) if world is None else world
    arch = policy.architecture
    probs = policy.probs().detach().numpy()
    init = policy.init_probs().detach().numpy()
    q, gain, mass = _node_mass(world, policy, reset, convention)
    visited = mass > mass_floor
    skeleton = _skeleton(arch, probs, mass, visited, delta)
    mass_table = {arch.node_names[n]: float(mass[n]) for n in np.argsort(-mass) if visited[n]}
    family = _family(world, arch, probs, init, visited, mass, tol=tol, max_tol=max_tol)
    return Anatomy(architecture=repr(arch), q=q, gain=gain, convention=convention, reset=float(reset), skeleton=skeleton, mass=mass_table, **family)


def _skeleton(arch: MemoryArchitecture, probs: np.ndarray, mass: np.ndarray, visited: np.ndarray, delta: float) -> dict:
    """Node name -> its choice when near-deterministic (probability ``>= 1 - delta``), else ``{choice:
    probability}`` of the choices above ``delta / 10``; the visited nodes, most mass first."""
    labels, choices = arch.node_names, arch.choice_names
    skeleton = {}
    for n in np.argsort(-mass):
        if not visited[n]:
            break
        row = probs[n]
        best = int(np.argmax(row))
        if row[best] >= 1 - delta:
            skeleton[labels[n]] = choices[best]
        else:
            skeleton[labels[n]] = {choices[c]: float(row[c]) for c in np.argsort(-row) if row[c] > delta / 10}
    return skeleton


def _family(world, arch: MemoryArchitecture, probs: np.ndarray, init: np.ndarray, visited: np.ndarray, mass: np.ndarray, *, tol: float, max_tol: float) -> dict:
    """The fields of :class:`Anatomy` about the nearest known family: ``family`` (claimed within ``tol`` and
    ``max_tol``, else ``None``), ``nearest``, ``distance``, ``parameters``, ``details``."""
    from tasks import TwoHypothesis

    nearest, distance, parameters, details = None, math.inf, {}, {}
    two_hypotheses = isinstance(world, TwoHypothesis)
    if two_hypotheses and isinstance(arch, (RAM, Chain, Column)) and arch.arms == 2 and arch.observations == 2:
        nearest, distance, parameters, details = _ccp_family(arch, probs, init, visited, mass, split_tol=0.05, eps_tol=0.02)
    elif two_hypotheses and isinstance(arch, Memento) and arch.arms == 2 and arch.observations == 2 and arch.m >= 2:
        nearest, distance, parameters, details = _necklace_family(arch, probs, init, visited, mass)
    family = nearest if nearest is not None and distance < tol and details["max_distance"] < max_tol else None
    return {"family": family, "nearest": nearest, "distance": distance, "parameters": parameters, "details": details}


def describe(a: Anatomy, *, top: int = 12) -> str:
    """A few lines of text for :class:`Anatomy`."""
    value = f"gain = {a.gain:.6g}" if a.q is None else f"q = {a.q:.6g}"
    lines = [f"{a.architecture}: {value} ({a.convention}, r = {a.reset:g})"]
    if a.family is not None:
        params = ", ".join(f"{k} = {v:.4g}" for k, v in a.parameters.items())
        lines.append(f"family: {a.family} ({params}); distance {a.distance:.3g}")
    elif a.nearest is not None:
        lines.append(f"family: none; nearest {a.nearest} at distance {a.distance:.3g} (largest row distance {a.details['max_distance']:.3g})")
    else:
        lines.append(f"family: none recognised. {KNOWN_FAMILIES}")
    lines.append(f"stationary mass (top {min(top, len(a.mass))} of {len(a.mass)} visited nodes):")
    for label, value in list(a.mass.items())[:top]:
        choice = a.skeleton[label]
        what = choice if isinstance(choice, str) else ", ".join(f"{c} {p:.3g}" for c, p in list(choice.items())[:4])
        lines.append(f"  {label:<12} {value:10.4g}  -> {what}")
    if a.details.get("deviations"):
        lines.append(f"where it differs from the nearest family ({a.nearest}), by mass x distance:")
        for d in a.details["deviations"][:6]:
            lines.append(f"  {d['node']:<12} mass {d['mass']:.3g}, distance {d['tv']:.3g}: plays {d['policy']}, family {d['family']}")
    if "mass_by_necklace" in a.details:
        lines.append("mass by necklace of the arms played: " + ", ".join(f"{k} {v:.3g}" for k, v in list(a.details["mass_by_necklace"].items())[:8]))
    return "\n".join(lines)
