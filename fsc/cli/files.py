"""The commands that read a file: ``pomdp`` (a world) and ``inspect`` (a policy)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from fsc.checks import CONVENTIONS, check_reset
from fsc.console import number
from fsc.errors import InputError, quoted
from fsc.io.pomdp_file import pomdp_summary, read_pomdp

#: Parts, and states of a part, that ``fsc pomdp`` names in its text (a world of millions of states would print
#: millions of names); ``--json`` gives them all.
SHOWN_PARTS, SHOWN_NAMES = 20, 12


def _names(part: list[str]) -> str:
    shown = " ".join(part[:SHOWN_NAMES])
    return shown if len(part) <= SHOWN_NAMES else f"{shown} ... ({len(part)} states)"


def cmd_pomdp(args) -> int:
    """``fsc pomdp FILE [--json] [--write OUT]``: check a file, write it in another format if asked, print its summary."""
    world = read_pomdp(args.file, require_discount=args.require_discount)
    if args.write is not None:
        _write_world(world, Path(args.write))
    summary = {"file": str(args.file), **pomdp_summary(world)}
    if args.json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            if key == "parts":
                print(f"parts: {len(value)}")
                for i, part in enumerate(value[:SHOWN_PARTS]):
                    print(f"  part {i}: {_names(part)}")
                if len(value) > SHOWN_PARTS:
                    print(f"  ... {len(value) - SHOWN_PARTS} more parts (--json lists them all)")
            else:
                print(f"{key}: {json.dumps(value) if not isinstance(value, str) else value}")
    return 0


def _write_world(world, path: Path) -> None:
    """``world`` written to ``path``: POMDPX for the suffix ``.pomdpx`` (any case), else a ``.POMDP`` file."""
    from fsc.io.pomdp_file import write_pomdp
    from fsc.io.pomdpx import write_pomdpx

    try:
        (write_pomdpx if path.suffix.lower() == ".pomdpx" else write_pomdp)(world, path)
    except OSError as error:
        raise InputError(f"--write: cannot write {quoted(path)}: {error.strerror or error}") from None


def pomdp_options(p) -> None:
    p.add_argument("file", help="a .POMDP file (Cassandra's format) or a POMDPX file (SARSOP's XML format)")
    p.add_argument("--write", metavar="OUT", help="also write the world to OUT: POMDPX if OUT ends in .pomdpx, else a .POMDP file")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--require-discount", action="store_true", help="a file without 'discount:' is invalid")


def inspect_options(p) -> None:
    """Options of ``fsc inspect``."""
    p.add_argument("policy_file", metavar="POLICY_FILE", help="a policy .npz or .json (e.g. RUN/policy.npz of fsc train)")
    from fsc.resolve import add_world_options

    add_world_options(p)  # no --memory: the policy file's
    p.add_argument("--convention", choices=CONVENTIONS, default="native", help="convention of q (default native)")
    p.add_argument("--tol", type=number, default=0.05, help="largest distance at which a family is claimed (default 0.05)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def cmd_inspect(args) -> int:
    """``fsc inspect``: the anatomy of a policy file, on any architecture; a known family when it is one."""
    from fsc.model.policy import Policy
    from fsc.model.pomdp import resolve_reset
    from fsc.resolve import resolve_world, world_arguments
    from policies.anatomy import anatomy, describe

    policy = Policy.load(Path(args.policy_file))  # missing, a FIFO, a directory: said as what it is
    world = resolve_world(**world_arguments(args), option="--")
    reset = resolve_reset(world.world, args.reset, args.discount, default=1e-3)
    a = anatomy(policy, world.world, reset=check_reset(reset), convention=args.convention, tol=args.tol)
    if args.json:
        record = a.to_dict()
        record["distance"] = None if math.isinf(record["distance"]) else record["distance"]
        print(json.dumps(record))
    else:
        print(describe(a))
    return 0
