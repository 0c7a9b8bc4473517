"""viz: pictures of controllers (docs/model.md).

- :func:`memory_graph`: the memory transition diagram of a policy, as plain
  data (:class:`MemoryGraph`; two columns for the column of confidence policy,
  the chain of necklaces for the necklace policy); :func:`render` writes it
  as SVG, PNG or DOT.
- :func:`policy_heatmap`, :func:`q_curves`, :func:`q_vs_reset`,
  :func:`q_vs_memory`: matplotlib figures; :func:`save_figure` writes them.
"""

from .display import NodeDisplay, node_display
from .graph import LAYOUTS, DisplayEdge, DisplayNode, MemoryGraph, format_probability, memory_graph
from .output import FORMATS, render
from .plots import median_curve, policy_heatmap, q_curves, q_vs_memory, q_vs_reset, save_figure

__all__ = [
    "FORMATS",
    "LAYOUTS",
    "DisplayEdge",
    "DisplayNode",
    "MemoryGraph",
    "NodeDisplay",
    "format_probability",
    "median_curve",
    "memory_graph",
    "node_display",
    "policy_heatmap",
    "q_curves",
    "q_vs_memory",
    "q_vs_reset",
    "render",
    "save_figure",
]
