"""Price books: switch and cable prices (US dollars), optionally power (watts).

A price book is a TOML file; topo ships a default (``topo/data/prices.toml``) derived from the
DeepSeek-V3 hardware report's Table 3, every price with its source. Format::

    currency = "USD"

    [[switch]]
    ports = 64            # radix
    gbps = 400            # port speed, Gb/s
    price_usd = 44_500
    watts = 1500          # optional
    source = "why this price"

    [[cable]]
    class = "optical"     # endpoint | electrical | optical
    gbps = 400
    price_usd = 1_680
    watts = 30            # optional (transceivers)
    source = "why"

    [layout]
    electrical_within_group = false   # Dragonfly local links electrical (one group, one rack)

A switch not listed is priced, in this order:

1. as a listed box with its ports split: ``P*k`` ports of ``g/P`` Gb/s are the ``k``-port box of
   ``g`` Gb/s run with each port broken out in ``P`` (a 64 x 800G Spectrum-4 SN5600 as 128 x 400G
   or 256 x 200G: NVIDIA's SN5000 hardware user manual; a multi-plane fabric of
   ``--planes-per-nic P``, :mod:`topo.builders.multiplane`), so it costs the box's price and
   power;
2. per port from the listed switch of the same speed with the nearest radix (switch cost
   linear in radix, as in the Slim Fly cost model: Besta and Hoefler, SC14, §V);
3. as a split box whose radix is not listed: rule 2 at the faster speed.

A cable not listed is, likewise, one of the ``P`` links of a listed cable of ``P`` times its
speed and the same class broken out (``1/P`` of its price and power): a 200G leaf-spine link of
a 2-plane fabric is half a 400G cable.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from topo.errors import FormatError, SpecError
from topo.files import read_text
from topo.spec import parse_toml
from topo.wording import shown

CABLE_CLASSES = ("endpoint", "electrical", "optical")
"""Cable classes: NIC to switch; switch to switch inside a rack; switch to switch between
racks (with transceivers)."""

DEFAULT_PRICES = "prices.toml"
"""The default price book, package data in ``topo/data``."""


@dataclass(frozen=True)
class Item:
    """One priced item of a price book.

    Attributes
    ----------
    kind : str
        ``switch`` or a cable class (:data:`CABLE_CLASSES`).
    gbps : float
        Port or cable speed, Gb/s.
    price_usd : float
        Price of one, US dollars.
    ports : int
        Radix (switches; 0 for cables).
    watts : float or None
        Power of one, W (None if the book gives none).
    source : str
        Where the price comes from.
    """

    kind: str
    gbps: float
    price_usd: float
    ports: int = 0
    watts: float | None = None
    source: str = ""


@dataclass(frozen=True)
class PriceBook:
    """Switch and cable prices (see the module docstring for the TOML format).

    Attributes
    ----------
    path : str
        File it was read from (``<default>`` for the packaged book).
    switches : tuple of Item
        Listed switches.
    cables : tuple of Item
        Listed cables, by class and speed.
    electrical_within_group : bool
        Dragonfly local links are electrical (a group in one rack).
    """

    path: str
    switches: tuple[Item, ...]
    cables: tuple[Item, ...]
    electrical_within_group: bool = False

    def switch(self, ports: int, gbps: float) -> Item:
        """The price of a ``ports``-port switch of ``gbps`` Gb/s ports.

        Listed: as listed. Else the listed box of ``ports/P`` ports of ``P*gbps`` (``P`` = 2,
        3, ...; the smallest that is listed) with each port split in ``P``: its price and
        watts. Else per port from the listed switch of the same speed with the nearest radix
        (``price * ports / listed_ports``, same for watts). Else a split box of the smallest
        ``P`` whose speed is listed, priced per port at that speed.

        Parameters
        ----------
        ports : int
            Radix as the fabric uses it (split ports counted one by one).
        gbps : float
            Port speed, Gb/s.

        Returns
        -------
        Item
            Its price (US dollars), power (W) and a ``source`` saying how it was found.

        Raises
        ------
        SpecError
            If the book lists no switch of that speed nor of a multiple of it that ``ports``
            splits into.

        Examples
        --------
        >>> book = load_prices()          # lists 64 x 400G at 44,500 $
        >>> book.switch(128, 200).price_usd, book.switch(128, 400).price_usd
        (44500.0, 89000.0)
        """
        for s in self.switches:
            if s.ports == ports and s.gbps == gbps:
                return s
        splits = self._splits(ports, gbps)
        for p, s in splits:
            if s.ports * p == ports:
                return dataclasses.replace(
                    s,
                    ports=ports,
                    gbps=gbps,
                    source=f"the {s.ports}x{s.gbps:g}G box with each port split in {p} "
                    f"({s.source})",
                )
        same = [s for s in self.switches if s.gbps == gbps]
        if not same and splits:
            p = splits[0][0]
            box = self.switch(ports // p, gbps * p)
            return dataclasses.replace(
                box,
                ports=ports,
                gbps=gbps,
                source=f"a {ports // p}x{gbps * p:g}G box with each port split in {p}: "
                f"{box.source}",
            )
        if not same:
            speeds = ", ".join(f"{s.gbps:g}" for s in self.switches) or "none"
            raise SpecError(
                f"price book {self.path} has no switch of {gbps:g} Gb/s ports, nor one of a "
                f"multiple of it that {ports} ports split into (it lists {speeds})"
            )
        ref = min(same, key=lambda s: (abs(s.ports - ports), s.ports))
        f = ports / ref.ports
        return Item(
            kind="switch",
            gbps=gbps,
            ports=ports,
            price_usd=ref.price_usd * f,
            watts=None if ref.watts is None else ref.watts * f,
            source=f"scaled per port from the {ref.ports}-port switch ({ref.source})",
        )

    def cable(self, kind: str, gbps: float) -> Item:
        """The price of one cable of class ``kind`` at ``gbps`` Gb/s.

        Listed: as listed. Else one of the ``P`` links of a listed cable of the same class at
        ``P*gbps`` broken out (the smallest such ``P``): ``1/P`` of its price and watts.

        Raises
        ------
        SpecError
            If the book has no such cable, nor one of a multiple of its speed.

        Examples
        --------
        >>> load_prices().cable("optical", 200).price_usd     # half the 400G one's 1,680 $
        840.0
        """
        for c in self.cables:
            if c.kind == kind and c.gbps == gbps:
                return c
        faster = sorted(
            (round(c.gbps / gbps), c)
            for c in self.cables
            if c.kind == kind and c.gbps > gbps and _multiple(c.gbps, gbps)
        )
        if faster:
            p, c = faster[0]
            return Item(
                kind=kind,
                gbps=gbps,
                price_usd=c.price_usd / p,
                watts=None if c.watts is None else c.watts / p,
                source=f"one of {p} links of a {c.gbps:g}G {kind} cable broken out ({c.source})",
            )
        raise SpecError(
            f"price book {self.path} has no {kind} cable of {gbps:g} Gb/s, nor one of a "
            "multiple of that speed to break out"
        )

    def _splits(self, ports: int, gbps: float) -> list[tuple[int, Item]]:
        """Listed switches a ``ports`` x ``gbps`` switch could be a split box of: ``(P, box)``
        with the box's speed ``P*gbps`` (P >= 2) and ``P`` dividing ``ports``, smallest P
        first."""
        out = []
        for s in self.switches:
            if s.gbps > gbps and _multiple(s.gbps, gbps):
                p = round(s.gbps / gbps)
                if ports % p == 0:
                    out.append((p, s))
        return sorted(out, key=lambda t: (t[0], t[1].ports))


def load_prices(path: str | Path | None = None) -> PriceBook:
    """Read a price book; None reads the default (``topo/data/prices.toml``).

    Parameters
    ----------
    path : str, Path or None
        A TOML price book.

    Returns
    -------
    PriceBook

    Raises
    ------
    FormatError
        Missing or unreadable file; TOML syntax error (with its line); an unknown key; a price,
        speed, radix or power that is not a non-negative number (positive for speeds and
        radices); an unknown cable class; two entries for the same item.

    Examples
    --------
    >>> book = load_prices()
    >>> book.switch(64, 400).price_usd, book.cable("optical", 400).price_usd
    (44500.0, 1680.0)
    """
    if path is None:
        text = resources.files("topo").joinpath("data").joinpath(DEFAULT_PRICES).read_text("utf-8")
        where = "<default price book>"
    else:
        text = read_text(path)
        where = str(path)
    return _parse(parse_toml(where, text), where)


_TOP = {"currency", "switch", "cable", "layout"}
_SWITCH = {"ports", "gbps", "price_usd", "watts", "source"}
_CABLE = {"class", "gbps", "price_usd", "watts", "source"}
_LAYOUT = {"electrical_within_group", "source"}


def _parse(data: dict[str, Any], where: str) -> PriceBook:
    _keys(data, _TOP, where, "the price book")
    if data.get("currency", "USD") != "USD":
        raise FormatError(where, f"currency must be USD, got {shown(data['currency'])}")
    switches, cables = [], []
    seen: set[tuple[Any, ...]] = set()
    for i, s in enumerate(_table_list(data, "switch", where)):
        what = f"[[switch]] #{i + 1}"
        _keys(s, _SWITCH, where, what)
        item = Item(
            kind="switch",
            ports=int(_number(s, "ports", where, what, positive=True, integer=True)),
            gbps=_number(s, "gbps", where, what, positive=True),
            price_usd=_number(s, "price_usd", where, what),
            watts=_number(s, "watts", where, what) if "watts" in s else None,
            source=str(s.get("source", "")),
        )
        key = ("switch", item.ports, item.gbps)
        if key in seen:
            raise FormatError(where, f"{what}: a second {item.ports}-port {item.gbps:g}G switch")
        seen.add(key)
        switches.append(item)
    for i, c in enumerate(_table_list(data, "cable", where)):
        what = f"[[cable]] #{i + 1}"
        _keys(c, _CABLE, where, what)
        kind = c.get("class")
        if kind not in CABLE_CLASSES:
            raise FormatError(
                where, f"{what}: class must be one of {', '.join(CABLE_CLASSES)}, got {shown(kind)}"
            )
        item = Item(
            kind=kind,
            gbps=_number(c, "gbps", where, what, positive=True),
            price_usd=_number(c, "price_usd", where, what),
            watts=_number(c, "watts", where, what) if "watts" in c else None,
            source=str(c.get("source", "")),
        )
        if (kind, item.gbps) in seen:
            raise FormatError(where, f"{what}: a second {kind} cable of {item.gbps:g} Gb/s")
        seen.add((kind, item.gbps))
        cables.append(item)
    layout = data.get("layout", {})
    if not isinstance(layout, dict):
        raise FormatError(where, "[layout] must be a table")
    _keys(layout, _LAYOUT, where, "[layout]")
    within = layout.get("electrical_within_group", False)
    if not isinstance(within, bool):
        raise FormatError(
            where, f"[layout] electrical_within_group must be true or false, got {shown(within)}"
        )
    return PriceBook(where, tuple(switches), tuple(cables), within)


def _keys(d: dict[str, Any], allowed: set[str], where: str, what: str) -> None:
    extra = sorted(set(d) - allowed)
    if extra:
        raise FormatError(
            where, f"{what}: unknown key {extra[0]!r}; expected one of {', '.join(sorted(allowed))}"
        )


def _table_list(data: dict[str, Any], name: str, where: str) -> list[dict[str, Any]]:
    items = data.get(name, [])
    if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
        raise FormatError(where, f"{name} entries must be an array of tables ([[{name}]])")
    return items


def _number(
    d: dict[str, Any],
    key: str,
    where: str,
    what: str,
    positive: bool = False,
    integer: bool = False,
) -> float:
    if key not in d:
        raise FormatError(where, f"{what}: missing {key}")
    v = d[key]
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v != float("inf")
    if integer:
        ok = ok and isinstance(v, int)
    if not ok or v < 0 or (positive and v == 0):
        want = "a positive" if positive else "a non-negative"
        raise FormatError(
            where,
            f"{what}: {key} must be {want} {'integer' if integer else 'number'}, got {shown(v)}",
        )
    if v > MAX_NUMBER:
        raise FormatError(where, f"{what}: {key} must be at most {MAX_NUMBER:.0e}, got {shown(v)}")
    return float(v)


def _multiple(fast: float, slow: float) -> bool:
    """``fast`` is an integer multiple (2 or more) of ``slow`` (Gb/s, to 1e-9)."""
    p = fast / slow
    return round(p) >= 2 and abs(p - round(p)) < 1e-9


MAX_NUMBER = 1e12
"""Largest number accepted in a price book (a price in USD, a speed in Gb/s, a radix, a
power in W): larger ones are typing mistakes, and would swamp every sum they enter."""
