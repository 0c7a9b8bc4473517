"""Matplotlib figures: heat map, q(t) with medians, q against r and M next to closed forms."""

import math

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

import fsc
import viz

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def alpha(mu):
    return (1 - mu) / (1 + mu)


def q_ccp_limit(mu, M):
    """Paper section 3: q_CCP(M) = alpha^(2M-1) / (alpha^(2M-1) + 1) for r -> 0."""
    a = alpha(mu) ** (2 * M - 1)
    return a / (a + 1)


def check_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and len(data) > 1000


@pytest.mark.parametrize("arch", [fsc.Column(3), fsc.RAM(2, arms=3), fsc.Memento(3), fsc.Chain(8)], ids=repr)
def test_policy_heatmap(arch, tmp_path):
    policy = fsc.Policy.random(arch, 0)
    ax = viz.policy_heatmap(policy)
    assert isinstance(ax, Axes) and isinstance(ax.figure, Figure)
    (image,) = ax.images
    data = image.get_array()
    assert data.shape == (arch.num_nodes, arch.num_choices)
    np.testing.assert_allclose(data.filled(0), policy.probs().detach().numpy(), atol=1e-15)
    assert (data.mask == ~arch.allowed).all()  # disallowed choices are masked out
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == arch.node_labels[0] and set(labels) <= set(arch.node_labels)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(arch.choice_labels)
    annotated = arch.num_nodes * arch.num_choices <= 400
    assert (len(ax.texts) > 0) == annotated
    check_png(viz.save_figure(ax, tmp_path / "h.png"))


def test_policy_heatmap_on_given_axes_and_many_nodes(tmp_path):
    figure = Figure()
    axes = figure.subplots(1, 2)
    arch = fsc.RAM(20)
    ax = viz.policy_heatmap(fsc.Policy.uniform(arch), ax=axes[1], max_ticks=30)
    assert ax is axes[1] and not axes[0].images
    assert len(ax.get_yticks()) <= 30 and not ax.texts
    check_png(viz.save_figure(figure, tmp_path / "h.png"))


def test_median_curve_on_different_grids():
    t1, q1 = np.array([1.0, 10, 100, 1000]), np.array([0.1, 0.1, 0.1, 0.1])
    t2, q2 = np.array([1.0, 1000]), np.array([0.3, 0.3])
    t3, q3 = np.array([2.0, 50]), np.array([0.2, 0.2])  # stops early
    grid, median = viz.median_curve([(t1, q1), (t2, q2), (t3, q3)], points=50)
    assert grid[0] == 1 and grid[-1] == pytest.approx(1000)
    inside = (grid >= 2) & (grid <= 50)
    np.testing.assert_allclose(median[inside], 0.2)  # three runs: median of 0.1, 0.2, 0.3
    np.testing.assert_allclose(median[~inside], 0.2)  # two runs: mean of 0.1 and 0.3 (median of two)
    # Interpolation is linear in log t and log q: a power law is exact.
    t = np.geomspace(1, 100, 7)
    grid, median = viz.median_curve([(t, t**-0.5), (t, 3 * t**-0.5), (t, 9 * t**-0.5)])
    np.testing.assert_allclose(median, 3 * grid**-0.5, rtol=1e-12)
    # t = 0 (the start of training) is left out of the log grid.
    grid, _ = viz.median_curve([(np.array([0.0, 1.0, 2.0]), np.array([0.5, 0.4, 0.3]))])
    assert grid[0] == 1


def test_median_curve_ends_where_fewer_than_half_the_runs_go_on():
    # Four runs; one goes on to t = 1e4 at q = 0.9, the others stop at t = 100 at q = 0.1, 0.2, 0.3.
    short = [(np.array([1.0, 100.0]), np.full(2, q)) for q in (0.1, 0.2, 0.3)]
    long = (np.array([1.0, 1e4]), np.array([0.9, 0.9]))
    grid, median = viz.median_curve([*short, long], points=41)
    assert grid[-1] == pytest.approx(100)  # past 100 only one run of four goes on: no median there
    np.testing.assert_allclose(median, 0.25)  # median of 0.1, 0.2, 0.3, 0.9
    # Asked to draw it wherever any run goes on, the long run's own curve is the tail.
    grid, median = viz.median_curve([*short, long], points=41, min_share=0)
    assert grid[-1] == pytest.approx(1e4)
    np.testing.assert_allclose(median[grid > 100 * (1 + 1e-9)], 0.9)
    # Two of four is half: still drawn.
    grid, _ = viz.median_curve([*short[:2], long, long], points=41)
    assert grid[-1] == pytest.approx(1e4)
    with pytest.raises(ValueError, match="min_share"):
        viz.median_curve(short, min_share=1.5)


