"""Shared test set-up: float64 and fixed seeds, restored afterwards."""

import numpy as np
import pytest
import torch


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
