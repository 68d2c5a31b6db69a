"""GPU model names a fabric may record (``G.graph["gpu_model"]``), from which
:func:`topo.fabric.gpus.gpu_arch` takes NCCL's per-arch tables.

``topo build --node NAME`` records the catalog server's ``model``; ``topo import ibnetdiscover
--gpu-model NAME`` records the model of a name from the same tables
(:func:`resolve_gpu_model`): a catalog server (``gb200-nvl72``, ``topo/data/catalog.toml``) or
a GPU of :data:`topo.fabric.gpus.GPU_ARCHES` (``GB200``, ``H100``, ...).
"""

from __future__ import annotations

import networkx as nx

from topo.catalog import load_catalog
from topo.errors import SpecError
from topo.fabric.gpus import GPU_ARCHES, arch_of_model, gpu_arch, gpu_model

ARCH_CLASS = {
    "volta": "Volta (V100-class)",
    "ampere": "Ampere (A100-class)",
    "hopper": "Hopper (H100-class)",
    "blackwell": "Blackwell (B200-class)",
}
"""How a warning names each NCCL generation: the generation and its reference GPU."""


def known_gpu_models() -> list[str]:
    """The names :func:`resolve_gpu_model` takes.

    Returns
    -------
    list of str
        The catalog's servers whose model names a GPU of
        :data:`~topo.fabric.gpus.GPU_ARCHES` (file order), then those GPUs.
    """
    catalog = load_catalog()
    servers = [
        n for n in catalog.names("node") if arch_of_model(catalog.get("node", n).get("model"))
    ]
    return servers + [prefix for prefix, _ in GPU_ARCHES]


def resolve_gpu_model(name: str) -> str:
    """The ``gpu_model`` to record for a name, as ``topo build --node`` records it.

    Parameters
    ----------
    name : str
        A catalog server (``gb200-nvl72``) or a GPU (``GB200``, ``h100``), case-insensitive.

    Returns
    -------
    str
        The catalog server's ``model`` (``"NVIDIA GB200 NVL72 rack (...)"``), or
        ``"NVIDIA <GPU>"`` (``"NVIDIA GB200"``); either reads as its arch in
        :func:`~topo.fabric.gpus.gpu_arch`.

    Raises
    ------
    SpecError
        (``.param`` ``gpu_model``) for any other name, listing the known ones.

    Examples
    --------
    >>> resolve_gpu_model("gb200")
    'NVIDIA GB200'
    """
    key = str(name).strip()
    catalog = load_catalog()
    servers = {n.lower(): n for n in catalog.names("node")}
    if key.lower() in servers:
        model = str(catalog.get("node", servers[key.lower()]).get("model"))
        if arch_of_model(model) is not None:
            return model
    gpus = {prefix.lower(): prefix for prefix, _ in GPU_ARCHES}
    if key.lower() in gpus:
        return f"NVIDIA {gpus[key.lower()]}"
    raise SpecError(
        f"gpu_model {name!r} is not a GPU topo knows: give a catalog server or a GPU, one of "
        f"{', '.join(known_gpu_models())}",
        param="gpu_model",
    )


def assumed_arch_note(G: nx.Graph, arch: str) -> str | None:
    """Why a fabric's collectives use ``arch``, when the fabric does not say which GPUs it has.

    Parameters
    ----------
    G : networkx.Graph
        A fabric; its GPU model is ``G.graph["gpu_model"]`` or a GPU vertex's ``model``
        (:func:`~topo.fabric.gpus.gpu_model`).
    arch : str
        The generation the constants will use (``volta`` ... ``blackwell``): the constants
        file's ``model.arch`` when nothing else chose one.

    Returns
    -------
    str or None
        None when the fabric records a GPU model of a known generation
        (:func:`~topo.fabric.gpus.gpu_arch`); else one clause for a warning, e.g.
        ``"records no GPU model; assuming Hopper (H100-class) NCCL tables; pass --arch or
        build with --node"``, naming the recorded model when topo has no tables for it.

    Examples
    --------
    >>> assumed_arch_note(nx.Graph(), "hopper")[:58]
    'records no GPU model; assuming Hopper (H100-class) NCCL ta'
    >>> assumed_arch_note(nx.Graph(gpu_model="NVIDIA A100-SXM4-80GB"), "hopper") is None
    True
    """
    if gpu_arch(G) is not None:
        return None
    model = gpu_model(G)
    what = (
        "records no GPU model"
        if model is None
        else f"records GPU model {model!r}, of no generation topo has NCCL tables for"
    )
    return (
        f"{what}; assuming {ARCH_CLASS.get(arch, arch)} NCCL tables; pass --arch or build "
        "with --node"
    )
