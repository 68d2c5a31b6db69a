"""NVIDIA topograph's simulation model: a design as the YAML its ``test`` provider reads.

topograph (github.com/NVIDIA/topograph) discovers a cluster's topology and hands it to Slurm or
Kubernetes; its ``test`` provider reads a *model* instead of a cloud API, so a scheduler's
behaviour can be tried on a fabric that does not exist yet (``pkg/models/model.go``; examples
in ``tests/models/*.yaml``). The model is a tree:

- ``switches``: each with a ``name`` and either child ``switches`` or ``capacity_blocks``; a
  switch has at most one parent, a capacity block one switch (``model.go``'s ``setNodeMap``
  refuses otherwise);
- ``capacity_blocks``: each with a ``name``, the GPU ``type``, the ``nodes`` (host names) and,
  for nodes joined by NVLink across hosts, the ``nvlink`` domain's name (which makes topograph
  emit Slurm's block topology as well as the tree).

:func:`write_topograph_model` writes Slurm's tree of the design (:func:`topo.export.slurm_tree`,
the grouping ``topo export slurm`` writes, so both agree) in that shape: a capacity block per
leaf switch (per leaf switch and NVLink domain where domains span hosts).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from topo.export.slurm import SlurmSwitch, slurm_name


def write_topograph_model(
    switches: Sequence[SlurmSwitch],
    gpu_type: str,
    domains: Mapping[str, str] | None = None,
    header: str = "",
) -> str:
    """topograph's model YAML of a Slurm tree.

    Parameters
    ----------
    switches : sequence of SlurmSwitch
        Slurm's tree, top down (:func:`topo.export.slurm_tree`): every host under exactly one
        leaf switch.
    gpu_type : str
        The capacity blocks' ``type`` (e.g. ``H100``; topograph prints it, nothing checks it).
    domains : mapping of str to str, optional
        Host name -> its NVLink domain's name, for hosts in domains that span hosts; a leaf's
        hosts are then split into one capacity block per domain, each with ``nvlink``.
    header : str
        Comment lines put first (``#`` added).

    Returns
    -------
    str
        The YAML text: ``switches`` (top down), then ``capacity_blocks`` (``cb-<leaf>`` or
        ``cb-<leaf>-<domain>``), names as Slurm's export spells them.

    Examples
    --------
    >>> tree = [SlurmSwitch("top", switches=("leaf0",)), SlurmSwitch("leaf0", nodes=("n0", "n1"))]
    >>> print(write_topograph_model(tree, "H100"))
    switches:
    - name: top
      switches: [leaf0]
    - name: leaf0
      capacity_blocks: [cb-leaf0]
    capacity_blocks:
    - name: cb-leaf0
      type: H100
      nodes: [n0, n1]
    <BLANKLINE>

    References
    ----------
    NVIDIA topograph, ``pkg/models/model.go`` (``Model``, ``Switch``, ``CapacityBlock``) and
    ``tests/models/medium-h100.yaml``.
    """
    lines = [f"# {ln}" for ln in header.splitlines()] + ["switches:"]
    blocks: list[tuple[str, str | None, list[str]]] = []
    for s in switches:
        lines.append(f"- name: {_scalar(s.name)}")
        if s.switches:
            lines.append(f"  switches: [{', '.join(_scalar(c) for c in s.switches)}]")
            continue
        mine = _leaf_blocks(s, domains or {})
        blocks += mine
        lines.append(f"  capacity_blocks: [{', '.join(_scalar(b) for b, _, _ in mine)}]")
    lines.append("capacity_blocks:")
    for name, nvlink, nodes in blocks:
        lines.append(f"- name: {_scalar(name)}")
        lines.append(f"  type: {_scalar(gpu_type)}")
        if nvlink is not None:
            lines.append(f"  nvlink: {_scalar(nvlink)}")
        lines.append(f"  nodes: [{', '.join(_scalar(n) for n in nodes)}]")
    return "\n".join(lines) + "\n"


def _leaf_blocks(
    leaf: SlurmSwitch, domains: Mapping[str, str]
) -> list[tuple[str, str | None, list[str]]]:
    """A leaf's capacity blocks: its hosts, split by NVLink domain (in order of first host)."""
    groups: dict[str | None, list[str]] = {}
    for host in leaf.nodes:
        groups.setdefault(domains.get(host), []).append(host)
    if list(groups) == [None]:
        return [(f"cb-{leaf.name}", None, groups[None])]
    return [
        (f"cb-{leaf.name}" + (f"-{d}" if d is not None else ""), d, hosts)
        for d, hosts in groups.items()
    ]


def _scalar(text: str) -> str:
    """A YAML plain scalar as written, quoted where YAML would read it otherwise (a name
    such as ``on``, ``1e3`` or one with ``: ``)."""
    import re

    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9._/-]*", text) and text.lower() not in _YAML_WORDS:
        return text
    return "'" + text.replace("'", "''") + "'"


_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def domain_names(
    domains: Mapping[Hashable, Sequence[Hashable]], names: Mapping[Hashable, str]
) -> dict[str, str]:
    """Host name -> its NVLink domain's name (``nvl<n>`` for a built server ``n``, else the
    domain's own, as Slurm's block names spell it).

    Parameters
    ----------
    domains : mapping
        Domain id -> its hosts (:func:`topo.export.domain_hosts`).
    names : mapping
        Host id -> its host name.
    """
    out = {}
    for d, hosts in domains.items():
        label = f"nvl{d}" if isinstance(d, int) else slurm_name(str(d))
        for h in hosts:
            out[names[h]] = label
    return out


__all__ = ["domain_names", "write_topograph_model"]
