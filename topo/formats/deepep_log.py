"""DeepEP's test output: the bandwidths its tests print, per phase.

DeepEP's tests print their results as text (``tests/legacy/test_internode.py``,
``test_intranode.py`` and ``test_low_latency.py`` at DeepEP commit dd758ca; the same lines since
V1's first release):

- normal kernels across servers: ``[tuning] Best dispatch (FP8): SMs 24, NVL chunk 20, RDMA
  chunk 32: [N + T us, ]X GB/s (RDMA), Y GB/s (NVL)`` and ``[tuning] Best combine: ...``. X is
  the RDMA bytes a rank sends (dispatch) or receives (combine) over the kernel's time: DeepEP's
  "bottleneck bandwidth" across servers;
- normal kernels in one server: ``[tuning] Best dispatch (BF16): SMs 24, NVL chunk 8, Y GB/s
  (NVL), t: T us``;
- low-latency kernels: ``[rank R] Dispatch bandwidth: X GB/s, avg_t=T us | Combine bandwidth:
  Y GB/s, avg_t=T us``, one line per rank (the median over ranks is kept);
- ``[config] num_tokens=N, hidden=H, num_topk_groups=G, num_topk=K`` (normal kernels).

Only the best tuning lines and the per-rank bandwidth lines are read; the rest of the output
(the sweep's other lines, NCCL or NVSHMEM messages, tracebacks of other runs) is ignored.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from topo.errors import FormatError
from topo.files import read_text

_NUM = r"(\d+(?:\.\d+)?)"
_BEST = re.compile(
    r"\[tuning\] Best (?:dispatch \((?P<dtype>FP8|BF16)\)|(?P<combine>combine)):\s*SMs (?P<sms>\d+)"
    r".*?(?:" + _NUM + r" GB/s \(RDMA\),\s*)?" + _NUM + r" GB/s \(NVL\)"
)
_LL = re.compile(
    r"\[rank (?P<rank>\d+)\] Dispatch bandwidth: " + _NUM + r" GB/s, avg_t=" + _NUM + r" us"
    r" \| Combine bandwidth: " + _NUM + r" GB/s, avg_t=" + _NUM + r" us"
)
_CONFIG = re.compile(
    r"\[config\] num_tokens=(\d+), hidden=(\d+), num_topk_groups=(\d+), num_topk=(\d+)"
)
MAX_GBPS = 1e5
"""A bandwidth above this (GB/s) is refused as implausible."""


@dataclass(frozen=True)
class DeepEPPhase:
    """One phase's measured figure.

    Attributes
    ----------
    phase : str
        ``dispatch`` or ``combine``.
    dtype : str
        ``fp8`` or ``bf16`` (the dispatched data; combine is BF16).
    rdma_GBps : float or None
        RDMA bandwidth (GB/s, DeepEP's definition); None in one server.
    nvl_GBps : float or None
        NVLink bandwidth (GB/s, DeepEP's definition); None for the low-latency kernels.
    time_us : float or None
        The kernel's time (µs), where printed.
    sms : int or None
        SMs the best configuration used (normal kernels).
    line : int
        1-based line of the file.
    """

    phase: str
    dtype: str
    rdma_GBps: float | None
    nvl_GBps: float | None
    time_us: float | None
    sms: int | None
    line: int


@dataclass(frozen=True)
class DeepEPTest:
    """A DeepEP test's results: ``kernel`` ``normal`` or ``low_latency``; its phases; the
    ``[config]`` line's values when printed (tokens per rank, hidden, top-k groups, top-k)."""

    kernel: str
    phases: list[DeepEPPhase]
    num_tokens: int | None = None
    hidden: int | None = None
    num_topk_groups: int | None = None
    num_topk: int | None = None
    ranks_seen: list[int] = field(default_factory=list)


def is_deepep_log(text: str) -> bool:
    """Whether ``text`` holds a DeepEP best-tuning line or a low-latency bandwidth line."""
    return bool(_BEST.search(text) or _LL.search(text))


def _number(p: Path, line: int, text: str, what: str) -> float:
    x = float(text)
    if not 0 < x <= MAX_GBPS:
        raise FormatError(p, f"{what} {text} is not above 0 and at most {MAX_GBPS:g}", line=line)
    return x


def read_deepep_log(path: str | Path, *, text: str | None = None) -> DeepEPTest:
    """Read one DeepEP test's output (``text``: its content, already read; by default the
    file is read here).

    Returns
    -------
    DeepEPTest
        The best configuration of each normal-kernel phase (the last one printed, if a file
        holds several runs), or the low-latency phases at the median over the ranks that
        printed them.

    Raises
    ------
    FormatError
        No best-tuning or low-latency bandwidth line; a bandwidth of 0 or above 1e5 GB/s
        (the file and line named); both normal and low-latency lines in one file.
    """
    p = Path(path)
    if text is None:
        text = read_text(p)
    best: dict[tuple[str, str], DeepEPPhase] = {}
    ll: list[tuple[int, int, float, float, float, float]] = []
    config: tuple[int, int, int, int] | None = None
    for i, raw in enumerate(text.splitlines(), 1):
        if (m := _CONFIG.search(raw)) is not None:
            tokens, hidden, groups, topk = (int(x) for x in m.groups())
            config = (tokens, hidden, groups, topk)
        elif (m := _BEST.search(raw)) is not None:
            phase = "combine" if m.group("combine") else "dispatch"
            dtype = "bf16" if phase == "combine" else m.group("dtype").lower()
            rdma = _number(p, i, m.group(4), "RDMA GB/s") if m.group(4) else None
            nvl = _number(p, i, m.group(5), "NVL GB/s")
            t = re.search(r"t: " + _NUM + r" us|" + _NUM + r" \+ " + _NUM + " us", raw)
            time_us = None
            if t is not None:
                time_us = float(t.group(1) or t.group(3))
            best[(phase, dtype)] = DeepEPPhase(
                phase, dtype, rdma, nvl, time_us, int(m.group("sms")), i
            )
        elif (m := _LL.search(raw)) is not None:
            rank, dis, dis_t, com, com_t = m.groups()
            ll.append(
                (
                    i,
                    int(rank),
                    _number(p, i, dis, "dispatch GB/s"),
                    float(dis_t),
                    _number(p, i, com, "combine GB/s"),
                    float(com_t),
                )
            )
    if best and ll:
        raise FormatError(
            p, "both normal-kernel tuning lines and low-latency lines: give one test per file"
        )
    if best:
        phases = [best[k] for k in sorted(best)]
        kw = {}
        if config is not None:
            kw = dict(
                num_tokens=config[0],
                hidden=config[1],
                num_topk_groups=config[2],
                num_topk=config[3],
            )
        return DeepEPTest("normal", phases, **kw)  # type: ignore[arg-type]
    if ll:
        line = ll[0][0]
        return DeepEPTest(
            "low_latency",
            [
                DeepEPPhase(
                    "dispatch",
                    "fp8",
                    statistics.median(x[2] for x in ll),
                    None,
                    statistics.median(x[3] for x in ll),
                    None,
                    line,
                ),
                DeepEPPhase(
                    "combine",
                    "bf16",
                    statistics.median(x[4] for x in ll),
                    None,
                    statistics.median(x[5] for x in ll),
                    None,
                    line,
                ),
            ],
            ranks_seen=sorted({x[1] for x in ll}),
        )
    raise FormatError(
        p,
        "no DeepEP result: no '[tuning] Best dispatch/combine' line (test_internode.py, "
        "test_intranode.py) and no '[rank R] Dispatch bandwidth' line (test_low_latency.py)",
    )
