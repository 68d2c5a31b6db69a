"""The busbw note prints its two rates so that they read differently (a fresh-user trial:
"busbw 229 GB/s exceeds the link rate 229 GB/s" on 64 GPUs of an ft2 of 8-GPU servers)."""

from __future__ import annotations

from topo.builders import build
from topo.collective import collective_table, fabric_rates
from topo.collective.report import busbw_note

# 8 GPUs of 200 GB/s NVLink and 8 x 400G NICs per server: the ring's bound across servers is
# min(8 x 50, 200 x 8/7) = 228.571 GB/s (topo.collective.report.link_rate_Bps).
LINK_GBps = 200 * 8 / 7


def _rates():
    G = build("ft2", gpus=128)
    return fabric_rates(G, gpus=64, gpus_per_node=8)


def test_the_trial_s_row_reads_two_different_rates() -> None:
    rep = collective_table(
        build("ft2", gpus=128), "all_reduce", gpus=64, min_bytes=1 << 28, max_bytes=1 << 30,
        step_factor=4,
    )
    small, large = rep.rows
    # the trial's row: its ceiling is just above the link rate
    assert small.algorithm == "nvls_tree" and LINK_GBps < small.ceiling_busbw_GBps < 229.5
    # the note speaks of the busbw printed, the expected one: under the link rate, no note
    assert small.busbw_GBps < LINK_GBps and small.busbw_note == ""
    # above it, the note names the printed busbw and the rate with digits that differ
    assert large.busbw_GBps > LINK_GBps + 1
    assert large.busbw_note.startswith(
        f"busbw {large.busbw_GBps:.0f} GB/s exceeds the link rate 229 GB/s and is not a fault"
    )


def test_decimals_as_few_as_tell_them_apart() -> None:
    r = _rates()
    note = busbw_note((LINK_GBps + 5) * 1e9, "nvls_tree", r)
    assert note.startswith("busbw 234 GB/s exceeds the link rate 229 GB/s")
    note = busbw_note((LINK_GBps + 0.01) * 1e9, "nvls_tree", r)
    assert note.startswith("busbw 228.58 GB/s exceeds the link rate 228.57 GB/s")
    # above the rate by less than the table's 2 decimals show: no note
    assert busbw_note((LINK_GBps + 1e-4) * 1e9, "nvls_tree", r) == ""
