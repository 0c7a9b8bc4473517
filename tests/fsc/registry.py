"""Registry of valid architectures for the generic tests (every kind, small sizes, 2 and 3 arms)."""

import fsc

ARCHITECTURES = (
    [kind(M) for kind in (fsc.RAM, fsc.Chain, fsc.Column) for M in range(1, 6)]
    + [kind(M, arms=3) for kind in (fsc.RAM, fsc.Chain, fsc.Column) for M in range(1, 6)]
    + [fsc.Memento(m) for m in range(1, 6)]
    + [fsc.Memento(m, arms=3) for m in range(1, 4)]
)


def ids(arch):
    return f"{type(arch).__name__}{getattr(arch, 'M', getattr(arch, 'm', ''))}-{arch.arms}arms"
