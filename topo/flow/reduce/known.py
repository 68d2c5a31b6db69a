"""What a caller already knows of a fabric, so that the all-to-all need not find it again.

A study of many failure sets (:mod:`topo.flow.failures.trials`) knows each damaged fabric as
the intact one less a few cables: its contracted servers are the intact ones with the few
whose cables failed contracted again, it is connected when every failed cable's ends are still
joined, and its planes are the intact ones, the undamaged among them still copies of one
another. Each fact is exactly what the flow code would compute from the damaged fabric itself
(the same lists, in the same order), so the result is the same, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from topo.flow.reduce.network import Scope
from topo.flow.reduce.servers import ContractedServer


@dataclass(frozen=True)
class Known:
    """Facts about one fabric ``G``, each as the flow code would find it.

    Attributes
    ----------
    servers : list of ContractedServer
        :func:`topo.flow.reduce.servers.contract_servers` ``(G)``: the hosts.
    terminal : {"gpu", "endpoint"}
        Its terminal kind, as ``contract_servers`` returns it.
    connected : bool
        ``G`` is connected (one part): its parts need not be searched.
    switch_components : list of list of str, optional
        :func:`topo.fabric.switch_components` ``(G)``.
    scope : callable, optional
        Returns :func:`topo.flow.reduce.planes.scope` ``(G, servers)``, called only when
        the reduced network is built.
    """

    servers: list[ContractedServer]
    terminal: str
    connected: bool = False
    switch_components: list[list[str]] | None = None
    scope: Callable[[], Scope] | None = None


__all__ = ["Known"]
