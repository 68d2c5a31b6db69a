"""Solving one maximum concurrent flow LP: the model, HiGHS, the memory it may take, the result.

:func:`max_concurrent_flow` (:mod:`~topo.flow.solve.lp`) takes arcs, capacities and commodities
and returns an :class:`MCFSolution` (the concurrent rate ``theta``, arc flows and duals); the
model is built as arrays (:func:`flow_model`) and handed to HiGHS directly;
:mod:`~topo.flow.solve.memory` estimates the dense structures before they are allocated.
"""

from topo.flow.solve.lp import (
    DEFAULT_MAX_VARIABLES,
    NO_LP,
    Commodity,
    FlowModel,
    MCFSolution,
    check_solver_limits,
    flow_model,
    max_concurrent_flow,
    quiet_stdout,
)
from topo.flow.solve.memory import (
    MEMORY_LIMIT_ENV,
    check_demand_table,
    check_moe_kernel,
    check_moe_matrices,
    check_moe_tokens,
    memory_limit_bytes,
)

__all__ = [
    "DEFAULT_MAX_VARIABLES",
    "MEMORY_LIMIT_ENV",
    "NO_LP",
    "Commodity",
    "FlowModel",
    "MCFSolution",
    "check_demand_table",
    "check_moe_kernel",
    "check_moe_matrices",
    "check_moe_tokens",
    "check_solver_limits",
    "flow_model",
    "max_concurrent_flow",
    "memory_limit_bytes",
    "quiet_stdout",
]
