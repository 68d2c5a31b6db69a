"""The measurements the expected curve's constants are fitted to, the fit, and its held-out error.

``topo/data/training.toml`` lists every measurement the fitted constants of the ``[expected]``
table (:mod:`topo.collective.expected`) were fitted to, each with its source: the shared
nccl-tests logs (a path under ``../shared/data/real``, read when that folder is there) and
public nccl-tests tables whose rows the file holds. Each cluster names the servers it ran on
(GPU, GPUs and NICs per server, NIC and NVLink rates); the fabric is a non-blocking two-layer
fat tree of them unless the cluster says otherwise, as the sources rarely state more.

:func:`fit` minimises a robust loss (soft L1, scale 30%) of the log of expected / measured
time over every row of 1 MiB and more (each cluster weighted equally);
:func:`leave_one_cluster_out` refits without each cluster in turn and reports that cluster's
error, the figure docs/collective.md quotes.

Run ``python -m topo.collective.training`` to refit and print both (a few minutes: every
cluster's flow LPs are solved once).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from topo.collective.constants import NcclConstants, div_up, load_constants
from topo.collective.expected import expected
from topo.collective.fabric_rates import FabricRates, fabric_rates
from topo.collective.model import Candidate
from topo.collective.predict import fabric_constants
from topo.errors import FormatError
from topo.files import read_text
from topo.spec import parse_toml

MIB = 1 << 20

FITTED = (
    ("launch_us", None),
    ("net_launch_us", None),
    ("net_message_us", 1),
    ("net_message_us", 2),
    ("ring_net_step_us", 1),
    ("ring_net_step_us", 2),
    ("nvlink_message_us", None),
    ("nvls_message_us_per_gpu", None),
    ("nvls_channel_GBps", None),
    ("nvls_channel_GBps_blackwell", None),
    ("nvls_tree_heads", None),
    ("p2p_round_us", None),
)
"""The fitted constants of the ``[expected]`` table: (key, protocol index or None). LL's
network message cost is tied to LL128's (no training row runs LL across servers at 1 MiB or
more)."""


def default_training_path() -> Path:
    """``topo/data/training.toml``, the packaged training file."""
    return Path(str(resources.files("topo") / "data" / "training.toml"))


def shared_data_root() -> Path:
    """``<checkout>/../shared/data/real``, or ``$TOPO_REAL_DATA`` where set."""
    env = os.environ.get("TOPO_REAL_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "data" / "real"


@dataclass(frozen=True)
class Measurement:
    """One measured nccl-tests test: its rows of size (B) and out-of-place time (µs)."""

    id: str
    cluster: str
    op: str
    ranks: int
    gpus_per_node: int
    rows: list[tuple[int, float]]
    source: str
    nccl_algo: str | None = None


@dataclass
class Cluster:
    """A cluster of the training file: how to build its fabric, and its measurements."""

    id: str
    source: str
    spec: dict[str, Any]
    gpu_model: str
    measurements: list[Measurement] = field(default_factory=list)

    def fabric(self, ranks: int, ranks_per_host: int) -> nx.Graph:
        """A non-blocking two-layer fat tree of as many such servers (or NVLink domains) as
        ``ranks`` at ``ranks_per_host`` fill (spec fields as in :func:`topo.builders.build`,
        and ``gdr = false`` for servers without GPUDirect RDMA,
        :func:`topo.builders.gdr.without_gdr`)."""
        from topo.builders import build
        from topo.builders.gdr import without_gdr

        opts = dict(self.spec)
        gdr = bool(opts.pop("gdr", True))
        family = str(opts.pop("family", "ft2"))
        gpn = int(opts["gpus_per_node"])
        hosts_per_server = gpn // int(opts.get("gpus_per_host") or gpn)
        hosts = max(1, div_up(ranks, ranks_per_host))
        G = build(family, gpus=gpn * max(1, div_up(hosts, hosts_per_server)), **opts)
        G.graph["gpu_model"] = self.gpu_model
        return G if gdr else without_gdr(G)


def load_training(path: str | Path | None = None, shared: Path | None = None) -> list[Cluster]:
    """Read the training file.

    Parameters
    ----------
    path : str or Path, optional
        Default :func:`default_training_path`.
    shared : Path, optional
        The shared data folder (default :func:`shared_data_root`); measurements kept there are
        left out when it is absent.

    Returns
    -------
    list of Cluster

    Raises
    ------
    FormatError
        Unreadable file or invalid TOML, a cluster or measurement without one of its keys or
        with a value of the wrong type, a measurement of an unknown cluster, a row that is not
        [size (B), time (µs)].
    """
    p = Path(path) if path is not None else default_training_path()
    data = parse_toml(p, read_text(p))
    try:
        return _clusters(data, p, shared if shared is not None else shared_data_root())
    except KeyError as exc:
        raise FormatError(p, f"a cluster or measurement has no {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise FormatError(p, f"a value of the wrong type ({exc})") from None


def _clusters(data: dict[str, Any], p: Path, root: Path) -> list[Cluster]:
    from topo.formats.nccl_tests import read_nccl_tests

    clusters = {
        str(c["id"]): Cluster(str(c["id"]), str(c["source"]), dict(c["spec"]), str(c["gpu_model"]))
        for c in data.get("cluster", [])
    }
    for m in data.get("measurement", []):
        cid = str(m["cluster"])
        if cid not in clusters:
            raise FormatError(p, f"measurement {m.get('id')!r} names unknown cluster {cid!r}")
        cl = clusters[cid]
        if "shared" in m:
            f = root / str(m["shared"])
            if not f.is_file():
                continue
            for t in read_nccl_tests(f):
                if t.ranks is None or t.gpus_per_node is None:
                    raise FormatError(f, "a training log must list its ranks")
                rows = [(r.size_bytes, r.time_us) for r in t.rows]
                cl.measurements.append(
                    Measurement(
                        f"{m['id']}:{t.op}",
                        cid,
                        t.op,
                        t.ranks,
                        t.gpus_per_node,
                        rows,
                        str(m["source"]),
                    )
                )
            continue
        rows = []
        for row in m["rows"]:
            if not (isinstance(row, list) and len(row) == 2):
                raise FormatError(p, f"measurement {m['id']!r}: a row must be [size, time_us]")
            rows.append((int(row[0]), float(row[1])))
        cl.measurements.append(
            Measurement(
                str(m["id"]),
                cid,
                str(m["op"]),
                int(m["ranks"]),
                int(m["gpus_per_node"]),
                rows,
                str(m["source"]),
                m.get("nccl_algo"),
            )
        )
    return [c for c in clusters.values() if c.measurements]


@dataclass(frozen=True)
class Point:
    """One training row with what the fit needs: NCCL's choice and the sub-cluster."""

    cluster: str
    measurement: str
    op: str
    size_bytes: int
    time_us: float
    choice: Candidate
    rates: FabricRates
    arch: str


