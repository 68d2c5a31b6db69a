"""The library examples of README.md and docs/ run as written and give the numbers they show.

Each example is a ``python`` code block; it is executed as is, then its commented values are
checked against closed forms (the 16,384-GPU MPFT: 50 GB/s NICs, busbw ``50 (n - 1) / (n - 8)``;
the FT2 of 64-port switches: ECMP's expected loads give the NIC bound).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(path: Path) -> list[str]:
    """The ``python`` fenced code blocks of a Markdown file."""
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def run_block(path: Path, contains: str) -> dict:
    """Execute the first python block of ``path`` that contains ``contains``; its namespace."""
    block = next(b for b in python_blocks(path) if contains in b)
    namespace: dict = {}
    exec(compile(block, str(path), "exec"), namespace)
    return namespace


@pytest.mark.slow
def test_readme_library_example() -> None:
    ns = run_block(ROOT / "README.md", "alltoall_bandwidth(G)")
    r = ns["r"]
    n = 16384
    assert r.alltoall_busbw_Bps / 1e9 == pytest.approx(50 * (n - 1) / (n - 8))
    assert r.bottleneck_tiers == {"leaf->nic": 16384, "nic->leaf": 16384}
    assert r.to_dict()["alltoall_busbw_GBps"] == pytest.approx(r.alltoall_busbw_Bps / 1e9)


def test_routing_doc_example() -> None:
    ns = run_block(ROOT / "docs" / "routing.md", 'routed_alltoall(build("ft2")')
    r = ns["r"]
    n, g = 2048, 8  # FT2 of 64-port switches, 8 GPUs per server
    expected = r.to_dict()["expected_alltoall_busbw_GBps"]
    assert expected == pytest.approx(50 * (n - 1) / (n - g))  # even spreading: NIC-bound
    assert r.alltoall_busbw_Bps / 1e9 < expected  # hash collisions cost
    assert r.routing.collision_loss == pytest.approx(1 - r.alltoall_busbw_Bps / 1e9 / expected)


def test_routing_doc_demand_example() -> None:
    ns = run_block(ROOT / "docs" / "routing.md", "expected=True")
    r, e = ns["r"], ns["e"]
    assert e.pair_rate_Bps == r.routing.expected_pair_rate_Bps  # "True" in the doc
    assert e.routing.seed is None


@pytest.mark.slow
def test_place_3fs_example() -> None:
    # 180 storage servers x 2 x 25 GB/s of NICs: 9,000 GB/s, the storage NICs (docs/place.md)
    r = run_block(ROOT / "docs" / "place.md", "storage_read")["r"]
    assert r.shared_aggregate_Bps == pytest.approx(180 * 2 * 25e9, rel=1e-6)
    assert r.bottleneck == "storage NICs"
