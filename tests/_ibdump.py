"""Hand-written ibnetdiscover dumps for tests: switches, host CAs (one port each) and the cables
between them, in the exact layout of ``ibnetdiscover`` (tabs, GUID ids, ``# "description"``
comments), as ``tests/formats/test_ibnetdiscover.py``'s BASE."""

from __future__ import annotations

from collections import defaultdict

# Cable: (switch, switch port, far device description, far port, speed such as "4xNDR")
Cable = tuple[str, int, str, int, str]


def ib_dump(switch_ports: dict[str, int], cables: list[Cable]) -> str:
    """The dump of ``switch_ports`` (switch description -> port count) and ``cables``.

    A far device whose description is not a switch is a host CA (``"gpu01 HCA-1"``; its host
    is the description's first word), with one port. Switch-to-switch cables are listed once,
    from the first switch.
    """
    names = list(switch_ports)
    hcas = sorted({far for _, _, far, _, _ in cables if far not in switch_ports})
    gid = {n: f"S-{i + 1:016x}" for i, n in enumerate(names)}
    gid |= {h: f"H-{0xA00 + i:016x}" for i, h in enumerate(hcas)}
    lid = {n: i + 1 for i, n in enumerate([*names, *hcas])}
    ports: dict[str, list[tuple[int, str, int, str]]] = defaultdict(list)
    for sw, p, far, q, speed in cables:
        ports[sw].append((p, far, q, speed))
        ports[far].append((q, sw, p, speed))
    out = []
    for sw in names:
        out.append(
            f'Switch\t{switch_ports[sw]} "{gid[sw]}"\t\t# "{sw}" enhanced port 0 lid {lid[sw]} '
            "lmc 0"
        )
        for p, far, q, speed in sorted(ports[sw]):
            guid = f"({gid[far][2:]})" if far in hcas else ""
            out.append(f'[{p}]\t"{gid[far]}"[{q}]{guid}\t\t# "{far}" lid {lid[far]} {speed}')
        out.append("")
    for h in hcas:
        out.append(f'Ca\t1 "{gid[h]}"\t\t# "{h}"')
        for q, sw, p, speed in ports[h]:
            out.append(
                f'[{q}]({gid[h][2:]}) \t"{gid[sw]}"[{p}]\t\t# lid {lid[h]} lmc 0 "{sw}" '
                f"lid {lid[sw]} {speed}"
            )
        out.append("")
    return "\n".join(out)
