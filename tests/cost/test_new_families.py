"""topo plan and topo cost --compare on rail-only fabrics and HPN pods: counts and prices by
hand from the builders' rules and the default price book (64 x 400G switch 44,500 $, priced
per port at other radixes; optical link 1,680 $; endpoint cable 600 $ at 400G and 200G)."""

from __future__ import annotations

import pytest

from topo.cost import compare, max_gpus_plan, plan
from topo.spec import SwitchSpec

SWITCH_128 = SwitchSpec(128, 400)


def test_compare_hpn_pod_of_128_port_switches():
    # 240 ToRs + 120 aggregation switches of 128 ports (2 x 44,500 $), 14,400 ToR-aggregation
    # links, 2 x 15,360 port cables of 200G.
    (row,) = compare(["hpn"], SWITCH_128)
    assert (row.endpoints, row.switches, row.links) == (15360, 360, 14400)
    assert row.cost_usd == pytest.approx(360 * 89_000 + 14_400 * 1_680 + 30_720 * 600)
    assert row.config["segments"] == 15


def test_compare_rail_only_has_table3_mpft_counts():
    # 8 rails of a two-layer Clos of 64-port switches: 8 x 96 switches, 8 x 2,048 links.
    (row,) = compare(["rail-only"])
    assert (row.endpoints, row.switches, row.links) == (16384, 768, 16384)
    assert row.cost_usd == pytest.approx(768 * 44_500 + 16_384 * (1_680 + 600))


def test_plan_hpn_and_rail_only_rows():
    rows = {r.family: r for r in plan(2048, families=("rail-only", "hpn"))}
    # rail-only, 256 domains of 8: per rail ceil(256/32) = 8 leaves, 4 spines (smallest
    # divisor S of 32 with 64 S >= 8 x 32), 8 x 32 cables: x 8 rails.
    r = rows["rail-only"]
    assert (r.switches, r.links, r.tiers, r.planes, r.checked) == (96, 2048, 2, 8, True)
    assert r.cost_usd == pytest.approx(96 * 44_500 + 2048 * (1_680 + 600))
    # hpn, 64 ports: 64 hosts a segment, 256 hosts = 4 segments; 2 x 8 x 4 = 64 ToRs with
    # 30 uplinks each; 60 aggregation switches; 1,920 links; 2 x 2,048 port cables of 200G.
    h = rows["hpn"]
    assert (h.switches, h.links, h.planes, h.endpoints, h.checked) == (124, 1920, 2, 2048, True)
    assert h.cost_usd == pytest.approx(124 * 44_500 + 1920 * 1_680 + 4096 * 600)


def test_plan_hpn_above_a_pod_and_at_a_radix_it_cannot_use():
    (row,) = plan(4096, families=("hpn",))
    assert not row.feasible and "holds 3,584 GPUs" in row.binding
    (row,) = plan(1024, SwitchSpec(48, 400), families=("hpn",))
    assert not row.feasible and "multiple of 32" in row.binding


def test_max_gpus_plan_of_the_new_families_is_the_closed_form():
    ceilings = {c.family: c for c in max_gpus_plan(families=("rail-only", "hpn"))}
    # rail-only: 64^2/2 domains of 8 GPUs; hpn: 7 segments of 64 hosts of 8 GPUs.
    assert ceilings["rail-only"].max_gpus == 16384
    assert ceilings["hpn"].max_gpus == 3584 == ceilings["hpn"].closed_form


def test_cost_of_a_two_plane_fabric_prices_the_split_switches_as_their_box():
    # ft2 of 512 GPUs (8-GPU servers, one NIC a GPU), 64 x 400G switches, --planes-per-nic 2:
    # each NIC is 2 ports of 200G, each port plane an ft2 of 512 endpoints of the 64 x 400G box
    # run as 128 x 200G (64 down, 64 up per leaf): 512 / 64 = 8 leaves, 8 x 64 / 128 = 4 spines
    # and 8 x 64 = 512 leaf-spine links a plane. Two planes: 24 boxes at 44,500 $, 1,024
    # leaf-spine links of 200G at half the 400G link's 1,680 $, 1,024 port cables of 200G at
    # 600 $ (the book's 200G endpoint cable).
    from topo.builders import build
    from topo.cost import bill_of_materials

    G = build("ft2", gpus=512, planes_per_nic=2)
    r = bill_of_materials(G)
    assert (r.switches, r.links, r.endpoint_links) == (24, 1024, 1024)
    assert {x.item: (x.quantity, x.unit_usd) for x in r.lines} == {
        "switch 128x200G": (24, 44_500),
        "optical cable 200G": (1024, 840),
        "endpoint cable 200G": (1024, 600),
    }
    assert r.cost_usd == 24 * 44_500 + 1024 * 840 + 1024 * 600
    # 1,024 endpoints are NIC ports: two a GPU, so the cost per GPU is twice the per endpoint
    assert r.endpoints == 1024 and r.extra["gpus"] == 512
    assert r.extra["cost_per_gpu_usd"] == r.cost_usd / 512 == 2 * r.cost_per_endpoint_usd
    # The same switches and switch-to-switch links as the one-plane ft2 of 512 GPUs (16 leaves
    # of 32 down, 8 spines, 512 links of 400G): splitting the ports changes neither bill.
    one = {x.item: x.total_usd for x in bill_of_materials(build("ft2", gpus=512)).lines}
    assert one["switch 64x400G"] == 24 * 44_500
    assert one["optical cable 400G"] == 1024 * 840


def test_rail_only_saving_over_rail_optimised_by_hand_lies_in_the_papers_band():
    # Wang, Ghobadi et al. (arXiv 2307.12169, abstract): rail-only costs 38-77% less than a
    # rail-optimised Clos. topo's two regimes of 64 x 400G switches and 8-GPU domains, by hand
    # with the default book (switch 44,500 $, link 1,680 $, endpoint cable 600 $):
    from topo.builders import build
    from topo.cost import bill_of_materials

    def cost(family, gpus, **kw):
        return bill_of_materials(build(family, gpus=gpus, **kw)).cost_usd

    # 512 GPUs: a rail of 64 domains is one switch (8 switches, no link); the MRFT needs
    # 512/32 = 16 leaves, 8 spines and 512 links.
    small_ro = 8 * 44_500 + 512 * 600
    small_mrft = 24 * 44_500 + 512 * 1_680 + 512 * 600
    assert cost("rail-only", 512) == small_ro
    assert cost("mrft", 512) == small_mrft
    assert 1 - small_ro / small_mrft == pytest.approx(0.7033, abs=1e-4)
    # 16,384 GPUs: a rail of 2,048 domains is a full two-layer Clos (64 leaves, 32 spines,
    # 2,048 links; x 8 rails); the MRFT is past two layers (2,048 endpoints) and takes three:
    # 512 leaves, 512 spines, 512 x 32 uplinks / 64 ports = 256 cores, 2 x 16,384 links.
    big_ro = 768 * 44_500 + 16_384 * (1_680 + 600)
    big_mrft = 1_280 * 44_500 + 32_768 * 1_680 + 16_384 * 600
    assert cost("rail-only", 16_384) == big_ro
    assert cost("mrft", 16_384, tiers=3) == big_mrft
    assert 1 - big_ro / big_mrft == pytest.approx(0.4129, abs=1e-4)
