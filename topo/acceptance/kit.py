"""The bring-up kit of a design: scales, commands, expected curves (``topo acceptance -o``).

A cluster is brought up scale by scale, so that a fault shows at the smallest scale that has
it. :func:`kit_scales` lists them for a fabric:

- ``servers``: the first 1, 2, 4, ... servers and all of them, every GPU of each (one server
  alone: NVLink; then the network), NCCL_IB_HCA every NIC of the design (``topo export nccl``);
- ``plane`` / ``rail``: each plane of a multi-plane fabric (or each rail of a multi-rail one)
  alone: every server, one rank per server on the GPU whose NIC is on that plane
  (``CUDA_VISIBLE_DEVICES``), NCCL_IB_HCA that NIC alone (a bad plane or rail shows as one
  slow run among equals);
- ``ep``: the EP groups of the design's MoE layout (:func:`topo.moe.default_ep` of the
  model's routed experts: consecutive groups of ``ep`` GPUs over whole servers; an EP size
  below a server's GPUs, one group per server on its first ``ep`` GPUs), each with
  nccl-tests' alltoall and DeepEP's own tests (``tests/test_internode.py`` and
  ``tests/test_low_latency.py``; ``tests/test_intranode.py`` for a group in one server).

Each nccl-tests test (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf;
``-b`` 8 B, or ranks x 4 B rounded up to a power of two where a smaller size moves nothing,
``-e 8G -f 2 -g 1 -n 20 -w 5``) has the design's expected curve at its sizes
(:func:`topo.collective.collective_table`) with its tolerance band: a measurement agrees when
the RMS of log(expected / measured time) over its rows of 32 MiB and more is at most
:data:`topo.collective.explain.AGREE` (log 1.15), as ``topo explain`` judges it; per row the
band is busbw / 1.15 to busbw x 1.15. Every plane (rail, EP group) of a design has the curve
of the first, which the model computes on the first servers' GPUs 0 .. G-1.

:func:`make_kit` computes the kit (files as text, no I/O); :func:`write_kit` writes it whole or
not at all. The layout is in docs/acceptance.md.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from topo.collective import CollectiveReport, collective_table, fabric_rates, switch_graph
from topo.collective.explain import AGREE, MIN_SCORED_BYTES
from topo.collective.predict import fabric_constants
from topo.errors import TopoError
from topo.export import ExportOptions, compute_view, export, fabric_hosts, host_view, nccl_nics
from topo.export.hostlist import hostlist_ranged
from topo.fabric import servers as fabric_servers
from topo.fabric import spans_hosts
from topo.files import write_atomic
from topo.moe import default_config, default_ep
from topo.moe.config import MoEConfig

KIT_VERSION = 1
"""The manifest's ``version``: what :mod:`topo.acceptance.results` reads."""

NCCL_TESTS_OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
"""The nccl-tests of a ``servers`` scale (``<op>_perf``)."""

PLANE_OPS = ("all_reduce", "alltoall")
"""The nccl-tests of a ``plane`` or ``rail`` scale: a ring and the all-to-all over it."""

MAX_BYTES = 8 << 30
"""nccl-tests ``-e`` (B): 8 GiB, where every op on these fabrics is bandwidth-bound."""

STEP_FACTOR = 2
"""nccl-tests ``-f``."""

ITERS = 20
"""nccl-tests ``-n`` (timed iterations per size; its default)."""

WARMUP = 5
"""nccl-tests ``-w`` (warm-up iterations per size)."""

DEEPEP_TOKENS = {"normal": 4096, "low_latency": 128}
"""DeepEP's tests' ``--num-tokens`` defaults (tests/test_internode.py, test_low_latency.py)."""

MASTER_PORT = 29500
"""The rendezvous port of DeepEP's tests (``MASTER_PORT``, read by its ``init_dist``)."""

BAND = math.exp(AGREE)
"""The tolerance band's factor on busbw per row (1.15)."""


