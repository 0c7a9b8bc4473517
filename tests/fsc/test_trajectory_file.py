"""read_trajectory of trajectory.npz and trajectory.csv: every number to the bit, some columns only, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from fsc.errors import InputError
from fsc.io.trajectory import FORMAT, Trajectory, read_trajectory, write_csv, write_trajectory


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


def _columns(rows: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(size=rows))
    return {"t": t, "step": np.arange(rows, dtype=np.int64), "q": rng.random(rows) ** 9, "gain": -rng.random(rows), "dt": np.diff(t, prepend=0.0),
            "seconds": t / 7, "grad_norm": rng.random(rows), "evaluations": np.arange(rows, dtype=np.int64) * 2}  # fmt: skip


def test_the_binary_file_holds_every_column_to_the_bit_and_its_csv_the_published_ones(tmp_path):
    """trajectory.npz round-trips every column exactly (preferred in a run directory); the CSV written from the
    same rows holds t, step, the metrics, gain, dt and seconds (to the microsecond), each float exactly."""
    columns = _columns(300)
    trajectory = Trajectory(columns)
    write_trajectory(tmp_path / "trajectory.npz", trajectory)
    write_csv(tmp_path / "trajectory.csv", trajectory)
    back = read_trajectory(tmp_path)  # the directory: its trajectory.npz first
    assert list(back) == list(columns) and all(back[k].dtype == columns[k].dtype and np.array_equal(back[k], columns[k]) for k in columns)
    text = read_trajectory(tmp_path / "trajectory.csv")
    assert list(text) == ["t", "step", "q", "gain", "dt", "seconds"]
    assert all(np.array_equal(text[k], columns[k]) for k in ("t", "step", "q", "gain", "dt"))
    assert np.array_equal(text["seconds"], [float(f"{s:.6f}") for s in columns["seconds"].tolist()])
    some = read_trajectory(tmp_path / "trajectory.npz", ["q", "t"])
    assert list(some) == ["q", "t"] and np.array_equal(some["q"], columns["q"])
    # Written again after more rows, the CSV formats the new rows only and is the whole file.
    trajectory.extend({"t": [1e9], "step": [300], "metrics": {"q": [0.5]}, "gain": [1.0], "dt": [2.0], "seconds": [3.0], "grad_norm": [4.0],
                       "evaluations": [5]})  # fmt: skip
    write_csv(tmp_path / "trajectory.csv", trajectory)
    assert (tmp_path / "trajectory.csv").read_text().splitlines()[-1] == "1000000000.0,300,0.5,1.0,2.0,3.000000"


def _npz(tmp_path, **arrays):
    path = tmp_path / "trajectory.npz"
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize(
    ("arrays", "columns", "match"),
    [
        ({"t": np.zeros(2), "step": np.zeros(2, dtype=np.int64)}, None, "no 'format' entry"),
        ({"t": np.zeros(2), "step": np.zeros(2, dtype=np.int64), "format": np.array("fsc-trajectory/0")}, None, "of this version"),
        ({"step": np.zeros(2, dtype=np.int64), "t": np.zeros(2), "format": np.array(FORMAT)}, None, "expected 't', 'step'"),
        ({**_columns(2), "step": np.zeros(3, dtype=np.int64), "format": np.array(FORMAT)}, None, "of one length"),
        ({**_columns(2), "t": np.zeros((2, 2)), "format": np.array(FORMAT)}, None, "of one length"),
        ({**_columns(2), "t": np.array(["a", "b"]), "format": np.array(FORMAT)}, None, "number columns"),
        ({"t": np.zeros(2), "step": np.zeros(2, dtype=np.int64), "format": np.array(FORMAT)}, None, "no column 'gain'"),
        ({**_columns(2), "format": np.array(FORMAT)}, ["q", "u"], "no column 'u'"),
    ],
)
def test_a_broken_binary_file_is_refused(tmp_path, arrays, columns, match):
    with pytest.raises(InputError, match=match):
        read_trajectory(_npz(tmp_path, **arrays), columns)


def test_a_file_that_is_no_zip_and_a_directory_without_trajectory(tmp_path):
    (tmp_path / "trajectory.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="is not a trajectory"):
        read_trajectory(tmp_path / "trajectory.npz")
    with pytest.raises(FileNotFoundError, match="holds no trajectory"):
        read_trajectory(tmp_path / "empty" if (tmp_path / "empty").mkdir() is None else None)


def test_fsc_export_starts_without_torch(tmp_path):
    """``fsc export`` converts a trajectory.npz without importing torch, numba or scipy (it starts at once)."""
    from tests.fsc.test_startup import heavy_after

    write_trajectory(tmp_path / "trajectory.npz", Trajectory(_columns(5)))
    assert heavy_after(["export", str(tmp_path)]) == (0, [])
    assert read_trajectory(tmp_path / "trajectory.csv")["q"].tolist() == _columns(5)["q"].tolist()
