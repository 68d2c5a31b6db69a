"""The ``topo`` console script: :func:`topo.cli.main`, with Ctrl-C during start-up handled.

Importing the command line (typer, rich, networkx, numpy) takes a few tenths of a second; an
interrupt then arrived before :func:`topo.cli.main` could catch it and Python printed a
traceback of the import machinery.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    """Run the command line; ``topo: interrupted`` and exit status 130 on Ctrl-C at start-up.

    numpy's OpenBLAS runs on one thread unless ``OPENBLAS_NUM_THREADS`` says otherwise (set
    before numpy is imported; Dask's worker processes inherit it): topo's matrix products
    are small and many (ECMP's leaf-to-leaf demand over a 65,536-GPU FT3: 32 products of
    2,048 x 8 by 8 x 64), and after each one OpenBLAS's idle threads spin, measured on a
    2-core machine at 3 s of CPU for 0.3 s less wall time at best.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        from topo.cli import main as cli_main
    except KeyboardInterrupt:
        print("topo: interrupted", file=sys.stderr)
        sys.exit(130)
    cli_main()


__all__ = ["main"]
