"""``topo import ibnetdiscover``: a real InfiniBand fabric from one or more ibnetdiscover dumps."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import networkx as nx
import typer

from topo import fabric as fabric_mod
from topo.cli_common import (
    CountsJsonOpt,
    FabricOutputOpt,
    check_outputs,
    emit_fabric,
    gpus_per_host_option,
    nvlink_GBps_option,
    pcie_GBps_option,
    refuse_given,
    user_errors,
)
from topo.spec import ServerSpec

_SERVER = ServerSpec()  # the built server's NVLink and PCIe rates are the defaults

DumpsArg = Annotated[
    list[Path],
    typer.Argument(
        help="Output of 'ibnetdiscover' (topology format); several files (one per plane) "
        "import as one fabric.",
        exists=True,
        dir_okay=False,
    ),
]
NameMapOpt = Annotated[
    Path | None,
    typer.Option(
        "--name-map",
        help="GUID-to-hostname map ('H-<guid> <host>' lines).",
        exists=True,
        dir_okay=False,
    ),
]
GpusPerHostOpt = Annotated[
    int | None,
    gpus_per_host_option(
        "Group the CAs into servers by their hosts and give each this many GPUs "
        "(NVLink and PCIe as a built server has).",
        min=1,
        max=1024,
    ),
]
HostRegexOpt = Annotated[
    str | None,
    typer.Option(
        "--host-regex",
        help="Regular expression taking the host from a CA's description (group 'host', else "
        "group 1); default: the description's first word.",
    ),
]
DomainRegexOpt = Annotated[
    str | None,
    typer.Option(
        "--nvlink-domain-regex",
        help="Regular expression on host names: hosts with the same match (group 'domain', "
        "else group 1) form one NVLink domain, one NVSwitch joining their GPUs (a GB200 NVL72 "
        "rack of 18 trays); hosts it does not match stay a domain each. With --gpus-per-host.",
    ),
]
ComputeRegexOpt = Annotated[
    str | None,
    typer.Option(
        "--compute-host-regex",
        help="Regular expression on host names: only the hosts it matches get GPUs; the "
        "others (a UFM host, localhost, CAs with no hostname) stay in the fabric as endpoints "
        "carrying no GPU traffic. With --gpus-per-host.",
    ),
]
GpuModelOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu-model",
        help="The GPUs' model, recorded as the fabric's gpu_model (as topo build --node does), "
        "from which topo collective takes its --arch: a catalog server (gb200-nvl72, h100, "
        "...) or a GPU (GB200, H100, A100, ...). With --gpus-per-host.",
    ),
]
NvlinkOpt = Annotated[
    float,
    nvlink_GBps_option("NVLink per GPU, GB/s per direction (with hosts)."),
]
PcieOpt = Annotated[
    float,
    pcie_GBps_option("PCIe per GPU-NIC link, GB/s per direction (with hosts)."),
]


@user_errors
def ibnetdiscover(
    ctx: typer.Context,
    dumps: DumpsArg,
    name_map: NameMapOpt = None,
    gpus_per_host: GpusPerHostOpt = None,
    host_regex: HostRegexOpt = None,
    nvlink_GBps: NvlinkOpt = _SERVER.nvlink_GBps,
    pcie_GBps: PcieOpt = _SERVER.pcie_GBps,
    nvlink_domain_regex: DomainRegexOpt = None,
    compute_host_regex: ComputeRegexOpt = None,
    gpu_model: GpuModelOpt = None,
    output: FabricOutputOpt = None,
    as_json: CountsJsonOpt = False,
) -> None:
    """Import an InfiniBand fabric from ibnetdiscover dumps (one per plane, or concatenated)."""
    from topo.formats import import_ibnetdiscover

    check_outputs({"--output": output}, [*dumps, name_map], fabric=("--output",))
    if gpus_per_host is None:
        refuse_given(
            ctx,
            ("nvlink_GBps", "pcie_GBps"),
            "the servers of --gpus-per-host G",
            "without it the fabric has no GPUs, so no NVLink or PCIe links",
        )
        refuse_given(
            ctx,
            ("gpu_model",),
            "the servers of --gpus-per-host G",
            "without it the fabric has no GPUs to be of a model",
        )
    model = None
    if gpu_model is not None:
        from topo.collective.gpu_models import resolve_gpu_model

        model = resolve_gpu_model(gpu_model)
    G = import_ibnetdiscover(
        dumps,
        name_map=name_map,
        gpus_per_host=gpus_per_host,
        host_regex=host_regex,
        nvlink_GBps=nvlink_GBps,
        pcie_GBps=pcie_GBps,
        nvlink_domain_regex=nvlink_domain_regex,
        compute_host_regex=compute_host_regex,
    )
    if model is not None:
        G.graph["gpu_model"] = model  # the key topo build --node writes
    summary = import_summary(G)
    emit_fabric(G, summary if as_json else _in_words(summary), output, as_json)


def _in_words(summary: dict[str, Any]) -> dict[str, Any]:
    """The table's rows: the terminals as one row (``542 endpoints (CAs cabled to a
    switch)``), and a fabric without GPUs says how to give it some."""
    shown = dict(summary)
    terminal = shown.pop("terminal")
    what = "GPUs" if terminal == "gpu" else "endpoints (CAs cabled to a switch)"
    shown["terminals"] = f"{summary['terminals']:,} {what}"
    if not shown["gpus"]:
        shown["gpus"] = "none (--gpus-per-host G gives each host G)"
    return shown


def import_summary(G: nx.Graph) -> dict[str, Any]:
    """The counts ``topo import`` prints: :func:`topo.fabric.summarize`, the dump's defect
    counts, and the all-to-all's terminals as ``topo bandwidth`` counts them.

    Parameters
    ----------
    G : networkx.Graph
        An imported fabric.

    Returns
    -------
    dict
        ``family``, then ``terminal`` (``"gpu"``, or ``"endpoint"`` on a fabric without GPUs:
        its CAs cabled to a switch) and ``terminals`` (how many: ``topo bandwidth``'s ``gpus``
        and ``terminal``), then the summary's keys and the dump's defect counts; with
        ``--compute-host-regex``, ``non_compute_hosts`` (hosts left without GPUs).
    """
    counts = fabric_mod.summarize(G).to_dict()
    terminal = "gpu" if counts["gpus"] else "endpoint"
    summary: dict[str, Any] = {
        "family": counts.pop("family"),
        "terminal": terminal,
        "terminals": counts["gpus"] if counts["gpus"] else counts["endpoints"],
        **counts,
    }
    if "nvlink_domain_regex" in G.graph:
        summary.update(_domain_counts(G))
    if "non_compute_hosts" in G.graph:
        summary["non_compute_hosts"] = int(G.graph["non_compute_hosts"])
    for key in ("loopback_cables", "unconnected_cas", "mismatched_cables", "unreachable_switches"):
        if key in G.graph:
            summary[key] = G.graph[key]
    return summary


def _domain_counts(G: nx.Graph) -> dict[str, int]:
    """``hosts`` (trays), ``nvlink_domains`` (the servers: one NVSwitch each) and
    ``hosts_outside_nvlink_domains`` (hosts ``--nvlink-domain-regex`` did not match, a domain
    each) of a fabric imported with NVLink domains."""
    hosts = {
        fabric_mod.host_of_vertex(d) for _, d in G.nodes(data=True) if d["kind"] in ("gpu", "nic")
    }
    return {
        "hosts": len(hosts),
        "nvlink_domains": sum(1 for _, k in G.nodes(data="kind") if k == "nvswitch"),
        "hosts_outside_nvlink_domains": int(G.graph["hosts_outside_nvlink_domains"]),
    }
