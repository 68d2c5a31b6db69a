"""Jobs on one fabric: what each runs (its traffic) and where (its servers, or a placement policy).

A :class:`Job` names its servers, or asks for ``count`` servers placed by a policy
(:func:`place_jobs`):

- ``packed``: topology-aware packing; the free servers in order of their block (a leaf of a
  two-layer fat tree, a pod of a three-layer one: :func:`topo.fabric.blocks_below_top`), so a
  job fills whole leaves or blocks in order;
- ``slurm-tree``: fewest leaves first, as Slurm's ``topology/tree`` plugin chooses: the
  emptiest block that holds the whole job (best fit), else the blocks with the most free
  servers first until the job fits (SchedMD, ``topology.conf`` and ``topology/tree``
  documentation);
- ``slurm-block``: as Slurm's ``topology/block`` plugin with the fabric's aligned
  ``BlockSizes`` (:func:`topo.export.slurm_blocks`: base blocks of one leaf group, aggregates
  of ``2^j`` consecutive ones): the smallest block size that holds the job, and within it the
  aligned aggregate with the fewest free servers that still fits (best fit); a job larger
  than every block takes the largest aggregates with the most free servers first (SchedMD,
  ``topology.conf(5)`` and the Topology Guide; close to the plugin, not its exact code);
- ``fragmented``: a seeded random choice among the free servers, as an idle cluster hands out
  servers after churn.

Jobs are placed in the order given; a job's servers are no longer free for the jobs after it,
and the storage servers any job names are never free for compute. A storage server is any
server of the fabric: one with GPUs, or a host without GPUs (the hosts that ``topo import
--compute-host-regex`` does not match keep their NICs and get no GPUs); a host without GPUs is
never a job's compute server. Its NICs' cables are its capacity (it has no PCIe or NVLink
side: :func:`topo.flow.reduce.contract_servers`).

Each job's traffic is a :class:`topo.traffic.Demand` over servers (bytes within a server cross
NVLink, not the fabric), normalised so that its concurrent-flow rate ``theta`` (B/s per byte of
demand) *is* the job's busbw (B/s):

- ``alltoall``: every GPU of the job sends to every other GPU of the job (EP dispatch and
  combine); ``1 / (n - 1)`` bytes per ordered pair of GPUs, ``n`` the job's GPUs, so that
  busbw = pair rate x (n - 1), nccl-tests' alltoall busbw (``doc/PERFORMANCE.md``);
- ``ring``: a ring all-reduce's neighbour exchange (:func:`topo.traffic.ring_step`), one byte
  per server to its successor in the job's server order: NCCL runs one ring per NIC, each
  crossing every server boundary once, so a server sends ``busbw`` B/s to its successor
  (NCCL ``src/graph/rings.cc``; busbw as nccl-tests defines it for all-reduce);
- ``storage_read``: every GPU of the job reads from the job's ``storage`` servers, evenly
  spread over them; busbw is the read rate per GPU (a 3FS-like read: DeepSeek, 3FS
  ``README.md``, "Peak throughput");
- ``checkpoint_write``: every GPU of the job writes to the job's ``storage`` servers, evenly
  spread over them (a checkpoint burst); busbw is the write rate per GPU;
- ``pipeline``: pipeline-parallel send/recv between consecutive stages. The job's servers, in
  order, are cut into ``stages`` equal stages; server ``j`` of stage ``i`` exchanges with
  server ``j`` of stage ``i + 1``, every GPU with the GPU of the same local rank (Megatron-LM's
  pipeline groups: the ranks ``tp * dp`` apart), activations forward and gradients backward at
  once (the 1F1B steady state: Narayanan et al., SC 2021, section 2.2). One byte per GPU and
  direction, so busbw is a GPU's send rate to its peer, nccl-tests' sendrecv busbw (= algbw,
  ``doc/PERFORMANCE.md``).

A job's ``weight`` (default 1) is its share under weighted max-min fairness
(:mod:`topo.place.share`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from topo.errors import TopoError
from topo.export import fabric_hosts, slurm_blocks
from topo.fabric import SWITCH_KINDS, blocks_below_top, natural_key, servers, terminal_kind
from topo.traffic import Demand, ring_step

__all__ = [
    "MAX_WEIGHT",
    "POLICIES",
    "STORAGE_TRAFFIC",
    "TRAFFIC",
    "Job",
    "PlacedJob",
    "job_demand",
    "place_jobs",
    "server_blocks",
    "server_gpus",
]

TRAFFIC = ("alltoall", "ring", "pipeline", "storage_read", "checkpoint_write")
"""The traffic a job can run."""

STORAGE_TRAFFIC = ("storage_read", "checkpoint_write")
"""The traffic between a job's GPUs and its storage servers."""