def points(clusters: list[Cluster], c: NcclConstants, min_bytes: int = MIB) -> list[Point]:
    """Every row of ``min_bytes`` (B) and more, with NCCL's choice on its cluster's fabric.

    Each cluster's fabric is built and its rates solved once per (ranks, ranks per host);
    the constants are ``c`` for the GPU generation the cluster records.

    Returns
    -------
    list of Point
        Sizes in B, measured times in µs.
    """
    out = []
    for cl in clusters:
        cache: dict[tuple[int, int], tuple[FabricRates, NcclConstants]] = {}
        for m in cl.measurements:
            key = (m.ranks, m.gpus_per_node)
            if key not in cache:
                G = cl.fabric(m.ranks, m.gpus_per_node)
                cache[key] = (fabric_rates(G, m.ranks, m.gpus_per_node), fabric_constants(G, c))
            r, ca = cache[key]
            for size, t in m.rows:
                if size >= min_bytes:
                    best = _choice(m, size, r, ca)
                    out.append(Point(cl.id, m.id, m.op, size, t, best, r, ca.arch))
    return out


def _choice(m: Measurement, size: int, r: FabricRates, c: NcclConstants) -> Candidate:
    """NCCL's choice, under the measurement's NCCL_ALGO where it ran with one."""
    from topo.collective.choice import ranked_candidates, tuner_restriction

    return ranked_candidates(m.op, size, r, c, tuner_restriction(m.nccl_algo, None))[0]


