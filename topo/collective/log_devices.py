"""Whether an nccl-tests log ran on the GPUs a prediction models (``topo collective --compare``).

nccl-tests prints every rank's CUDA device name in its header (``#  Rank  0 Group  0 Pid ...
on HOST device  0 [0000:1b:00] NVIDIA H100 80GB HBM3``; :attr:`topo.formats.nccl_tests.
NcclTest.devices`). The prediction uses NCCL's constants of one GPU generation (``--arch``, or
the fabric's GPU model, :func:`topo.fabric.gpus.gpu_arch`) and the fabric's own
NVLink and NIC rates. When the log's GPUs are of another generation, or another GPU than the
fabric records (an H800's NVLink is not an H100's), the comparison holds the log against other
hardware: :func:`device_mismatch` says so in one line. It changes no number.
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from topo.fabric.gpus import gpu_family, gpu_model
from topo.formats.nccl_tests_records import NcclTest

__all__ = ["device_mismatch", "log_devices"]


def log_devices(tests: Iterable[NcclTest]) -> list[str]:
    """The distinct GPU names of a log's tests, in order of first appearance."""
    return list(dict.fromkeys(d for t in tests for d in t.devices))


def device_mismatch(
    tests: Iterable[NcclTest], G: nx.Graph, model_arch: str, chosen_arch: str | None = None
) -> str | None:
    """A one-line warning when a log's GPUs are not the ones the prediction models, else None.

    Parameters
    ----------
    tests : iterable of NcclTest
        The log's tests (:func:`topo.formats.read_nccl_tests`).
    G : networkx.Graph
        The fabric the log is held against.
    model_arch : str
        The GPU generation of the constants used (``volta`` ... ``blackwell``).
    chosen_arch : str, optional
        ``--arch`` when given.

    Returns
    -------
    str or None
        Names the log's devices and the model's generation (and the fabric's GPU model when
        it records one) when a device is of another generation, is another GPU than the
        fabric's (by :data:`topo.fabric.gpus.GPU_ARCHES` prefix, e.g. ``H800``
        against ``H100``), or is none that table knows; None when they agree or the log names
        no device.

    Examples
    --------
    >>> from topo.formats.nccl_tests_records import NcclTest
    >>> t = NcclTest("alltoall", [], 8, ["a"], 8, "", "", 0.0, 1, devices=["NVIDIA A100-SXM4-80GB"])
    >>> device_mismatch([t], nx.Graph(), "hopper")[:60]
    "the log's GPUs are NVIDIA A100-SXM4-80GB (ampere); the model"
    >>> device_mismatch([t], nx.Graph(), "ampere") is None
    True
    """
    devices = log_devices(tests)
    model = gpu_model(G)
    model_family = gpu_family(model) if model is not None else None
    odd = []
    for name in devices:
        family = gpu_family(name)
        if (
            family is None
            or family[1] != model_arch
            or (model_family is not None and family[0] != model_family[0])
        ):
            odd.append((name, family[1] if family is not None else None))
    if not odd:
        return None
    theirs = ", ".join(f"{n} ({a or 'a GPU topo has no NCCL constants for'})" for n, a in odd)
    if chosen_arch is not None:
        ours = f"{model_arch} GPUs (--arch {chosen_arch}"
        ours += f", on a fabric of {model})" if model is not None else ")"
    elif model is not None:
        ours = f"{model_arch} GPUs (the fabric's {model})"
    else:
        ours = f"{model_arch} GPUs (the fabric records no GPU model)"
    return (
        f"the log's GPUs are {theirs}; the model is of {ours}: the predicted numbers are for "
        "the model's GPUs, not the log's"
    )
