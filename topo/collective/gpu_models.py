"""GPU model names a fabric may record (``G.graph["gpu_model"]``), from which
:func:`topo.collective.fabric_rates.gpu_arch` takes NCCL's per-arch tables.

``topo build --node NAME`` records the catalog server's ``model``; ``topo import ibnetdiscover
--gpu-model NAME`` records the model of a name from the same tables
(:func:`resolve_gpu_model`): a catalog server (``gb200-nvl72``, ``topo/data/catalog.toml``) or
a GPU of :data:`topo.collective.fabric_rates.GPU_ARCHES` (``GB200``, ``H100``, ...).
"""

from __future__ import annotations

from topo.catalog import load_catalog
from topo.collective.fabric_rates import GPU_ARCHES, arch_of_model
from topo.errors import SpecError


def known_gpu_models() -> list[str]:
    """The names :func:`resolve_gpu_model` takes.

    Returns
    -------
    list of str
        The catalog's servers whose model names a GPU of
        :data:`~topo.collective.fabric_rates.GPU_ARCHES` (file order), then those GPUs.
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
        :func:`~topo.collective.fabric_rates.gpu_arch`.

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
        f"--gpu-model {name!r} is not a GPU topo knows: give a catalog server or a GPU, one of "
        f"{', '.join(known_gpu_models())}",
        param="gpu_model",
    )
