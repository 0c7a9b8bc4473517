"""A solve in the calling process computes on one thread (torch and the BLAS libraries), as each restart of
``workers`` does, and gives the threads back afterwards."""

from __future__ import annotations

import attrs
import torch
from threadpoolctl import threadpool_info

import fsc
import tasks
from fsc.solver import Portfolio
from tests.fsc.test_portfolio_shares import _Timed


@attrs.frozen(kw_only=True)
class _Threads(_Timed):
    """A method that records the threads torch and the BLAS libraries may use while it runs, and returns its start."""

    def solve(self, objective, start, budget, rng):
        self.seen.append((torch.get_num_threads(), max(pool["num_threads"] for pool in threadpool_info())))
        return start


def test_a_solve_in_this_process_runs_on_one_thread_and_restores_them():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        method = _Threads()
        Portfolio(seconds=60, seed=0, rounds=1, methods=(method,)).solve(tasks.Tiger(), fsc.model.memory.RAM(1, arms=3, observations=2))
        assert method.seen == [(1, 1)]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
