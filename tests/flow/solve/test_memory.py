"""Memory guards (issue 11): the estimate is checked before the dense structure is allocated."""

from __future__ import annotations

import math

import pytest

from topo.builders import build
from topo.errors import LPTooLarge, TopoError
from topo.flow import alltoall_bandwidth
from topo.flow.solve.memory import (
    BYTES_PER_DEMAND_ENTRY,
    DEFAULT_MEMORY_LIMIT_BYTES,
    MEMORY_LIMIT_ENV,
    check_demand_table,
    check_moe_matrices,
    demand_table_bytes,
    memory_limit_bytes,
    moe_matrices_bytes,
)
from topo.moe import default_config
from topo.moe.timing import moe_report


def test_the_limit_defaults_to_4_gib_and_is_set_in_gb(monkeypatch) -> None:
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    assert memory_limit_bytes() == 4 * 2**30 == DEFAULT_MEMORY_LIMIT_BYTES
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "2.5")
    assert memory_limit_bytes() == 2_500_000_000


@pytest.mark.parametrize("raw", ["0", "-1", "nan", "inf", "lots"])
def test_a_bad_limit_is_refused(monkeypatch, raw: str) -> None:
    monkeypatch.setenv(MEMORY_LIMIT_ENV, raw)
    with pytest.raises(TopoError, match=rf"{MEMORY_LIMIT_ENV} must be a positive number of GB"):
        memory_limit_bytes()


def test_the_estimates_are_their_closed_forms() -> None:
    # 16,384 EP ranks: 6 matrices of 16,384² 8-byte entries = 12.88 GB.
    assert moe_matrices_bytes(16_384) == 6 * 8 * 16_384**2 == 12_884_901_888
    # The full Dragonfly's 16,416 router classes: 269,485,056 entries of 141 B = 38.0 GB.
    assert demand_table_bytes(16_416) == 16_416**2 * BYTES_PER_DEMAND_ENTRY == 37_997_392_896


def test_moe_ep_16384_is_refused_naming_what_fits(monkeypatch) -> None:
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    # Largest ep with 48 ep² <= 4 GiB: floor(sqrt(2^32 / 48)) = 9,459 (9,459² x 48 = 4.2947e9).
    fits = math.isqrt(2**32 // 48)
    assert fits == 9_459 and 48 * fits**2 <= 2**32 < 48 * (fits + 1) ** 2
    check_moe_matrices(fits)
    want = r"ep must be at most 9,459 ranks within the memory limit of 4\.3 GB \(TOPO_MEMORY_"
    with pytest.raises(TopoError, match=want + r"LIMIT_GB\): 16,384 ranks") as exc:
        check_moe_matrices(16_384)
    assert exc.value.param == "ep"


def test_moe_report_refuses_before_allocating(monkeypatch) -> None:
    # 64 ranks need 48 x 64² = 196,608 B; a 0.0001 GB (100,000 B) limit refuses them before
    # any routing or copy matrix is made.
    import topo.moe.timing as timing

    def never(*args, **kwargs):
        raise AssertionError("allocated before the memory guard")

    monkeypatch.setattr(timing, "route_tokens", never)
    monkeypatch.setattr(timing, "copy_matrices", never)
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "0.0001")
    G = build("mpft", switch_ports=8, gpus_per_node=8, nics_per_node=8, gpus=64)
    with pytest.raises(TopoError, match=r"ep must be at most 45 ranks"):
        moe_report(G, default_config(), ep=64)


def test_demand_table_over_the_limit_is_lp_too_large(monkeypatch) -> None:
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "1")
    check_demand_table(2_000, 2_000)  # 2,000² x 141 B = 0.56 GB
    with pytest.raises(LPTooLarge, match=r"about 1\.4 GB, over the memory limit of 1\.0 GB"):
        check_demand_table(3_200, 3_200)  # 1.44 GB


def test_bandwidth_over_the_limit_gives_certified_bounds(monkeypatch) -> None:
    # A Dragonfly of 8-port routers (more than two classes of servers). With a limit
    # that the 15² table cannot meet, the exact LP is given up for certified bounds, and the
    # result says why; with the default limit it is solved exactly.
    G = build("dragonfly", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    exact = alltoall_bandwidth(G)
    assert exact.method != "bounds"
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "0.000001")
    r = alltoall_bandwidth(G)
    if r.bounds is None:  # the Dragonfly split routing meets the NIC cut: exact all the same
        assert r.method == "certified" and r.exact
        assert r.pair_rate_Bps == pytest.approx(exact.pair_rate_Bps, rel=1e-7)
    else:
        assert r.method == "bounds"
        assert r.bounds.lower_Bps <= exact.pair_rate_Bps * (1 + 1e-9)
        assert r.bounds.upper_Bps >= exact.pair_rate_Bps * (1 - 1e-9)
    assert any("over the memory limit of 0.0 GB (TOPO_MEMORY_LIMIT_GB)" in s for s in r.reductions)
