"""The GPU a fabric records and NCCL's generation of it: ``G.graph["gpu_model"]`` (``topo build
--node``) or a GPU vertex's ``model`` (an imported fabric), read by name prefix
(:data:`GPU_ARCHES`). The collective model picks NCCL's per-generation tables by it
(:mod:`topo.collective.fabric_rates`), the EP kernels a GPU's SM count
(:mod:`topo.moe.kernels`).
"""

from __future__ import annotations

import networkx as nx

__all__ = [
    "GPU_ARCHES",
    "GRACE_SUPERCHIPS",
    "arch_of_model",
    "gpu_arch",
    "gpu_family",
    "gpu_model",
    "host_cpu_arch",
]


GPU_ARCHES = (
    ("GB300", "blackwell"),
    ("GB200", "blackwell"),
    ("B300", "blackwell"),
    ("B200", "blackwell"),
    ("B100", "blackwell"),
    ("GH200", "hopper"),
    ("H800", "hopper"),
    ("H200", "hopper"),
    ("H100", "hopper"),
    ("H20", "hopper"),
    ("A800", "ampere"),
    ("A100", "ampere"),
    ("A30", "ampere"),
    ("V100", "volta"),
)
"""GPU model name prefixes and NCCL's generation for each (compute capability 7.0 volta, 8.0
ampere, 9.0 hopper, 10.0 blackwell)."""


def gpu_arch(G: nx.Graph) -> str | None:
    """The GPU generation a fabric records, if any.

    Parameters
    ----------
    G : networkx.Graph
        A fabric; the GPU model is read from ``G.graph["gpu_model"]`` or a GPU vertex's
        ``model`` attribute (e.g. ``"NVIDIA H100 80GB HBM3"``).

    Returns
    -------
    str or None
        ``volta``, ``ampere``, ``hopper`` or ``blackwell``; None when no model is recorded or
        it is not one :data:`GPU_ARCHES` knows.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.Graph(gpu_model="NVIDIA B200"); gpu_arch(G), gpu_arch(nx.Graph())
    ('blackwell', None)
    """
    known = _family(G)
    return known[1] if known is not None else None


GRACE_SUPERCHIPS = ("GB300", "GB200", "GH200")
"""Prefixes of :data:`GPU_ARCHES` whose GPUs sit on a Grace superchip: the host CPU is NVIDIA
Grace (Arm Neoverse V2; NVIDIA GB200 NVL72 and GH200 product pages), not x86."""


def host_cpu_arch(G: nx.Graph) -> str | None:
    """The CPU architecture of a fabric's hosts where its GPU model says it.

    Returns
    -------
    str or None
        ``arm`` when the recorded GPU is a Grace superchip's (:data:`GRACE_SUPERCHIPS`);
        ``x86`` for another known GPU (HGX and DGX servers: x86 hosts); None when no known
        model is recorded.

    Examples
    --------
    >>> G, H = nx.Graph(gpu_model="NVIDIA GB200"), nx.Graph(gpu_model="NVIDIA B200")
    >>> host_cpu_arch(G), host_cpu_arch(H), host_cpu_arch(nx.Graph())
    ('arm', 'x86', None)
    """
    known = _family(G)
    if known is None:
        return None
    return "arm" if known[0] in GRACE_SUPERCHIPS else "x86"


def _family(G: nx.Graph) -> tuple[str, str] | None:
    """:func:`gpu_family` of the first model name the fabric records that it knows."""
    for name in _model_names(G):
        known = gpu_family(name)
        if known is not None:
            return known
    return None


def _model_names(G: nx.Graph) -> list[str]:
    """``G.graph["gpu_model"]`` and the first GPU vertex's ``model``, those that are strings."""
    names = [G.graph.get("gpu_model")]
    names += [d.get("model") for _, d in G.nodes(data=True) if d.get("kind") == "gpu"][:1]
    return [n for n in names if isinstance(n, str)]


def gpu_model(G: nx.Graph) -> str | None:
    """The GPU model a fabric records: ``G.graph["gpu_model"]`` (``topo build --node``), else
    the first GPU vertex's ``model``; None when neither is recorded."""
    names = _model_names(G)
    return names[0] if names else None


def gpu_family(name: str) -> tuple[str, str] | None:
    """The GPU a model name names, by :data:`GPU_ARCHES`: its prefix and generation.

    Parameters
    ----------
    name : str
        A GPU or server model, e.g. CUDA's device name ``"NVIDIA A100-SXM4-80GB"`` as
        nccl-tests prints it, or ``"NVIDIA HGX H800 8-GPU"``.

    Returns
    -------
    (str, str) or None
        E.g. ``("A100", "ampere")``; None when no word of the name starts with a known prefix.

    Examples
    --------
    >>> gpu_family("NVIDIA A100-SXM4-80GB"), gpu_family("Tesla T4")
    (('A100', 'ampere'), None)
    """
    words = name.upper().replace("-", " ").split()
    for prefix, arch in GPU_ARCHES:
        if any(w.startswith(prefix) for w in words):
            return prefix, arch
    return None


def arch_of_model(name: object) -> str | None:
    """The GPU generation a model name names.

    Parameters
    ----------
    name : object
        A model name (``"NVIDIA H100 80GB HBM3"``); anything else names none.

    Returns
    -------
    str or None
        The generation of the first prefix of :data:`GPU_ARCHES` a word of it starts with
        (``hopper``), or None (:func:`gpu_family`).

    Examples
    --------
    >>> arch_of_model("NVIDIA GB200 NVL72"), arch_of_model("NVIDIA Quantum-2"), arch_of_model(3)
    ('blackwell', None, None)
    """
    if not isinstance(name, str):
        return None
    known = gpu_family(name)
    return known[1] if known is not None else None
