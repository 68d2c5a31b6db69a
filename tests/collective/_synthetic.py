"""Synthetic nccl-tests logs: the expected curve under constants written by hand, for tests
that a calibration recovers those constants."""

from __future__ import annotations

from pathlib import Path

import networkx as nx

from topo.collective import fabric_rates, load_constants
from topo.collective.constants import NcclConstants
from topo.collective.expected import COST_KEYS
from topo.collective.report import predict_row
from topo.formats.nccl_tests import NcclTest, NcclTestRow

SIZES = [1 << k for k in range(16, 33)]  # 64 KiB .. 4 GiB
OPS = ("all_gather", "all_reduce", "alltoall")


def truth(tmp_path: Path, node_network: float, scale: float) -> NcclConstants:
    """The shipped constants with node_network set and every [expected] cost times ``scale``,
    written as a constants file by hand."""
    shipped = load_constants().data["expected"]
    lines = ["[efficiency]", f"node_network = {node_network}", "", "[expected]"]
    for key in COST_KEYS:
        v = shipped[key]
        lines.append(f"{key} = {[x * scale for x in v] if isinstance(v, list) else v * scale}")
    path = tmp_path / f"truth-{node_network}-{scale}.toml"
    path.write_text("\n".join(lines) + "\n")
    return load_constants(path)


def synthetic(
    G: nx.Graph, c: NcclConstants, ops: tuple[str, ...], sizes: list[int], n: int = 16
) -> list[NcclTest]:
    """Tests whose rows are the expected curve under ``c`` (n ranks, 8 per server)."""
    rates = fabric_rates(G, n, 8)
    tests = []
    for op in ops:
        rows = []
        for i, size in enumerate(sizes):
            p = predict_row(op, size, size // 4, "float", rates, c)
            rows.append(
                NcclTestRow(
                    size,
                    size // 4,
                    "float",
                    "sum",
                    -1,
                    p.time_us,
                    p.algbw_GBps,
                    p.busbw_GBps,
                    None,
                    None,
                    None,
                    i + 1,
                )  # fmt: skip
            )
        tests.append(NcclTest(op, rows, n, ["a", "b"], 8, "", "", 0.0, 1))
    return tests
