"""read_trajectory: every number to the bit, some columns only, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from fsc.errors import InputError
from fsc.io.trajectory import read_trajectory


def _write(tmp_path, text: str):
    path = tmp_path / "trajectory.csv"
    path.write_text(text)
    return path


def test_numbers_read_back_to_the_bit(tmp_path):
    rng = np.random.default_rng(0)
    t = np.cumsum(rng.exponential(size=500))
    q = rng.random(500) ** 9  # down to 1e-9 and below: many digits
    step = rng.integers(0, 2**62, size=500)
    lines = [f"{a!r},{s},{b!r},{-b!r},{b * 1e-300!r},{a:.6f}" for a, s, b in zip(t.tolist(), step.tolist(), q.tolist(), strict=True)]
    path = _write(tmp_path, "t,step,q,gain,dt,seconds\n" + "\n".join(lines) + "\n")
    full = read_trajectory(path)
    assert full["step"].dtype == np.int64 and np.array_equal(full["step"], step)  # above 2**53: read as integers
    assert np.array_equal(full["t"], t) and np.array_equal(full["q"], q) and np.array_equal(full["dt"], q * 1e-300)
    assert np.array_equal(full["seconds"], [float(f"{a:.6f}") for a in t])
    some = read_trajectory(tmp_path, ["q", "t"])  # a run directory works too
    assert list(some) == ["q", "t"] and np.array_equal(some["q"], q) and np.array_equal(some["t"], t)


@pytest.mark.parametrize(
    ("text", "columns", "match"),
    [
        ("t,step,q\n1,2,3\n4,5\n", None, "not a trajectory"),
        ("t,step,q\n1,2,3\n4,5\n", ["t"], "not a trajectory"),
        ("t,step,q\n1,2,3\n4,5,6,7\n", None, "not a trajectory"),
        ("t,step,q\n1,2,x\n", ["q"], "not a trajectory"),
        ("q,t\n1,2\n", None, "header"),
        ("t,step,q\n1,2,3\n", ["gain"], "no column 'gain'"),
    ],
)
def test_a_broken_file_is_refused(tmp_path, text, columns, match):
    with pytest.raises(InputError, match=match):
        read_trajectory(_write(tmp_path, text), columns)


def test_an_empty_trajectory_has_no_rows(tmp_path):
    columns = read_trajectory(_write(tmp_path, "t,step,q\n"))
    assert [len(v) for v in columns.values()] == [0, 0, 0] and columns["step"].dtype == np.int64


def test_a_comment_sign_is_not_a_number_and_columns_do_not_repeat(tmp_path):
    with pytest.raises(InputError, match="not a trajectory"):
        read_trajectory(_write(tmp_path, "t,step,q\n1,2,3 # x\n"))
    with pytest.raises(InputError, match="repeat"):
        read_trajectory(_write(tmp_path, "t,step,q\n1,2,3\n"), ["t", "t"])
