"""``python -m gateway.cli``: the same command line as the installed ``cypher-gateway``."""

import sys

from gateway.cli import main

if __name__ == "__main__":
    sys.exit(main())
