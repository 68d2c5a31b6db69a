"""The tuner's choice among the candidates, and its restriction by NCCL_ALGO and NCCL_PROTO.

NCCL's tuner weighs every (algorithm, protocol) it has for an operation and takes the one of
least time (NVIDIA/nccl ``src/graph/tuning.cc``, ``ncclTopoGetAlgoTime``; ``src/enqueue.cc``,
``topoGetAlgoInfo``). A user narrows that choice with ``NCCL_ALGO`` and ``NCCL_PROTO``
(NCCL user guide, ``docs/userguide/source/env.rst``, NVIDIA/nccl v2.29.7-1): a comma-separated
list of names, not case sensitive, a leading ``^`` excluding the names instead; since NCCL 2.24
also per function, ``"ring;allreduce:tree,ring"`` (entries separated by ``;``, a function and
its list by ``:``, only the first entry without a function). NCCL parses both with
``parseList`` (``tuning.cc``) and zeroes the bandwidth of what they exclude, for the five
collectives only (``ncclFuncStr``: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce);
send/recv, and so nccl-tests' alltoall and sendrecv, choose their protocol apart from the tuner
(``src/enqueue.cc`` ``addP2pToPlan``: LL up to ``NCCL_P2P_LL_THRESHOLD`` per channel, else
Simple), which neither variable reaches. When nothing is left for an operation NCCL fails
("No algorithm/protocol available", ``ncclInvalidUsage``); so does :func:`ranked_candidates`.

:func:`tuner_restriction` parses the two lists, :func:`ranked_candidates` gives the candidates a
restriction leaves, fastest first, and :func:`candidate_record` shows one in a report's units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from topo.collective.constants import PROTOCOLS, NcclConstants
from topo.collective.fabric_rates import FabricRates
from topo.collective.model import Candidate, busbw_factor, candidates
from topo.errors import TopoError
from topo.units import Bps_to_GBps, s_to_us
from topo.wording import count, shown

NCCL_ALGORITHMS: dict[str, str] = {
    "Tree": "tree",
    "Ring": "ring",
    "CollNetDirect": "collnet_direct",
    "CollNetChain": "collnet_chain",
    "NVLS": "nvls",
    "NVLSTree": "nvls_tree",
    "PAT": "pat",
}
"""NCCL_ALGO's names (NCCL 2.29 ``ncclAlgoStr``, ``src/init.cc``) and topo's for them. topo does
not model CollNet (in-network reduction): its two names are accepted and leave nothing of
their own."""

NCCL_FUNCTIONS: dict[str, str] = {
    "Broadcast": "broadcast",
    "Reduce": "reduce",
    "AllGather": "all_gather",
    "ReduceScatter": "reduce_scatter",
    "AllReduce": "all_reduce",
}
"""The functions NCCL_ALGO and NCCL_PROTO govern (NCCL 2.29 ``ncclFuncStr``) and topo's ops."""

TUNED_OPS = frozenset(NCCL_FUNCTIONS.values())
"""The ops whose choice NCCL_ALGO and NCCL_PROTO restrict; alltoall and sendrecv are send/recv."""

ALGORITHM_ORDER = ("ring", "tree", "nvls", "nvls_tree", "pat", "pairwise", "p2p")
"""topo's algorithms in the order a report lists them (then each protocol in NCCL's order)."""


def _key(name: str) -> str:
    """A name as matched: case and underscores aside (NCCL's strcasecmp; ``nvls_tree`` is
    NVLSTree, ``all_reduce`` is AllReduce)."""
    return name.strip().lower().replace("_", "")


@dataclass(frozen=True)
class TunerRestriction:
    """What NCCL_ALGO and NCCL_PROTO leave the tuner, per op.

    Attributes
    ----------
    algo, proto : str or None
        The lists as given (NCCL's syntax), None when not given.
    algorithms : dict of str to frozenset of str
        Per op of :data:`TUNED_OPS`, topo's names of the algorithms allowed.
    protocols : dict of str to frozenset of str
        Per op of :data:`TUNED_OPS`, the protocols allowed (``LL``, ``LL128``, ``Simple``).
    """

    algo: str | None
    proto: str | None
    algorithms: Mapping[str, frozenset[str]]
    protocols: Mapping[str, frozenset[str]]

    def governs(self, op: str) -> bool:
        """Whether a list was given and applies to ``op`` (not alltoall nor sendrecv)."""
        return (self.algo is not None or self.proto is not None) and op in TUNED_OPS

    def allows(self, op: str, candidate: Candidate) -> bool:
        """Whether the tuner may take ``candidate`` for ``op`` (always, for an op not governed)."""
        if op not in TUNED_OPS:
            return True
        return (
            candidate.algorithm in self.algorithms[op] and candidate.protocol in self.protocols[op]
        )


