"""The DeepSeek-V3 hardware report's worked example of expert-parallel decode speed.

    (1 B FP8 dispatch + 2 B BF16 combine) x 32 tokens x 9 experts x 7K hidden / 50 GB/s
    = 120.96 µs per EP step; two micro-batches -> 241.92 µs per layer; 61 layers -> 14.76 ms
    per output token, about 67 tokens/s. On GB200 NVL72 (900 GB/s): 6.72 µs per step, about
    1,200 tokens/s.

The figures hold only with 7K = 7,000 and GB = 10^9 B; the model's true hidden size 7,168
gives 123.86 µs. The 9 experts are the 8 routed plus the shared one, each a copy over the
network; the example leaves latency, computation and NVLink out, and counts all 61 layers
(DeepSeek-V3 has 58 MoE layers; :func:`topo.moe.moe_report` counts those).

References
----------
W. Zhao et al., "Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware for
AI Architectures", ISCA 2025, arXiv 2505.09343, §2.3.2.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from topo.units import Bps_to_GBps, GBps_to_Bps, s_to_us

__all__ = ["PaperExample", "paper_example"]


@dataclass(frozen=True)
class PaperExample:
    """The worked example's inputs and results (bytes, B/s, seconds)."""

    dispatch_bytes_per_elem: int
    combine_bytes_per_elem: int
    tokens: int
    experts: int
    hidden: int
    hidden_true: int
    link_Bps: float
    micro_batches: int
    layers: int
    nvl72_Bps: float
    step_bytes: int
    step_s: float
    step_true_s: float
    layer_s: float
    tpot_s: float
    tokens_per_s: float
    nvl72_step_s: float
    nvl72_layer_s: float
    nvl72_tpot_s: float
    nvl72_tokens_per_s: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the headline figures in µs and ms."""
        d = asdict(self)
        d.update(
            step_us=s_to_us(self.step_s),
            step_true_us=s_to_us(self.step_true_s),
            layer_us=s_to_us(self.layer_s),
            tpot_ms=self.tpot_s * 1e3,
            nvl72_step_us=s_to_us(self.nvl72_step_s),
            nvl72_tpot_ms=self.nvl72_tpot_s * 1e3,
        )
        return d

    def lines(self) -> list[str]:
        """The derivation, line by line, as the report gives it."""
        b = self.dispatch_bytes_per_elem + self.combine_bytes_per_elem
        gbs = Bps_to_GBps(self.link_Bps)
        true_bytes = b * self.tokens * self.experts * self.hidden_true
        return [
            "DeepSeek-V3 hardware report (ISCA 2025, §2.3.2): EP decode bound",
            f"  per EP step: ({self.dispatch_bytes_per_elem} B FP8 dispatch + "
            f"{self.combine_bytes_per_elem} B BF16 combine) x {self.tokens} tokens x "
            f"{self.experts} experts (8 routed + 1 shared) x hidden {self.hidden:,}",
            f"             = {self.step_bytes:,} B / {gbs:g} GB/s = {s_to_us(self.step_s):.2f} µs",
            f"  with the true hidden size {self.hidden_true:,}: {true_bytes:,} B -> "
            f"{s_to_us(self.step_true_s):.2f} µs",
            f"  per layer:   {self.micro_batches} micro-batches overlapped x "
            f"{s_to_us(self.step_s):.2f} µs = {s_to_us(self.layer_s):.2f} µs",
            f"  per token:   {self.layers} layers x {s_to_us(self.layer_s):.2f} µs = "
            f"{self.tpot_s * 1e3:.2f} ms TPOT -> {self.tokens_per_s:.2f} tokens/s "
            "(the report: about 67)",
            f"  GB200 NVL72 ({Bps_to_GBps(self.nvl72_Bps):g} GB/s): {self.step_bytes:,} B / "
            f"{Bps_to_GBps(self.nvl72_Bps):g} GB/s = {s_to_us(self.nvl72_step_s):.2f} µs per step, "
            f"{self.nvl72_tpot_s * 1e3:.2f} ms TPOT -> {self.nvl72_tokens_per_s:,.0f} tokens/s "
            "(the report: about 1,200)",
            "  (GB = 1e9 B; latency, computation and NVLink are left out, as in the report)",
        ]


def paper_example(
    *,
    tokens: int = 32,
    experts: int = 9,
    hidden: int = 7000,
    hidden_true: int = 7168,
    dispatch_bytes_per_elem: int = 1,
    combine_bytes_per_elem: int = 2,
    link_GBps: float = 50.0,
    micro_batches: int = 2,
    layers: int = 61,
    nvl72_GBps: float = 900.0,
) -> PaperExample:
    """The report's EP worked example: step, layer, TPOT and tokens/s on 400G IB and on NVL72.

    ``step = (d + c) * tokens * experts * hidden / rate``; ``layer = micro_batches * step``;
    ``TPOT = layers * layer``; ``tokens/s = 1 / TPOT``.

    Parameters
    ----------
    tokens, experts, hidden : int
        Tokens per GPU per micro-batch (32), experts per token incl. shared (9), hidden (7,000).
    hidden_true : int
        DeepSeek-V3's hidden size (7,168), for the second figure.
    dispatch_bytes_per_elem, combine_bytes_per_elem : int
        FP8 (1) and BF16 (2).
    link_GBps, nvl72_GBps : float
        Per-GPU rates, GB/s (1e9 B/s): a 400G NIC (50) and GB200 NVL72's NVLink (900).
    micro_batches, layers : int
        2 and 61.

    Returns
    -------
    PaperExample

    Examples
    --------
    >>> ex = paper_example()
    >>> round(ex.step_s * 1e6, 2), round(ex.layer_s * 1e6, 2), round(ex.tpot_s * 1e3, 2)
    (120.96, 241.92, 14.76)
    >>> round(ex.step_true_s * 1e6, 2), round(ex.nvl72_step_s * 1e6, 2)
    (123.86, 6.72)

    References
    ----------
    W. Zhao et al., ISCA 2025, arXiv 2505.09343, §2.3.2.
    """
    per = dispatch_bytes_per_elem + combine_bytes_per_elem
    step_bytes = per * tokens * experts * hidden
    rate, nvl = GBps_to_Bps(link_GBps), GBps_to_Bps(nvl72_GBps)
    step = step_bytes / rate
    layer = micro_batches * step
    tpot = layers * layer
    nvl_step = step_bytes / nvl
    nvl_layer = micro_batches * nvl_step
    nvl_tpot = layers * nvl_layer
    return PaperExample(
        dispatch_bytes_per_elem=dispatch_bytes_per_elem,
        combine_bytes_per_elem=combine_bytes_per_elem,
        tokens=tokens,
        experts=experts,
        hidden=hidden,
        hidden_true=hidden_true,
        link_Bps=rate,
        micro_batches=micro_batches,
        layers=layers,
        nvl72_Bps=nvl,
        step_bytes=step_bytes,
        step_s=step,
        step_true_s=per * tokens * experts * hidden_true / rate,
        layer_s=layer,
        tpot_s=tpot,
        tokens_per_s=1.0 / tpot,
        nvl72_step_s=nvl_step,
        nvl72_layer_s=nvl_layer,
        nvl72_tpot_s=nvl_tpot,
        nvl72_tokens_per_s=1.0 / nvl_tpot,
    )
