"""The portfolio on many cores (fsc.solver.parallel): independent restarts on processes or a Dask cluster, the best
kept; with rounds and a seed, the same result whatever the number of workers."""

from __future__ import annotations

import json
import logging

import pytest

import fsc
from fsc.cli import main
from fsc.pool import executor
from fsc.solver import Portfolio
from fsc.solver.parallel import _restart, restart_seed
from tests.fsc.test_solve import small_world


def world_of(seed: int, S: int = 5, A: int = 3, O: int = 3) -> fsc.POMDP:
    return small_world(seed, S=S, A=A, O=O)


def bits(solution) -> tuple:
    """What must be equal to the last bit: the value, the weights, who found it, and its history's values."""
    policy = solution.policy
    weights = (policy.logits.detach().numpy().tobytes(), policy.init_logits.detach().numpy().tobytes())
    return solution.value, weights, solution.method, [(h["value"], h["method"], h["restart"]) for h in solution.history]


@pytest.fixture(scope="module")
def world():
    return world_of(4)


@pytest.fixture(scope="module")
def one_worker(world):
    return Portfolio(seconds=600, seed=5, rounds=1, restarts=3, workers=1).solve(world, "ram:2")


def test_restart_seeds_are_the_seed_then_distinct_draws_from_seed_and_index():
    assert restart_seed(7, 0) == 7
    drawn = {restart_seed(7, i) for i in range(1, 50)} | {restart_seed(8, i) for i in range(1, 50)}
    assert len(drawn) == 98 and all(0 <= s < 2**63 for s in drawn)
    assert restart_seed(7, 3) == restart_seed(7, 3)


def test_with_rounds_one_worker_keeps_the_best_of_restarts_each_solved_alone(world, one_worker):
    """Each restart is the portfolio with its own seed and one round per size: the best of them by value, the lowest
    restart on a tie, is what the parallel solver returns."""
    alone = [Portfolio(seconds=600, seed=restart_seed(5, i), rounds=1).solve(world, "ram:2") for i in range(3)]
    values = [s.value for s in alone]
    winner = max(range(3), key=lambda i: (values[i], -i))
    assert one_worker.value == values[winner]
    assert one_worker.history[-1]["restart"] == winner
    assert one_worker.seed == 5
    assert one_worker.evaluations == sum(s.evaluations for s in alone)
    assert one_worker.upper_bound == min(s.upper_bound for s in alone)
    exact = fsc.evaluate(world, one_worker.policy, reset=one_worker.reset)
    assert float(exact.value) == pytest.approx(one_worker.value, abs=1e-12)


def test_with_rounds_the_result_is_the_same_to_the_last_bit_whatever_the_number_of_workers(world, one_worker):
    two = Portfolio(seconds=600, seed=5, rounds=1, restarts=3, workers=2).solve(world, "ram:2")
    three = Portfolio(seconds=600, seed=5, rounds=1, restarts=3, workers=3).solve(world, "ram:2")
    assert bits(two) == bits(one_worker) == bits(three)


def test_a_pool_worker_loads_the_kernels_from_numbas_disk_cache(world, one_worker):
    """The kernels compiled in this process (the fixture's solve) are on disk: a fresh spawned process compiles
    nothing inside its budget, and its restart gives the bits this process gives."""
    import time

    solver = Portfolio(seconds=600, seed=5, rounds=1, restarts=3, workers=2)
    with executor(None, 1, start="spawn") as pool:
        outcome = pool.submit(_restart, solver, 0, world, fsc.RAM(2, arms=3, observations=3), 0.1, None, time.time() + 600).result()
    assert outcome["compiled"] == 0
    here = _restart(solver, 0, world, fsc.RAM(2, arms=3, observations=3), 0.1, None, time.time() + 600)
    assert outcome["solution"].value == here["solution"].value


def test_progress_reports_each_new_best_with_its_restart(world):
    records = []
    Portfolio(seconds=600, seed=1, rounds=1, restarts=4, workers=1).solve(world, "ram:2", progress=records.append)
    values = [r["value"] for r in records]
    assert values == sorted(values) and all(r["restart"] in range(4) for r in records)
    assert {"seconds", "memory", "value", "method", "upper_bound", "restart"} <= records[-1].keys()


