"""Memory guards (issue 11): the estimate is checked before the dense structure is allocated."""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pytest

from topo.builders import build
from topo.errors import LPTooLarge, TopoError
from topo.flow import alltoall_bandwidth
from topo.flow.solve.memory import (
    BYTES_PER_DEMAND_ENTRY,
    DEFAULT_MEMORY_LIMIT_BYTES,
    MEMORY_LIMIT_ENV,
    check_demand_table,
    check_moe_kernel,
    check_moe_matrices,
    check_moe_tokens,
    demand_table_bytes,
    memory_limit_bytes,
    moe_gating_bytes,
    moe_kernel_bytes,
    moe_matrices_bytes,
    moe_token_bytes,
)
from topo.moe import default_config
from topo.moe.timing import moe_report


def _never(*args: object, **kwargs: object) -> None:
    """A stand-in for an allocating step: the memory guard must refuse before it runs."""
    raise AssertionError("allocated before the memory guard")


def _no_gating(monkeypatch) -> None:
    """An MoE report's routing and copy matrices replaced by :func:`_never`."""
    import topo.moe.timing as timing

    monkeypatch.setattr(timing, "route_tokens", _never)
    monkeypatch.setattr(timing, "copy_matrices", _never)


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


@pytest.mark.parametrize(
    "kernel, names",
    [("deepep-ll", r"36 B per \(token, expert\), "), ("nccl", r"6 B per \(token, rank\) and 4 B")],
)
def test_an_ep_kernel_refused_names_only_the_costs_it_has(monkeypatch, kernel, names) -> None:
    # 1e8 tokens on EP8, 8 experts a token: deepep-ll 36 x 8 = 288 B a token, 28.8 GB, and
    # nccl 6 x 8 + 4 x 8 = 80 B, 8 GB, both over 1 GB. The low-latency kernels hold nothing
    # per (token, rank): the message leaves that part out instead of printing "0 B".
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "1")
    with pytest.raises(TopoError, match=r"needs about " + names) as exc:
        check_moe_kernel(kernel, 8, 100_000_000 // 8, 8)
    assert "0 B per" not in str(exc.value)
    assert moe_kernel_bytes("deepep-ll", 1, 8, 8) == 288 and moe_kernel_bytes("nccl", 1, 8, 8) == 80


def test_moe_report_refuses_before_allocating(monkeypatch) -> None:
    # 64 ranks need 48 x 64² = 196,608 B; a 0.0001 GB (100,000 B) limit refuses them before
    # any routing or copy matrix is made.
    _no_gating(monkeypatch)
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


# --- MoE gating and token arrays (topo moe) -------------------------------------------------


def test_moe_gating_and_token_estimates_are_their_closed_forms() -> None:
    # 8,192 tokens x 1,048,576 experts x 8 B = 68,719,476,736 B an array; 4 arrays with a
    # binding node limit (274.88 GB), 3 without (206.16 GB).
    assert moe_gating_bytes(8_192, 1_048_576) == 4 * 68_719_476_736 == 274_877_906_944
    assert moe_gating_bytes(8_192, 1_048_576, limited=False) == 206_158_430_208
    # 4,194,304 tokens x (8 + 1) destinations x 128 B = 4,831,838,208 B.
    assert moe_token_bytes(4_194_304, 8) == 4_831_838_208
    # nccl on EP64, 8 experts a token: 6 x 64 + 4 x 8 = 416 B a token.
    assert moe_kernel_bytes("nccl", 1_000, 64, 8) == 416_000


def test_moe_a_million_experts_is_refused_before_gating(monkeypatch) -> None:
    # DeepSeek-V3 with 1,048,576 routed experts, EP64 x 128 tokens = 8,192 tokens gated at
    # once: 4 arrays x 8,192 x 1,048,576 x 8 B = 274.88 GB > 4 GiB (4.29 GB); the tokens
    # that fit: floor(2^32 / (4 x 8 x 2^20)) = 128.
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    _no_gating(monkeypatch)
    config = dataclasses.replace(default_config(), n_routed_experts=1_048_576)
    G = build("mpft", switch_ports=16, gpus=64)
    start = time.perf_counter()
    with pytest.raises(TopoError) as exc:
        moe_report(G, config, ep=64, tokens_per_gpu=128)
    assert time.perf_counter() - start < 10
    msg = str(exc.value)
    assert "\n" not in msg and exc.value.param == "tokens_per_gpu"
    for part in (
        "ep 64 x tokens_per_gpu 128 = 8,192 tokens over 1,048,576 routed experts",
        "n_routed_experts",
        "4 arrays of 8,192 x 1,048,576 x 8 B, about 274.88 GB",
        "memory limit of 4.29 GB (TOPO_MEMORY_LIMIT_GB)",
        "at most 128 tokens fit",
    ):
        assert part in msg


def test_moe_32768_experts_refused_at_the_chunk(monkeypatch) -> None:
    # 32,768 experts, 65,536 tokens: gated 8,192 at a time, 4 x 8,192 x 32,768 x 8 B =
    # 8.59 GB > 4.29 GB; at most floor(2^32 / (32 x 32,768)) = 4,096 tokens fit.
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    _no_gating(monkeypatch)
    config = dataclasses.replace(default_config(), n_routed_experts=32_768)
    G = build("mpft", switch_ports=16, gpus=64)
    with pytest.raises(TopoError, match=r"about 8\.59 GB.* at most 4,096 tokens fit"):
        moe_report(G, config, ep=64, tokens_per_gpu=1024)


def test_moe_token_arrays_are_refused_under_a_small_limit(monkeypatch) -> None:
    # 0.5 GB: EP16 x 65,536 = 1,048,576 tokens x 9 destinations x 128 B = 1.21 GB; at most
    # floor(5e8 / 1,152) = 434,027 tokens fit.
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "0.5")
    _no_gating(monkeypatch)
    G = build("mpft", switch_ports=16, gpus=64)
    with pytest.raises(TopoError) as exc:
        moe_report(G, default_config(), ep=16, tokens_per_gpu=65_536)
    msg = str(exc.value)
    assert "1,048,576 tokens" in msg and "1.21 GB" in msg and "limit of 0.50 GB" in msg
    assert "at most 434,027 tokens fit" in msg and "\n" not in msg