def _with(c: NcclConstants, x: np.ndarray) -> NcclConstants:
    import copy

    data = copy.deepcopy(c.data)
    ex = data["expected"]
    for (key, idx), v in zip(FITTED, x, strict=True):
        if idx is None:
            ex[key] = float(v)
        else:
            ex[key][idx] = float(v)
            if key in ("net_message_us", "ring_net_step_us") and idx == 1:
                ex[key][0] = float(v)
    return NcclConstants(data, c.origin + " (refitted)")


def _current(c: NcclConstants) -> np.ndarray:
    ex = c.data["expected"]
    return np.array([ex[k] if i is None else ex[k][i] for k, i in FITTED], dtype=float)


def log_errors(pts: list[Point], c: NcclConstants) -> np.ndarray:
    """log(expected / measured time) per point (dimensionless, shape ``(len(pts),)``); the
    expected time is :func:`topo.collective.expected.expected` of the point's choice under
    ``c`` for the point's GPU generation."""
    out = np.empty(len(pts))
    for i, p in enumerate(pts):
        ca = c.with_arch(p.arch)
        e = expected(p.op, p.choice, p.size_bytes, p.rates, ca)
        out[i] = math.log(e.time_s * 1e6 / p.time_us)
    return out


def fit(pts: list[Point], c: NcclConstants) -> NcclConstants:
    """The ``[expected]`` constants that minimise the squared log error over ``pts``, each
    cluster weighted equally (scipy ``least_squares``, every constant in 0..500 µs)."""
    from scipy.optimize import least_squares

    counts: dict[str, int] = {}
    for p in pts:
        counts[p.cluster] = counts.get(p.cluster, 0) + 1
    w = np.array([1 / math.sqrt(counts[p.cluster]) for p in pts])

    def resid(x: np.ndarray) -> np.ndarray:
        return w * log_errors(pts, _with(c, x))

    x0 = np.clip(_current(c), 0.01, 499)
    # soft_l1: a row far off (a glitch of one size in a noisy log) weighs like a 30% miss
    # plus its excess, not its square
    res = least_squares(
        resid, x0, bounds=(0.0, 500.0), diff_step=1e-3, x_scale=10.0, loss="soft_l1", f_scale=0.3
    )
    return _with(c, res.x)


def summary(errs: np.ndarray) -> dict[str, float]:
    """Share of rows within 15% (measured/expected busbw in [0.85, 1/0.85]) and the worst ratio."""
    ratio = np.exp(errs)  # expected time / measured time = measured busbw / expected busbw
    within = float(np.mean((ratio >= 0.85) & (ratio <= 1 / 0.85))) if len(ratio) else math.nan
    worst = float(np.max(np.maximum(ratio, 1 / ratio))) if len(ratio) else math.nan
    return {"rows": float(len(ratio)), "within_15pct": within, "worst_ratio": worst}


def leave_one_cluster_out(pts: list[Point], c: NcclConstants) -> dict[str, dict[str, float]]:
    """Per cluster: fit on the others, the held-out cluster's :func:`summary`."""
    out = {}
    for cid in sorted({p.cluster for p in pts}):
        train = [p for p in pts if p.cluster != cid]
        held = [p for p in pts if p.cluster == cid]
        out[cid] = summary(log_errors(held, fit(train, c)))
    return out


def main() -> None:  # pragma: no cover - a maintenance command
    c = load_constants()
    pts = points(load_training(), c)
    print(f"{len(pts)} rows of 1 MiB and more")
    print("shipped:", summary(log_errors(pts, c)))
    f = fit(pts, c)
    for (key, idx), v in zip(FITTED, _current(f), strict=True):
        print(f"  {key}{'' if idx is None else f'[{idx}]'} = {v:.2f}")
    print("refit:", summary(log_errors(pts, f)))
    for cid, s in leave_one_cluster_out(pts, c).items():
        print(f"  held out {cid}: {s}")


if __name__ == "__main__":  # pragma: no cover
    main()
