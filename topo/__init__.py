"""topo: design and analyse the networks of large GPU clusters.

The package is organised by concept (see ``docs/``):

- :mod:`topo.builders` build fat trees (FT2, FT3), multi-rail (MRFT) and multi-plane (MPFT)
  fabrics down to GPUs;
- :mod:`topo.formats` read real fabric dumps (``ibnetdiscover``);
- :mod:`topo.fabric` holds the graph schema, summary counts and the JSON file format;
- :mod:`topo.flow` computes all-to-all bandwidth by maximum concurrent flow;
- :mod:`topo.plot` draws fabrics with plotly.
"""

__version__ = "0.1.0"
