"""Cost of fabrics and the cheapest design: price books, bills of materials, the DeepSeek-V3
report's Table 3 comparison, and the plan (an integer program per family).

- :func:`load_prices` reads a price book (default: ``topo/data/prices.toml``);
- :func:`bill_of_materials` prices a fabric graph;
- :func:`compare` reproduces Table 3 of the DeepSeek-V3 hardware report for any radix;
  :func:`solve_bandwidth` adds each compared family's all-to-all bandwidth (flow solver);
- :func:`plan` finds each family's cheapest design for N GPUs; :func:`max_gpus_plan` each
  family's ceiling.

The model and its sources are in ``docs/cost.md``.
"""

from topo.cost.bandwidth import SOLVE_GPUS, SolvedBandwidth, solve_bandwidth
from topo.cost.bom import BomLine, CostReport, bill_of_materials, cost_from_counts
from topo.cost.compare import (
    COMPARE_FAMILIES,
    TABLE3,
    TABLE3_FAMILIES,
    CompareRow,
    compare,
    family_counts,
)
from topo.cost.plan import PLAN_FAMILIES, Ceiling, PlanRow, max_gpus_plan, plan
from topo.cost.prices import CABLE_CLASSES, Item, PriceBook, load_prices

__all__ = [
    "BomLine",
    "CABLE_CLASSES",
    "COMPARE_FAMILIES",
    "TABLE3_FAMILIES",
    "Ceiling",
    "CompareRow",
    "CostReport",
    "Item",
    "PLAN_FAMILIES",
    "PlanRow",
    "PriceBook",
    "SOLVE_GPUS",
    "SolvedBandwidth",
    "TABLE3",
    "bill_of_materials",
    "compare",
    "cost_from_counts",
    "family_counts",
    "load_prices",
    "max_gpus_plan",
    "plan",
    "solve_bandwidth",
]