@dataclass(frozen=True)
class Scale:
    """One scale a cluster is brought up at.

    Attributes
    ----------
    name : str
        ``<nodes>x<G>`` (servers), ``plane<p>``, ``rail<r>``, ``ep<E>-g<i>``.
    kind : str
        ``servers``, ``plane``, ``rail`` or ``ep``.
    servers : tuple of int
        The servers' positions (0-based, in ``topo.fabric.servers`` order).
    gpus_per_node : int
        Ranks per server G.
    local_gpu : int or None
        The one GPU of each server used (``CUDA_VISIBLE_DEVICES``) at G = 1; None: GPUs
        0 .. G-1.
    nccl_ib_hca : str
        NCCL_IB_HCA for this scale (``=`` prefix: exact names).
    curve_nodes : int
        The expected curve is the design's at the first ``curve_nodes`` servers, G per server.
    """

    name: str
    kind: str
    servers: tuple[int, ...]
    gpus_per_node: int
    local_gpu: int | None
    nccl_ib_hca: str
    curve_nodes: int

    @property
    def ranks(self) -> int:
        return len(self.servers) * self.gpus_per_node


@dataclass(frozen=True)
class KitTest:
    """One test of the kit (a manifest entry).

    Attributes
    ----------
    id : str
        ``<op>.<scale>``; its log is ``logs/<id>.log``.
    tool : str
        ``nccl-tests`` or ``deepep``.
    op : str
        nccl-tests' op (``all_reduce``...) or ``deepep_internode``, ``deepep_intranode``,
        ``deepep_low_latency``.
    scale, kind : str
        The :class:`Scale`'s name and kind.
    ranks, nodes, gpus_per_node : int
        GPUs, servers, GPUs per server.
    hosts : tuple of str
        Host names (the Slurm export's), in order.
    sbatch : str
        The Slurm batch script (path in the kit).
    mpirun : str
        The same test as one ``mpirun`` line, run from the kit's folder.
    log : str
        Where both write the test's output (path in the kit).
    expected : str or None
        The expected curve's file (path in the kit); None for DeepEP's tests.
    """

    id: str
    tool: str
    op: str
    scale: str
    kind: str
    ranks: int
    nodes: int
    gpus_per_node: int
    hosts: tuple[str, ...]
    sbatch: str
    mpirun: str
    log: str
    expected: str | None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["hosts"] = list(self.hosts)
        d["hostlist"] = hostlist_ranged(self.hosts)
        return d


@dataclass(frozen=True)
class Kit:
    """A bring-up kit: its tests, expected curves and files (see :func:`make_kit`).

    ``files`` maps each path in the kit to its text (the manifest among them);
    ``curves`` each expected curve's path to its report; ``notes`` what the kit had to
    assume, one line each.
    """

    fabric: str
    servers: int
    gpus_per_node: int
    ep: int
    tests: tuple[KitTest, ...]
    curves: dict[str, CollectiveReport]
    files: dict[str, str] = field(repr=False)
    notes: tuple[str, ...] = ()

    def manifest(self) -> dict[str, Any]:
        """The manifest (``manifest.json``): version, fabric, tolerance, tests."""
        return json.loads(self.files["manifest.json"])


def _gpu_servers(G: nx.Graph) -> list[tuple[int, list[Any]]]:
    """Servers with GPUs, in order: their GPU counts and devices."""
    out = []
    for members in fabric_servers(G).values():
        n = sum(1 for v in members if G.nodes[v]["kind"] == "gpu")
        if n:
            out.append((n, members))
    return out


