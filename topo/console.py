"""The ``topo`` console script: :func:`topo.cli.main`, with Ctrl-C during start-up handled.

Importing the command line (typer, rich, networkx, numpy) takes a few tenths of a second; an
interrupt then arrived before :func:`topo.cli.main` could catch it and Python printed a
traceback of the import machinery.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run the command line; ``topo: interrupted`` and exit status 130 on Ctrl-C at start-up."""
    try:
        from topo.cli import main as cli_main
    except KeyboardInterrupt:
        print("topo: interrupted", file=sys.stderr)
        sys.exit(130)
    cli_main()


__all__ = ["main"]
