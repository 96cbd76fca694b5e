"""``python -m ecjax`` (and ``python -m ecjax.cli``): the ``ecjax`` command."""

import sys

from ecjax.cli import main

if __name__ == "__main__":
    sys.exit(main())
