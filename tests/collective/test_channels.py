"""NCCL 2.29's collective channel count across servers (topo.collective.channels), by hand.

Each expected count is worked through NVIDIA/nccl v2.29.2-1 by hand: the ring search keeps one
channel per NIC at the first speed of the arch's array the NIC fits (search.cc), doubled by
ncclTopoDupChannels unless (SM80 on) the speed is under 50 GB/s with more than 4 channels, set
up twice by ncclTopoPostset, doubled again from SM90 when over 45 GB/s with fewer than 16.
Send/recv's channels per peer are worked from paths.cc and enqueue.cc (NCCL 2.29).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from topo.builders import build
from topo.collective import choose, load_constants
from topo.collective.channels import coll_channels, p2p_channels, search_speed_GBps
from topo.collective.fabric_rates import fabric_rates
from topo.errors import FormatError
from topo.spec import load_spec

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "h100-10node.toml"


@pytest.fixture(scope="module")
def h100():
    return build(load_spec(EXAMPLE).replace(name=None))


@pytest.fixture(scope="module")
def two_servers():
    """Two H100-like servers: 8 GPUs, NVLink 450 GB/s, 8 x 400G NICs each."""
    return build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450)


def _rates(G, gpn: int, nic_GBps: float):
    r = fabric_rates(G, gpus=10 * gpn, gpus_per_node=gpn)
    return dataclasses.replace(r, nic_Bps=nic_GBps * 1e9)


def test_search_speed_is_the_first_that_fits():
    c = load_constants()
    assert search_speed_GBps(50.0, c) == 48.0  # 400G
    assert search_speed_GBps(25.0, c) == 24.0  # 200G: 45 .. 30 do not fit
    assert search_speed_GBps(100.0, c.with_arch("blackwell")) == 96.0  # 800G on SM100
    assert search_speed_GBps(0.01, c) == 0.12  # none fits: the slowest


@pytest.mark.parametrize(
    "arch, nic_GBps, expected",
    [
        # 48 GB/s: G channels; dup while <= 4 (48 < 50 on SM90); x2
        ("hopper", 50.0, {1: 4, 2: 8, 4: 16, 8: 16}),
        # 24 GB/s: under 25, never duplicated; x2; not over 45
        ("hopper", 25.0, {1: 2, 2: 4, 4: 8, 8: 16}),
        # SM80: the 50 GB/s exception does not apply, always duplicated; x2; no SM90 doubling
        ("ampere", 50.0, {1: 4, 2: 8, 4: 16, 8: 32}),
        # SM100, 800G: 96 GB/s x G, dup (96 >= 50) to 48 GB/s, x2, and x2 again (48 > 45) below 16
        ("blackwell", 100.0, {1: 8, 2: 16, 4: 16, 8: 32}),
    ],
)
def test_coll_channels_by_hand(h100, arch, nic_GBps, expected):
    c = load_constants().with_arch(arch)
    got = {gpn: coll_channels(_rates(h100, gpn, nic_GBps), c) for gpn in expected}
    assert got == expected


def test_one_server_keeps_the_constants_files_counts(h100):
    c = load_constants()
    r = fabric_rates(h100, gpus=8, gpus_per_node=8)
    assert coll_channels(r, c) == c.channels == 16
    assert p2p_channels(r, c) == 32


def test_p2p_channels_across_servers_round_up_and_can_be_set(h100, tmp_path):
    c = load_constants()
    # 100 GB/s NICs on SM90: two 48 GB/s channels each, 16, not duplicated (over 4, under 50),
    # set up twice: 32
    r = _rates(h100, 8, 100.0)
    assert p2p_channels(r, c) == 32
    f = tmp_path / "c.toml"
    f.write_text("[model]\np2p_channels = { multi_node = 6 }\n")
    assert p2p_channels(r, load_constants(f)) == 8  # a power of two, as NCCL rounds it


@pytest.mark.parametrize(
    "text, key",
    [
        ("[search]\ndup_min_GBps = 0.0\n", "search.dup_min_GBps"),
        ("[model]\np2p_channels = { multi_node = -1 }\n", "model.p2p_channels.multi_node"),
        ("[model]\np2p_channels = { one_node = 0 }\n", "model.p2p_channels.one_node"),
    ],
)
def test_bad_channel_constants_are_refused(tmp_path, text, key):
    f = tmp_path / "c.toml"
    f.write_text(text)
    with pytest.raises(FormatError, match=key):
        load_constants(f)


def test_one_server_sendrecv_channels(two_servers):
    """8 GPUs, one server (NCCL 2.29 paths.cc / enqueue.cc): per peer 2 x int(370.8 / 20.6) =
    36 -> pow2 64 -> min(32 p2p channels) = 32; nChannelsMin 32 -> 4 (4 x 8 ranks <= 32).
    32 MiB: 4 parts of 8 MiB (<= 32 x 512 KiB): 4 x 20.6 GB/s. 128 MiB: 8 parts of 16 MiB.
    1 GiB: 32 parts: 659 GB/s of channels, NVLink (370.8) binds."""
    c = load_constants()
    r = fabric_rates(two_servers, 8)
    for size, bw, bound in (
        (32 << 20, 4 * 20.6e9, "4 p2p channels"),
        (128 << 20, 8 * 20.6e9, "8 p2p channels"),
        (1 << 30, 18 * 20.6e9, "nvlink"),
    ):
        k = choose("sendrecv", size, r, c)
        assert k.algbw_Bps == pytest.approx(bw, rel=1e-9) and k.bound == bound


def test_eighty_ranks_sendrecv_one_channel():
    """80 ranks on 10 servers: per peer max(1 NIC, ceil(50 / 14)) = 4, halved while
    4 x ceil(80 / 8) > 16 p2p channels: 1 channel of NCCL's 14 GB/s (paths.cc)."""
    G = build("ft2", switch_ports=16, gpus=80, gpus_per_node=8, nics_per_node=8)
    r = fabric_rates(G, 80, 8)
    k = choose("sendrecv", 1 << 30, r, load_constants())
    assert k.algbw_Bps == pytest.approx(14e9) and k.bound == "1 p2p channels"
