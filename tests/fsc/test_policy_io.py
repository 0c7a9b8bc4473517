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
