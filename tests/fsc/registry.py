"""Registry of valid architectures for the generic tests (every kind, small sizes, 2 and 3 arms)."""

import numpy as np

import fsc

ARCHITECTURES = (
    [kind(M) for kind in (fsc.RAM, fsc.Chain, fsc.Column) for M in range(1, 6)]
    + [kind(M, arms=3) for kind in (fsc.RAM, fsc.Chain, fsc.Column) for M in range(1, 6)]
    + [fsc.Memento(m) for m in range(1, 6)]
    + [fsc.Memento(m, arms=3) for m in range(1, 4)]
)


def ids(arch):
    return f"{type(arch).__name__}{getattr(arch, 'M', getattr(arch, 'm', ''))}-{arch.arms}arms"


def padded_world():
    """A world of two closed parts of different sizes, {0, 1} and {2}: the smaller is padded in the joint chain."""
    transition = np.zeros((3, 2, 3))
    transition[0, :, :2] = [[0.7, 0.3], [0.2, 0.8]]
    transition[1, :, :2] = [[0.4, 0.6], [0.9, 0.1]]
    transition[2, :, 2] = 1.0
    observation = np.array([[[0.8, 0.2], [0.3, 0.7], [0.5, 0.5]], [[0.1, 0.9], [0.6, 0.4], [0.2, 0.8]]])
    reward = np.broadcast_to(np.array([1.0, -1.0]), (3, 2, 3, 2))
    return fsc.POMDP(transition=transition, observation=observation, reward=reward, initial=np.array([0.25, 0.25, 0.5]))
