"""Figures with matplotlib (docs/model.md): policy heat map, q(t), q against r and M.

Every function draws on ``ax`` when given, else on a new
:class:`matplotlib.figure.Figure` made without pyplot (no display, no global
state), and returns the :class:`matplotlib.axes.Axes`; write it with
:func:`save_figure` (``ax.figure.savefig`` works too).  Nothing here calls
``plt.show()``.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from fsc.errors import InputError, InputTypeError
from fsc.files import atomic_write
from fsc.model.policy import Policy, check_policy

__all__ = ["median_curve", "policy_heatmap", "q_curves", "q_vs_memory", "q_vs_reset", "save_figure"]

_FIGURE_FORMATS = ("png", "svg", "pdf")

#: label -> ``(x, q)`` arrays: the series of points of a plot of q against r or M.
Series = Mapping[str, tuple[Sequence[float], Sequence[float]]]
#: label -> ``(x, q)`` arrays or a function ``x -> q``: the closed forms drawn beside them, as lines.
ClosedForms = Mapping[str, tuple[Sequence[float], Sequence[float]] | Callable[[float], float]]


def _new_axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is None:
        figure = Figure(figsize=size, layout="constrained")
        return figure.add_subplot()
    if not isinstance(ax, Axes):
        raise InputTypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    return ax


def save_figure(figure: Figure | Axes, path: str | os.PathLike, format: str | None = None, dpi: int = 120) -> Path:
    """Write a figure (or the figure of an axes) as PNG, SVG or PDF, atomically (format by suffix)."""
    if isinstance(figure, Axes):
        figure = figure.figure
    if not isinstance(figure, Figure):
        raise InputTypeError(f"figure must be a matplotlib Figure or Axes, got {type(figure).__name__}")
    path = Path(path)
    fmt = (format if format is not None else path.suffix.lstrip(".")).lower()
    if fmt not in _FIGURE_FORMATS:
        raise InputError(f"format must be one of {', '.join(_FIGURE_FORMATS)}, got {fmt!r} (for {str(path)!r})")
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=dpi)
    atomic_write(path, lambda f: f.write(buffer.getvalue()))
    return path


# ----------------------------------------------------------------------------
# Policy heat map


def policy_heatmap(
    policy: Policy,
    ax: Axes | None = None,
    *,
    annotate: bool | None = None,
    max_ticks: int = 64,
    title: str | None = None,
) -> Axes:
    """The policy as an image ``probs[n, c]``: the nodes (rows) x choices (columns) of its architecture.

    Disallowed choices are drawn grey and crossed out of the colour scale;
    rows and columns carry the node and choice labels (every k-th label when
    there are more than ``max_ticks``).  ``annotate`` writes the
    probabilities in the cells (default: when there are at most 400 cells).
    """
    architecture = check_policy(policy).architecture
    if isinstance(max_ticks, bool) or not isinstance(max_ticks, int) or max_ticks < 1:
        raise InputError(f"max_ticks must be an integer >= 1, got {max_ticks!r}")
    with torch.no_grad():
        probs = policy.probs().detach().numpy()
    N, C = probs.shape
    ax = _new_axes(ax, (min(2.5 + 0.45 * C, 16), min(max(3.0, 1.0 + 0.2 * N), 24)))
    image = np.ma.masked_array(probs, mask=~architecture.allowed)
    cmap = colormaps["viridis"].with_extremes(bad="#d0d0d0")
    mesh = ax.imshow(image, cmap=cmap, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    ax.figure.colorbar(mesh, ax=ax, label="probability", shrink=0.8)
    _ticks(ax.set_yticks, ax.set_yticklabels, architecture.node_names, max_ticks)
    _ticks(ax.set_xticks, ax.set_xticklabels, architecture.choice_names, max_ticks)
    ax.tick_params(axis="x", labelrotation=90 if C > 12 else 0, labelsize=8)
    ax.tick_params(axis="y", labelsize=8 if N <= 64 else 6)
    ax.set_xlabel("choice")
    ax.set_ylabel("node")
    ax.set_title(title if title is not None else f"policy on {architecture!r}", fontsize=9)
    if annotate is None:
        annotate = N * C <= 400
    if annotate:
        for n, c in zip(*np.nonzero(architecture.allowed), strict=True):
            p = probs[n, c]
            if p >= 0.005:
                ax.text(c, n, f"{p:.2f}".lstrip("0") if p < 1 else "1", ha="center", va="center", fontsize=6, color="white" if p < 0.6 else "black")
    return ax


def _ticks(set_ticks, set_labels, labels: Sequence[str], max_ticks: int) -> None:
    step = max(1, math.ceil(len(labels) / max_ticks))
    where = np.arange(0, len(labels), step)
    set_ticks(where)
    set_labels([labels[k] for k in where])


# ----------------------------------------------------------------------------
# q against training time


def _series(name: str, t, q) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t, dtype=np.float64).ravel()
    q = np.asarray(q.detach().numpy() if isinstance(q, torch.Tensor) else q, dtype=np.float64).ravel()
    if t.shape != q.shape:
        raise InputError(f"{name}: t and q must have the same length, got {t.shape[0]} and {q.shape[0]}")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(q))):
        raise InputError(f"{name}: t and q must be finite")
    return t, q


def median_curve(runs: Sequence[tuple[np.ndarray, np.ndarray]], points: int = 200, *, min_share: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Median of curves ``(t, q)`` sampled on different grids, on a common log grid of ``t``.

    Each run is interpolated (linearly in ``log t`` and ``log q``; in ``q``
    when some ``q <= 0``) inside its own range of ``t > 0``; at each grid
    point the median is taken over the runs whose range covers it, so a run
    that stopped early does not weigh on later times.  The curve is kept only
    where at least ``min_share`` of the runs go on (half by default): past
    that, a median of the few runs that went furthest would read as the
    group's, and one long seed would make the end of the curve its own.
    """
    if not 0 <= min_share <= 1:
        raise InputError(f"min_share must lie in [0, 1], got {min_share!r}")
    runs = [(t[t > 0], q[t > 0]) for t, q in runs]
    runs = [(t[np.argsort(t, kind="stable")], q[np.argsort(t, kind="stable")]) for t, q in runs if len(t)]
    if not runs:
        return np.empty(0), np.empty(0)
    low = min(t[0] for t, _ in runs)
    high = max(t[-1] for t, _ in runs)
    grid = np.array([low]) if high <= low else np.geomspace(low, high, points)
    logq = all((q > 0).all() for _, q in runs)
    values = np.full((len(runs), len(grid)), np.nan)
    for k, (t, q) in enumerate(runs):
        inside = (grid >= t[0] * (1 - 1e-12)) & (grid <= t[-1] * (1 + 1e-12))
        if logq:
            values[k, inside] = np.exp(np.interp(np.log(grid[inside]), np.log(t), np.log(q)))
        else:
            values[k, inside] = np.interp(np.log(grid[inside]), np.log(t), q)
    going_on = (~np.isnan(values)).sum(axis=0)
    covered = (going_on >= 1) & (going_on >= min_share * len(runs))
    return grid[covered], np.nanmedian(values[:, covered], axis=0)


