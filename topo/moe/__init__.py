"""DeepSeekMoE expert-parallel traffic: dispatch and combine on a fabric, node-limited routing,
and the decode speed it bounds.

- :mod:`topo.moe.config`: model configs (Hugging Face ``config.json``, DeepSeek's inference
  format; a built-in DeepSeek-V3).
- :mod:`topo.moe.gating`: group-limited top-k gating (node-limited routing), uniform or skewed.
- :mod:`topo.moe.traffic`: EP placement, the GPU-to-GPU copy matrices (naive, DeepEP-style).
- :mod:`topo.moe.timing`: phase times on the fabric (the phase's server-level demand from
  :mod:`topo.traffic.moe`, flow solver + NVLink), layer, TPOT.
- :mod:`topo.moe.paper`: the DeepSeek-V3 hardware report's worked example.
- :mod:`topo.moe.cache`: what many reports on the same fabrics share (layouts, routings, LP
  fabrics), kept once under what each depends on.
- :mod:`topo.plot.moe` draws the HTML heat map and phase-time bars.

The model and its assumptions are in ``docs/moe.md``.
"""

from topo.moe.cache import MoECache
from topo.moe.config import MoEConfig, config_from_dict, default_config, load_config
from topo.moe.gating import (
    GateResult,
    expected_nodes_uniform,
    expert_probabilities,
    gate,
    load_expert_loads,
    route_tokens,
)
from topo.moe.paper import PaperExample, paper_example
from topo.moe.timing import (
    MoEReport,
    PhaseResult,
    ScenarioResult,
    copy_bytes,
    merge_twin_switches,
    moe_report,
    time_phase,
)
from topo.moe.traffic import (
    CopyMatrices,
    EPLayout,
    copy_matrices,
    default_ep,
    destinations,
    ep_layout,
)

__all__ = [
    "CopyMatrices",
    "EPLayout",
    "GateResult",
    "MoECache",
    "MoEConfig",
    "MoEReport",
    "PaperExample",
    "PhaseResult",
    "ScenarioResult",
    "config_from_dict",
    "copy_bytes",
    "copy_matrices",
    "default_config",
    "default_ep",
    "destinations",
    "ep_layout",
    "expected_nodes_uniform",
    "expert_probabilities",
    "gate",
    "load_config",
    "load_expert_loads",
    "merge_twin_switches",
    "moe_report",
    "paper_example",
    "route_tokens",
    "time_phase",
]
