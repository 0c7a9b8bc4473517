"""Bad inputs for every command: exit status 2, one line naming the option or file, nothing written or deleted.

Each case runs ``fsc.cli.main(argv)`` in a fresh directory holding the fixture files below; a representative
subset runs again as a subprocess under a 1 GB address-space limit (all of them with ``-m slow``).
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import fsc
from fsc import cli
from fsc.limits import MAX_NODES, check_memento_nodes, memento_nodes

HUGE = "9" * 23
BIG = "1" + "0" * 400


def _fixtures(root: Path) -> None:
    """Files the cases refer to (all relative to the working directory)."""
    policy = fsc.Policy.uniform(fsc.parse_memory("ram:2"))
    policy.save(root / "good.npz")
    good = (root / "good.npz").read_bytes()
    (root / "empty.npz").write_bytes(b"")
    (root / "truncated.npz").write_bytes(good[: len(good) // 2])
    (root / "notzip.npz").write_bytes(b"this is not a zip file")
    with zipfile.ZipFile(root / "nokey.npz", "w") as z:
        buffer = io.BytesIO()
        np.save(buffer, np.zeros(3))
        z.writestr("logits.npy", buffer.getvalue())
    (root / "empty.json").write_text("")
    (root / "list.json").write_text("[1, 2]")
    (root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (root / "bigint.json").write_text('{"architecture": {"kind": "ram", "M": ' + BIG + '}, "logits": [], "init_logits": []}')
    (root / "nokey.json").write_text('{"architecture": {"kind": "ram", "M": 2}}')
    (root / "afile").write_text("x")
    (root / "keep").mkdir()
    (root / "keep" / "mine.txt").write_text("not a report")
    (root / "listrun").mkdir()
    (root / "listrun" / "run.json").write_text("[1]")
    (root / "badrun").mkdir()
    (root / "badrun" / "run.json").write_text("{not json")
    (root / "badtrajectory").mkdir()
    (root / "badtrajectory" / "trajectory.npz").write_bytes(b"this is not a zip file")
    os.symlink(root / "nowhere" / "x", root / "dangling")
    grid = {"fixed": {"memory": "ram:2", "until_t": 1, "init": "random"}, "grid": {"seed": [0]}}
    (root / "escape.json").write_text(json.dumps({**grid, "out": "../../etc/fsc"}))
    (root / "absolute.json").write_text(json.dumps({**grid, "out": str(root.parent / "elsewhere")}))
    _third_attack_fixtures(root, grid)
    _fourth_attack_fixtures(root)


POMDP_HEAD = "discount: 0.9\nvalues: reward\n"
SMALL_WORLD = "states: 2\nactions: 2\nobservations: 2\nT: * uniform\nO: * uniform\nR: * : * : * : * 1\n"


def _npz(path: Path, **arrays) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.save(buffer, array, allow_pickle=True)
            z.writestr(f"{name}.npy", buffer.getvalue())


def _npy_header(shape: tuple[int, ...]) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def _third_attack_fixtures(root: Path, grid: dict) -> None:
    """Special files, files declaring sizes nobody can afford, run directories that are not ours."""
    arch = np.array(json.dumps(fsc.parse_memory("ram:2").to_dict()))
    N, C = 10, 4
    for name in ("fifo.npz", "fifo.json", "fifo.POMDP", "fifo.py", "fifo-spec.json"):
        os.mkfifo(root / name)
    for name in ("dir.npz", "dir.json", "dir.POMDP", "dir.py"):
        (root / name).mkdir()
    for name, target in (("null.npz", "/dev/null"), ("zero.npz", "/dev/zero"), ("zero.POMDP", "/dev/zero"), ("zero.json", "/dev/zero"),
                         ("urandom.POMDP", "/dev/urandom"), ("zero.py", "/dev/zero")):
        os.symlink(target, root / name)
    with open(root / "sparse.POMDP", "wb") as f:  # 1 GB on paper, nothing on disk
        f.truncate(2**30)
    with open(root / "sparse.json", "wb") as f:
        f.truncate(2**30)
    with open(root / "sparse.npz", "wb") as f:
        f.truncate(2**33)
    (root / "nul.POMDP").write_bytes(b"\0" * 100_000)
    (root / "digits.POMDP").write_text(POMDP_HEAD + f"states: {'9' * 5000}\nactions: 2\nobservations: 2\n")
    (root / "digits20.POMDP").write_text(POMDP_HEAD + f"states: {'1' * 20}\nactions: 2\nobservations: 2\n")
    (root / "index.POMDP").write_text(POMDP_HEAD + SMALL_WORLD + f"T: 0 : {'7' * 5000} : 0 1.0\n")
    uniform = "T: * uniform\nO: * uniform\n"
    (root / "obs60000.POMDP").write_text("states: 2\nactions: 2\nobservations: 60000\n" + uniform)  # 66 bytes
    (root / "wide.POMDP").write_text("states: 2\nactions: 300\nobservations: 300\n" + uniform)
    (root / "token.POMDP").write_text("discount: " + "x" * 100_000 + "\n")
    # POMDPX: nested entities, an external entity, 10^12 declared states, a file cut short.
    laughs = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10 if i else "lol"}">' for i in range(10))
    (root / "laughs.pomdpx").write_text(f'<?xml version="1.0"?>\n<!DOCTYPE p [{laughs}]>\n<pomdpx>&l9;</pomdpx>\n')
    (root / "external.pomdpx").write_text('<?xml version="1.0"?>\n<!DOCTYPE p [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<pomdpx>&x;</pomdpx>\n')
    var = '<StateVar vnamePrev="{0}0" vnameCurr="{0}1"><NumValues>1000000</NumValues></StateVar>'
    (root / "declared.pomdpx").write_text(f'<pomdpx><Variable>{var.format("a")}{var.format("b")}<ActionVar vname="x"><NumValues>2</NumValues></ActionVar>'
                                          '<RewardVar vname="r"/></Variable></pomdpx>')  # fmt: skip
    (root / "broken.pomdpx").write_text("<pomdpx><Variable>\n<StateVar")
    # .npz files declaring what they do not hold.
    _npz(root / "shape.npz", architecture=arch, logits=np.zeros((3, 3)), init_logits=np.zeros(N))
    _npz(root / "complex.npz", architecture=arch, logits=np.zeros((N, C), dtype=complex) + 1j, init_logits=np.zeros(N))
    _npz(root / "object.npz", architecture=arch, logits=np.array([None] * N * C, dtype=object).reshape(N, C), init_logits=np.zeros(N))
    _npz(root / "nan.npz", architecture=arch, logits=np.full((N, C), np.nan), init_logits=np.zeros(N))
    _npz(root / "textlogits.npz", architecture=arch, logits=np.full((N, C), "x"), init_logits=np.zeros(N))
    with zipfile.ZipFile(root / "header.npz", "w") as z:  # 1 KB whose header asks for (100000, 100000): 80 GB
        z.writestr("architecture.npy", _npz_member(arch))
        z.writestr("logits.npy", _npy_header((100_000, 100_000)) + b"\0" * 800)
        z.writestr("init_logits.npy", _npz_member(np.zeros(N)))
    (root / "bomb.npz").write_bytes(_bomb())
    (root / "declared.npz").write_bytes(_declared_bomb(arch))
    (root / "float.json").write_text(json.dumps({"architecture": {"kind": "RAM", "M": 2.5, "arms": 2, "observations": 2},
                                                 "logits": [], "init_logits": []}))
    (root / "float.npz").write_bytes(b"")
    _npz(root / "float.npz", architecture=np.array(json.dumps({"kind": "RAM", "M": 2.5, "arms": 2, "observations": 2})),
         logits=np.zeros((N, C)), init_logits=np.zeros(N))
    (root / "strings.json").write_text(json.dumps({"architecture": json.loads(str(arch)), "logits": [["a"] * C] * N, "init_logits": [0] * N}))
    (root / "exit.py").write_text("import sys\nsys.exit(7)\n")
    (root / "exit0.py").write_text("import sys\nsys.exit()\n")
    (root / "big-reward.POMDP").write_text(POMDP_HEAD + SMALL_WORLD.replace("* 1\n", "* 1e308\n"))
    # Directories that are not ours.
    (root / "user").mkdir()
    for name in ("result.json", "policy.npz", "trajectory.csv"):
        (root / "user" / name).write_text("the user's own " + name)
    (root / "hidden").mkdir()
    (root / "hidden" / ".DS_Store").write_text("x")
    os.symlink(root / "user", root / "link-user")
    os.symlink("/etc", root / "link-etc")
    os.symlink(root.parent, root / "link-up")  # leads out of the working directory
    (root / "linked-out.json").write_text(json.dumps({**grid, "out": "link-up/sweep"}))
    (root / "linked-out2.json").write_text(json.dumps({**grid, "out": "link-etc/fsc-sweep"}))


def _trajectory(path: Path) -> None:
    """A run's ``trajectory.npz`` of one row (what ``fsc export`` reads)."""
    from fsc.io.trajectory import COLUMNS, Trajectory, write_trajectory

    trajectory = Trajectory()
    trajectory.append(dict.fromkeys([*COLUMNS, "q"], 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_trajectory(path, trajectory)


def _fourth_attack_fixtures(root: Path) -> None:
    """A finished solve, worlds whose rewards the solver cannot compute with, sweeps with one bad run among good ones."""
    (root / "solved").mkdir()
    fsc.Policy.uniform(fsc.parse_memory("ram:2")).save(root / "solved" / "policy.npz")
    (root / "solved" / "solution.json").write_text('{"value": 19.37, "memory": "ram:2"}\n')
    os.mkfifo(root / "fifo-start")
    for name, reward in (("big160.POMDP", "1e160"),):
        (root / name).write_text(POMDP_HEAD + SMALL_WORLD.replace("* 1\n", f"* {reward}\n"))
    for sweep in ("sweep-corrupt", "sweep-dir", "sweep-fifo", "sweep-csvdir", "sweep-good"):
        _trajectory(root / sweep / "a" / "trajectory.npz")
    (root / "sweep-corrupt" / "b").mkdir()
    (root / "sweep-corrupt" / "b" / "trajectory.npz").write_bytes(b"PK\x03\x04" + b"\0" * 100)
    (root / "sweep-dir" / "b" / "trajectory.npz").mkdir(parents=True)
    (root / "sweep-fifo" / "b").mkdir()
    os.mkfifo(root / "sweep-fifo" / "b" / "trajectory.npz")
    (root / "sweep-csvdir" / "a" / "trajectory.csv").mkdir()


def _npz_member(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


_BOMB: list[bytes] = []


def _bomb() -> bytes:
    """A real zip bomb (once per session): 256 MB of zeros in about 250 KB, as ``logits`` of a ram:2 policy."""
    if not _BOMB:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("architecture.npy", _npz_member(np.array(json.dumps(fsc.parse_memory("ram:2").to_dict()))))
            with z.open("logits.npy", "w", force_zip64=True) as f:
                f.write(_npy_header((4096, 8192)))
                chunk = b"\0" * 2**24
                for _ in range(16):
                    f.write(chunk)
            z.writestr("init_logits.npy", _npz_member(np.zeros(10)))
        _BOMB.append(buffer.getvalue())
    return _BOMB[0]


def _declared_bomb(arch: np.ndarray) -> bytes:
    """A small zip whose central directory declares about 4 GB per entry (12 GB in all) once inflated."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name in ("architecture", "logits", "init_logits"):
            z.writestr(f"{name}.npy", _npz_member(arch if name == "architecture" else np.zeros(3)))
    data = bytearray(buffer.getvalue())
    at = data.find(b"PK\x01\x02")
    while at >= 0:  # uncompressed size, 24 bytes into each central directory entry
        data[at + 24 : at + 28] = (0xFFFFFFF0).to_bytes(4, "little")
        at = data.find(b"PK\x01\x02", at + 4)
    return bytes(data)


BAD_POLICY_FILES = ["empty.npz", "truncated.npz", "notzip.npz", "nokey.npz", "empty.json", "list.json", "deep.json",
                    "bigint.json", "nokey.json", "missing.npz"]
TRAIN = ["train", "--memory", "ram:2", "--init", "random", "--until-t", "1"]

# (argv, a text the one line must contain)
CASES: list[tuple[list[str], str]] = []
for command in ("evaluate", "simulate", "draw"):
    extra = ["--out", "g.svg"] if command == "draw" else []
    for name in BAD_POLICY_FILES:
        CASES.append(([command, "--policy", name, *extra], name))
    for memory in ("memento:40", "memento:16", "memento:12", "memento:11", "ram:100000", "ram:3000", "chain:5000",
                   "column:5000", f"ram:{HUGE}", f"memento:{HUGE}", "ram:0", "memento:-1", "ram:x", "nothing:3", "ram"):
        CASES.append(([command, "--memory", memory, *extra], "memory" if ":" in memory else memory))
    for seed in (HUGE, "-1", "x", BIG):
        CASES.append(([command, "--seed", seed, *extra], "--seed"))
    for option in ("--mu", "--reset"):
        for value in ("nan", "inf", "x"):
            CASES.append(([command, option, value, *extra], option))
for walkers in ("1000000000000", "0", "-5", "x", BIG):
    CASES.append((["simulate", "--walkers", walkers], "--walkers"))
for steps in ("0", "x"):
    CASES.append((["simulate", "--steps", steps], "--steps"))
for name in BAD_POLICY_FILES:
    CASES.append(([*TRAIN[:4], name, *TRAIN[5:], "--out", "run"], name))
for memory in ("memento:40", "memento:16", "memento:12", "ram:100000", f"ram:{HUGE}", f"memento:{HUGE}"):
    CASES.append((["train", "--memory", memory, "--init", "random", "--until-t", "1", "--out", "run"], "memory"))
for option, values in {
    "--seed": (HUGE, "-1", BIG, "x"),
    "--threads": ("100000", "0", "x", BIG),
    "--max-steps": ("0", "-1", "x"),
    "--rows-per-decade": ("0", "x"),
    "--until-t": ("nan", "inf", "x"),
    "--checkpoint-seconds": ("nan", "x"),
}.items():
    for value in values:
        CASES.append(([*TRAIN, option, value, "--out", "run"], option))
for out in ("/sys/fsc-run", "afile", "afile/run", "dangling"):
    CASES.append(([*TRAIN, "--out", out], out.split("/")[0] if out != "/sys/fsc-run" else "/sys"))
for run in ("listrun", "badrun"):
    CASES.append(([*TRAIN, "--out", run], f"{run}/run.json"))
for out in ("keep", ".", "..", "afile"):
    CASES.append((["report", "--quiet", "--out", out], "--out"))
CASES.append((["report", "--quiet", "--full", "--out", "keep"], "--out"))  # refused before hours of sweeps
CASES.append((["report", "--quiet", "--workers", "2"], "--full"))
CASES.append((["report", "--quiet", "--sweeps", "elsewhere"], "--full"))
CASES.append((["report", "--quiet", "--full", "--workers", "0"], "--workers"))
for workers in ("1000000", "0", "x", BIG):
    CASES.append((["sweep", "spec.json", "--workers", workers], "--workers"))
for spec in ("escape.json", "absolute.json"):
    CASES.append((["sweep", spec], spec))
for spec in ("missing.json", "empty.json", "list.json", "deep.json"):
    CASES.append((["sweep", spec], spec))
for m, budget in (("22", "1"), ("30", "10"), ("100", "10"), ("0", "1"), ("x", "1"), (BIG, "1")):
    CASES.append((["necklace", "--m", m, "--time-budget", budget], "--m"))
for M in ("1000000000", "1e9", "0", "x", BIG, "100000000"):
    CASES.append((["closed-form", "ccp", "--M", M], "--M"))
# The third attack: special files, sizes nobody can afford, numbers at the edges, directories not ours.
SPECIAL_POLICY_FILES = {"fifo.npz": "FIFO", "fifo.json": "FIFO", "dir.npz": "directory", "dir.json": "directory",
                        "null.npz": "character device", "zero.npz": "character device", "zero.json": "character device",
                        "sparse.npz": "over the limit", "sparse.json": "over the limit"}  # fmt: skip
HOSTILE_POLICY_FILES = {"shape.npz": "expected (10, 4)", "complex.npz": "complex128", "object.npz": "Python objects",
                        "nan.npz": "NaN", "textlogits.npz": "expected real numbers", "header.npz": "(100000, 100000)",
                        "bomb.npz": "(4096, 8192)", "declared.npz": "once inflated", "float.json": "M must be an int, got 2.5",
                        "float.npz": "M must be an int, got 2.5", "strings.json": "logits must be nested lists of numbers"}  # fmt: skip
for command in ("evaluate", "simulate", "draw", "inspect", "train"):
    for name, why in {**SPECIAL_POLICY_FILES, **HOSTILE_POLICY_FILES}.items():
        if command == "inspect":
            argv = ["inspect", name]
        elif command == "train":
            argv = [*TRAIN[:4], name, *TRAIN[5:], "--out", "run"]
        else:
            argv = [command, "--policy", name, *(["--out", "g.svg"] if command == "draw" else [])]
        CASES.append((argv, name))
        CASES.append((argv, why))
SPECIAL_POMDP_FILES = {"fifo.POMDP": "FIFO", "dir.POMDP": "directory", "zero.POMDP": "character device", "urandom.POMDP": "character device",
                       "sparse.POMDP": "over the limit", "nul.POMDP": "0x00", "digits.POMDP": "5,000 digits", "digits20.POMDP": "20 digits",
                       "index.POMDP": "5,000 digits", "token.POMDP": "(100,002 characters)", "missing.POMDP": "does not exist"}  # fmt: skip
for name, why in SPECIAL_POMDP_FILES.items():
    CASES.append((["pomdp", name], name))
    CASES.append((["pomdp", name], why))
    for command in ("evaluate", "train"):
        argv = ["evaluate", "--pomdp", name] if command == "evaluate" else ["train", "--pomdp", name, *TRAIN[1:], "--out", "run"]
        CASES.append((argv, why))
POMDPX_FILES = {"laughs.pomdpx": "DOCTYPE declaration is refused", "external.pomdpx": "DOCTYPE declaration is refused",
                "declared.pomdpx": "1,000,000,000,000 states", "broken.pomdpx": "not well-formed XML"}  # fmt: skip
for name, why in POMDPX_FILES.items():
    CASES.append((["pomdp", name], f"{name}:"))
    CASES.append((["pomdp", name], why))
    CASES.append((["evaluate", "--pomdp", name], why))
    CASES.append((["train", "--pomdp", name, *TRAIN[1:], "--out", "run"], why))
# refused by the table's size or the joint chain's estimate, whichever comes first: both name the declared size
for name, why in {"obs60000.POMDP": "60,000", "wide.POMDP": "300"}.items():
    for memory in ("ram:2", "chain:1", "column:1", "memento:1"):
        CASES.append((["evaluate", "--pomdp", name, "--memory", memory], why))
    CASES.append((["train", "--pomdp", name, "--memory", "ram:1", "--init", "random", "--until-t", "1", "--out", "run"], why))
for memory, why in {"fifo.py:X": "FIFO", "dir.py:X": "directory", "zero.py:X": "character device", "exit.py:X": "sys.exit(7)",
                    "exit0.py:X": "sys.exit(None)", "missing.py:X": "does not exist"}.items():  # fmt: skip
    CASES.append((["evaluate", "--memory", memory], why))
    CASES.append((["train", "--memory", memory, "--init", "random", "--until-t", "1", "--out", "run"], why))
for reset in ("1e-300", "2.2e-308", "5e-324", "1e-17", "1.1e-16", "-1e-300", "1.0000000000000002"):
    for command in ("evaluate", "simulate", "draw"):
        CASES.append(([command, "--reset", reset, *(["--out", "g.svg"] if command == "draw" else [])], "reset"))
    CASES.append(([*TRAIN, "--reset", reset, "--out", "run"], "reset"))
for discount in ("0.99999999999999999", "1.5", "-0.1"):
    CASES.append((["simulate", "--discount", discount], "discount" if discount != "0.99999999999999999" else "reset"))
for steps in ("1e20", "100000000000000000000", "9007199254740993", "18446744073709551616", "1" * 5000):
    CASES.append((["simulate", "--steps", steps], "--steps"))
    CASES.append(([*TRAIN, "--max-steps", steps, "--out", "run"], "--max-steps"))
    CASES.append(([*TRAIN, "--rows-per-decade", steps, "--out", "run"], "--rows-per-decade"))
for argv in (["--reset", "1e-9"], ["--reset", "1e-6", "--walkers", "100000"], ["--steps", "9007199254740992"],
             ["--steps", "100000000000", "--reset", "0.5", "--walkers", "10000000"]):  # fmt: skip
    CASES.append((["simulate", *argv], "--reset"))
LONG = "x" * 100_000
for argv, name in (
    (["evaluate", "--memory", LONG], "memory"), (["evaluate", "--memory", f"ram:{'9' * 100_000}"], "memory"),
    (["evaluate", "--policy", LONG], "--policy"), (["evaluate", "--policy", LONG + ".npz"], "policy file"),
    (["evaluate", "--seed", LONG], "--seed"), (["evaluate", "--reset", LONG], "--reset"), (["evaluate", "--mu", "1" * 100_000], "--mu"),
    (["evaluate", "--convention", LONG], "--convention"), (["evaluate", "--engine", LONG], "engine"), ([LONG], "invalid choice"),
    (["evaluate", LONG], "unrecognized"), (["pomdp", LONG + ".POMDP"], "cannot be read"), (["inspect", LONG + ".json"], "cannot be read"),
    ([*TRAIN, "--out", "run", "--init", LONG], "init"), (["sweep", LONG + ".json"], "sweep spec"),
    (["evaluate", "--pomdp", "x" * 5000], "cannot be read"), (["evaluate", "--pomdp", "x" * 200], "does not exist"),
):  # fmt: skip
    CASES.append((argv, name))
# --world: a name of tasks.WORLDS, alone or with --mu for the two-hypothesis world; the line lists the names.
WORLD_COMMANDS = (["evaluate"], ["simulate"], ["draw", "--out", "g.svg"], ["inspect", "good.npz"], ["solve", "--quiet"], [*TRAIN, "--out", "run"])
for argv in WORLD_COMMANDS:
    for world, name in ((["--world", "tigre"], "'two-hypothesis', 'tiger', 'cheese-maze', '4x3', got 'tigre'"), (["--world", ""], "world must be one of"),
                        (["--world", LONG], "(100,002 characters)"), (["--world", "Tiger"], "got 'Tiger'"),
                        (["--world", "tiger", "--pomdp", "zero.POMDP"], "give one world"), (["--pomdp", "good.POMDP", "--world", "4x3"], "give one world"),
                        (["--world", "4x3", "--mu", "0.2"], "two-hypothesis world's gap")):  # fmt: skip
        CASES.append(([*argv, *world], name))
# fsc solve's settings: each option's type from the setting's default; a value out of range is the settings class's check.
for argv, name in ((["--mirror-steps", "x"], "--mirror-steps: expected an integer"), (["--mirror-steps", LONG], "--mirror-steps"),
                   (["--mirror-steps", "0"], "steps"), (["--adam-relative-eps", "maybe"], "expected true or false"),
                   (["--shaped-weights", "0,a"], "--shaped-weights: expected a number"), (["--mirror-rate", "-1"], "rate"),
                   (["--methods", "em", "--greedy-tries", "3"], "greedy is not among --methods"),
                   (["--methods", "ascent"], "--methods must be among")):  # fmt: skip
    CASES.append((["solve", "--quiet", *argv], name))
for out in ("user", "link-user", "link-etc", "hidden", "link-up"):
    CASES.append(([*TRAIN, "--out", out], "--out"))
for spec in ("linked-out.json", "linked-out2.json", "fifo-spec.json", "dir.json", "zero.json", "sparse.json"):
    CASES.append((["sweep", spec], spec))
# The fourth attack (issue 51): fsc solve --out under train's rules (never a directory of the user's, a run's or a
# solution's), --start given what is not a policy file, rewards whose values the solver's arithmetic cannot hold,
# sizes int() alone would read, a Rosenbrock tolerance that cannot mean converged, an export with one bad run.
SOLVE = ["solve", "--quiet", "--max-seconds", "5"]
for out, name in (("user", "already holds files"), ("link-user", "the link leads to"), ("link-etc", "already holds files"),
                  ("hidden", "already holds files"), ("link-up", "already holds files"), ("keep", "already holds files"),
                  ("afile", "is not a directory"), ("afile/run", "cannot be created"), ("dangling", "dangling symbolic link"),
                  ("listrun", "holds an fsc train run"), ("badrun", "holds an fsc train run"), ("solved", "holds a solution already"),
                  ("/sys/fsc-solve", "cannot be created"), ("", "--out must name a directory"), (" ", "--out must name a directory"),
                  (".", "already holds files"), ("..", "already holds files"), (LONG, "cannot be used: File name too long"),
                  ("x/" * 3000, "File name too long"), ("fifo.npz", "is not a directory"), ("zero.npz", "is not a directory")):  # fmt: skip
    CASES.append(([*SOLVE, "--out", out], name))
for start, name in (("dir.npz", "is a directory"), ("keep", "is a directory"), ("fifo.npz", "is a FIFO"), ("fifo-start", "is a FIFO"),
                    ("zero.npz", "character device"), ("null.npz", "character device"), ("afile", "is not a policy file"),
                    ("missing.npz", "does not exist"), ("missing", "does not exist"), ("sparse.npz", "over the limit"),
                    ("nan.npz", "NaN"), ("shape.npz", "expected (10, 4)")):  # fmt: skip
    CASES.append(([*SOLVE, "--start", start], name))
    CASES.append(([*SOLVE, "--start", start, "--out", "solve-run"], name))
for world, name in (("big160.POMDP", "reach 1e+161 in size, over the 1e+150"), ("big-reward.POMDP", "overflow float64")):
    CASES.append(([*SOLVE, "--pomdp", world, "--memory", "ram:1"], name))
    CASES.append(([*SOLVE, "--pomdp", world, "--memory", "ram:1", "--out", "solve-run"], name))
for memory in ("ram:1_0", "ram:+2", "chain:\u0663", "ram:2.0", "ram:0x2"):
    for argv in (SOLVE, ["evaluate"], [*TRAIN, "--out", "run"]):
        CASES.append(([*argv, "--memory", memory], "memory size must be an integer >= 1"))
for tolerance in ("1", "100", "1e10", "0.0100001", "nan"):
    CASES.append(([*TRAIN, "--optimizer", "rosenbrock", "--tolerance", tolerance, "--out", "run"], "tolerance"))
for argv, name in ((["sweep-corrupt"], "is not a trajectory"), (["sweep-dir"], "is a directory, not a regular file"),
                   (["sweep-fifo"], "is a FIFO"), (["sweep-csvdir"], "is not a regular file"), (["sweep-good", "badtrajectory"], "is not a trajectory"),
                   (["sweep-good", "sweep-corrupt/b/trajectory.npz"], "is not a trajectory"), (["sweep-good", "fifo.npz"], "fifo.npz"),
                   (["sweep-good", "missing"], "does not exist")):  # fmt: skip
    CASES.append((["export", *argv], name))

CASES += [
    (["nosuchcommand"], "nosuchcommand"),
    ([], "COMMAND"),
    (["evaluate", "--nosuchoption"], "--nosuchoption"),
    (["closed-form", "ccp"], "--M"),
    (["train", "--memory", "ram:2"], "--init"),
    (["draw", "--out", "x.pdf"], "--format"),
    (["export"], "PATH"),
    (["export", "nowhere"], "nowhere"),
    (["export", "good.npz"], "good.npz"),
    (["export", "keep"], "keep"),
    (["export", "badtrajectory"], "is not a trajectory"),
]


def _listing(root: Path) -> dict[str, object]:
    """Every entry under ``root``: its size and, for a small regular file, its bytes (nothing changed, nothing
    written, nothing deleted). Special files are listed, never opened."""
    listing: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        status = p.lstat()
        small = p.is_file() and not p.is_symlink() and status.st_size < 2**20
        listing[str(p.relative_to(root))] = (status.st_size, p.read_bytes() if small else None)
    return listing


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    root = tmp_path / "cwd"
    root.mkdir()
    _fixtures(root)
    monkeypatch.chdir(root)
    return root


def test_registry_is_large_enough():
    assert len(CASES) >= 500, len(CASES)


@pytest.mark.parametrize(("argv", "names"), CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_input_in_process(workdir, capsys, argv, names):
    before = _listing(workdir.parent)
    start = time.perf_counter()
    status = cli.main(argv)
    seconds = time.perf_counter() - start
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert status == 2, captured.err
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("fsc: error: ") and "Traceback" not in captured.err
    assert names in lines[0]
    assert len(lines[0]) < 300, len(lines[0])
    assert "Attribute(" not in lines[0]  # attrs' internals
    assert captured.out == ""
    assert _listing(workdir.parent) == before  # nothing written, nothing deleted, nothing changed
    assert seconds < 5.0


#: In a subprocess under 1 GB: every 30th case, the report cases, and each special or huge file once (in the first
#: command that reads it: evaluate or pomdp).
HEAVY = {*SPECIAL_POLICY_FILES, "bomb.npz", "header.npz", "declared.npz", "fifo.POMDP", "dir.POMDP", "zero.POMDP", "urandom.POMDP",
         "sparse.POMDP", "nul.POMDP", "digits.POMDP", "obs60000.POMDP", "wide.POMDP"}  # fmt: skip
_SEEN: set[str] = set()
SUBSET = [c for i, c in enumerate(CASES) if i % 30 == 0 or c[0][:2] == ["report", "--quiet"]
          or (c[0][:1] in (["evaluate"], ["pomdp"]) and c[0][-1] in HEAVY and c[0][-1] not in _SEEN and not _SEEN.add(c[0][-1]))]


#: ``python -m fsc.cli ARGV`` as ``fsc/cli/__main__.py`` runs it, timing ``main`` alone (after the interpreter and the
#: package have started: a loaded machine's slow start-up is not the command's time) on one extra stderr line.
_TIMED_MAIN = ("import sys, time\nfrom fsc.cli import main\nstart = time.perf_counter()\ntry:\n    status = main(sys.argv[1:])\n"
               "finally:\n    print(f'SECONDS {time.perf_counter() - start}', file=sys.stderr)\nsys.exit(status)\n")


def _run_subprocess(workdir: Path, argv: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    done = subprocess.run([sys.executable, "-c", _TIMED_MAIN, *argv], cwd=workdir, capture_output=True, text=True, timeout=120,
                          preexec_fn=limit)  # fmt: skip
    lines = done.stderr.splitlines()
    seconds = float(lines[-1].split()[1]) if lines and lines[-1].startswith("SECONDS ") else float("inf")
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout, "\n".join(lines[:-1])), seconds


def _check_subprocess(workdir: Path, argv, names) -> None:
    before = _listing(workdir.parent)
    done, seconds = _run_subprocess(workdir, argv)
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and names in lines[0] and "Traceback" not in done.stderr, done.stderr
    assert len(lines[0]) < 300
    assert _listing(workdir.parent) == before
    assert seconds < 15.0  # the command itself, under the 1 GB limit


@pytest.mark.parametrize(("argv", "names"), SUBSET, ids=[" ".join(a)[:60] for a, _ in SUBSET])
def test_bad_input_subprocess(workdir, argv, names):
    _check_subprocess(workdir, argv, names)


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "names"), CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_input_subprocess_all(workdir, argv, names):
    _check_subprocess(workdir, argv, names)


# The API.


def test_memento_node_count_matches_a_direct_sum():
    for m in range(0, 12):
        assert memento_nodes(m, 4) == sum(4**k for k in range(m + 1))
    assert memento_nodes(40, 4) == (4**41 - 1) // 3


@pytest.mark.parametrize("m", [11, 12, 16, 40, 10**20])
def test_memento_too_large_refused_at_construction(m):
    with pytest.raises(ValueError, match=f"memento:{m} would have .* over the limit of {MAX_NODES:,}"):
        fsc.Memento(m)


def test_memento_at_the_limit_constructs():
    fsc.Memento(10)
    check_memento_nodes(10, 2, 2)


@pytest.mark.parametrize("name", BAD_POLICY_FILES)
def test_policy_load_raises_value_error_naming_the_file(workdir, name):
    with pytest.raises(ValueError, match=name.replace(".", r"\.")):
        fsc.Policy.load(workdir / name)


@pytest.mark.parametrize("max_steps", [0, -1, 1.5, True])
def test_run_training_refuses_bad_max_steps(tmp_path, max_steps):
    from fsc.train import run_training

    with pytest.raises(ValueError, match="max_steps"):
        run_training(memory="ram:2", init="random", until_t=1.0, max_steps=max_steps, out=tmp_path / "run", quiet=True)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("seed", [-1, 2**63, 10**30])
def test_run_training_refuses_bad_seed(tmp_path, seed):
    from fsc.train import run_training

    with pytest.raises(ValueError, match="seed"):
        run_training(memory="ram:2", init="random", seed=seed, until_t=1.0, out=tmp_path / "run", quiet=True)
    assert not (tmp_path / "run").exists()


# Ownership and the report directory.


def test_a_held_run_directory_is_refused(tmp_path):
    from fsc.io.rundir import RunLock
    from fsc.train import run_training

    out = tmp_path / "run"
    with RunLock(out), pytest.raises(ValueError, match="in use by another fsc train"):
        run_training(memory="ram:2", init="random", until_t=0.01, out=out, quiet=True)
    assert list(out.iterdir()) == []
    result = run_training(memory="ram:2", init="random", until_t=0.01, out=out, quiet=True)  # free again
    assert (out / "result.json").exists() and result.steps >= 1


def test_a_run_directory_with_other_arguments_is_refused(tmp_path):
    from fsc.train import run_training

    out = tmp_path / "run"
    run_training(memory="ram:2", init="random", seed=1, until_t=0.01, out=out, quiet=True)
    files = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(ValueError, match="other arguments"):
        run_training(memory="ram:2", init="random", seed=2, until_t=0.01, out=out, quiet=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files


# fsc solve --out: new or empty only, locked while it runs, the best so far saved on an interrupt.

QUICK_SOLVE = ["solve", "--quiet", "--memory", "RAM:01", "--max-seconds", "5", "--rounds", "1", "--json"]


def _strict(text: str):
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in strict JSON"))


def test_a_solution_is_never_replaced(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # short paths: the refusal below is quoted whole whatever the length of pytest's tmp_path
    out = Path("a", "b")
    assert cli.main([*QUICK_SOLVE, "--out", str(out)]) == 0
    printed = _strict(capsys.readouterr().out)
    files = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(files) == ["policy.npz", "solution.json"]
    document = _strict(files["solution.json"].decode())
    assert document["memory"] == "ram:1" == printed["memory"]  # the canonical spec, not the option's text "RAM:01"
    assert document["interrupted"] is False and document["value"] == printed["value"]
    value = float(fsc.evaluate(tasks_world(), fsc.Policy.load(out / "policy.npz"), reset=document["reset"]).value)
    assert value == pytest.approx(document["value"], rel=1e-12)
    for again in ([*QUICK_SOLVE, "--out", str(out)], [*QUICK_SOLVE, "--seed", "1", "--out", "link"]):
        if again[-1].endswith("link"):
            Path("link").symlink_to(out.resolve())
        assert cli.main(again) == 2
        assert "holds a solution already" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files


def tasks_world():
    import tasks

    return tasks.TwoHypothesis(0.1)


def test_a_solve_directory_held_by_another_is_refused_and_left_as_it_was(tmp_path, capsys):
    from fsc.io.rundir import SOLVE_FILES, RunLock, check_solve_directory

    out = tmp_path / "held"
    with RunLock(out, check=check_solve_directory, files=SOLVE_FILES, command="fsc solve or train"):
        assert cli.main([*QUICK_SOLVE, "--out", str(out)]) == 2
        assert "is in use by another fsc solve or train" in capsys.readouterr().err
        assert out.is_dir() and list(out.iterdir()) == []  # the holder's directory: not removed
    assert cli.main([*QUICK_SOLVE, "--out", str(out)]) == 0  # free again
    assert (out / "solution.json").is_file()


def test_a_refused_solve_removes_the_directories_it_made(tmp_path, capsys):
    out = tmp_path / "new" / "deeper"
    assert cli.main([*QUICK_SOLVE, "--start", str(tmp_path / "missing.npz"), "--out", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def _solve_process(out: Path, *extra: str) -> subprocess.Popen:
    import signal

    argv = [sys.executable, "-m", "fsc.cli", "solve", "--memory", "ram:2", "--max-seconds", "120", "--out", str(out), *extra]
    # SIGINT as a terminal gives it: a suite run as a background job (bash without job control) starts its children
    # with SIGINT ignored, and Python then keeps it ignored.
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip


def test_an_interrupt_saves_the_best_so_far(tmp_path):
    """SIGINT once a controller beat the uniform one: status 130, and the best so far in solution.json (strict JSON,
    ``interrupted``) with its policy, whose value is the one recorded."""
    import signal

    out = tmp_path / "run"
    process = _solve_process(out, "--world", "tiger")
    lines = []
    for line in process.stderr:
        lines.append(line)
        if "(uniform)" not in line and "best" in line:
            break
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 130, "".join(lines) + rest
    assert "fsc solve: interrupted; the best so far" in rest and rest.rstrip().endswith("fsc: interrupted")
    document = _strict((out / "solution.json").read_text())
    assert document["interrupted"] is True and document["history"] and document["evaluations"] is None
    policy = fsc.Policy.load(out / "policy.npz")
    assert document["memory"] in ("ram:1", "ram:2") and fsc.parse_memory(document["memory"], arms=3) == policy.architecture
    import tasks

    value = float(fsc.evaluate(tasks.Tiger(), policy).value)
    assert value == pytest.approx(document["value"], rel=1e-9) and value > -606  # better than the uniform controller
    assert document["gap"] == pytest.approx(document["upper_bound"] - document["value"])


def test_an_interrupt_before_any_controller_writes_nothing(tmp_path):
    import signal

    out = tmp_path / "run"
    process = _solve_process(out, "--quiet")
    time.sleep(0.5)  # importing: no controller yet
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=120)
    assert process.returncode in (130, -signal.SIGINT)  # -SIGINT: still importing the command, before it ran
    assert not out.exists()


def test_from_dict_reads_the_built_in_kinds_in_a_fresh_process():
    """The registry of kinds is full as soon as the interface's module is imported, whatever was imported before."""
    code = ("from fsc.model.architecture import MemoryArchitecture as M\n"
            "print(M.from_dict({'kind': 'RAM', 'M': 2, 'arms': 3, 'observations': 2}),\n"
            "      M.from_dict({'kind': 'Memento', 'm': 1, 'arms': 2, 'observations': 2}))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["RAM(M=2,", "arms=3,", "observations=2)", "Memento(m=1,", "arms=2,", "observations=2)"], done.stderr


def test_numpy_integers_are_integers_wherever_an_int_is_asked():
    import tasks

    n = np.int64
    solution = fsc.solve(tasks.Tiger(), "ram:1", seconds=n(30), seed=n(3), rounds=n(1), patience=n(2))
    assert solution.seed == 3 and type(solution.seed) is int
    assert fsc.RAM(n(2), arms=np.int32(3)) == fsc.RAM(2, arms=3) and fsc.Memento(np.uint8(2)).m == 2
    for boolean in (True, np.bool_(True)):
        with pytest.raises(TypeError, match="seed must be an int"):
            fsc.solve(tasks.Tiger(), "ram:1", seconds=5, seed=boolean)


def test_report_target_rules(tmp_path, monkeypatch):
    from fsc.report import REPORT_MARKER, check_report_target

    monkeypatch.chdir(tmp_path)
    check_report_target(tmp_path / "new")  # missing: fine
    (tmp_path / "empty").mkdir()
    check_report_target(tmp_path / "empty")  # empty: fine
    (tmp_path / "ours").mkdir()
    (tmp_path / "ours" / REPORT_MARKER).write_text("")
    (tmp_path / "ours" / "index.html").write_text("old")
    check_report_target(tmp_path / "ours")  # a previous report: fine
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "keep").write_text("x")
    for bad in (tmp_path / "theirs", Path("."), Path(".."), tmp_path):
        with pytest.raises(ValueError, match="--out"):
            check_report_target(bad)
    assert (tmp_path / "theirs" / "keep").read_text() == "x"


def test_sweep_spec_loading_errors_name_the_file(workdir):
    assert json.loads((workdir / "list.json").read_text()) == [1, 2]  # the fixture is what the case says


# Checkpoints: consistent when written, validated when read, a corrupt one restarts the run.

RUN = dict(memory="ram:2", init="random", seed=3, until_t=50.0, quiet=True, checkpoint_seconds=0.0)
DETERMINISTIC = ("t", "step", "q", "gain", "dt", "grad_norm", "evaluations")


def _final(out: Path):
    from fsc.train import load_checkpoint

    state, columns, _ = load_checkpoint(out)
    return state.point.logits.numpy().copy(), {k: columns[k] for k in DETERMINISTIC}


def _same(a, b) -> bool:
    return np.array_equal(a[0], b[0]) and all(np.array_equal(a[1][k], b[1][k]) for k in DETERMINISTIC)


def test_snapshot_saves_whole_rows_only():
    from fsc.io.trajectory import COLUMNS, Trajectory

    trajectory = Trajectory()
    trajectory.append(dict.fromkeys([*COLUMNS, "q"], 1))
    first = next(iter(trajectory.columns.values()))
    first.append(2)  # as if interrupted after the first column of the next row
    assert {len(c) for c in trajectory.arrays().values()} == {1}


def _damage(path: Path, damage: str) -> None:
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "garbage":
        path.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    else:
        with np.load(path, allow_pickle=False) as z:
            arrays = dict(z)
        arrays["trajectory_q"] = np.append(arrays["trajectory_q"], 0.5)
        np.savez(path, **arrays)


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage", "uneven"])
def test_corrupt_checkpoint_falls_back_to_the_previous_one_and_ends_identical(tmp_path, capfd, damage):
    from fsc.train import run_training

    run_training(**RUN, out=tmp_path / "whole")
    reference = _final(tmp_path / "whole")
    out = tmp_path / "cut"
    run_training(**RUN, max_steps=3, out=out)
    previous_step = int(np.load(out / "checkpoint.previous.npz")["step"])
    assert previous_step < int(np.load(out / "checkpoint.npz")["step"])
    _damage(out / "checkpoint.npz", damage)
    capfd.readouterr()
    run_training(**RUN, out=out)
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 1 and "checkpoint.npz" in err[0] and f"resuming from the previous checkpoint (step {previous_step})" in err[0]
    assert _same(_final(out), reference)


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_both_checkpoints_corrupt_restart_to_the_identical_result(tmp_path, capfd, damage):
    from fsc.train import run_training

    run_training(**RUN, out=tmp_path / "whole")
    reference = _final(tmp_path / "whole")
    out = tmp_path / "cut"
    run_training(**RUN, max_steps=3, out=out)
    _damage(out / "checkpoint.npz", damage)
    _damage(out / "checkpoint.previous.npz", damage)
    capfd.readouterr()
    run_training(**RUN, out=out)
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 1 and "checkpoint.npz" in err[0] and "checkpoint.previous.npz" in err[0] and "restarting" in err[0]
    assert _same(_final(out), reference)


def test_a_kill_between_the_two_renames_resumes_from_the_previous_checkpoint(tmp_path, capfd):
    """Only checkpoint.previous.npz is left (the latest was being renamed into place): the run resumes from it."""
    from fsc.train import run_training

    run_training(**RUN, out=tmp_path / "whole")
    out = tmp_path / "cut"
    run_training(**RUN, max_steps=3, out=out)
    (out / "checkpoint.npz").unlink()
    capfd.readouterr()
    run_training(**RUN, out=out)
    assert capfd.readouterr().err == ""
    assert _same(_final(out), _final(tmp_path / "whole"))


@pytest.mark.parametrize(("slot", "value"), [("slot_next_dt", np.nan), ("slot_next_dt", 0.0), ("slot_next_dt", -1.0), ("slot_age", np.inf),
                                            ("t", np.nan), ("dt", np.inf), ("gain", np.nan), ("logits", np.nan), ("slot_curvature", np.nan)])
def test_a_checkpoint_with_numbers_no_step_leaves_is_refused(tmp_path, capfd, slot, value):
    """A Rosenbrock checkpoint holding a NaN step size (or another number no step leaves) is refused on resume, and
    the run falls back to the previous checkpoint (both damaged: restarts), ending as an uninterrupted run instead
    of "stalled" at once and marked finished."""
    from fsc.train import run_training

    rosenbrock = {**RUN, "optimizer": "rosenbrock", "until_t": 1e3}
    whole = run_training(**rosenbrock, out=tmp_path / "whole")
    out = tmp_path / "cut"
    run_training(**rosenbrock, max_steps=3, out=out)
    for name in ("checkpoint.npz", "checkpoint.previous.npz"):
        with np.load(out / name) as z:
            arrays = dict(z)
        arrays[slot] = np.full_like(arrays[slot], value, dtype=np.float64)
        np.savez(out / name, **arrays)
    capfd.readouterr()
    resumed = run_training(**rosenbrock, out=out)
    err = capfd.readouterr().err
    assert "is not a usable checkpoint" in err and "restarting the run from the start" in err
    assert resumed.stop == whole.stop and resumed.steps == whole.steps and resumed.gain == whole.gain


def test_resume_after_max_steps_is_bit_identical(tmp_path):
    from fsc.train import run_training

    run_training(**RUN, out=tmp_path / "whole")
    for k in (1, 2, 5):
        run_training(**RUN, max_steps=k, out=tmp_path / f"cut{k}")
        run_training(**RUN, out=tmp_path / f"cut{k}")
        assert _same(_final(tmp_path / f"cut{k}"), _final(tmp_path / "whole"))


# Kills at random moments: every run resumes to the bit-identical result.


def _sigint_in_process(tmp_path: Path, kills: int) -> tuple[int, int]:
    import random
    import signal
    import threading

    from fsc.train import run_training

    run_training(**RUN, out=tmp_path / "whole")
    reference = _final(tmp_path / "whole")
    rng = random.Random(16)
    identical = 0
    for i in range(kills):
        out = tmp_path / f"int{i}"
        timer = threading.Timer(rng.uniform(0.0, 0.25), lambda: os.kill(os.getpid(), signal.SIGINT))
        try:  # a short delay can fire before start() returns
            timer.start()
            run_training(**RUN, out=out)
        except KeyboardInterrupt:
            pass
        try:  # a signal the timer sends, even late on a loaded machine, arrives here, not in the next run
            timer.cancel()
            timer.join()
            time.sleep(0.01)
        except KeyboardInterrupt:
            pass
        run_training(**RUN, out=out)
        identical += _same(_final(out), reference)
    return kills, identical


def _sigkill_cli(tmp_path: Path, kills: int) -> tuple[int, int]:
    import random

    argv = ["--memory", "ram:2", "--init", "random", "--seed", "3", "--until-t", "50", "--quiet",
            "--checkpoint-seconds", "0"]
    whole = tmp_path / "whole"
    subprocess.run([sys.executable, "-m", "fsc.cli", "train", *argv, "--out", str(whole)], check=True, capture_output=True)
    reference = _final(whole)
    rng = random.Random(61)
    identical = 0
    for i in range(kills):
        out = tmp_path / f"kill{i}"
        process = subprocess.Popen([sys.executable, "-m", "fsc.cli", "train", *argv, "--out", str(out)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 3.0))
        process.kill()
        process.wait()
        LEFT_AFTER_KILLS.append(len(_temporaries(out)) if out.exists() else 0)  # killed before it made the directory: none
        subprocess.run([sys.executable, "-m", "fsc.cli", "train", *argv, "--out", str(out)], check=True, capture_output=True)
        assert _temporaries(out) == [], _temporaries(out)  # the next run removed what the kill left
        identical += _same(_final(out), reference)
    return kills, identical


#: Temporaries found in each killed run directory before the next run (a kill during a write leaves one).
LEFT_AFTER_KILLS: list[int] = []


def _temporaries(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.endswith(".tmp"))


def test_sigint_in_process_resumes_bit_identical(tmp_path):
    kills, identical = _sigint_in_process(tmp_path, 8)
    assert identical == kills


def test_sigkill_cli_resumes_bit_identical(tmp_path):
    kills, identical = _sigkill_cli(tmp_path, 3)
    assert identical == kills


#: ``fsc ARGV`` killed by SIGKILL at its ``AT``-th fsync: in the middle of an atomic write, its temporary written
#: but not yet renamed (the worst moment for litter).
_KILL_AT_FSYNC = ("import os, signal, sys\ncalls = [0]\nreal = os.fsync\n\n\ndef fsync(fd):\n    calls[0] += 1\n"
                  "    if calls[0] == int(sys.argv[1]):\n        os.kill(os.getpid(), signal.SIGKILL)\n    real(fd)\n\n\n"
                  "os.fsync = fsync\nfrom fsc.cli import main\nsys.exit(main(sys.argv[2:]))\n")


@pytest.mark.parametrize("at", [pytest.param(1, marks=pytest.mark.slow), 4])
def test_a_kill_during_a_write_leaves_a_temporary_the_next_run_removes(tmp_path, at):
    """Killed during its first write (run.json: the directory holds nothing else) or a checkpoint's, a run leaves
    one temporary; the next run removes it and ends bit-identical to an uninterrupted run."""
    import signal

    from fsc.train import run_training

    argv = ["train", "--memory", "ram:2", "--init", "random", "--seed", "3", "--until-t", "50", "--quiet", "--checkpoint-seconds", "0"]
    out = tmp_path / "run"
    killed = subprocess.run([sys.executable, "-c", _KILL_AT_FSYNC, str(at), *argv, "--out", str(out)], capture_output=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL
    assert len(_temporaries(out)) == 1, _temporaries(out)
    done = subprocess.run([sys.executable, "-m", "fsc.cli", *argv, "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert _temporaries(out) == []
    run_training(**RUN, out=tmp_path / "whole")
    assert _same(_final(out), _final(tmp_path / "whole"))


def test_the_next_run_removes_only_its_own_stale_temporaries(tmp_path):
    """What a SIGKILL during a checkpoint write leaves (``.checkpoint.npz.<8 random characters>.tmp``) is removed by the next
    run of the directory; a user's files that merely look alike stay, byte for byte."""
    from fsc.train import run_training

    out = tmp_path / "run"
    run_training(**RUN, max_steps=2, out=out)
    ours = [".checkpoint.npz.a1b2c3d4.tmp", ".trajectory.csv.zz_9y8x7.tmp", ".checkpoint.previous.npz.abcdefgh.tmp", ".run.json.00000000.tmp"]
    theirs = ["notes.tmp", ".notes.txt.abcdefgh.tmp", ".checkpoint.npz.tmp", ".checkpoint.npz.TOOLONGNAME.tmp", "checkpoint.npz.abcdefgh.tmp"]
    for name in ours + theirs:
        (out / name).write_bytes(b"\0" * 1000 + name.encode())
    run_training(**RUN, max_steps=4, out=out)
    assert _temporaries(out) == sorted(theirs)
    assert all((out / name).read_bytes() == b"\0" * 1000 + name.encode() for name in theirs)


def test_a_directory_holding_only_a_killed_first_write_is_ours(tmp_path):
    """Killed before its first run.json was in place, a run leaves only that temporary: the directory is still
    new, and the next run starts there."""
    from fsc.train import run_training

    out = tmp_path / "run"
    out.mkdir()
    (out / ".run.json.k1ll3d00.tmp").write_text('{"half": ')
    result = run_training(**RUN, max_steps=2, out=out)
    assert result.steps == 2 and _temporaries(out) == []


def test_a_directory_of_the_users_files_is_never_written(tmp_path):
    from fsc.train import run_training

    out = tmp_path / "mine"
    out.mkdir()
    files = {"result.json": b"{}", "policy.npz": b"mine", "trajectory.csv": b"t\n"}
    for name, data in files.items():
        (out / name).write_bytes(data)
    (tmp_path / "link").symlink_to(out)
    for given in (out, tmp_path / "link"):
        with pytest.raises(ValueError, match="already holds files that are not an fsc run"):
            run_training(**RUN, out=given)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "link-empty").symlink_to(empty)
    run_training(**RUN, max_steps=1, out=tmp_path / "link-empty")  # a link to a new directory: followed
    assert (empty / "run.json").is_file()


def test_result_files_are_strict_json(tmp_path, capsys):
    """A reward of 1e308 overflows the value gain / r: result.json and --json say null, never Infinity."""
    from fsc.cli import main

    world = tmp_path / "big.POMDP"
    world.write_text(POMDP_HEAD + SMALL_WORLD.replace("* 1\n", "* 1e308\n"))

    def strict(text: str):
        return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in strict JSON"))

    assert main(["evaluate", "--pomdp", str(world), "--memory", "ram:1", "--reset", "1e-3", "--json"]) == 0
    record = strict(capsys.readouterr().out)
    assert record["gain"] == pytest.approx(1e308) and record["value"] is None
    status = main(["train", "--pomdp", str(world), "--memory", "ram:1", "--init", "random", "--reset", "1e-3", "--max-steps", "2",
                   "--quiet", "--out", str(tmp_path / "run")])  # fmt: skip
    capsys.readouterr()
    assert status == 0
    for name in ("result.json", "run.json", "checkpoint.json"):
        strict((tmp_path / "run" / name).read_text())
    assert strict((tmp_path / "run" / "result.json").read_text())["value"] is None


@pytest.mark.parametrize("reset", [2.0**-53, 1.2e-16, 1e-15])
def test_the_smallest_reset_is_computed_by_every_engine(reset):
    """At and just above MIN_RESET every engine gives the gain of r = 0 (GTH, exact) to 1e-12: the gain depends on
    r only at order r; just below it, the reset is refused in one line."""
    import tasks
    from fsc.engines.registry import ENGINES
    from fsc.limits import MIN_RESET

    world, policy = tasks.TwoHypothesis(0.1), fsc.Policy.random(fsc.RAM(2), 0)
    reference = float(fsc.evaluate(world, policy, reset=0, engine="accurate").gain)
    for engine in ENGINES:
        gain = float(fsc.evaluate(world, policy, reset=reset, engine=engine).gain)
        assert gain == pytest.approx(reference, rel=1e-12, abs=0), engine
    assert MIN_RESET == 2.0**-53 and 1 - MIN_RESET < 1 and 1 - MIN_RESET / 2 == 1
    with pytest.raises(ValueError, match="reset must be at least 2\\*\\*-53"):
        fsc.evaluate(world, policy, reset=MIN_RESET * 0.99)


@pytest.mark.slow
def test_many_kills_resume_bit_identical(tmp_path):
    a = _sigint_in_process(tmp_path / "a", 300)
    b = _sigkill_cli(tmp_path / "b", 100)
    print(f"SIGINT in-process: {a[1]}/{a[0]} bit-identical; SIGKILL CLI: {b[1]}/{b[0]} bit-identical; "
          f"temporaries left by the kills: {sum(LEFT_AFTER_KILLS)} in {sum(map(bool, LEFT_AFTER_KILLS))} directories, none after the next run")
    assert a[0] == a[1] and b[0] == b[1]