def q_curves(
    curves: Mapping[str, Sequence[tuple[Sequence[float], Sequence[float]]]],
    ax: Axes | None = None,
    *,
    reference: Mapping[str, float] | None = None,
    points: int = 200,
    title: str | None = None,
) -> Axes:
    """``q`` against training time ``t``, log-log, as in the paper's Figure 4.

    Args:
        curves: name (an initialisation) -> one ``(t, q)`` pair of arrays per
            seed; seeds may have different grids of ``t``.  Each seed is drawn
            faint, the median over seeds (:func:`median_curve`, drawn while at
            least half the seeds go on) bold, in the same colour.  Points with ``t <= 0`` cannot be drawn on a log axis
            and are left out.
        reference: label -> value of ``q`` drawn as a dashed horizontal line
            (the closed form of the CCP or of the necklace policy).

    The axes hold ``sum(seeds + 1)`` curves, then one line per reference.
    """
    if not isinstance(curves, Mapping):
        raise InputTypeError(f"curves must be a mapping name -> list of (t, q), got {type(curves).__name__}")
    ax = _new_axes(ax, (6.0, 4.2))
    for k, (name, runs) in enumerate(curves.items()):
        colour = f"C{k % 10}"
        if isinstance(runs, tuple) and len(runs) == 2 and np.ndim(runs[0]) == 1 and not isinstance(runs[0], tuple):
            raise InputTypeError(f"curves[{name!r}] must be a list of (t, q) pairs, one per seed, got a single pair")
        series = [_series(f"curves[{name!r}][{s}]", t, q) for s, (t, q) in enumerate(runs)]
        for t, q in series:
            keep = t > 0
            ax.plot(t[keep], q[keep], color=colour, alpha=0.25, linewidth=0.8)
        grid, median = median_curve(series, points)
        ax.plot(grid, median, color=colour, linewidth=2.2, label=f"{name} (median of {len(series)})" if len(series) > 1 else name)
    for k, (name, value) in enumerate((reference or {}).items()):
        ax.axhline(float(value), color="black" if k == 0 else f"C{(len(curves) + k) % 10}", linestyle="--", linewidth=1, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training time t")
    ax.set_ylabel("q (probability to play the worse arm)")
    if title is not None:
        ax.set_title(title, fontsize=10)
    if curves or reference:
        ax.legend(fontsize=8, loc="lower left")  # q falls from the top left: keep the legend out of its way
    return ax


# ----------------------------------------------------------------------------
# q against r and against M, next to the closed forms


def _against(
    xlabel: str,
    points: Series,
    closed_forms: ClosedForms | None,
    ax: Axes | None,
    xscale: str,
    grid: Callable[[np.ndarray], np.ndarray],
    title: str | None,
) -> Axes:
    if not isinstance(points, Mapping):
        raise InputTypeError(f"points must be a mapping label -> (x, q), got {type(points).__name__}")
    closed_forms = closed_forms or {}
    if not isinstance(closed_forms, Mapping):
        raise InputTypeError(f"closed_forms must be a mapping label -> (x, q) or callable, got {type(closed_forms).__name__}")
    ax = _new_axes(ax, (5.5, 4.2))
    colours: dict[str, str] = {}
    xs = []
    for name, (x, q) in points.items():
        x, q = _series(f"points[{name!r}]", x, q)
        colours[name] = f"C{len(colours) % 10}"
        xs.append(x)
        ax.plot(x, q, linestyle="none", marker="o", markersize=5, color=colours[name], label=name)
    all_x = np.concatenate(xs) if xs else np.empty(0)
    extra = len(colours)
    for name, form in closed_forms.items():
        if name in colours:
            colour = colours[name]
        else:
            colour, extra = f"C{extra % 10}", extra + 1
        if callable(form):
            if not len(all_x):
                raise InputError(f"closed_forms[{name!r}] is a function: give points too, or give (x, q) arrays")
            x = grid(all_x)
            q = np.array([float(form(v)) for v in x])
        else:
            x, q = _series(f"closed_forms[{name!r}]", *form)
        ax.plot(x, q, linestyle="-", linewidth=1.4, color=colour, label=f"{name} (closed form)" if name in colours else name)
    ax.set_xscale(xscale)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("q (probability to play the worse arm)")
    if title is not None:
        ax.set_title(title, fontsize=10)
    if points or closed_forms:
        ax.legend(fontsize=8)
    return ax


def q_vs_reset(points: Series, closed_forms: ClosedForms | None = None, ax: Axes | None = None, *, title: str | None = None) -> Axes:
    """``q`` against the reset probability ``r`` (log-log), as in the paper's Figure 2 (left).

    Args:
        points: label -> ``(r, q)`` arrays, drawn as markers (learning or exact evaluation).
        closed_forms: label -> ``(r, q)`` arrays or a function ``r -> q``
            (evaluated on 100 values of ``r`` spanning the points), drawn as
            lines; a label also present in ``points`` shares its colour.

    The axes hold one line per entry of ``points`` then one per closed form.
    """
    return _against("reset probability r", points, closed_forms, ax, "log", lambda x: np.geomspace(x.min(), x.max(), 100), title)


def q_vs_memory(points: Series, closed_forms: ClosedForms | None = None, ax: Axes | None = None, *, title: str | None = None) -> Axes:
    """``q`` against the memory size ``M`` (linear ``M``, log ``q``), as in the paper's Figure 2 (right).

    Args:
        points: label -> ``(M, q)`` arrays, drawn as markers.
        closed_forms: label -> ``(M, q)`` arrays or a function ``M -> q``
            (evaluated at every integer between the smallest and largest
            ``M`` of the points), drawn as lines.
    """
    ax = _against("memory size M", points, closed_forms, ax, "linear", lambda x: np.arange(math.floor(x.min()), math.ceil(x.max()) + 1), title)
    ax.xaxis.get_major_locator().set_params(integer=True)
    return ax
