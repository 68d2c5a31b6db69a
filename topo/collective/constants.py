"""The constants of the NCCL cost model: one TOML file per NCCL release, overridable.

The default file is ``topo/data/nccl-2.29.toml``; each value in it names its source (NCCL's
``src/graph/tuning.cc``, ``topo.h``, ``search.cc``) or says that it was fitted, and to what.
A user file given to :func:`load_constants` (``topo collective --constants FILE.toml``) has the
same shape and holds only the keys it changes; unknown keys are refused.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from topo.errors import FormatError, TopoError
from topo.files import read_text
from topo.spec import parse_toml
from topo.wording import shown

DEFAULT_RELEASE = "2.29"
ARCHES = ("volta", "ampere", "hopper", "blackwell")
CPU_VENDORS = ("intel", "amd")
CPU_ARCHES = ("x86", "arm")
"""Host CPU architectures NCCL's tuner tells apart where the model replays it (its
``cpuArch``: x86; arm, e.g. the Grace CPU of a GB200 or GH200 superchip)."""
PROTOCOLS = ("LL", "LL128", "Simple")
"""NCCL's protocols, in the order of every per-protocol array of the constants file."""
CONSTANT_RANGE = (1e-6, 1e9)
"""Least and greatest non-zero number a constants file may give (a latency in µs, a rate in
GB/s, a chunk in bytes, an efficiency): the defaults run from 0.01 to about 2e6; outside these
no value is a cluster's, and the tables would print times of hundreds of digits."""


