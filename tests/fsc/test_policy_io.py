"""Policy files: .npz and .json round trips, -inf logits, atomic writes."""

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
import torch

import fsc


@pytest.mark.parametrize("suffix", [".npz", ".json"])
@pytest.mark.parametrize("arch", [fsc.RAM(3), fsc.Column(2, arms=3), fsc.Memento(2)])
def test_round_trip(tmp_path, suffix, arch):
    policy = fsc.Policy.random(arch, 1)
    path = tmp_path / f"policy{suffix}"
    policy.save(path)
    back = fsc.Policy.load(path)
    assert back.architecture == arch
    reset = torch.from_numpy(arch.reset_mask.copy())
    assert torch.equal(back.logits, policy.logits) and torch.equal(back.init_logits[reset], policy.init_logits[reset])
    assert torch.isneginf(back.init_logits[~reset]).all()  # written -inf where a reset never starts (docs/formats.md)
    assert torch.equal(back.init_probs(), policy.init_probs())


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_zero_probabilities_survive(tmp_path, suffix):
    arch = fsc.RAM(1)
    probs = np.zeros((arch.num_nodes, 2))
    probs[:, 1] = 1
    policy = fsc.Policy.from_probs(arch, probs)
    policy.save(tmp_path / f"p{suffix}")
    back = fsc.Policy.load(tmp_path / f"p{suffix}")
    assert torch.equal(back.probs(), policy.probs())
    assert torch.isneginf(back.logits[:, 0]).all()


def test_json_is_plain_json(tmp_path):
    fsc.Policy.uniform(fsc.Memento(1)).save(tmp_path / "p.json")
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["architecture"] == {"kind": "Memento", "m": 1, "arms": 2, "observations": 2}


def test_npz_holds_no_pickle(tmp_path):
    fsc.Policy.uniform(fsc.RAM(2)).save(tmp_path / "p.npz")
    with np.load(tmp_path / "p.npz", allow_pickle=False) as data:
        assert set(data.files) == {"architecture", "logits", "init_logits"}


def test_failed_write_leaves_nothing(tmp_path):
    def explode(f):
        f.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        fsc.files.atomic_write(tmp_path / "x.npz", explode)
    assert list(tmp_path.iterdir()) == []


def test_keeping_the_previous_file_never_leaves_a_gap(tmp_path, monkeypatch):
    """A kill between keeping the old file and renaming the new one leaves the old file at ``path``, not nothing."""
    path, previous = tmp_path / "c.bin", tmp_path / "c.previous.bin"
    fsc.files.atomic_write(path, lambda f: f.write(b"one"), previous=previous)
    fsc.files.atomic_write(path, lambda f: f.write(b"two"), previous=previous)
    assert (path.read_bytes(), previous.read_bytes()) == (b"two", b"one")
    real_replace = os.replace

    def killed_before_the_new_file(src, dst):
        if Path(dst) == path:
            raise KeyboardInterrupt  # the process stops here
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", killed_before_the_new_file)
    with pytest.raises(KeyboardInterrupt):
        fsc.files.atomic_write(path, lambda f: f.write(b"three"), previous=previous)
    assert (path.read_bytes(), previous.read_bytes()) == (b"two", b"two")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.bin", "c.previous.bin"]


def test_written_files_have_ordinary_permissions(tmp_path):
    """Like open(path, "w"): 0o666 less the umask (a temporary file alone would be 0o600)."""
    umask = os.umask(0o022)
    os.umask(umask)
    fsc.Policy.uniform(fsc.RAM(2)).save(tmp_path / "p.npz")
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert stat.S_IMODE((tmp_path / "p.npz").stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~umask


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("empty.npz", b"", "cannot read the policy file"),
        ("zip.npz", b"PK\x03\x04broken", "cannot read the policy file"),
        ("cut.json", b'{"architecture": {"kind": "RAM", "M": 1}, "logits": [[', "cannot read the policy file"),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, "cannot read the policy file"),
        ("keys.json", b'{"logits": []}', "is not a policy file"),
    ],
)
def test_unreadable_policy_files_are_value_errors_naming_the_file(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as caught:
        fsc.Policy.load(path)
    assert name in str(caught.value)


def test_a_npz_without_the_policy_keys(tmp_path):
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match=r"cannot read the policy file '.*other.npz': KeyError"):
        fsc.Policy.load(tmp_path / "other.npz")


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_finite_init_logits_off_the_reset_nodes_are_set_to_minus_inf_on_load(tmp_path, suffix):
    """A file written by hand (or by an older version) with finite init_logits where a reset never starts loads
    with -inf there (docs/formats.md): the initial distribution is unchanged, and saving again writes the rule."""
    arch = fsc.RAM(2)
    reset = arch.reset_mask
    init = np.arange(arch.num_nodes, dtype=float)
    path = tmp_path / f"hand{suffix}"
    if suffix == ".npz":
        np.savez(path, architecture=np.array(json.dumps(arch.to_dict())), logits=np.zeros((arch.num_nodes, arch.num_choices)), init_logits=init)
    else:
        path.write_text(json.dumps({"architecture": arch.to_dict(), "logits": np.zeros((arch.num_nodes, arch.num_choices)).tolist(),
                                    "init_logits": init.tolist()}))
    back = fsc.Policy.load(path)
    assert np.array_equal(back.init_logits.numpy()[reset], init[reset]) and np.isneginf(back.init_logits.numpy()[~reset]).all()
    expected = np.exp(init[reset] - init[reset].max())
    np.testing.assert_allclose(back.init_probs().numpy()[reset], expected / expected.sum(), rtol=1e-15)


def test_the_architecture_is_read_before_the_tables_are_allocated(tmp_path):
    """A policy .npz whose logits declare another shape than its architecture's is refused from the header."""
    import io
    import zipfile

    arch = fsc.RAM(2)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (50_000, 50_000)})
    with zipfile.ZipFile(tmp_path / "p.npz", "w", zipfile.ZIP_DEFLATED) as z:
        arrays = {"architecture": np.array(json.dumps(arch.to_dict())), "init_logits": np.zeros(arch.num_nodes)}
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.save(buffer, array)
            z.writestr(f"{name}.npy", buffer.getvalue())
        z.writestr("logits.npy", header.getvalue() + bytes(50_000 * 8 * 4))  # declares 20 GB, holds 1.6 MB
    with pytest.raises(ValueError, match=r"'logits' declares shape \(50000, 50000\) of float64, more than its"):
        fsc.Policy.load(tmp_path / "p.npz")


@pytest.mark.parametrize("memory", ["ram:3", "chain:3", "column:2", "memento:2"])
def test_a_fresh_process_loads_every_built_in_kind_after_import_fsc_alone(tmp_path, memory):
    """``import fsc`` exports names lazily; a policy file must load without the memory module imported first."""
    import subprocess
    import sys

    path = tmp_path / "policy.npz"
    fsc.Policy.random(fsc.parse_memory(memory), 0).save(path)
    code = f"import fsc; print(fsc.Policy.load({str(path)!r}).architecture.to_dict()['kind'])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == type(fsc.parse_memory(memory)).__name__