def test_without_rounds_every_worker_stops_at_the_same_deadline(world):
    """A restart still running 5% of the budget and half a second after the deadline is abandoned (here the
    spawned process may well be still importing fsc): the call returns about on time, with restart 0 at least."""
    import time

    clock = time.monotonic()
    solution = Portfolio(seconds=3, seed=0, workers=2).solve(world, "ram:2")
    assert time.monotonic() - clock < 3 * 1.05 + 0.5 + 3  # 3 s of slack for a loaded machine
    assert solution.value <= solution.upper_bound + 1e-9


@pytest.mark.parametrize("sigterm", ["default", "ignored"])
def test_abandon_ends_a_local_pools_processes_at_once(sigterm):
    """Ended even when the worker ignores SIGTERM (as it does when a supervisor started the suite with SIGTERM
    ignored, which every child inherits): those still alive after the grace are killed."""
    import signal
    import time

    from fsc.pool import abandon

    with executor(None, 1, start="spawn") as pool:
        if sigterm == "ignored":
            pool.submit(signal.signal, signal.SIGTERM, signal.SIG_IGN).result()
        future = pool.submit(time.sleep, 120)
        while not future.running():
            time.sleep(0.05)
        processes = list(pool._processes.values())
        clock = time.monotonic()
        abandon(pool)
    assert time.monotonic() - clock < 10
    for process in processes:
        assert _ended(process)


def _ended(process, timeout: float = 10) -> bool:
    """Whether ``process`` ended within ``timeout``, by the system's word: ``is_alive`` alone stays True for a
    child that something else in the test process reaped (its ``waitpid`` then fails), so the pid is read in
    ``/proc``: gone, or a zombie, is ended."""
    import time
    from pathlib import Path

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        process.join(0.1)
        if not process.is_alive():
            return True
        try:
            state = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
    return False


def test_bad_workers_and_schedulers_are_refused():
    for bad, error, match in [
        (dict(workers=0), ValueError, "workers"),
        (dict(workers=1.5), TypeError, "workers"),
        (dict(workers=10**6), ValueError, "workers"),
        (dict(scheduler=3), TypeError, "scheduler"),
        (dict(workers=2, scheduler="tcp://127.0.0.1:1"), ValueError, "not both"),
    ]:
        with pytest.raises(error, match=match):
            Portfolio(**bad)


def test_a_world_no_engine_can_hold_is_refused_before_any_process_starts(monkeypatch):
    import fsc.solver.parallel as parallel

    def no_pool(*args, **kwargs):
        raise AssertionError("a pool was started")

    monkeypatch.setattr(parallel, "executor", no_pool)
    world = world_of(0, S=3, A=2, O=2)
    with pytest.raises(ValueError, match="engine"):
        Portfolio(seconds=10, workers=2, engine="nonesuch").solve(world, "ram:1")
    with pytest.raises(ValueError, match="memory|ram"):
        Portfolio(seconds=10, workers=2).solve(world, "ram:0")


def test_fsc_solve_takes_workers_and_refuses_bad_ones_in_one_line(capsys):
    argv = ["solve", "--mu", "0.2", "--memory", "ram:1", "--reset", "0.05", "--max-seconds", "60", "--rounds", "1", "--restarts", "2", "--seed", "3",
            "--json", "--quiet"]  # fmt: skip
    assert main([*argv, "--workers", "1"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert main([*argv, "--workers", "2"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert one["value"] == two["value"] and one["method"] == two["method"]
    for options, word in [(["--workers", "0"], "--workers"), (["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler")]:
        assert main([*argv, *options]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and word in err[0], err


def test_a_dask_cluster_gives_the_local_result(world, one_worker):
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None, silence_logs=logging.ERROR, host="127.0.0.1")
    try:
        remote = Portfolio(seconds=600, seed=5, rounds=1, restarts=3, scheduler=cluster.scheduler_address).solve(world, "ram:2")
    finally:
        cluster.close()
    assert bits(remote) == bits(one_worker)