@dataclass(frozen=True)
class NcclConstants:
    """The constants file, validated, with accessors for the model.

    Attributes
    ----------
    data : dict
        The merged TOML tables (``model``, ``latency``, ``bandwidth``, ``efficiency``).
    origin : str
        Where the values came from (the default file, plus the override file if any).
    """

    data: dict[str, Any]
    origin: str

    # ---------------------------------------------------------------- model
    @property
    def release(self) -> str:
        """NCCL release the constants are taken from (e.g. ``"2.29"``)."""
        return str(self.data["model"]["nccl_release"])

    @property
    def arch(self) -> str:
        """GPU generation: volta, ampere, hopper or blackwell."""
        return str(self.data["model"]["arch"])

    @property
    def cpu_vendor(self) -> str:
        """intel or amd."""
        return str(self.data["model"]["cpu_vendor"])

    @property
    def cpu_arch(self) -> str:
        """The hosts' CPU architecture (:data:`CPU_ARCHES`): x86 or arm."""
        return str(self.data["model"]["cpu_arch"])

    def with_cpu_arch(self, cpu_arch: str) -> NcclConstants:
        """The same constants for hosts of another CPU architecture.

        Raises
        ------
        TopoError
            ``cpu_arch`` not one of :data:`CPU_ARCHES`.
        """
        if cpu_arch not in CPU_ARCHES:
            raise TopoError(
                f"cpu_arch must be one of {', '.join(CPU_ARCHES)}, got {shown(cpu_arch)}"
            )
        return self._with_model("cpu_arch", cpu_arch)

    def _with_model(self, key: str, value: object) -> NcclConstants:
        """A copy with ``[model] key`` set to ``value``."""
        data = copy.deepcopy(self.data)
        data["model"][key] = value
        return NcclConstants(data, self.origin)

    @property
    def channels(self) -> int:
        """NCCL channels assumed for the per-channel caps (at most :attr:`max_nchannels`)."""
        return self.cap_channels(int(self.data["model"]["channels"]))

    def p2p_channels(self, nodes: int) -> int:
        """NCCL's ``p2pnChannels`` on one server or across servers (a power of two); 0 across
        servers: not set, worked out from NCCL's search (:mod:`topo.collective.channels`)."""
        key = "one_node" if nodes == 1 else "multi_node"
        value = int(self.data["model"]["p2p_channels"][key])
        return self.cap_channels(pow2_up(value)) if value > 0 else 0

    @property
    def max_nchannels(self) -> int | None:
        """``NCCL_MAX_NCHANNELS`` as set by :meth:`with_max_nchannels` (None: NCCL's own)."""
        value = self.data["model"].get("max_nchannels")
        return None if value is None else int(value)

    def cap_channels(self, n: int) -> int:
        """``n`` channels as ``NCCL_MAX_NCHANNELS`` leaves them: ``min(n, max_nchannels)``
        (NCCL 2.29 ``src/init.cc``: the communicator's and the NVLS channels are capped by
        ``ncclMaxNchannels()``)."""
        cap = self.max_nchannels
        return n if cap is None else max(1, min(n, cap))

    def with_max_nchannels(self, k: int) -> NcclConstants:
        """The same constants with ``NCCL_MAX_NCHANNELS=k``: every channel count the model
        uses (the ring graph's, the communicator's, NVLS's, p2p's) at most ``k``.

        Raises
        ------
        TopoError
            ``k`` below 1.
        """
        if k < 1:
            raise TopoError(f"max_nchannels must be at least 1, got {k}", param="max_nchannels")
        data = copy.deepcopy(self.data)
        data["model"]["max_nchannels"] = int(k)
        return NcclConstants(data, self.origin)

    @property
    def nchannels_per_net_peer(self) -> int | None:
        """``NCCL_NCHANNELS_PER_NET_PEER`` as set by :meth:`with_nchannels_per_net_peer`
        (None: NCCL's own, from the NICs' rate)."""
        value = self.data["model"].get("nchannels_per_net_peer")
        return None if value is None else int(value)

    def with_nchannels_per_net_peer(self, k: int) -> NcclConstants:
        """The same constants with ``NCCL_NCHANNELS_PER_NET_PEER=k``: every peer across
        servers gets ``k`` p2p channels (NCCL 2.29 ``src/graph/paths.cc``
        ``ncclTopoGetNchannels``: ``comm->config.nChannelsPerNetPeer`` when set), and the
        per-peer count is no longer halved to fit every peer in one round
        (``ncclTopoComputeP2pChannels``).

        Raises
        ------
        TopoError
            ``k`` below 1 (NCCL ignores it: ``src/init.cc``).
        """
        if k < 1:
            raise TopoError(
                f"nchannels_per_net_peer must be at least 1, got {k}",
                param="nchannels_per_net_peer",
            )
        return self._with_model("nchannels_per_net_peer", int(k))

    def with_arch(self, arch: str) -> NcclConstants:
        """The same constants for another GPU generation (``--arch``).

        Raises
        ------
        TopoError
            ``arch`` not one of :data:`ARCHES`.
        """
        if arch not in ARCHES:
            raise TopoError(
                f"arch must be one of {', '.join(ARCHES)}, got {shown(arch)}", param="arch"
            )
        return self._with_model("arch", arch)

    # ---------------------------------------------------------------- latency
    def base_latency_us(self, algorithm: str, protocol: str) -> float:
        """NCCL's ``baseLatencies[algorithm][protocol]`` (µs)."""
        return float(self.data["latency"]["base"][algorithm][PROTOCOLS.index(protocol)])

    def hw_latency_us(self, hw: str, algorithm: str, protocol: str) -> float:
        """NCCL's ``hwLatencies[hw][algorithm][protocol]`` (µs); hw is nvlink, pci or net."""
        return float(self.data["latency"][hw][algorithm][PROTOCOLS.index(protocol)])

    def latency(self, key: str) -> float:
        """A scalar of the ``[latency]`` table."""
        value = self.data["latency"][key]
        if key == "net_overhead_us":
            return float(value[self.cpu_vendor])
        return float(value)

    # ---------------------------------------------------------------- bandwidth
    def _by_nodes(self, row: list[float], nodes: int) -> float:
        return float(row[min(nodes, 3) - 1])

    def ll_max_GBps(self, nodes: int) -> float:
        """NCCL's ``llMaxBws``: row by arch on one node, by CPU vendor across nodes (GB/s)."""
        key = self.arch if nodes == 1 else self.cpu_vendor
        return self._by_nodes(self.data["bandwidth"]["ll_max"][key], nodes)

    def per_channel_GBps(self, table: str, nodes: int) -> float:
        """A per-channel cap (``per_channel_ring_ll128``, ``_tree``, ...) for this arch (GB/s)."""
        return self._by_nodes(self.data["bandwidth"][table][self.arch], nodes)

    def nvls_efficiency(self) -> float:
        """NCCL's ``nvlsEfficiency`` for this arch (0: no NVLink SHARP)."""
        return float(self.data["bandwidth"]["nvls_efficiency"][self.arch])

    def nvlink_link_GBps(self) -> float:
        """NCCL's ``ncclTopoNVLinkBw`` for this arch: one NVLink's rate (GB/s)."""
        return float(self.data["bandwidth"]["nvlink_link_GBps"][self.arch])

    def factor(self, key: str) -> float:
        """A scalar of the ``[bandwidth]`` table (protocol and algorithm factors)."""
        return float(self.data["bandwidth"][key])

    def tree_correction(self, protocol: str, nbytes: float, below: int = 23) -> float:
        """NCCL's ``treeCorrectionFactor`` at ``nbytes`` (1 outside): entry ``log2(nbytes /
        64)`` of the protocol's row where that is under ``below`` (``ncclTopoGetAlgoTime``:
        23 for the tree's all-reduce, 24 for NVLS-tree's on Blackwell x86 hosts)."""
        log_size = log2i(int(nbytes) >> 6)
        table = self.data["bandwidth"]["tree_correction"][PROTOCOLS.index(protocol)]
        if 0 <= log_size < min(below, len(table)):
            return float(table[log_size])
        return 1.0

    # ---------------------------------------------------------------- efficiency
    @property
    def nvlink_efficiency(self) -> float:
        """NCCL's NVLink rate over the link's rate, for this arch."""
        return float(self.data["efficiency"]["nvlink"][self.arch])

    @property
    def nic_efficiency(self) -> float:
        """NCCL's per-NIC channel rate over the NIC's rate."""
        return float(self.data["efficiency"]["nic"])

    @property
    def node_network_efficiency(self) -> float:
        """Share of a server's aggregate NIC rate it drives at once (fitted; see the file)."""
        return float(self.data["efficiency"]["node_network"])