def _parse_list(
    text: str, param: str, variable: str, elems: Mapping[str, str], what: str
) -> dict[str, frozenset[str]]:
    """NCCL's ``parseList`` (``src/graph/tuning.cc``, 2.29): ``[FUNC:][^]NAME,...;FUNC:...``,
    every function allowing every element until an entry names it (or, without a function,
    all of them)."""
    allowed = {op: frozenset(elems.values()) for op in TUNED_OPS}
    names = {_key(k): v for k, v in elems.items()}
    functions = {_key(k): v for k, v in NCCL_FUNCTIONS.items()}
    entries = [e for e in text.split(";") if e.strip()]
    if not entries:
        raise TopoError(
            f"{param} is empty: give a comma-separated list of {what} ({', '.join(elems)}), as "
            f"{variable} takes it",
            names=(param,),
        )
    for i, entry in enumerate(entries):
        parts = entry.split(":")
        if len(parts) > 2:
            raise TopoError(
                f"{param} {shown(text)}: entry {shown(entry)} has more than one ':' ({variable} "
                "entries are FUNCTION:LIST, separated by ';')",
                names=(param,),
            )
        if len(parts) == 1:
            if i > 0:
                raise TopoError(
                    f"{param} {shown(text)}: every entry but the first must name a function "
                    f"(e.g. allreduce:{entry.strip()}), as {variable} requires",
                    names=(param,),
                )
            ops = sorted(TUNED_OPS)
        else:
            fn = _key(parts[0])
            if fn not in functions:
                raise TopoError(
                    f"{param} {shown(text)}: {shown(parts[0].strip())} is not one of "
                    f"{variable}'s functions ({', '.join(NCCL_FUNCTIONS)}); alltoall and "
                    f"sendrecv run as send/recv, which {variable} does not govern",
                    names=(param,),
                )
            ops = [functions[fn]]
        body = parts[-1].strip()
        exclude = body.startswith("^")
        chosen = set()
        for token in body.lstrip("^").split(","):
            if not token.strip():
                continue
            if _key(token) not in names:
                raise TopoError(
                    f"{param} {shown(text)}: {shown(token.strip())} is not one of {variable}'s "
                    f"{what} ({', '.join(elems)}; not case sensitive, a leading ^ excludes); "
                    f"alltoall and sendrecv run as send/recv, which {variable} does not govern",
                    names=(param,),
                )
            chosen.add(names[_key(token)])
        every = frozenset(elems.values())
        for op in ops:
            allowed[op] = every - chosen if exclude else frozenset(chosen)
    return allowed


def tuner_restriction(algo: str | None = None, proto: str | None = None) -> TunerRestriction:
    """Parse ``NCCL_ALGO`` and ``NCCL_PROTO`` values as NCCL 2.29 reads them.

    Parameters
    ----------
    algo : str, optional
        Algorithms, e.g. ``"Ring"``, ``"ring,tree"``, ``"^tree"``, ``"ring;allreduce:nvlstree"``:
        NCCL's names (Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT), not case
        sensitive; topo's spellings (``nvls_tree``) are the same names.
    proto : str, optional
        Protocols (LL, LL128, Simple), in the same syntax.

    Returns
    -------
    TunerRestriction
        Every algorithm and protocol allowed for what a list does not restrict.

    Raises
    ------
    TopoError
        An empty list, an unknown name or function, an entry after the first without a
        function, an entry with two ``:`` (the message names ``algo`` or ``proto``).

    References
    ----------
    NVIDIA/nccl v2.29.7-1: ``docs/userguide/source/env.rst`` (NCCL_ALGO, NCCL_PROTO),
    ``src/graph/tuning.cc`` (``parseList``, ``ncclTopoTuneModel``), ``src/init.cc``
    (``ncclAlgoStr``, ``ncclProtoStr``, ``ncclFuncStr``).

    Examples
    --------
    >>> r = tuner_restriction("^tree", "Simple")
    >>> sorted(r.algorithms["all_reduce"]), sorted(r.protocols["all_gather"])
    (['collnet_chain', 'collnet_direct', 'nvls', 'nvls_tree', 'pat', 'ring'], ['Simple'])
    >>> sorted(tuner_restriction("ring;allreduce:tree").algorithms["all_reduce"])
    ['tree']
    """
    algorithms = (
        _parse_list(algo, "algo", "NCCL_ALGO", NCCL_ALGORITHMS, "algorithms")
        if algo is not None
        else {op: frozenset(NCCL_ALGORITHMS.values()) for op in TUNED_OPS}
    )
    protos = {p: p for p in PROTOCOLS}
    protocols = (
        _parse_list(proto, "proto", "NCCL_PROTO", protos, "protocols")
        if proto is not None
        else {op: frozenset(PROTOCOLS) for op in TUNED_OPS}
    )
    return TunerRestriction(algo, proto, algorithms, protocols)