MAX_WEIGHT = 1e6
"""The largest weight of a job (weights lie in ``[1 / MAX_WEIGHT, MAX_WEIGHT]``)."""

POLICIES = ("packed", "fragmented", "slurm-tree", "slurm-block")
"""The placement policies of a job given by ``count``."""


class JobError(TopoError):
    """A job a jobs file describes that is malformed or that the fabric cannot hold (a server it
    lacks, too few free servers, a pipeline's stages, a weight out of range). The message names
    the job; ``topo place`` prefixes it with the jobs file."""


@dataclass(frozen=True)
class Job:
    """A job: a name, its traffic, and its servers or how many servers to place.

    Attributes
    ----------
    name : str
        Shown in reports; unique among the jobs.
    traffic : {"alltoall", "ring", "pipeline", "storage_read", "checkpoint_write"}
        What the job sends (module notes).
    servers : tuple of server ids, optional
        The job's servers (``node`` ids), explicitly. Exactly one of ``servers`` and ``count``.
    count : int, optional
        How many servers to place by ``policy``.
    policy : {"packed", "fragmented", "slurm-tree", "slurm-block"}
        How ``count`` servers are chosen among the free ones (module notes).
    storage : tuple of server ids
        The storage servers a ``storage_read`` job reads from, or a ``checkpoint_write`` job
        writes to (not the job's own servers): servers with GPUs, or hosts without GPUs (an
        import's non-compute hosts).
    stages : int, optional
        A ``pipeline`` job's stages (>= 2; they divide its servers).
    weight : float
        Its weight under weighted max-min fairness (a job of weight 2 gets twice the busbw of a
        job of weight 1 at a link both fill); in ``[1 / MAX_WEIGHT, MAX_WEIGHT]``.
    """

    name: str
    traffic: str
    servers: tuple[Hashable, ...] | None = None
    count: int | None = None
    policy: str = "packed"
    storage: tuple[Hashable, ...] = ()
    stages: int | None = None
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.traffic not in TRAFFIC:
            raise JobError(
                f"job {self.name!r}: traffic must be one of {', '.join(TRAFFIC)}, "
                f"got {self.traffic!r}"
            )
        if self.policy not in POLICIES:
            raise JobError(
                f"job {self.name!r}: policy must be one of {', '.join(POLICIES)}, "
                f"got {self.policy!r}"
            )
        if (self.servers is None) == (self.count is None):
            raise JobError(f"job {self.name!r}: give exactly one of servers and count")
        if self.count is not None and self.count < 1:
            raise JobError(f"job {self.name!r}: count must be >= 1, got {self.count}")
        if self.servers is not None and len(set(self.servers)) != len(self.servers):
            raise JobError(f"job {self.name!r}: its servers repeat")
        if self.traffic in STORAGE_TRAFFIC:
            if not self.storage:
                raise JobError(f"job {self.name!r}: {self.traffic} needs storage servers")
            if len(set(self.storage)) != len(self.storage):
                raise JobError(f"job {self.name!r}: its storage servers repeat")
        elif self.storage:
            raise JobError(
                f"job {self.name!r}: storage servers are for storage_read and checkpoint_write "
                "jobs only"
            )
        if not (1 / MAX_WEIGHT <= self.weight <= MAX_WEIGHT):
            raise JobError(
                f"job {self.name!r}: weight must lie in [{1 / MAX_WEIGHT:g}, {MAX_WEIGHT:g}], "
                f"got {self.weight!r}"
            )
        self._check_stages()

    def _check_stages(self) -> None:
        if self.traffic != "pipeline":
            if self.stages is not None:
                raise JobError(f"job {self.name!r}: stages are for pipeline jobs only")
            return
        if self.stages is None or self.stages < 2:
            got = "none given" if self.stages is None else f"got {self.stages!r}"
            raise JobError(f"job {self.name!r}: a pipeline needs stages >= 2 ({got})")
        n = self.count if self.count is not None else len(self.servers or ())
        if n % self.stages:
            raise JobError(
                f"job {self.name!r}: {self.stages} stages must divide its {n} servers "
                "(each stage takes whole servers)"
            )