def log2i(x: int) -> int:
    """NCCL's ``log2i``: ``floor(log2(x))`` for ``x >= 1``, -1 for ``x <= 0``.

    Parameters
    ----------
    x : int
        A count (ranks, nodes, 64-byte blocks).

    Returns
    -------
    int
        The exponent of the highest set bit.

    Examples
    --------
    >>> log2i(1), log2i(8), log2i(9), log2i(0)
    (0, 3, 3, -1)
    """
    return x.bit_length() - 1 if x > 0 else -1


def div_up(a: float, b: float) -> int:
    """NCCL's ``DIVUP``: the least integer >= ``a / b`` (``b > 0``).

    Examples
    --------
    >>> div_up(10, 8), div_up(16, 8), div_up(0.5, 8)
    (2, 2, 1)
    """
    return int(-(-a // b))


def pow2_up(x: int) -> int:
    """NCCL's ``pow2Up``: the least power of two >= ``x`` (1 for ``x <= 1``).

    Examples
    --------
    >>> pow2_up(1), pow2_up(5), pow2_up(16)
    (1, 8, 16)
    """
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def default_constants_path(release: str = DEFAULT_RELEASE) -> Path:
    """Path of the packaged constants file of an NCCL release (``topo/data/nccl-<r>.toml``)."""
    return Path(str(resources.files("topo") / "data" / f"nccl-{release}.toml"))


def _parse(path: Path) -> dict[str, Any]:
    return parse_toml(path, read_text(path))


def _merge(base: dict[str, Any], over: dict[str, Any], path: Path, where: str = "") -> None:
    for key, value in over.items():
        name = f"{where}{key}"
        if key not in base:
            raise FormatError(path, f"unknown key {name!r} (not in the default constants file)")
        if isinstance(base[key], dict):
            if not isinstance(value, dict):
                raise FormatError(path, f"{name} must be a table")
            _merge(base[key], value, path, name + ".")
            continue
        old = base[key]
        if isinstance(old, list):
            ok = (
                isinstance(value, list)
                and len(value) == len(old)
                and all(_same_shape(a, b) for a, b in zip(old, value, strict=True))
            )
            if not ok:
                raise FormatError(path, f"{name} must be a list shaped like the default {old!r}")
        elif isinstance(old, str):
            if not isinstance(value, str):
                raise FormatError(path, f"{name} must be a string, got {shown(value)}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FormatError(path, f"{name} must be a number, got {shown(value)}")
        base[key] = value


def _same_shape(a: Any, b: Any) -> bool:
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same_shape, a, b))
    return isinstance(b, (int, float)) and not isinstance(b, bool)


def _check(data: dict[str, Any], path: Path) -> None:
    model = data["model"]
    if model["arch"] not in ARCHES:
        raise FormatError(
            path, f"model.arch must be one of {', '.join(ARCHES)}, got {shown(model['arch'])}"
        )
    if model["cpu_vendor"] not in CPU_VENDORS:
        raise FormatError(
            path, f"model.cpu_vendor must be intel or amd, got {shown(model['cpu_vendor'])}"
        )
    if model["cpu_arch"] not in CPU_ARCHES:
        raise FormatError(
            path, f"model.cpu_arch must be x86 or arm, got {shown(model['cpu_arch'])}"
        )
    if not isinstance(model["channels"], int) or model["channels"] < 1:
        raise FormatError(
            path, f"model.channels must be an integer >= 1, got {shown(model['channels'])}"
        )
    _check_positive(data, path)
    _check_numbers(model["p2p_channels"], path, "model.p2p_channels.", zero_ok=True)
    _check_numbers(data["latency"], path, "latency.", zero_ok=True)
    _check_numbers(data["bandwidth"], path, "bandwidth.", zero_ok=True)
    _check_numbers(data["expected"], path, "expected.", zero_ok=True)
    eff = data["efficiency"]
    for name, value in (
        ("efficiency.nic", eff["nic"]),
        ("efficiency.node_network", eff["node_network"]),
        ("efficiency.nvlink." + model["arch"], eff["nvlink"][model["arch"]]),
    ):
        if not CONSTANT_RANGE[0] <= value <= 1:
            least = f"{CONSTANT_RANGE[0]:g}"
            raise FormatError(
                path, f"{name} must be in (0, 1] and at least {least}, got {shown(value)}"
            )


def _check_numbers(table: dict[str, Any], path: Path, where: str, zero_ok: bool) -> None:
    """Every number under ``table`` finite and >= 0 (> 0 unless ``zero_ok``)."""
    for key, value in table.items():
        name = f"{where}{key}"
        if isinstance(value, dict):
            _check_numbers(value, path, name + ".", zero_ok)
            continue
        for x in _flat(value):
            if isinstance(x, str):
                continue
            if not math.isfinite(x) or x < 0 or (x == 0 and not zero_ok):
                limit = ">= 0" if zero_ok else "> 0"
                raise FormatError(path, f"{name} must be a finite number {limit}, got {shown(x)}")
            least, most = CONSTANT_RANGE
            if x != 0 and not least <= x <= most:
                zero = "0 or " if zero_ok else ""
                raise FormatError(
                    path, f"{name} must be {zero}from {least:g} to {most:g}, got {shown(x)}"
                )


def _flat(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [x for v in value for x in _flat(v)]
    return [value]


POSITIVE = (
    ("latency", "base", "ring"),
    ("latency", "base", "tree"),
    ("latency", "net", "ring"),
    ("latency", "net", "tree"),
    ("latency", "nvlink", "ring"),
    ("latency", "nvlink", "tree"),
    ("bandwidth", "ll_max"),
    ("bandwidth", "per_channel_ring_ll128"),
    ("bandwidth", "per_channel_tree"),
    ("bandwidth", "per_channel_tree_ll128"),
    ("bandwidth", "nvlink_link_GBps"),
    ("bandwidth", "p2p_per_channel_net_GBps"),
    ("bandwidth", "p2p_nvl_chunk_bytes"),
    ("bandwidth", "p2p_net_chunk_bytes"),
    ("bandwidth", "p2p_per_batch"),
    ("model", "p2p_channels", "one_node"),
    ("search",),
    ("expected", "nvls_channel_GBps"),
    ("expected", "nvls_channel_GBps_blackwell"),
    ("expected", "nvls_tree_heads"),
    ("expected", "ring_slices"),
    ("expected", "chunk"),
    ("expected", "nvls_channels"),
)
"""Latencies and caps NCCL never sets to zero: a zero there is a typo (a zero latency makes every
size free of latency; a zero cap divides by zero)."""


def _check_positive(data: dict[str, Any], path: Path) -> None:
    for keys in POSITIVE:
        value: Any = data
        for k in keys:
            value = value[k]
        name = ".".join(keys)
        if isinstance(value, dict):
            _check_numbers(value, path, name + ".", zero_ok=False)
        else:
            _check_numbers({keys[-1]: value}, path, ".".join(keys[:-1]) + ".", zero_ok=False)


def load_constants(
    override: str | Path | None = None, release: str = DEFAULT_RELEASE
) -> NcclConstants:
    """Load the constants of an NCCL release, with a user's overrides.

    Parameters
    ----------
    override : str or Path, optional
        A TOML file of the same shape as the default, holding only the values to change.
    release : str
        NCCL release of the default file (``topo/data/nccl-<release>.toml``).

    Returns
    -------
    NcclConstants

    Raises
    ------
    FormatError
        Unknown release, unreadable or invalid TOML, a run of more than
        :data:`topo.files.MAX_NUMBER_DIGITS` digits (:func:`topo.spec.parse_toml`, as every
        TOML reader of topo), a key the default file does not have, a value of another type or
        shape, an unknown ``arch`` or ``cpu_vendor``, an efficiency outside (0, 1], a latency
        or bandwidth that is NaN, infinite or negative, or zero where NCCL never has zero
        (:data:`POSITIVE`), a non-zero number outside :data:`CONSTANT_RANGE`.

    Examples
    --------
    >>> c = load_constants()
    >>> c.base_latency_us("ring", "Simple"), c.hw_latency_us("net", "ring", "Simple")
    (8.4, 14.0)
    """
    path = default_constants_path(release)
    if not path.is_file():
        raise FormatError(path, f"no constants for NCCL release {release}")
    data = _parse(path)
    origin = str(path)
    if override is not None:
        opath = Path(override)
        merged = copy.deepcopy(data)
        _merge(merged, _parse(opath), opath)
        data = merged
        origin += f" + {opath}"
        _check(data, opath)
    else:
        _check(data, path)
    return NcclConstants(data, origin)
