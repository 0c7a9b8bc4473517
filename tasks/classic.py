"""Classic small POMDPs, built in code from their published descriptions.

Each is a :class:`fsc.Task` whose world declares the discount of its
benchmark (0.95), so ``fsc.evaluate(task, policy)`` gives the
discounted value without a ``reset``.

- :class:`Tiger`: Kaelbling, Littman and Cassandra (1998), "Planning and
  acting in partially observable stochastic domains".
- :class:`CheeseMaze`: McCallum (1993), "Overcoming incomplete perception
  with utile distinction memory".
- :class:`Grid4x3`: Russell and Norvig's 4x3 world with the wall sensors of
  Parr and Russell (1995), "Approximating optimal policies for partially
  observable stochastic domains".

The mazes restart after their goal: the step out of a goal (or pit) state
moves to a uniformly random ordinary state, so the problems are infinite
horizon and discounted, as in their benchmark files.
"""

from __future__ import annotations

import functools

import attrs
import numpy as np

from fsc.checks import real
from fsc.errors import InputError
from fsc.model.pomdp import POMDP, Task

__all__ = ["CheeseMaze", "Grid4x3", "Tiger"]

MOVES = {"N": (-1, 0), "S": (1, 0), "E": (0, 1), "W": (0, -1)}


def _discount(value: object) -> float:
    value = real("discount", value, 0.0, 1.0)
    if not 0 < value < 1:
        raise InputError(f"discount must be in (0, 1), got {value!r}")
    return value


@attrs.frozen
class Tiger(Task):
    """A tiger behind one of two doors; listen, or open a door.

    States ``tiger-left``, ``tiger-right``; actions ``listen``,
    ``open-left``, ``open-right``; observations ``hear-left``,
    ``hear-right``.  Listening costs ``listen_cost`` and hears the tiger's
    side with probability ``accuracy``; opening the tiger's door costs
    ``penalty``, the other door pays ``treasure``; opening either door
    places the tiger anew, uniformly (and its observation is uniform).
    """

    accuracy: float = attrs.field(default=0.85, kw_only=True)
    listen_cost: float = attrs.field(default=1.0, kw_only=True)
    penalty: float = attrs.field(default=100.0, kw_only=True)
    treasure: float = attrs.field(default=10.0, kw_only=True)
    discount: float = attrs.field(default=0.95, kw_only=True)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "accuracy", real("accuracy", self.accuracy, 0.0, 1.0))
        for name in ("listen_cost", "penalty", "treasure"):
            object.__setattr__(self, name, real(name, getattr(self, name)))
        object.__setattr__(self, "discount", _discount(self.discount))

    @functools.cached_property
    def pomdp(self) -> POMDP:
        listen, left, right = range(3)
        transition = np.empty((2, 3, 2))
        transition[:, listen] = np.eye(2)
        transition[:, (left, right)] = 0.5
        p = self.accuracy
        observation = np.full((3, 2, 2), 0.5)
        # The decimal complement (0.15, as files write it, where 1 - 0.85 is 0.15000000000000002) when its row sums to 1 exactly.
        wrong = float(f"{1 - p:.15g}")
        observation[listen] = [[p, wrong], [wrong, p]] if p + wrong == 1 else [[p, 1 - p], [1 - p, p]]
        reward = np.zeros((2, 3, 1, 1))
        reward[:, listen] = -self.listen_cost
        reward[0, left] = reward[1, right] = -self.penalty
        reward[0, right] = reward[1, left] = self.treasure
        return POMDP(
            transition=transition,
            observation=observation,
            reward=reward,
            initial=[0.5, 0.5],
            state_labels=("tiger-left", "tiger-right"),
            action_labels=("listen", "open-left", "open-right"),
            observation_labels=("hear-left", "hear-right"),
            discount=self.discount,
        )


