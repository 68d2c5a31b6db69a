"""Run topo from a checkout without installing it: ``python cli.py build mpft``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from topo.console import main  # noqa: E402  (as the installed script: topo.console)

if __name__ == "__main__":
    main()