@dataclass(frozen=True)
class PlacedJob:
    """A job with its servers chosen.

    Attributes
    ----------
    job : Job
        The job as asked.
    servers : tuple of server ids
        Its servers, in the order its traffic visits them (ring order).
    gpus : int
        Its GPUs (the servers' GPUs summed).
    """

    job: Job
    servers: tuple[Hashable, ...]
    gpus: int


def server_blocks(G: nx.Graph) -> dict[Hashable, int]:
    """Each server's block: the index in :func:`topo.fabric.blocks_below_top` of the block of
    the switch its first NIC (in natural order) is cabled to. On a fabric of one switch tier
    (no tier below the top), each switch is a block, in natural order.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs.

    Returns
    -------
    dict
        Server id -> block index; servers with no NIC cabled to a switch are left out.

    Examples
    --------
    >>> from topo.builders import build
    >>> server_blocks(build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1))[3]
    1
    """
    blocks = blocks_below_top(G)
    if not blocks:
        switches = [v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS]
        blocks = [[s] for s in sorted(switches, key=natural_key)]
    where = {s: i for i, b in enumerate(blocks) for s in b}
    out: dict[Hashable, int] = {}
    for sid, verts in servers(G).items():
        for v in verts:
            if G.nodes[v]["kind"] != "nic":
                continue
            sw = sorted((u for u in G.adj[v] if u in where), key=natural_key)
            if sw:
                out[sid] = where[sw[0]]
                break
    return out


