"""A corridor world as `.POMDP` text, of any size: the tests' and the benchmarks' sparse world of many states."""


def corridor_text(S: int) -> str:
    """A corridor of ``S`` states: 'right' moves one state right with probability 0.9 (else stays), 'left' one
    left; the ends are seen, the middle is not; arriving in the last state pays 1 (a reward by end state); the
    world starts three states from the end."""
    lines = [f"discount: 0.95\nvalues: reward\nstates: {S}\nactions: right left\nobservations: first middle last\nstart: {S - 3}"]
    for s in range(S):
        up, down = min(s + 1, S - 1), max(s - 1, 0)
        lines.append(f"T: right : {s} : {up} 0.9\nT: right : {s} : {s} 0.1" if up != s else f"T: right : {s} : {s} 1.0")
        lines.append(f"T: left : {s} : {down} 0.9\nT: left : {s} : {s} 0.1" if down != s else f"T: left : {s} : {s} 1.0")
    lines.append(f"O: * : * : middle 1.0\nO: * : 0\n1 0 0\nO: * : {S - 1}\n0 0 1")
    lines.append(f"R: * : * : {S - 1} : * 1.0")
    return "\n".join(lines) + "\n"
