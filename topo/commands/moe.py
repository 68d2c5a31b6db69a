"""``topo moe``: DeepSeekMoE expert-parallel dispatch and combine on a fabric (docs/moe.md)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from topo.cli_common import (
    GatingSeedOpt,
    MicroBatchesOpt,
    PlanesUsedOpt,
    TokensPerGpuOpt,
    about,
    check_outputs,
    driven,
    err,
    from_command_line,
    out,
    print_json,
    refuse_with,
    user_errors,
)
from topo.errors import TopoError

if TYPE_CHECKING:
    from topo.moe import MoEReport


class Dtype(str, Enum):
    fp8 = "fp8"
    bf16 = "bf16"
    fp16 = "fp16"
    fp32 = "fp32"


class Kernel(str, Enum):
    deepep_normal = "deepep-normal"
    deepep_ll = "deepep-ll"
    deepep_v2 = "deepep-v2"
    nccl = "nccl"
    nccl_ep_ll = "nccl-ep-ll"
    nccl_ep_ht = "nccl-ep-ht"


class Shared(str, Enum):
    remote = "remote"
    local = "local"


@user_errors
def moe(
    ctx: typer.Context,
    fabric: Annotated[
        Path | None,
        typer.Argument(
            help="A fabric JSON written by 'topo build -o' (not needed with --paper-example).",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ] = None,
    model: Annotated[
        Path | None,
        typer.Option(
            "--model",
            help="A Hugging Face config.json (DeepSeek-V3/R1, Mixtral, Qwen-MoE) or DeepSeek "
            "inference config; default: DeepSeek-V3.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    ep: Annotated[
        int | None,
        typer.Option(
            "--ep",
            help="EP size, GPUs (default: the most whole servers dividing the routed experts).",
            min=1,
        ),
    ] = None,
    tokens_per_gpu: TokensPerGpuOpt = 32,
    dispatch_dtype: Annotated[
        Dtype, typer.Option("--dispatch-dtype", help="Dispatch format (fp8 with its scales).")
    ] = Dtype.fp8,
    combine_dtype: Annotated[
        Dtype, typer.Option("--combine-dtype", help="Combine format.")
    ] = Dtype.bf16,
    fp8_scales: Annotated[
        bool,
        typer.Option(
            "--fp8-scales/--no-fp8-scales",
            help="Count FP8's fp32 scale per 128 values (4 B per tile).",
        ),
    ] = True,
    node_limit: Annotated[
        int | None,
        typer.Option(
            "--node-limit",
            help="Nodes a token may reach, M (default: the config's topk_group; 0 = unlimited).",
            min=0,
        ),
    ] = None,
    shared: Annotated[
        Shared,
        typer.Option(
            "--shared",
            help="remote: the shared expert is one more destination (decode); local: no traffic.",
        ),
    ] = Shared.remote,
    zipf: Annotated[
        float | None,
        typer.Option("--zipf", help="Skewed routing: Zipf exponent of the expert loads."),
    ] = None,
    expert_load: Annotated[
        Path | None,
        typer.Option(
            "--expert-load",
            help="Skewed routing: a file of relative loads, one per routed expert.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    micro_batches: MicroBatchesOpt = 2,
    ib_efficiency: Annotated[
        float,
        typer.Option("--ib-efficiency", help="Achieved fraction of NIC/fabric capacity (0-1]."),
    ] = 1.0,
    nvlink_efficiency: Annotated[
        float,
        typer.Option("--nvlink-efficiency", help="Achieved fraction of NVLink capacity (0-1]."),
    ] = 1.0,
    seed: GatingSeedOpt = 0,
    planes_used: PlanesUsedOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as one JSON object.")
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Write the heat map and phase-time bars as HTML.", dir_okay=False
        ),
    ] = None,
    kernel: Annotated[
        Kernel | None,
        typer.Option(
            "--kernel",
            help="Also model an EP kernel: DeepEP V1 normal (RDMA to the same-index GPU, then "
            "NVLink), DeepEP V1 low-latency (per-expert messages, NVLink in a node, RDMA "
            "across), DeepEP V2 (ElasticBuffer), an NCCL all-to-all, or NCCL EP's LL / HT "
            "kernels (at most 64 GPUs); --json adds 'kernel' with its 'release' (docs/moe.md).",
        ),
    ] = None,
    kernel_sms: Annotated[
        int | None,
        typer.Option(
            "--kernel-sms",
            "--sms",
            help="SMs given to the kernel: deepep-normal (even, 2 to 132; default 24, as "
            "DeepEP's tests) or deepep-v2 (1 to the fabric's GPU's SMs: 132 Hopper, 148 "
            "Blackwell; default: the count V2's code computes).",
            min=1,
        ),
    ] = None,
    paper_example: Annotated[
        bool,
        typer.Option("--paper-example", help="Print the DeepSeek-V3 report's worked example."),
    ] = False,
) -> None:
    """Expert-parallel dispatch and combine of an MoE layer: bytes, times, TPOT, decode speed."""
    from topo import fabric as fabric_mod
    from topo.moe import default_config, load_config, load_expert_loads, moe_report
    from topo.moe import paper_example as paper

    if paper_example:
        refuse_with(ctx, "--paper-example", allowed=("as_json",))
        ex = paper()
        if as_json:
            print_json(ex.to_dict())
        else:
            for line in ex.lines():
                out.print(line)
        return
    if fabric is None:
        raise TopoError("give a FABRIC.json (from 'topo build -o'), or --paper-example")
    check_outputs({"--html": html}, [fabric, model, expert_load])
    if zipf is not None and expert_load is not None:
        raise TopoError("give either --zipf or --expert-load, not both")
    if kernel_sms is not None and kernel is None:
        raise TopoError("--kernel-sms needs --kernel")
    config = load_config(model) if model is not None else default_config()
    _check_options(ctx, config.n_shared_experts, dispatch_dtype, combine_dtype)
    loads = (
        load_expert_loads(expert_load, config.n_routed_experts) if expert_load is not None else None
    )
    G = fabric_mod.load(fabric)
    with about(fabric):
        G = driven(G, planes_used)
        if kernel is not None:  # (before the report: the SMs of the fabric's GPU, memory)
            from topo.fabric.gpus import gpu_model
            from topo.flow.solve import check_moe_kernel
            from topo.moe.kernels import check_kernel_sms
            from topo.moe.traffic import default_ep

            check_kernel_sms(kernel.value, kernel_sms, gpu_model(G))
            size = ep if ep is not None else default_ep(G, config.n_routed_experts)
            check_moe_kernel(kernel.value, size, tokens_per_gpu, config.num_experts_per_tok)
        report = moe_report(
            G,
            config,
            ep=ep,
            tokens_per_gpu=tokens_per_gpu,
            dispatch_dtype=dispatch_dtype.value,
            combine_dtype=combine_dtype.value,
            fp8_scales=fp8_scales,
            node_limit=node_limit,
            shared=shared.value,
            zipf=zipf,
            expert_load=loads,
            micro_batches=micro_batches,
            ib_efficiency=ib_efficiency,
            nvlink_efficiency=nvlink_efficiency,
            seed=seed,
            routing_label=f"load vector {expert_load}" if expert_load is not None else None,
        )
    if html is not None:
        from topo.plot import plot_moe, write_html

        write_html(plot_moe(report), html)
    _output(report, kernel, as_json, kernel_sms)
    if html is not None:
        err.print(f"wrote {html}")


def _check_options(
    ctx: typer.Context, shared_experts: int, dispatch: Dtype, combine: Dtype
) -> None:
    """Refuse --shared for a model without a shared expert and --fp8-scales/--no-fp8-scales
    when neither phase is FP8: they would change nothing."""
    if shared_experts == 0 and from_command_line(ctx, "shared"):
        raise TopoError(
            "--shared places the shared expert: the model has none (n_shared_experts 0)"
        )
    if Dtype.fp8 not in (dispatch, combine) and from_command_line(ctx, "fp8_scales"):
        raise TopoError(
            "--fp8-scales/--no-fp8-scales counts FP8's scales: neither --dispatch-dtype nor "
            f"--combine-dtype is fp8 (they are {dispatch.value} and {combine.value})"
        )


def _output(
    report: MoEReport, kernel: Kernel | None, as_json: bool, kernel_sms: int | None = None
) -> None:
    """Print the report (JSON or tables), with the kernel's figures when ``--kernel`` is given
    (on ``kernel_sms`` SMs for DeepEP's normal kernels, default 24)."""
    kr = None
    if kernel is not None:
        from topo.moe.kernels import kernel_report

        kr = kernel_report(report, kernel.value, kernel_sms)
    if as_json:
        d = report.to_dict()
        if kr is not None:
            d["kernel"] = kr.to_dict()
        print_json(d)
        return
    _tables(report)
    if kr is not None:
        res = ""
        if kr.sms is not None:
            res = f" on {kr.sms} SMs" + (f", {kr.qps} QPs" if kr.qps is not None else "")
        out.print(
            f"kernel {kr.kernel}{res}: dispatch {kr.dispatch_us:.2f} µs "
            f"({kr.dispatch_GBps:.1f} GB/s {kr.bandwidth_kind}, {kr.dispatch_bottleneck}-"
            f"bound), combine {kr.combine_us:.2f} µs ({kr.combine_GBps:.1f} GB/s "
            f"{kr.bandwidth_kind}, {kr.combine_bottleneck}-bound); GB/s as the library's "
            f"{kr.bandwidth_name!r} (logical bytes, own traffic included)"
        )
        if kr.tpot_ms is not None:
            out.print(
                f"with {kr.kernel}: layer {kr.layer_us:.2f} µs, TPOT {kr.tpot_ms:.3f} ms, "
                f"{kr.tokens_per_s:,.1f} tokens/s (routed experts only: the kernel's traffic)"
            )
        out.print(f"models {kr.release}")


def _tables(r: MoEReport) -> None:
    m = r.model
    out.print(
        f"[bold]{m.name}[/bold] EP{r.ep} ({r.nodes} node{'s' if r.nodes > 1 else ''} x "
        f"{r.gpus_per_node} GPUs) on {r.fabric}: {m.n_routed_experts} routed experts, "
        f"{m.num_experts_per_tok} per token, shared {r.shared}; {r.tokens_per_gpu} tokens/GPU x "
        f"{r.micro_batches} micro-batches; per copy: dispatch {r.dispatch_dtype} "
        f"{r.dispatch_bytes_per_copy:,} B, combine {r.combine_dtype} "
        f"{r.combine_bytes_per_copy:,} B; routing {r.routing}"
        + (f", seed {r.seed}" if r.routing != "fixed" else "")
    )
    _phases_table(r)
    _layers_table(r)
    _notes(r)


def _phases_table(r: MoEReport) -> None:
    phases = Table(
        title="phases, per micro-batch (MB: a GPU's mean bytes sent)", title_justify="left"
    )
    for col in ("scenario", "phase", "NVL MB", "IB MB", "NVL µs", "IB µs", "µs", "bottleneck"):
        left = col in ("scenario", "phase", "bottleneck")
        phases.add_column(col, justify="left" if left else "right", no_wrap=left)
    for s in r.scenarios:
        for p in (s.dispatch, s.combine):
            phases.add_row(
                s.label,
                p.phase,
                f"{p.nvlink_bytes_sent / 1e6:.3f}",
                f"{p.ib_bytes_sent / 1e6:.3f}",
                f"{p.nvlink_s * 1e6:.2f}",
                f"{p.ib_s * 1e6:.2f}",
                f"{p.time_s * 1e6:.2f}",
                p.bottleneck,
            )
    out.print(phases)


def _layers_table(r: MoEReport) -> None:
    layers = Table(
        title=f"per layer ({r.micro_batches} micro-batches) and per output token "
        f"({r.moe_layers} MoE layers)",
        title_justify="left",
    )
    for col in ("scenario", "nodes/tok", "IB/tok", "IB MB/layer", "layer µs", "TPOT ms", "tok/s"):
        layers.add_column(col, justify="left" if col == "scenario" else "right", no_wrap=True)
    for s in r.scenarios:
        layers.add_row(
            s.label,
            f"{s.nodes_per_token:.2f}",
            f"{s.ib_copies_per_token:.2f}",
            f"{s.ib_bytes_per_gpu / 1e6:.3f}",
            f"{s.layer_s * 1e6:.2f}",
            f"{s.tpot_s * 1e3:.3f}",
            f"{s.tokens_per_s:,.1f}",
        )
    out.print(layers)


def _notes(r: MoEReport) -> None:
    m = r.model
    out.print(
        "nodes/tok: distinct nodes of a token's routed experts; IB/tok: network copies per token"
    )
    if m.n_group > 1 and r.nodes != m.n_group and r.node_limit:
        out.print(
            f"groups: the node limit treats each of the {r.nodes} nodes as a group (at most "
            f"M={r.node_limit} nodes per token); the config's own gate has {m.n_group} groups "
            f"of {m.n_routed_experts // m.n_group} experts, top {m.topk_group}, which here "
            f"would span {r.nodes / m.n_group:g} node(s) each (docs/moe.md)"
        )
    saving = r.node_limit_saving()
    if saving is not None:
        out.print(
            f"node limit M={r.node_limit} (DeepEP-style): nodes per token "
            f"{saving['nodes_per_token_unlimited']:.2f} -> "
            f"{saving['nodes_per_token_limited']:.2f}, IB bytes per GPU "
            f"-{100 * saving['ib_bytes_saved_fraction']:.1f}%, layer time "
            f"-{100 * saving['layer_time_saved_fraction']:.1f}%"
        )
    else:
        why = (
            "a fixed routing"
            if r.routing == "fixed"
            else (f"{r.nodes} node{'s' if r.nodes > 1 else ''} in the EP group")
        )
        limit = f"M={r.node_limit}" if r.node_limit else "none asked"
        out.print(f"node limit ({limit}): does not bind, {why}")