def test_moe_the_most_tokens_are_refused_under_the_default_limit(monkeypatch) -> None:
    # EP64 x 65,536 = 4,194,304 tokens (MAX_TOKENS) x 1,152 B = 4.83 GB > 4 GiB; at most
    # floor(2^32 / 1,152) = 3,728,270 tokens fit.
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    _no_gating(monkeypatch)
    G = build("mpft", switch_ports=16, gpus=64)
    with pytest.raises(TopoError, match=r"4\.83 GB, over the memory limit of 4\.29 GB .*"
                       r"at most 3,728,270 tokens fit"):  # fmt: skip
        moe_report(G, default_config(), ep=64, tokens_per_gpu=65_536)


def test_moe_tokens_at_the_limit_pass(monkeypatch) -> None:
    # 1,000 tokens x 9 x 128 B = 1,152,000 B; gating 1,000 x 256 x 8 B x 4 = 8,192,000 B.
    monkeypatch.setenv(MEMORY_LIMIT_ENV, str(8_192_000 / 1e9))
    check_moe_tokens(10, 100, 256, 8, at_once=8_192)
    monkeypatch.setenv(MEMORY_LIMIT_ENV, str(8_191_000 / 1e9))
    with pytest.raises(TopoError, match="gating"):
        check_moe_tokens(10, 100, 256, 8, at_once=8_192)


def test_moe_kernel_arrays_are_refused_before_allocating(monkeypatch) -> None:
    # nccl on EP64 x 512 tokens: 32,768 x (6 x 64 + 4 x 8) B = 13,631,488 B > 10 MB; at most
    # floor(1e7 / 416) = 24,038 tokens fit.
    import topo.moe.kernels as kernels
    from topo.moe.kernels import kernel_times
    from topo.moe.traffic import ep_layout

    monkeypatch.setattr(kernels, "_targets", _never)
    monkeypatch.setattr(kernels, "_nccl_legs", _never)
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "0.01")
    layout = ep_layout(build("mpft", switch_ports=16, gpus=64), 256, 64)
    experts = np.arange(64 * 512 * 8).reshape(-1, 8) % 256
    with pytest.raises(TopoError, match=r"kernel nccl on ep 64 x tokens_per_gpu 512 = 32,768 "
                       r"tokens.* at most 24,038 tokens fit"):  # fmt: skip
        kernel_times(layout, experts, 512, 1000, 2000, "nccl")
