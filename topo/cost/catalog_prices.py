"""Catalog prices in the price book: switches of the hardware catalog that carry a price.

:func:`with_catalog` lays the catalog's priced switches (``price_usd``, optionally ``watts``)
over a price book: a switch of the same radix and speed is replaced, one the book lacks is
added (so ``topo cost`` can price, say, an 800G fabric of ``q3400`` switches once the catalog
holds a quoted price). The shipped catalog carries no price (no vendor publishes one; see
docs/hardware.md), so with it the book is unchanged.
"""

from __future__ import annotations

import dataclasses

from topo.catalog import Catalog
from topo.cost.prices import Item, PriceBook

__all__ = ["with_catalog"]


def with_catalog(book: PriceBook, catalog: Catalog) -> PriceBook:
    """The price book with the catalog's priced switches over it.

    Parameters
    ----------
    book : PriceBook
        Prices in US dollars (:func:`topo.cost.load_prices`).
    catalog : Catalog
        The hardware catalog (:func:`topo.catalog.load_catalog`); its switches with
        ``price_usd`` (US dollars) and optionally ``watts`` (W) are used.

    Returns
    -------
    PriceBook
        ``book`` itself if no catalog switch has a price; else a copy whose ``path`` names the
        catalog too.
    """
    priced = [e for e in catalog.entries if e.kind == "switch" and e.get("price_usd") is not None]
    if not priced:
        return book
    items = {(s.ports, s.gbps): s for s in book.switches}
    for e in priced:
        key = (int(e.get("ports")), float(e.get("gbps")))
        items[key] = Item(
            kind="switch",
            gbps=key[1],
            ports=key[0],
            price_usd=float(e.get("price_usd")),
            watts=None if e.get("watts") is None else float(e.get("watts")),
            source=f"catalog {e.name}: {e.source}",
        )
    return dataclasses.replace(
        book, path=f"{book.path} + {catalog.path}", switches=tuple(items.values())
    )