def test_q_curves_draws_each_seed_and_the_median(tmp_path):
    rng = np.random.default_rng(0)
    curves = {
        "random": [(np.concatenate([[0], np.geomspace(1e-2, 10 ** rng.uniform(2, 4), 30)]), rng.uniform(0.1, 0.4, 31)) for _ in range(5)],
        "near-ccp": [(np.geomspace(1, 1e3, 20), np.full(20, 0.02)) for _ in range(3)],
    }
    ax = viz.q_curves(curves, reference={"CCP (closed form)": q_ccp_limit(0.1, 8)})
    assert len(ax.lines) == (5 + 1) + (3 + 1) + 1
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    faint, bold = ax.lines[0], ax.lines[5]
    assert faint.get_alpha() < 0.5 and bold.get_linewidth() > faint.get_linewidth()
    assert faint.get_color() == bold.get_color()
    assert (faint.get_xdata() > 0).all()  # t = 0 not drawn on the log axis
    np.testing.assert_allclose(ax.lines[9].get_ydata(), 0.02)
    assert ax.lines[10].get_ydata()[0] == pytest.approx(q_ccp_limit(0.1, 8))
    check_png(viz.save_figure(ax, tmp_path / "q.png"))


def test_q_vs_reset_points_next_to_closed_forms(tmp_path):
    r = np.array([1e-4, 1e-3, 1e-2, 1e-1])
    points = {"M=2": (r, 0.3 + r), "M=4": (r, 0.1 + r)}
    closed = {"M=2": lambda x: 0.3 + x, "M=4": (r, 0.1 + r), "limit": (r, np.full(4, 0.05))}
    ax = viz.q_vs_reset(points, closed)
    assert len(ax.lines) == 2 + 3
    markers = ax.lines[:2]
    assert all(line.get_linestyle() == "None" and line.get_marker() == "o" for line in markers)
    curve = ax.lines[2]
    np.testing.assert_allclose(curve.get_ydata(), 0.3 + curve.get_xdata())
    assert curve.get_xdata()[0] == pytest.approx(1e-4) and curve.get_xdata()[-1] == pytest.approx(1e-1)
    assert curve.get_color() == markers[0].get_color() and ax.lines[3].get_color() == markers[1].get_color()
    assert ax.lines[4].get_color() not in (markers[0].get_color(), markers[1].get_color())
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    check_png(viz.save_figure(ax.figure, tmp_path / "r.png"))


def test_q_vs_memory_with_the_ccp_limit(tmp_path):
    M = np.array([1, 2, 4, 8])
    mu = 0.2
    points = {"mu=0.2": (M, [q_ccp_limit(mu, m) * 1.01 for m in M])}
    ax = viz.q_vs_memory(points, {"mu=0.2": lambda m: q_ccp_limit(mu, m)})
    assert len(ax.lines) == 2
    np.testing.assert_array_equal(ax.lines[1].get_xdata(), np.arange(1, 9))
    np.testing.assert_allclose(ax.lines[1].get_ydata(), [q_ccp_limit(mu, m) for m in range(1, 9)])
    assert ax.get_xscale() == "linear" and ax.get_yscale() == "log"
    check_png(viz.save_figure(ax, tmp_path / "m.png"))
    viz.save_figure(ax, tmp_path / "m.svg")
    assert (tmp_path / "m.svg").read_text().lstrip().startswith("<?xml")


def test_plots_bad_input(tmp_path):
    arch = fsc.Column(2)
    with pytest.raises(TypeError, match="policy must be a fsc.Policy"):
        viz.policy_heatmap(arch)
    with pytest.raises(TypeError, match="ax must be"):
        viz.policy_heatmap(fsc.Policy.uniform(arch), ax="left")
    with pytest.raises(ValueError, match=r"curves\['a'\]\[0\]: t and q must have the same length, got 3 and 2"):
        viz.q_curves({"a": [([1, 2, 3], [0.1, 0.2])]})
    with pytest.raises(TypeError, match="one per seed"):
        viz.q_curves({"a": (np.array([1.0, 2]), np.array([0.1, 0.2]))})
    with pytest.raises(ValueError, match="must be finite"):
        viz.q_vs_reset({"a": ([1e-3, 1e-2], [0.1, math.nan])})
    with pytest.raises(ValueError, match="give points too"):
        viz.q_vs_memory({}, {"f": lambda m: 0.1})
    with pytest.raises(ValueError, match="format must be one of png, svg, pdf, got 'jpg'"):
        viz.save_figure(viz.q_vs_memory({"a": ([1, 2], [0.1, 0.2])}), tmp_path / "x.jpg")
    assert not list(tmp_path.iterdir())