def place_jobs(
    G: nx.Graph, jobs: Sequence[Job], seed: int | np.random.Generator | None = 0
) -> list[PlacedJob]:
    """Place the jobs on the fabric's free servers, in order.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs (:mod:`topo.fabric`).
    jobs : sequence of Job
        The jobs; names unique.
    seed : int, numpy.random.Generator or None
        The random stream of the ``fragmented`` policy.

    Returns
    -------
    list of PlacedJob
        One per job, in order.

    Raises
    ------
    TopoError
        A fabric without GPUs; repeated job names; a job naming a server the fabric lacks, one
        with no NIC cabled to a switch, a storage server, a host without GPUs, or one already
        taken by an earlier job; more servers asked for than are free (servers with GPUs, not
        storage, not taken); a storage server not of the fabric.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    >>> [p.servers for p in place_jobs(G, [Job("a", "ring", count=3)])]
    [(0, 1, 2)]
    """
    if terminal_kind(G) != "gpu":
        raise JobError(
            "jobs are placed on a fabric with GPUs: they take whole servers (an imported dump "
            "has GPUs when its hosts are given their GPU count)"
        )
    names = [j.name for j in jobs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise JobError(f"job names must be unique; {dup[0]!r} repeats")
    rng = np.random.default_rng(seed)
    all_servers = servers(G)
    gpus = server_gpus(G)
    block = server_blocks(G)
    storage = {s for j in jobs for s in j.storage}
    for j in jobs:
        for s in j.storage:
            if s not in all_servers:
                raise JobError(
                    f"job {j.name!r}: storage server {s!r} is not a server of the fabric"
                    + _gpuless_hint(gpus)
                )
    # hosts without GPUs (an import's storage hosts) serve only as storage, never for compute
    free = [s for s in all_servers if s in block and s not in storage and gpus[s] > 0]
    placed = []
    aligned: tuple[list[list[Hashable]], tuple[int, ...]] | None = None
    for j in jobs:
        if j.servers is not None:
            for s in j.servers:
                _check_free(j.name, s, all_servers, block, storage, free, gpus)
            chosen = list(j.servers)
        else:
            assert j.count is not None
            if j.count > len(free):
                raise JobError(
                    f"job {j.name!r} asks for {j.count} servers; only {len(free)} are free"
                )
            if j.policy == "slurm-block":
                if aligned is None:
                    aligned = _aligned_blocks(G)
                chosen = _slurm_block(j.count, free, *aligned)
            else:
                chosen = _choose(j.policy, j.count, free, block, rng)
        taken = set(chosen)
        free = [s for s in free if s not in taken]
        placed.append(PlacedJob(j, tuple(chosen), sum(gpus[s] for s in chosen)))
    return placed


def _check_free(
    name: str,
    s: Hashable,
    all_servers: dict[Hashable, list[str]],
    block: dict[Hashable, int],
    storage: set[Hashable],
    free: list[Hashable],
    gpus: dict[Hashable, int],
) -> None:
    """A server a job names must be the fabric's, cabled, with GPUs, not storage, not yet
    taken."""
    if s not in all_servers:
        raise JobError(f"job {name!r}: server {s!r} is not a server of the fabric")
    if s not in block:
        raise JobError(f"job {name!r}: server {s!r} has no NIC cabled to a switch")
    if s in storage:
        raise JobError(f"job {name!r}: server {s!r} is a storage server")
    if gpus[s] == 0:
        raise JobError(
            f"job {name!r}: server {s!r} has no GPUs (a storage host); name it in a job's "
            "storage instead"
        )
    if s not in free:
        raise JobError(f"job {name!r}: server {s!r} is already taken by an earlier job")


def _gpuless_hint(gpus: dict[Hashable, int], limit: int = 3) -> str:
    """`` (its hosts without GPUs: 'a', 'b' and 3 more)``, or nothing when it has none."""
    none = [s for s, n in gpus.items() if n == 0]
    if not none:
        return ""
    more = f" and {len(none) - limit:,} more" if len(none) > limit else ""
    return f" (its hosts without GPUs: {', '.join(map(repr, none[:limit]))}{more})"


def _choose(
    policy: str,
    count: int,
    free: list[Hashable],
    block: dict[Hashable, int],
    rng: np.random.Generator,
) -> list[Hashable]:
    """``count`` of the ``free`` servers (in natural order) by ``policy``."""
    if policy == "fragmented":
        idx = sorted(rng.choice(len(free), size=count, replace=False).tolist())
        return [free[i] for i in idx]
    by_block: dict[int, list[Hashable]] = {}
    for s in free:
        by_block.setdefault(block[s], []).append(s)
    if policy == "packed":
        order = sorted(by_block)
    else:  # slurm-tree: the emptiest block that fits, else the fullest blocks first
        fits = [b for b in by_block if len(by_block[b]) >= count]
        if fits:
            order = [min(fits, key=lambda b: (len(by_block[b]), b))]
        else:
            order = sorted(by_block, key=lambda b: (-len(by_block[b]), b))
    chosen: list[Hashable] = []
    for b in order:
        chosen += by_block[b][: count - len(chosen)]
        if len(chosen) == count:
            break
    return chosen


def server_gpus(G: nx.Graph) -> dict[Hashable, int]:
    """Each server's GPUs.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.

    Returns
    -------
    dict
        Server id (``node``) -> its GPU count, every server of :func:`topo.fabric.servers`.

    Examples
    --------
    >>> from topo.builders import build
    >>> server_gpus(build("ft2", switch_ports=4, gpus_per_node=2, nics_per_node=2))[3]
    2
    """
    nodes = G.nodes
    return {s: sum(1 for v in vs if nodes[v]["kind"] == "gpu") for s, vs in servers(G).items()}


def _aligned_blocks(G: nx.Graph) -> tuple[list[list[Hashable]], tuple[int, ...]]:
    """Slurm's base blocks (server ids, in Slurm's order) and the aligned block sizes."""
    ids = list(servers(G))
    hosts = fabric_hosts(G, None)
    server_of = dict(zip(hosts, ids, strict=True))
    blocks = slurm_blocks(G, hosts)
    return [[server_of[h] for h in nodes] for _, nodes in blocks.blocks], blocks.sizes


def _slurm_block(
    count: int, free: list[Hashable], groups: list[list[Hashable]], sizes: tuple[int, ...]
) -> list[Hashable]:
    """``count`` free servers by Slurm's block rule (module notes)."""
    is_free = set(free)
    base = sizes[0]
    for size in sizes:
        if size < count:
            continue
        m = size // base  # base blocks per aggregate of this level
        best: list[Hashable] | None = None
        for start in range(0, len(groups) - m + 1, m):
            members = [s for g in groups[start : start + m] for s in g if s in is_free]
            if len(members) >= count and (best is None or len(members) < len(best)):
                best = members
        if best is not None:
            return best[:count]
    m = sizes[-1] // base
    tops = [
        [s for g in groups[i : i + m] for s in g if s in is_free] for i in range(0, len(groups), m)
    ]
    chosen: list[Hashable] = []
    for t in sorted(tops, key=len, reverse=True):
        chosen += t[: count - len(chosen)]
        if len(chosen) == count:
            break
    return chosen


def job_demand(
    G: nx.Graph, placed: PlacedJob, gpus: Mapping[Hashable, int] | None = None
) -> Demand:
    """The job's traffic as a server-level demand whose concurrent-flow rate is its busbw.

    Parameters
    ----------
    G : networkx.Graph
        The fabric the job is placed on.
    placed : PlacedJob
        The job and its servers.
    gpus : mapping, optional
        Server id -> its GPUs (:func:`server_gpus`), when the caller has it (else counted).

    Returns
    -------
    Demand
        Server level, explicit entries (bytes; module notes for each traffic's normalisation).

    Raises
    ------
    TopoError
        An ``alltoall`` or ``ring`` job on fewer than two servers (no fabric traffic).

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    >>> p = place_jobs(G, [Job("a", "alltoall", servers=(0, 1, 2))])[0]
    >>> job_demand(G, p).entries[(0, 1)]   # 1 / (3 - 1) per GPU pair, one GPU per server
    0.5
    """
    j, ss = placed.job, placed.servers
    g = gpus if gpus is not None else server_gpus(G)
    if j.traffic in ("alltoall", "ring", "pipeline") and len(ss) < 2:
        raise JobError(
            f"job {j.name!r}: {j.traffic} on one server puts no traffic on the fabric; "
            "give it at least two servers"
        )
    if j.traffic == "ring":
        d = ring_step(list(ss), 1.0)
        return Demand("server", d.terminals, d.entries, name=j.name)
    entries: dict[tuple[Hashable, Hashable], float] = {}
    if j.traffic == "alltoall":
        n = placed.gpus
        for a in ss:
            for b in ss:
                if a != b:
                    entries[(a, b)] = g[a] * g[b] / (n - 1)
    elif j.traffic == "pipeline":
        assert j.stages is not None
        m = len(ss) // j.stages
        for i in range(m, len(ss)):  # server i exchanges with server i - m, rank by rank
            a, b = ss[i - m], ss[i]
            entries[(a, b)] = entries[(b, a)] = float(min(g[a], g[b]))
    elif j.traffic == "storage_read":  # each GPU reads 1 byte, spread over the storage servers
        for st in j.storage:
            for b in ss:
                entries[(st, b)] = g[b] / len(j.storage)
    else:  # checkpoint_write: each GPU writes 1 byte, spread over the storage servers
        for st in j.storage:
            for b in ss:
                entries[(b, st)] = g[b] / len(j.storage)
    terms = tuple(sorted({*ss, *j.storage}, key=natural_key))
    return Demand("server", terms, entries, name=j.name)