NO_RESTRICTION = tuner_restriction()
"""The tuner's own choice: every candidate allowed."""


def _pairs(cands: list[Candidate]) -> str:
    return ", ".join(f"{k.algorithm}/{k.protocol}" for k in cands)


def _nothing_left(
    op: str, size_bytes: float, cands: list[Candidate], rates: FabricRates, r: TunerRestriction
) -> TopoError:
    """The error for a restriction that leaves ``op`` nothing: naming the list at fault (the
    algorithms, the protocols, or the two together) and what the model has."""
    algo_left = [k for k in cands if k.algorithm in r.algorithms[op]]
    proto_left = [k for k in cands if k.protocol in r.protocols[op]]
    names: tuple[str, ...]
    if r.algo is not None and not algo_left:
        who, names, verb = f"algo {shown(r.algo)}", ("algo",), "leaves"
    elif r.proto is not None and not proto_left:
        who, names, verb = f"proto {shown(r.proto)}", ("proto",), "leaves"
    else:
        who = f"algo {shown(r.algo)} with proto {shown(r.proto)}"
        names, verb = ("algo", "proto"), "leave"
    where = f"{count(rates.gpus, 'GPU')} ({count(rates.nodes, 'node')} x {rates.gpus_per_node})"
    hint = ""
    if "algo" in names and r.algorithms[op] & {"collnet_direct", "collnet_chain"}:
        hint = "; topo does not model CollNet (in-network reduction)"
    elif "algo" in names and "nvls" in r.algorithms[op] and rates.nodes > 1:
        hint = "; across servers NVLS needs CollNet, and NCCL runs NVLSTree instead"
    elif names == ("algo",) and r.algo is not None and ":" not in r.algo:
        hint = f"; to restrict one function only, name it (e.g. allreduce:{r.algo.strip()})"
    return TopoError(
        f"{who} {verb} no algorithm/protocol for {op} at {int(size_bytes):,} B on {where} "
        f'(NCCL would fail: "No algorithm/protocol available"); available: {_pairs(cands)}{hint}',
        names=names,
    )


def ranked_candidates(
    op: str,
    size_bytes: float,
    rates: FabricRates,
    c: NcclConstants,
    restriction: TunerRestriction | None = None,
) -> list[Candidate]:
    """The candidates the tuner weighs for ``op`` at ``size_bytes``, fastest first.

    Parameters
    ----------
    op, size_bytes, rates, c
        As for :func:`topo.collective.model.candidates` (size in B).
    restriction : TunerRestriction, optional
        NCCL_ALGO / NCCL_PROTO (:func:`tuner_restriction`); alltoall and sendrecv are not
        restricted (NCCL's send/recv ignores both). Default: none.

    Returns
    -------
    list of Candidate
        The allowed candidates sorted by the tuner's time (``Candidate.rank_s``, s), ties in
        the model's order; the first
        is the tuner's choice (:func:`topo.collective.model.choose`'s, without a restriction).

    Raises
    ------
    TopoError
        The restriction leaves nothing for ``op`` (naming ``algo`` or ``proto`` and what the
        model has); see also :func:`topo.collective.model.candidates`.

    References
    ----------
    NVIDIA/nccl v2.29.7-1 ``src/enqueue.cc`` (``topoGetAlgoInfo``: the least time among the
    enabled (algorithm, protocol); "No algorithm/protocol available" when none is).

    Examples
    --------
    >>> from topo.builders import build
    >>> from topo.collective.constants import load_constants
    >>> from topo.collective.fabric_rates import fabric_rates
    >>> G = build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=8,
    ...           nvlink_GBps=450)
    >>> rates, c = fabric_rates(G), load_constants()
    >>> best = ranked_candidates("all_reduce", 1 << 20, rates, c)[0]
    >>> forced = ranked_candidates("all_reduce", 1 << 20, rates, c, tuner_restriction("ring"))
    >>> (best.algorithm, forced[0].algorithm)
    ('tree', 'ring')
    """
    cands = candidates(op, size_bytes, rates, c)
    r = restriction or NO_RESTRICTION
    left = [k for k in cands if r.allows(op, k)]
    if not left:
        raise _nothing_left(op, size_bytes, cands, rates, r)
    return sorted(left, key=lambda k: k.rank_s)