def _maze(cells: list[tuple[int, int]], ends: list[int], slip: float, observe, reward_step: float, end_rewards: list[float], discount: float) -> POMDP:
    """The world of a grid maze that restarts after its ends (states ``s0, s1, ...``, actions ``N S E W``).

    ``cells[s] = (row, column)``; moving into a missing cell leaves the agent
    where it is; the intended direction is taken with probability
    ``1 - slip`` and each perpendicular one with ``slip / 2``.  From an end
    state every action moves to a uniformly random ordinary state.
    ``observe(s)`` is the observation of entering ``s``.
    """
    S, A = len(cells), len(MOVES)
    where = {cell: s for s, cell in enumerate(cells)}
    ordinary = [s for s in range(S) if s not in ends]
    perpendicular = {"N": "EW", "S": "EW", "E": "NS", "W": "NS"}
    transition = np.zeros((S, A, S))
    for s, (row, col) in enumerate(cells):
        for a, name in enumerate(MOVES):
            if s in ends:
                transition[s, a, ordinary] = 1 / len(ordinary)
                continue
            for direction, p in [(name, 1 - slip)] + [(d, slip / 2) for d in perpendicular[name]]:
                dr, dc = MOVES[direction]
                transition[s, a, where.get((row + dr, col + dc), s)] += p
    codes = [observe(s) for s in range(S)]
    names = sorted(set(codes), key=codes.index)
    observation = np.zeros((A, S, len(names)))
    for s, code in enumerate(codes):
        observation[:, s, names.index(code)] = 1
    reward = np.full((S, A, S, 1), reward_step)
    for end, value in zip(ends, end_rewards, strict=True):
        reward[end] = value
    initial = np.zeros(S)
    initial[ordinary] = 1 / len(ordinary)
    return POMDP(
        transition=transition,
        observation=observation,
        reward=reward,
        initial=initial,
        state_labels=tuple(f"s{s}" for s in range(S)),
        action_labels=tuple(MOVES),
        observation_labels=tuple(names),
        discount=discount,
    )


def _walls(cells: list[tuple[int, int]], s: int, directions: str) -> str:
    present = set(cells)
    row, col = cells[s]
    return "".join(d for d in directions if (row + MOVES[d][0], col + MOVES[d][1]) not in present)


@attrs.frozen
class CheeseMaze(Task):
    """McCallum's cheese maze: find the cheese in a maze of 11 cells, seeing only walls.

    ::

        s0  s1  s2  s3  s4
        s5      s6      s7
        s8      s10     s9          s10: the cheese

    Actions ``N S E W`` move deterministically (into a wall: stay).  The
    observation is the set of walls around the cell entered (``NW``,
    ``NS``, ``N``, ``NE``, ``EW``, ``EWS``; ``s1`` and ``s3`` look alike, as
    do ``s5 s6 s7`` and ``s8 s9``) and ``cheese`` at the cheese.  Reward
    ``reward`` (1) for every action taken at the cheese, which puts the
    agent back in a uniformly random other cell; the agent starts in one too.
    """

    reward: float = attrs.field(default=1.0, kw_only=True)
    discount: float = attrs.field(default=0.95, kw_only=True)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "reward", real("reward", self.reward))
        object.__setattr__(self, "discount", _discount(self.discount))

    CELLS = ((0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 0), (1, 2), (1, 4), (2, 0), (2, 4), (2, 2))

    @functools.cached_property
    def pomdp(self) -> POMDP:
        cells = list(self.CELLS)
        goal = 10

        def observe(s: int) -> str:
            return "cheese" if s == goal else _walls(cells, s, "NEWS")  # walls in the order N, E, W, S: NW, EWS, ...

        return _maze(cells, [goal], 0.0, observe, 0.0, [self.reward], self.discount)


@attrs.frozen
class Grid4x3(Task):
    """Russell and Norvig's 4x3 world, seen through two wall sensors (Parr and Russell).

    ::

        s0  s1  s2  s3(+1)          row 3
        s4      s5  s6(-1)          row 2 (column 2 is an obstacle)
        s7  s8  s9  s10             row 1

    Actions ``N S E W`` go the intended way with probability ``1 - slip``
    (0.8) and to each side with ``slip / 2``; into a wall or the obstacle:
    stay.  The agent senses walls to its west and east only: observations
    ``left``, ``right``, ``both``, ``neither``, and ``good`` / ``bad`` at the
    ends.  Each step in an ordinary cell costs ``step_cost`` (0.04); the
    step out of ``s3`` pays +1, out of ``s6`` -1, and restarts in a uniformly
    random ordinary cell, where the agent also starts.
    """

    slip: float = attrs.field(default=0.2, kw_only=True)
    step_cost: float = attrs.field(default=0.04, kw_only=True)
    discount: float = attrs.field(default=0.95, kw_only=True)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "slip", real("slip", self.slip, 0.0, 1.0))
        object.__setattr__(self, "step_cost", real("step_cost", self.step_cost))
        object.__setattr__(self, "discount", _discount(self.discount))

    CELLS = ((0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 2), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3))

    @functools.cached_property
    def pomdp(self) -> POMDP:
        cells = list(self.CELLS)
        good, bad = 3, 6

        def observe(s: int) -> str:
            if s in (good, bad):
                return "good" if s == good else "bad"
            walls = _walls(cells, s, "WE")
            return {"W": "left", "E": "right", "WE": "both", "": "neither"}[walls]

        return _maze(cells, [good, bad], self.slip, observe, -self.step_cost, [1.0, -1.0], self.discount)