def kit_scales(G: nx.Graph, ep: int | None = None, config: MoEConfig | None = None) -> list[Scale]:
    """The scales of a fabric's bring-up (the module's list), smallest first per kind.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs, every server alike (schema in :mod:`topo.fabric`).
    ep : int, optional
        EP size in GPUs (default :func:`topo.moe.default_ep` of ``config``'s routed experts).
    config : MoEConfig, optional
        The MoE model (default DeepSeek-V3, :func:`topo.moe.default_config`).

    Returns
    -------
    list of Scale
        ``servers`` scales, then ``plane`` or ``rail`` ones (a fabric of one plane and no
        rails has none), then ``ep`` groups.

    Raises
    ------
    TopoError
        No GPUs; servers of unequal GPU counts; NVLink domains spanning hosts (not written by
        this kit); the first server has no NIC cabled to a switch; ``ep`` above the fabric's
        GPUs or not spanning whole servers (as :func:`topo.moe.ep_layout`).

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)  # 32 servers
    >>> [s.name for s in kit_scales(G)]  # doctest: +NORMALIZE_WHITESPACE
    ['1x4', '2x4', '4x4', '8x4', '16x4', '32x4', 'plane0', 'plane1', 'plane2', 'plane3',
     'ep128-g0']
    """
    if spans_hosts(G):
        raise TopoError(
            "the acceptance kit of a fabric whose NVLink domains span hosts (GB200 NVL72 trays) "
            "is not written: its servers are not the hosts Slurm and mpirun place ranks on"
        )
    sg = _gpu_servers(G)
    if not sg:
        raise TopoError("the fabric has no GPUs: an acceptance kit needs servers with GPUs")
    g = sg[0][0]
    if any(n != g for n, _ in sg):
        raise TopoError(
            "the fabric's servers have unequal GPU counts "
            f"({', '.join(str(n) for n in sorted({n for n, _ in sg}))}): one kit per kind of server"
        )
    nodes = len(sg)
    nics = nccl_nics(G, 0)
    if not nics:
        raise TopoError("the fabric's first server has no NIC cabled to a switch")
    every = "=" + ",".join(n.ib_hca() for n in nics)
    out: list[Scale] = []
    counts = [k for k in (2**i for i in range(64)) if k < nodes] + [nodes]
    for k in counts:
        if k * g < 2:
            continue  # one GPU alone: no collective
        out.append(Scale(f"{k}x{g}", "servers", tuple(range(k)), g, None, every, k))
    if nodes >= 2:
        planes = sorted({n.plane for n in nics if n.plane is not None})
        rails = sorted({n.rail for n in nics if n.rail is not None})
        kind, ids = ("plane", planes) if len(planes) > 1 else ("rail", rails)
        if len(ids) > 1:
            for p in ids:
                i = next(j for j, n in enumerate(nics) if getattr(n, kind) == p)
                if i >= g:
                    continue  # a NIC with no GPU of its own
                out.append(
                    Scale(f"{kind}{p}", kind, tuple(range(nodes)), 1, i, "=" + nics[i].ib_hca(),
                          nodes)
                )  # fmt: skip
    cfg = config or default_config()
    size = ep if ep is not None else default_ep(G, cfg.n_routed_experts)
    if size >= 2:
        if size > g * nodes:
            raise TopoError(
                f"ep must be at most the fabric's {g * nodes} GPUs, got {size}", param="ep"
            )
        if size > g and size % g:
            raise TopoError(f"ep {size} does not span whole servers of {g} GPUs", param="ep")
        per = max(1, size // g)
        per_g = g if size >= g else size
        for i in range(nodes // per):
            out.append(
                Scale(f"ep{size}-g{i}", "ep", tuple(range(i * per, (i + 1) * per)), per_g, None,
                      every, per)
            )  # fmt: skip
    return out


def _min_bytes(op: str, ranks: int) -> int:
    """nccl-tests ``-b`` (B): 8, or where a smaller size moves nothing (all_gather,
    reduce_scatter, alltoall: a float per rank), ranks x 4 B rounded up to a power of two."""
    if op == "all_reduce":
        return 8
    return max(8, 1 << max(0, (4 * ranks - 1).bit_length()))


def _size(n: int) -> str:
    """A byte count as nccl-tests' ``-b``/``-e`` take it (K, M, G suffixes: powers of 1024)."""
    for suffix, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{suffix}"
    return str(n)


def _nccl_tests_args(op: str, ranks: int) -> str:
    return (
        f"-b {_size(_min_bytes(op, ranks))} -e {_size(MAX_BYTES)} -f {STEP_FACTOR} -g 1 "
        f"-n {ITERS} -w {WARMUP}"
    )


def _env(scale: Scale, cross_nic: str) -> dict[str, str]:
    return {"NCCL_IB_HCA": scale.nccl_ib_hca, "NCCL_CROSS_NIC": cross_nic}


def _deepep(op: str, scale: Scale, cfg: MoEConfig) -> str:
    """DeepEP's test script and its arguments for one EP group."""
    script = {
        "deepep_internode": "tests/test_internode.py",
        "deepep_intranode": "tests/test_intranode.py",
        "deepep_low_latency": "tests/test_low_latency.py",
    }[op]
    tokens = DEEPEP_TOKENS["low_latency" if op == "deepep_low_latency" else "normal"]
    return (
        f"{script} --num-processes {scale.gpus_per_node} --num-tokens {tokens} "
        f"--hidden {cfg.hidden_size} --num-topk {cfg.num_experts_per_tok} "
        f"--num-experts {cfg.n_routed_experts}"
    )


_HEADER = "# {what}, written by topo acceptance from {fabric}\n"


def _sbatch(
    t: KitTest, scale: Scale, env: dict[str, str], server_gpus: int, body: str, fabric: str
) -> str:
    tasks = 1 if t.tool == "deepep" else scale.gpus_per_node
    lines = [
        "#!/bin/bash",
        _HEADER.format(what=f"test {t.id}", fabric=fabric).rstrip("\n"),
        f"#SBATCH --job-name=acceptance-{t.id}",
        f"#SBATCH --nodes={t.nodes}",
        f"#SBATCH --ntasks-per-node={tasks}",
        f"#SBATCH --gpus-per-node={server_gpus}",
        f"#SBATCH --nodelist={hostlist_ranged(t.hosts)}",
        "#SBATCH --exclusive",
        "#SBATCH --time=01:00:00",
        f"#SBATCH --output={t.log}",
        "set -euo pipefail",
        *(f"export {k}={shlex.quote(v)}" for k, v in env.items()),
        body,
        "",
    ]
    return "\n".join(lines)


def _tests_for(
    scale: Scale, cfg: MoEConfig, hosts: list[str], cross_nic: str, server_gpus: int, fabric: str
) -> list[tuple[KitTest, str]]:
    """The tests of one scale, each with its batch script's text."""
    names = tuple(hosts[i] for i in scale.servers)
    env = _env(scale, cross_nic)
    ops: tuple[str, ...]
    if scale.kind == "servers":
        ops = NCCL_TESTS_OPS
    elif scale.kind == "ep":
        deepep = "deepep_internode" if len(scale.servers) > 1 else "deepep_intranode"
        ops = ("alltoall", deepep, "deepep_low_latency")
    else:
        ops = PLANE_OPS
    out = []
    hostfile = f"hosts/{scale.name}.txt"
    for op in ops:
        tid = f"{op}.{scale.name}"
        log = f"logs/{tid}.log"
        g = scale.gpus_per_node
        xs = " ".join(f"-x {k}={shlex.quote(v)}" for k, v in env.items())
        if op.startswith("deepep"):
            master = {"MASTER_ADDR": names[0], "MASTER_PORT": str(MASTER_PORT),
                      "WORLD_SIZE": str(len(names))}  # fmt: skip
            run = _deepep(op, scale, cfg)
            inner = 'cd "${DEEPEP_DIR:-$HOME/DeepEP}" && RANK=$%s exec python ' + run
            mx = " ".join(f"-x {k}={v}" for k, v in master.items())
            mpirun = (
                f"mpirun -np {len(names)} --hostfile {hostfile} --map-by ppr:1:node {mx} {xs} "
                f"bash -c {shlex.quote(inner % 'OMPI_COMM_WORLD_RANK')} > {log} 2>&1"
            )
            body = "\n".join(
                [*(f"export {k}={v}" for k, v in master.items()),
                 f"srun --ntasks-per-node=1 bash -c {shlex.quote(inner % 'SLURM_NODEID')}"]
            )  # fmt: skip
            expected = None
            tool = "deepep"
        else:
            binary = f'"${{NCCL_TESTS_DIR:-$HOME/nccl-tests/build}}/{op}_perf"'
            args = _nccl_tests_args(op, scale.ranks)
            local = (
                f"env CUDA_VISIBLE_DEVICES={scale.local_gpu} "
                if scale.local_gpu is not None
                else ""
            )
            mpirun = (
                f"mpirun -np {scale.ranks} --hostfile {hostfile} --map-by ppr:{g}:node "
                f"--bind-to numa {xs} {local}{binary} {args} > {log} 2>&1"
            )
            body = f"srun --mpi=pmix {local}{binary} {args}"
            expected = f"expected/{op}.{scale.curve_nodes}x{g}.json"
            tool = "nccl-tests"
        t = KitTest(
            id=tid, tool=tool, op=op, scale=scale.name, kind=scale.kind, ranks=scale.ranks,
            nodes=len(names), gpus_per_node=g, hosts=names, sbatch=f"slurm/{tid}.sbatch",
            mpirun=mpirun, log=log, expected=expected,
        )  # fmt: skip
        out.append((t, _sbatch(t, scale, env, server_gpus, body, fabric)))
    return out


def _curve_json(rep: CollectiveReport) -> str:
    rows = [
        {
            "size_bytes": r.size_bytes,
            "count": r.count,
            "time_us": r.time_us,
            "algbw_GBps": r.algbw_GBps,
            "busbw_GBps": r.busbw_GBps,
            "busbw_low_GBps": r.busbw_GBps / BAND,
            "busbw_high_GBps": r.busbw_GBps * BAND,
            "algorithm": r.algorithm,
            "protocol": r.protocol,
        }
        for r in rep.rows
    ]
    doc = {
        "op": rep.op,
        "gpus": rep.gpus,
        "nodes": rep.nodes,
        "gpus_per_node": rep.gpus_per_node,
        "nccl_release": rep.nccl_release,
        "tolerance": _tolerance(),
        "rows": rows,
    }
    return json.dumps(doc, indent=1) + "\n"


def _tolerance() -> dict[str, Any]:
    return {
        "score": "RMS of log(expected / measured time) over the rows of min_scored_bytes and more",
        "agree": AGREE,
        "band_factor": BAND,
        "min_scored_bytes": MIN_SCORED_BYTES,
    }


def make_kit(
    G: nx.Graph,
    *,
    hosts: str | None = None,
    ep: int | None = None,
    config: MoEConfig | None = None,
) -> Kit:
    """The bring-up kit of a design: every test, its scripts and its expected curve.

    Parameters
    ----------
    G : networkx.Graph
        The design (a fabric with GPUs; schema in :mod:`topo.fabric`).
    hosts : str, optional
        Host names as ``topo export slurm --hosts`` takes them (a pattern with ``{node}`` or
        a file of names; default: an imported fabric's, else ``node{node}``).
    ep : int, optional
        EP size (GPUs; default :func:`topo.moe.default_ep`).
    config : MoEConfig, optional
        The MoE model of the DeepEP tests (default DeepSeek-V3).

    Returns
    -------
    Kit
        ``files``: ``manifest.json``, ``slurm/<id>.sbatch``, ``slurm/topology.conf`` (as
        ``topo export slurm``), ``nccl.env`` (as ``topo export nccl``), ``hosts/<scale>.txt``
        (OpenMPI hostfiles), ``mpirun.sh``, ``submit.sh``, ``expected/<op>.<nodes>x<G>.json``
        (sizes in B, times in µs, busbw in GB/s with the band), ``twin.csv``
        (:func:`topo.acceptance.twin.write_twin`).

    Raises
    ------
    TopoError
        As :func:`kit_scales`, :func:`topo.export.export` (host names) and
        :func:`topo.collective.collective_table`.

    Examples
    --------
    >>> from topo.builders import build
    >>> kit = make_kit(build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2))
    >>> len(kit.tests), kit.tests[0].id, kit.tests[0].log  # 5 scales x 4 ops + an EP group's 3
    (23, 'all_reduce.1x2', 'logs/all_reduce.1x2.log')
    """
    from topo.acceptance.twin import twin_rows, write_twin

    scales = kit_scales(G, ep, config)
    cfg = config or default_config()
    view = host_view(compute_view(G))
    names = fabric_hosts(view, hosts)
    server_gpus = _gpu_servers(G)[0][0]
    fabric = str(G.graph.get("name", "fabric"))
    env_text = export(G, "nccl", ExportOptions(hosts=hosts)).text
    blocks = sum(
        1 for line in env_text.splitlines() if line.startswith("# ") and "warning" not in line
    )
    cross = next(
        (ln.split("=", 1)[1] for ln in env_text.splitlines() if "NCCL_CROSS_NIC=" in ln), "0"
    )
    notes: list[str] = []
    if blocks > 1:
        notes.append(
            "the servers' NCCL environments differ (nccl.env has one block per group of "
            "servers); the scripts export the first server's"
        )
    files: dict[str, str] = {}
    tests: list[KitTest] = []
    mpirun = ["#!/bin/bash", _HEADER.format(what="every test as mpirun", fabric=fabric).rstrip(),
              'cd "$(dirname "$0")"', "mkdir -p logs"]  # fmt: skip
    submit = ["#!/bin/bash", _HEADER.format(what="every batch script", fabric=fabric).rstrip(),
              'cd "$(dirname "$0")"', "mkdir -p logs"]  # fmt: skip
    for scale in scales:
        files[f"hosts/{scale.name}.txt"] = "".join(
            f"{names[i]} slots={scale.gpus_per_node}\n" for i in scale.servers
        )
        for t, script in _tests_for(scale, cfg, names, cross, server_gpus, fabric):
            tests.append(t)
            files[t.sbatch] = script
            mpirun.append(t.mpirun)
            submit.append(f"sbatch {t.sbatch}")
    files["mpirun.sh"] = "\n".join(mpirun) + "\n"
    files["submit.sh"] = "\n".join(submit) + "\n"
    try:
        files["slurm/topology.conf"] = export(G, "slurm", ExportOptions(hosts=hosts)).text
    except TopoError as exc:  # a Slim Fly: no tree; the block form
        files["slurm/topology.conf"] = export(
            G, "slurm", ExportOptions(hosts=hosts, slurm_format="block")
        ).text
        notes.append(f"slurm/topology.conf is topology/block: {exc}")
    files["nccl.env"] = env_text
    curves = expected_curves(G, tests)
    for path, rep in curves.items():
        files[path] = _curve_json(rep)
    files["twin.csv"] = write_twin(twin_rows(curves.values()), "csv")
    ep_size = next((s.ranks for s in scales if s.kind == "ep"), None)
    manifest = {
        "version": KIT_VERSION,
        "fabric": fabric,
        "servers": len(names),
        "gpus_per_node": server_gpus,
        "ep": ep_size,
        "moe_model": cfg.name,
        "design": "design.json",
        "tolerance": _tolerance(),
        "notes": notes,
        "tests": [t.to_dict() for t in tests],
    }
    files["manifest.json"] = json.dumps(manifest, indent=1) + "\n"
    return Kit(
        fabric=fabric,
        servers=len(names),
        gpus_per_node=server_gpus,
        ep=ep_size or 0,
        tests=tuple(tests),
        curves=curves,
        files=files,
        notes=tuple(notes),
    )


def expected_curves(
    G: nx.Graph, tests: list[KitTest] | tuple[KitTest, ...]
) -> dict[str, CollectiveReport]:
    """The expected curve of every nccl-tests test's ``expected`` file, the sub-cluster's
    rates computed once per (servers, G) for all its ops, on one switch graph of the design
    (:func:`topo.collective.switch_graph`) for every scale.

    Parameters
    ----------
    G : networkx.Graph
        The design.
    tests : sequence of KitTest
        The kit's tests.

    Returns
    -------
    dict of str to CollectiveReport
        Curve file -> the predicted table at nccl-tests' sizes of the test (``-b`` to
        ``-e 8G``, ``-f 2``, float).
    """
    c = fabric_constants(G)
    wanted: dict[tuple[int, int], dict[str, str]] = {}
    for t in tests:
        if t.expected is None:
            continue
        nodes_g = t.expected.rsplit(".", 2)[1]  # "<nodes>x<G>"
        n, g = (int(x) for x in nodes_g.split("x"))
        wanted.setdefault((n, g), {})[t.expected] = t.op
    with_gpus = [members for _, members in _gpu_servers(G)]
    network = [v for v, k in G.nodes(data="kind") if k not in ("gpu", "nic", "nvswitch")]
    out: dict[str, CollectiveReport] = {}
    switches = switch_graph(G)  # every scale keeps every switch and switch link
    for (n, g), paths in wanted.items():
        # the sub-fabric the collective runs on (every switch, the first n servers whole), as
        # fabric_rates selects it: each scale's flow problems and inventories are then of its
        # own size, not the whole fabric's
        H = _sub_fabric(G, {*network, *(v for m in with_gpus[:n] for v in m)})
        rates = fabric_rates(H, n * g, g, switches=switches)
        for path, op in paths.items():
            out[path] = collective_table(
                H, op, gpus=n * g, gpus_per_node=g, min_bytes=_min_bytes(op, n * g),
                max_bytes=MAX_BYTES, step_factor=STEP_FACTOR, constants=c, rates=rates,
            )  # fmt: skip
    return out


def _sub_fabric(G: nx.Graph, keep: set[Any]) -> nx.Graph:
    """The vertices, edges and attributes of ``G.subgraph(keep).copy()`` (in ``G``'s order,
    where the view's copy takes the set's), built from the kept vertices' own adjacency, each
    edge once, rather than through a view that filters every vertex of ``G``; ``G`` itself
    when every vertex is kept."""
    if len(keep) == G.number_of_nodes():
        return G
    H = G.__class__()
    H.graph.update(G.graph)
    nodes = [v for v in G if v in keep]
    H.add_nodes_from((v, G.nodes[v]) for v in nodes)
    adj = G.adj
    left = set(nodes)  # each edge once, where its first end comes (as copy() first adds it)
    for u in nodes:
        left.discard(u)
        H.add_edges_from((u, v, d) for v, d in adj[u].items() if v in left)
    return H


def write_kit(kit: Kit, folder: str | Path, design: str | Path, force: bool = False) -> Path:
    """Write a kit into ``folder`` whole or not at all.

    The files go to a temporary folder beside ``folder`` (each by
    :func:`topo.files.write_atomic`), which then takes ``folder``'s name; the design's file
    is copied in as ``design.json`` (what ``--results`` re-predicts on).

    Parameters
    ----------
    kit : Kit
        From :func:`make_kit`.
    folder : str or Path
        The kit's folder: absent, or empty, or (with ``force``) replaced.
    design : str or Path
        The design's fabric JSON.
    force : bool
        Replace a folder that holds files.

    Returns
    -------
    Path
        ``folder``.

    Raises
    ------
    TopoError
        ``folder`` is a file, or holds files and ``force`` is not given, or cannot be written.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise TopoError(f"{folder}: exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise TopoError(
            f"{folder}: a folder that holds files; give force to replace it", param="force"
        )
    parent = folder.parent if str(folder.parent) else Path(".")
    if not parent.is_dir():
        raise TopoError(f"{folder}: its folder {parent} does not exist")
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=parent))
    except OSError as exc:
        raise TopoError(f"{folder}: cannot write: {exc.strerror}") from None
    try:
        (tmp / "logs").mkdir()
        for sub in {str(Path(p).parent) for p in kit.files} - {"."}:
            (tmp / sub).mkdir(parents=True, exist_ok=True)
        for path, text in kit.files.items():
            write_atomic(tmp / path, text)
        shutil.copyfile(design, tmp / "design.json")
        for script in ("mpirun.sh", "submit.sh"):
            os.chmod(tmp / script, 0o755)
        os.chmod(tmp, 0o777 & ~_umask())
        if folder.is_dir():
            old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".old", dir=parent))
            os.replace(folder, old / "kit")
            os.replace(tmp, folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, folder)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise TopoError(f"{folder}: cannot write: {exc.strerror or exc}") from None
        raise
    return folder


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = [
    "BAND",
    "KIT_VERSION",
    "Kit",
    "KitTest",
    "Scale",
    "expected_curves",
    "kit_scales",
    "make_kit",
    "write_kit",
]