_SHOWN_AS = {"algbw_Bps": "bandwidth_Bps"}
"""Candidate fields shown under another name: the model's bandwidth term, so that a record's
``algbw_GBps`` is nccl-tests' (size / time), as in a row."""

_FIRST = ("algorithm", "protocol", "time_us", "latency_us", "algbw_GBps", "busbw_GBps")


def candidate_record(
    candidate: Candidate,
    op: str,
    size_bytes: float,
    nranks: int,
    chosen: bool,
    expected_s: float | None = None,
) -> dict[str, Any]:
    """One candidate in a report's units, as nccl-tests would print it had NCCL chosen it.

    Every field of :class:`~topo.collective.model.Candidate` is shown, a ``*_s`` field in µs
    (``*_us``) and a ``*_Bps`` field in GB/s (``*_GBps``), others as they are; the model's
    bandwidth term ``algbw_Bps`` is shown as ``bandwidth_GBps``. Added: ``algbw_GBps`` and
    ``busbw_GBps``, nccl-tests' columns (size / time, times the busbw factor), and ``chosen``.

    Parameters
    ----------
    candidate : Candidate
        One (algorithm, protocol) and its cost.
    op : str
        The operation (for the busbw factor).
    size_bytes : float
        The nccl-tests size (B).
    nranks : int
        Ranks n.
    chosen : bool
        Whether the tuner takes it.
    expected_s : float, optional
        Its expected time (s, :func:`topo.collective.expected.expected`), shown as
        ``expected_time_us`` and ``expected_busbw_GBps``: what it would take if NCCL ran it.

    Returns
    -------
    dict
        ``algorithm``, ``protocol``, ``time_us``, ``latency_us``, ``algbw_GBps``,
        ``busbw_GBps`` first, then ``bandwidth_GBps``, ``bound``, any other field, ``chosen``;
        a rate that is not finite is None (JSON has no infinity).

    Examples
    --------
    >>> k = Candidate("ring", "Simple", 10e-6, 100e9, 10e-6 + 1e6 / 100e9, "nvlink")
    >>> rec = candidate_record(k, "all_gather", 1e6, 8, True)
    >>> round(rec["time_us"], 6), round(rec["algbw_GBps"], 6), round(rec["busbw_GBps"], 6)
    (20.0, 50.0, 43.75)
    """
    shown_fields: dict[str, Any] = {}
    for f in fields(candidate):
        value = getattr(candidate, f.name)
        name = _SHOWN_AS.get(f.name, f.name)
        if name.endswith("_Bps"):
            name, value = name[: -len("_Bps")] + "_GBps", Bps_to_GBps(value)
        elif name.endswith("_s"):
            name, value = name[: -len("_s")] + "_us", s_to_us(value)
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        shown_fields[name] = value
    algbw = size_bytes / candidate.time_s
    shown_fields["algbw_GBps"] = Bps_to_GBps(algbw)
    shown_fields["busbw_GBps"] = Bps_to_GBps(algbw * busbw_factor(op, nranks))
    record = {k: shown_fields.pop(k) for k in _FIRST if k in shown_fields}
    record.update(shown_fields)
    if expected_s is not None:
        exp_algbw = size_bytes / expected_s
        record["expected_time_us"] = s_to_us(expected_s)
        record["expected_busbw_GBps"] = Bps_to_GBps(exp_algbw * busbw_factor(op, nranks))
    record["chosen"] = chosen
    return record
