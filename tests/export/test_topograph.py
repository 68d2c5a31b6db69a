"""``topo export topograph``: NVIDIA topograph's simulation model of a design, held to the rules
its reader enforces (``pkg/models/model.go``: a switch has at most one parent, a capacity block
one switch, a node one block) and to the Slurm tree of the same design; the real GB200 dump's
racks as capacity blocks with their NVLink domain (trays per rack counted by hand from the dump,
as tests/export/test_nvlink_domains.py)."""

from __future__ import annotations

import yaml

from tests.formats._real import real_file
from topo.builders import build
from topo.export import ExportOptions, export, fabric_hosts, slurm_tree
from topo.formats import import_ibnetdiscover

GB200 = ("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")


def _check_model(model: dict) -> dict[str, list[str]]:
    """topograph's setNodeMap on a model: every node's network layers (leaf first), with its
    checks (one parent per switch, one switch per block, no node twice)."""
    parent: dict[str, str] = {}
    block_switch: dict[str, str] = {}
    for s in model["switches"]:
        for child in s.get("switches") or []:
            assert child not in parent, f"switch {child} has two parents"
            parent[child] = s["name"]
        for cb in s.get("capacity_blocks") or []:
            assert cb not in block_switch, f"capacity block {cb} has two switches"
            block_switch[cb] = s["name"]
    layers: dict[str, list[str]] = {}
    for cb in model["capacity_blocks"]:
        path = [block_switch[cb["name"]]]
        while path[-1] in parent:
            path.append(parent[path[-1]])
        for node in cb["nodes"]:
            assert node not in layers, f"node {node} twice"
            layers[node] = path
    return layers


def test_mpft_model_is_slurms_tree():
    """An MPFT of 8-port switches, 4 planes of 32 endpoints: 32 servers, 4 per leaf group,
    8 leaf groups under the fabric's top switch."""
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    model = yaml.safe_load(export(G, "topograph").text)
    layers = _check_model(model)
    hosts = fabric_hosts(G)
    assert sorted(layers) == sorted(hosts) and len(hosts) == 32
    tree = slurm_tree(G, hosts)
    leaf_of = {h: s.name for s in tree for h in s.nodes}
    for host, path in layers.items():
        assert path == [leaf_of[host], tree[0].name]
    assert len(model["capacity_blocks"]) == 8
    assert all(len(cb["nodes"]) == 4 and "nvlink" not in cb for cb in model["capacity_blocks"])


def test_host_names_and_gpu_type():
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    G.graph["gpu_model"] = "NVIDIA H100 80GB HBM3"  # as topo build --node h100 records it
    model = yaml.safe_load(export(G, "topograph", ExportOptions(hosts="gpu{node:02d}")).text)
    nodes = [n for cb in model["capacity_blocks"] for n in cb["nodes"]]
    assert nodes[:2] == ["gpu00", "gpu01"]
    assert {cb["type"] for cb in model["capacity_blocks"]} == {"NVIDIA H100 80GB HBM3"}


def test_gb200_racks_are_capacity_blocks_with_their_nvlink_domain():
    path = real_file(*GB200)
    G = import_ibnetdiscover(
        path, gpus_per_host=4, nvlink_GBps=900, nvlink_domain_regex=r"-dgx-(\d+)-c\d+$"
    )
    model = yaml.safe_load(export(G, "topograph").text)
    _check_model(model)
    per_rack: dict[str, int] = {}
    for cb in model["capacity_blocks"]:
        if "nvlink" in cb:
            per_rack[cb["nvlink"]] = per_rack.get(cb["nvlink"], 0) + len(cb["nodes"])
    trays = {"01": 10, "02": 11, "03": 18, "04": 17, "05": 18, "06": 15, "07": 16, "08": 14}
    assert per_rack == trays
