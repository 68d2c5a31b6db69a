"""Tests of topo.plot.moe, the data behind the MoE HTML view: heat map matrices and bars, at
GPU and node level."""

from __future__ import annotations

import numpy as np
import pytest

from topo.builders import build
from topo.moe import config_from_dict, moe_report
from topo.plot.moe import _moe_plot_data, plot_moe


def report():
    G = build("ft2", switch_ports=8, gpus=8, gpus_per_node=2, nics_per_node=2)
    cfg = config_from_dict(dict(hidden_size=128, n_routed_experts=8, num_experts_per_tok=2,
                                n_group=4, topk_group=2, num_hidden_layers=3))  # fmt: skip
    return moe_report(G, cfg, tokens_per_gpu=16, seed=1)


def test_gpu_level_heat_map_and_bars():
    r = report()
    d = _moe_plot_data(r)
    h = r.headline.dispatch
    assert d["level"] == "GPU" and d["labels"][:3] == ["node0/gpu0", "node0/gpu1", "node1/gpu0"]
    np.testing.assert_allclose(d["matrix_MB"], (h.ib_matrix + h.nvlink_matrix) / 1e6)
    # Bytes sent in the map = the GPUs' mean bytes sent times the GPUs.
    total = 8 * (h.ib_bytes_sent + h.nvlink_bytes_sent)
    assert d["matrix_MB"].sum() * 1e6 == pytest.approx(total, rel=1e-12)
    assert [b[0] for b in d["bars"]] == [s.label for s in r.scenarios]
    assert d["bars"][1][2] == r.scenarios[1].combine.time_s * 1e6
    fig = plot_moe(r)
    assert [t.type for t in fig.data] == ["heatmap", "bar", "bar"]


def test_node_level_shows_network_bytes_between_nodes():
    r = report()
    d = _moe_plot_data(r, max_gpus=4)  # 8 ranks > 4: aggregate to the 4 nodes
    ib = r.headline.dispatch.ib_matrix
    assert d["level"] == "node" and d["labels"] == ["node 0", "node 1", "node 2", "node 3"]
    expect = np.array([[ib[2 * a : 2 * a + 2, 2 * b : 2 * b + 2].sum() for b in range(4)]
                       for a in range(4)]) / 1e6  # fmt: skip
    np.testing.assert_allclose(d["matrix_MB"], expect)
    assert np.all(np.diag(d["matrix_MB"]) == 0)  # no network bytes inside a node
