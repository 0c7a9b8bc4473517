"""What the benchmarks share: timing (best of blocks, alternating rounds), the linear-algebra floor of a value and
gradient, the cases' policies, and a parser with one sub-command per mode.

Everything here goes through the public API (``fsc.evaluate``, ``fsc.joint_chain``, ``policies.initial_policy``);
the floor calls LAPACK itself, from compiled code of its own.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one LAPACK thread, as sweeps run (read when numpy loads OpenBLAS)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def best(function, calls: int, repeats: int) -> float:
    """Seconds per call of ``function()``: the best of ``repeats`` blocks of ``calls`` calls, after one warm-up call."""
    return rounds({"f": function}, calls, repeats)["f"]


def rounds(functions: dict, calls: int, repeats: int) -> dict[str, float]:
    """Seconds per call of each function: the best of ``repeats`` rounds, the functions alternating in each round,
    so that the load of a shared machine falls on all alike."""
    for function in functions.values():
        function()
    found = dict.fromkeys(functions, math.inf)
    for _ in range(repeats):
        for name, function in functions.items():
            start = time.perf_counter()
            for _ in range(calls):
                function()
            found[name] = min(found[name], (time.perf_counter() - start) / calls)
    return found


def fastest_calls(functions: dict, calls: int) -> dict[str, float]:
    """Seconds of the fastest single call of each function, alternating call by call: on a loaded machine, the
    cost of a call that nothing interrupted."""
    for function in functions.values():
        function()
    found = dict.fromkeys(functions, math.inf)
    for _ in range(calls):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            found[name] = min(found[name], time.perf_counter() - start)
    return found


def one_thread() -> None:
    """One torch thread (one LAPACK thread is set when this module is imported), as a sweep's runs have."""
    import torch

    torch.set_num_threads(1)


def start_policy(memory: str, init: str = "random", *, mu: float = 0.1, reset: float = 1e-3, seed: int = 0):
    """``(world, architecture, policy)``: the two-hypothesis task at ``mu`` and the published start ``init`` of ``seed``."""
    import fsc
    import policies
    import tasks

    arch = fsc.parse_memory(memory)
    return tasks.TwoHypothesis(mu), arch, policies.initial_policy(init, arch, mu=mu, reset=reset, seed=seed, published=True)


def lu_size(world, arch, engine: str) -> tuple[int, int]:
    """``(parts, states per part)`` of the matrix ``engine`` factors: the joint chain's, or on ``choices`` its
    recurrent states after each choice (docs/model.md)."""
    import fsc

    chain = fsc.joint_chain(getattr(world, "pomdp", world), arch)
    after = chain.after_choice if engine == "choices" else None
    return chain.num_parts, chain.size if after is None else after.recurrent_size


def _floor_loop():
    """A compiled loop of ``dgetrf`` and two ``dgetrs`` per part (LAPACK through scipy's Cython exports)."""
    import numpy as np
    from llvmlite import binding as llvm
    from numba import njit, types
    from numba.extending import get_cython_function_address

    i32, f64 = types.CPointer(types.int32), types.CPointer(types.float64)
    getrf = types.ExternalFunction("bench_dgetrf", types.void(i32, i32, f64, i32, i32, i32))
    getrs = types.ExternalFunction("bench_dgetrs", types.void(types.CPointer(types.uint8), i32, i32, f64, i32, i32, f64, i32, i32))
    for name in ("dgetrf", "dgetrs"):
        llvm.add_symbol(f"bench_{name}", get_cython_function_address("scipy.linalg.cython_lapack", name))

    @njit
    def loop(A, calls):  # pragma: no cover - compiled
        K, X = A.shape[0], A.shape[1]
        ints = np.array([X, 1, 0], np.int32)
        piv = np.empty(X, np.int32)
        for _ in range(calls):
            for k in range(K):
                work = A[k].copy()
                b = np.ones(X)
                getrf(ints[0:].ctypes, ints[0:].ctypes, work.ctypes, ints[0:].ctypes, piv.ctypes, ints[2:].ctypes)
                for code in (78, 84):  # 'N', then 'T'
                    trans = np.array([code], np.uint8)
                    getrs(trans.ctypes, ints[0:].ctypes, ints[1:].ctypes, work.ctypes, ints[0:].ctypes, piv.ctypes, b.ctypes,
                          ints[0:].ctypes, ints[2:].ctypes)  # fmt: skip

    return loop


def lapack_floor(parts: int, size: int, calls: int = 300, repeats: int = 5) -> float:
    """Seconds of ``dgetrf`` and two ``dgetrs`` (a solve and a transposed one) on ``parts`` matrices ``I - a P`` of
    ``size`` states (``P`` random stochastic, ``a = 1 - 1e-3``), from compiled code: what no value and gradient by
    LU on that many states can go below."""
    import numpy as np

    rng = np.random.default_rng(0)
    P = rng.random((parts, size, size))
    A = np.eye(size) - (1 - 1e-3) * P / P.sum(axis=2, keepdims=True)
    loop = _floor_loop()
    loop(A, 1)
    calls = max(1, calls * 40 // max(size, 40))
    found = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        loop(A, calls)
        found = min(found, (time.perf_counter() - start) / calls)
    return found


def modes_parser(description: str) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """A parser whose first argument names the mode (``script.py MODE --help`` lists its options)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser, parser.add_subparsers(dest="mode", required=True, metavar="MODE")


def add_mode(sub, function, help_text: str, **options):
    """A mode running ``function(args)``; ``options`` maps an option to its default (its type is the default's)."""
    mode = sub.add_parser(function.__name__.replace("_", "-"), help=help_text, description=help_text)
    for name, default in options.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(default, bool):
            mode.add_argument(flag, action="store_true")
        elif isinstance(default, list):
            mode.add_argument(flag, nargs="+", default=default, type=type(default[0]) if default else str)
        else:
            mode.add_argument(flag, type=type(default), default=default)
    mode.set_defaults(run=function)
    return mode
