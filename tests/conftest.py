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
