"""``python -m recurrent``: the demo (see recurrent/demo.py and --help)."""

import sys

from .demo import main

if __name__ == "__main__":
    sys.exit(main())
