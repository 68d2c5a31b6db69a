"""Plotly figures from computed data, and writing them as offline HTML.

- :func:`plot_fabric`: a fabric in layers, planes or rails as blocks, aggregated above
  ``max_devices`` vertices (:mod:`topo.plot.fabric`, :mod:`topo.plot.layout`,
  :mod:`topo.plot.aggregate`);
- :func:`plot_link_load`: the load of every link on that layout and a utilisation histogram
  per tier, the page of ``topo bandwidth --html`` (:mod:`topo.plot.link_load`);
- :func:`plot_cost`: cost per endpoint and bandwidth per dollar of compared families
  (:mod:`topo.plot.cost`);
- :func:`plot_moe`: an MoE report's dispatch heat map and phase times (:mod:`topo.plot.moe`);
- :func:`write_html`: one standalone HTML file that opens offline (:mod:`topo.plot.html`).

Every figure function computes its data first (a ``*_data`` function, tested on its own) and
only then draws it; none of them runs a solver. See ``docs/plot.md``.
"""

from topo.plot.cost import plot_cost
from topo.plot.fabric import plot_fabric
from topo.plot.html import write_html
from topo.plot.layout import VIEW_DETAILED, VIEW_LEAF_GROUPS, VIEW_TIER_GROUPS
from topo.plot.link_load import plot_link_load
from topo.plot.moe import plot_moe

__all__ = [
    "VIEW_DETAILED",
    "VIEW_LEAF_GROUPS",
    "VIEW_TIER_GROUPS",
    "plot_cost",
    "plot_fabric",
    "plot_link_load",
    "plot_moe",
    "write_html",
]
