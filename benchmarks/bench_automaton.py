"""Benchmark of ``fsc.Automaton``: tabulating rules against the built-in table builders.

Memento(m) written as one rule over histories (the same rule as in
``tests/fsc/test_automaton.py``) is tabulated by ``fsc.Automaton`` and
compared with the built-in ``fsc.Memento(m)`` built in the same process:
the time of each (fastest of ``--repeats``), their ratio, and a check that the
tables are equal.  Also ``restrict`` (Column as RAM with a rule) and
``product``.

    python benchmarks/bench_automaton.py            # Memento 4..8, RAM/Column 64, a product
    python benchmarks/bench_automaton.py --max-m 9  # up to Memento 9 (350k nodes)
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fsc  # noqa: E402

TABLES = ("allowed", "next_node", "choice_action", "reset_mask")


def memento_rule(m: int, arms: str = "AB") -> fsc.Automaton:
    """Memento(m) as a rule: the node is the history of the last m (arm, reward) pairs."""
    symbols = [(x, o) for x in arms for o in "+-"]
    nodes = [()] + [h for n in range(1, m + 1) for h in itertools.product(symbols, repeat=n)]
    return fsc.Automaton(
        nodes, list(arms), lambda h, arm, obs: (h + ((arm, "+-"[obs]),))[-m:], action=arms.index, actions=len(arms), observations=2, reset=[()]
    )


def fastest(repeats: int, build, *args, **kwargs) -> tuple[float, object]:
    """The fastest of ``repeats`` calls ``build(*args, **kwargs)``, and its result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = build(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best, result


def tabulated(arch: fsc.MemoryArchitecture, labels: bool = False) -> fsc.MemoryArchitecture:
    """The architecture with its tables (and labels) built: the built-in classes build them lazily, on first read."""
    for table in TABLES + (("node_values", "node_labels") if labels else ()):
        getattr(arch, table)
    return arch


def same_tables(a: fsc.MemoryArchitecture, b: fsc.MemoryArchitecture) -> bool:
    return all(np.array_equal(getattr(a, t), getattr(b, t)) for t in TABLES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-m", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    print("Seconds to build each architecture's tables (fastest of the repeats); the rule-based one also has its labels.")
    print("Built-in Memento: tables alone (vectorised numpy), and tables with node labels as the rule-based one has them.\n")
    print(f"{'architecture':<34} {'nodes':>8} {'rules s':>9} {'built-in s':>10} {'ratio':>6} {'+labels s':>10} {'ratio':>6}  tables equal")
    for m in range(4, args.max_m + 1):
        rules_s, rules = fastest(args.repeats, memento_rule, m)
        builtin_s, builtin = fastest(args.repeats, lambda m: tabulated(fsc.Memento(m)), m)
        labelled_s, _ = fastest(args.repeats, lambda m: tabulated(fsc.Memento(m), labels=True), m)
        print(
            f"{f'Memento({m}) as a rule':<34} {rules.num_nodes:>8} {rules_s:>9.3f} {builtin_s:>10.3f} {rules_s / builtin_s:>6.1f}"
            f" {labelled_s:>10.3f} {rules_s / labelled_s:>6.2f}  {same_tables(rules, builtin)}"
        )

    for M in (8, 64):
        rules_s, column = fastest(args.repeats, lambda ram: tabulated(ram.restrict(fsc.Column.rule)), fsc.RAM(M))
        builtin_s, builtin = fastest(args.repeats, lambda M: tabulated(fsc.Column(M)), M)
        name = f"RAM({M}).restrict(column rule)"
        print(
            f"{name:<34} {column.num_nodes:>8} {rules_s:>9.3f} {builtin_s:>10.3f} {rules_s / builtin_s:>6.1f}"
            f" {'-':>10} {'-':>6}  {same_tables(column, builtin)}"
        )

    product_s, both = fastest(args.repeats, fsc.product, fsc.Memento(4), fsc.RAM(8))
    print(f"{'product(Memento(4), RAM(8))':<34} {both.num_nodes:>8} {product_s:>9.3f} {'-':>10} {'-':>6} {'-':>10} {'-':>6}  -")


if __name__ == "__main__":
    main()
