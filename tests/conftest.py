"""Shared test set-up: float64 and fixed seeds, restored afterwards; one torch thread in each of `make test`'s
workers (pytest-xdist)."""

import os

import numpy as np
import pytest
import torch


def pytest_configure(config):
    """In a worker of ``pytest -n``: one torch thread (the workers share the cores; more threads only spin), and
    numba's cache saves one at a time across the workers (``fsc.cli.warm.one_cache_writer_at_a_time``: two
    workers compiling a kernel ``make setup`` left out would otherwise overwrite each other's index)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        from fsc.cli.warm import one_cache_writer_at_a_time

        torch.set_num_threads(1)
        one_cache_writer_at_a_time()


@pytest.fixture(autouse=True)
def _float64_and_seeds():
    dtype = torch.get_default_dtype()
    state = torch.random.get_rng_state()
    np_state = np.random.get_state()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    np.random.seed(0)
    yield
    torch.set_default_dtype(dtype)
    torch.random.set_rng_state(state)
    np.random.set_state(np_state)


@pytest.fixture
def one_thread():
    """One torch thread, as training runs (small matrices; on a busy machine threads only spin)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
