"""viz: pictures of controllers (docs/model.md).

- :func:`memory_graph`: the memory transition diagram of a policy, as plain
  data (:class:`MemoryGraph`; two columns for the column of confidence policy,
  the chain of necklaces for the necklace policy); :func:`render` writes it
  as SVG, PNG or DOT.
- :func:`policy_heatmap`, :func:`q_curves`, :func:`q_vs_reset`,
  :func:`q_vs_memory`: matplotlib figures; :func:`save_figure` writes them.

The names are imported when first used (:mod:`fsc.lazy`): ``fsc draw`` waits for neither matplotlib nor torch.
"""

from fsc.lazy import export

__all__ = export(
    __name__,
    {
        "viz.display": ("NodeDisplay", "node_display"),
        "viz.graph": ("LAYOUTS", "DisplayEdge", "DisplayNode", "MemoryGraph", "format_probability", "memory_graph"),
        "viz.output": ("FORMATS", "render"),
        "viz.plots": ("median_curve", "policy_heatmap", "q_curves", "q_vs_memory", "q_vs_reset", "save_figure"),
    },
)
